"""One client handle used from many threads and across fork(): every query carries fresh
randomness (distinct seeds and bodies), and every answer decodes to the right record."""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from service_helpers import DEMO, ServerProcess
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.service import sample_db as sampledb
from spiralpir.optimizer.service.binding import Build, ClientKeys
from spiralpir.optimizer.service.http_api import CLIENT_HEADER, QUERY, SETUP

HEADER = 32  # every serialised object starts with a 32-byte header; a query's seed follows


def seed_of(query: bytes) -> bytes:
    return query[HEADER:HEADER + 32]


@pytest.fixture(scope="module")
def server(demo_inst: builder.Instance, tmp_path_factory: pytest.TempPathFactory,
           ) -> Iterator[ServerProcess]:
    d = tmp_path_factory.mktemp("threads")
    sampledb.write_sample_db(d / "sample.db")
    srv = ServerProcess(["--build", str(DEMO), "--db", str(d / "sample.db"), "--threads", "2",
                         "--preprocessed", str(d / "sample.pre")], d / "server.log")
    yield srv
    srv.stop()


def client_id(url: str, keys: ClientKeys) -> str:
    r = requests.post(url + SETUP, data=keys.public_params(), timeout=600)
    assert r.status_code == 200, r.text
    return str(r.json()["client_id"])


def answer(url: str, cid: str, query: bytes) -> bytes:
    r = requests.post(url + QUERY, data=query, headers={CLIENT_HEADER: cid}, timeout=600)
    assert r.status_code == 200, r.text
    return r.content


def test_threads_share_one_client_handle(demo_inst: builder.Instance,
                                         server: ServerProcess, rng: random.Random) -> None:
    build = Build(demo_inst)
    keys = ClientKeys.new(build.lib)
    cid = client_id(server.url, keys)
    threads, per_thread = 6, 12
    indices = [[rng.randrange(sampledb.SAMPLE_RECORDS) for _ in range(per_thread)]
               for _ in range(threads)]
    queries: list[list[bytes]] = [[] for _ in range(threads)]
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def work(t: int) -> None:
        try:
            start.wait()
            for i in indices[t]:
                queries[t].append(keys.query(i))  # the C call runs without the GIL
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    flat = [q for qs in queries for q in qs]
    assert len(flat) == threads * per_thread
    assert len({seed_of(q) for q in flat}) == len(flat), "a query seed repeated"
    assert len({q[HEADER + 32:] for q in flat}) == len(flat), "a query body repeated"
    assert all(any(seed_of(q)) for q in flat), "an all-zero seed"
    # every query is a valid query for its index: the server's answer decodes to the record
    # (decoding, too, runs from several threads on the one handle)
    checks = [(indices[t][k], queries[t][k]) for t in range(threads) for k in range(per_thread)]
    with ThreadPoolExecutor(max_workers=threads) as pool:
        decoded = list(pool.map(
            lambda c: keys.decode(c[0], answer(server.url, cid, c[1]), build.record_size),
            checks))
    for (index, _), got in zip(checks, decoded, strict=True):
        assert got == sampledb.sample_record(index), f"record {index}"
    keys.close()


def test_fork_then_query_in_child_and_parent(demo_inst: builder.Instance,
                                             server: ServerProcess) -> None:
    build = Build(demo_inst)
    keys = ClientKeys.new(build.lib)
    cid = client_id(server.url, keys)
    keys.query(7)  # the generator has been used (and buffered keystream) before the fork
    child_index, parent_index = 11, 12
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one query, sent to the parent through the pipe, then _exit
        code = 1
        try:
            os.close(rfd)
            q = keys.query(child_index)
            with os.fdopen(wfd, "wb") as out:
                out.write(q)
            code = 0
        finally:
            os._exit(code)
    os.close(wfd)
    parent_query = keys.query(parent_index)
    with os.fdopen(rfd, "rb") as src:
        child_query = src.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert len(child_query) == len(parent_query)
    assert seed_of(child_query) != seed_of(parent_query), "child and parent share the seed"
    assert child_query[HEADER + 32:HEADER + 64] != parent_query[HEADER + 32:HEADER + 64]
    # both are real queries: each decodes to its own record
    for index, q in ((child_index, child_query), (parent_index, parent_query)):
        got = keys.decode(index, answer(server.url, cid, q), build.record_size)
        assert got == sampledb.sample_record(index)
    keys.close()
