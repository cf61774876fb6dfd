"""Keyword lookups end to end: a KeywordServer of the demo build's CI twin (its database the
table, in h = 2 and 4 row blocks) over HTTP from a thread, PirClient.get against it with real
decryption; the requests' count and sizes for present, absent and differently placed keys;
`spiralpir serve` of a .jsonl keyword database and `spiralpir query --key` as real
processes."""

from __future__ import annotations

import json
import random
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from service_helpers import CLI, DEMO, ServerProcess, serve_in_thread
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.cuckoo_layout import max_keys, tag_bytes_for
from spiralpir.optimizer.service.binding import Build
from spiralpir.optimizer.service.keyword_input import KeywordData
from spiralpir.optimizer.service.keyword_server import KeywordServer
from spiralpir.optimizer.service.keyword_table import TableShape, make_table, value_capacity
from spiralpir.optimizer.service.pir_client import PirClient

SLOT = 32  # the demo build's record size: a slot


def random_pairs(rng: random.Random, n: int, cap: int) -> tuple[list[bytes], list[bytes]]:
    keys = list(dict.fromkeys(f"user-{rng.randrange(10**9)}".encode() for _ in range(n)))
    values = [rng.randbytes(rng.choice([0, 1, cap, rng.randrange(cap + 1)])) for _ in keys]
    return keys, values


@pytest.fixture(scope="module")
def ci_build(demo_inst: builder.Instance) -> Build:
    return Build(demo_inst, ci=True)


def shape_of(build: Build, h: int) -> TableShape:
    """The table a build's database is: its rows, columns and records per plaintext."""
    p = build.lib.params
    m = int(p["items_per_plaintext"])
    return TableShape(h, 1 << int(p["nu_1"]), 1 << int(p["nu_2"]), m, tag_bytes_for(h, m),
                      build.record_size)


@pytest.fixture(scope="module", params=[2, 4])
def served(ci_build: Build, seeded: Any, request: pytest.FixtureRequest
           ) -> Iterator[tuple[str, dict[bytes, bytes], KeywordServer]]:
    rng = seeded(request.node.nodeid)
    shape = shape_of(ci_build, request.param)
    n = max_keys(shape.h, shape.rows, shape.columns, shape.slots)
    assert n >= 300
    keys, values = random_pairs(rng, n, value_capacity(SLOT, shape.tag_bytes))
    kt = make_table(KeywordData(keys, values, "random"), shape)
    srv = KeywordServer(ci_build, kt, threads=2, progress=False, log=lambda _m: None)
    yield serve_in_thread(srv), dict(zip(keys, values, strict=True)), srv
    srv.close()


@pytest.fixture(scope="module")
def client(served: tuple[str, dict[bytes, bytes], KeywordServer], ci_build: Build,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[PirClient]:
    c = PirClient(served[0], build=ci_build,
                  state_path=tmp_path_factory.mktemp("client") / "state.json")
    yield c
    c.close()


def test_present_keys_give_their_values(client: PirClient,
                                        served: tuple[str, dict[bytes, bytes], KeywordServer],
                                        rng: random.Random) -> None:
    table = served[1]
    for key in rng.sample(sorted(table), 20):
        assert client.get(key) == table[key]
    key = next(k for k, v in table.items() if v == b"")
    res = client.lookup(key.decode())  # a str key is its UTF-8 bytes; an empty value is found
    assert res.found and res.value == b"" and res.to_json()["value_hex"] == ""


def test_absent_keys_are_absent(client: PirClient,
                                served: tuple[str, dict[bytes, bytes], KeywordServer],
                                rng: random.Random) -> None:
    h = served[2].keyword.table.layout.h
    for _ in range(10):
        key = f"nobody-{rng.randrange(10**9)}"
        assert key.encode() not in served[1]
        res = client.lookup(key)
        assert res.value is None and res.to_json() | {"seconds": 0, "server_stages": 0} == {
            "key": key, "found": False, "value_hex": None, "bins": h,
            "request_bytes": res.request_bytes, "response_bytes": res.response_bytes,
            "public_params_bytes_uploaded": 0, "seconds": 0, "server_stages": 0,
            "version": 0}


def test_params_carry_the_public_table(client: PirClient,
                                       served: tuple[str, dict[bytes, bytes], KeywordServer]
                                       ) -> None:
    kw = client.info["keyword"]
    lay = served[2].keyword.table.layout
    assert {k: kw[k] for k in ("h", "rows", "columns", "slots", "seed", "tag_bytes")} == \
        lay.to_json()
    assert kw["slot_size"] == SLOT and kw["keys"] == len(served[1])
    assert kw["max_value_size"] == SLOT - lay.tag_bytes - 1
    assert kw["request_bytes"] == client.info["sizes"]["query_bytes"]


def test_requests_do_not_depend_on_the_key(client: PirClient,
                                           served: tuple[str, dict[bytes, bytes], KeywordServer]
                                           ) -> None:
    table, placed = served[1], served[2].keyword.table
    lay = placed.layout
    block = {k: (placed.where[i] // lay.columns) // lay.block_rows
             for i, k in enumerate(table)}
    client.get(b"warm-up")  # the public parameters go up once, before the recorded lookups
    sent: list[tuple[str | None, str, int]] = []

    def hook(r: Any, *_a: Any, **_k: Any) -> None:
        sent.append((r.request.method, r.request.path_url, len(r.request.body or b"")))

    client.http.hooks["response"].append(hook)
    try:
        # a key in each row block, absent keys, an empty key
        keys = [next(k for k in table if block[k] == j) for j in range(lay.h)]
        keys += [b"absent-1", b"absent-" + b"x" * 500, b""]
        shapes = []
        for key in keys:
            sent.clear()
            client.get(key)
            shapes.append(list(sent))
    finally:
        client.http.hooks["response"].remove(hook)
    assert all(s == shapes[0] for s in shapes), shapes
    assert shapes[0] == [("POST", "/v1/keyword", client.info["sizes"]["query_bytes"])]


def query(url: str, key: str, state: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "query", "--server", url, "--key", key, "--state", str(state),
                           "--build", str(DEMO), *extra], capture_output=True, text=True,
                          timeout=600)


def test_serve_and_query_a_keyword_file(demo_inst: builder.Instance, tmp_path: Path,
                                        rng: random.Random,
                                        serve_process: Callable[[list[str], Path],
                                                                ServerProcess],
                                        sample_server: ServerProcess) -> None:
    pairs = {f"k{i}-{rng.randrange(10**6)}": f"välue {i}" for i in range(60)}
    (tmp_path / "kv.jsonl").write_text("".join(json.dumps({"key": k, "value": v}) + "\n"
                                               for k, v in pairs.items()), encoding="utf-8")
    shape = shape_of(Build(demo_inst, ci=True), 2)
    (tmp_path / "keyword.json").write_text(json.dumps({"keyword": shape.__dict__}))
    srv = serve_process(["--build", str(DEMO), "--ci", "--db", str(tmp_path / "kv.jsonl"),
                         "--keyword-table", str(tmp_path / "keyword.json"), "--threads", "2",
                         "--no-cache"], tmp_path / "server.log")
    key = rng.choice(sorted(pairs))
    proc = query(srv.url, key, tmp_path / "s.json", "--text")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == pairs[key] + "\n"
    proc = query(srv.url, key, tmp_path / "s.json", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["found"] is True and report["key"] == key
    assert bytes.fromhex(report["value_hex"]) == pairs[key].encode()
    proc = query(srv.url, "not-a-key", tmp_path / "s.json")
    assert proc.returncode == 1 and proc.stdout == "not found\n", proc.stderr
    proc = query(srv.url, "not-a-key", tmp_path / "s.json", "--json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["value_hex"] is None
    # a server of one database has no keys; --key and --index do not go together
    proc = query(sample_server.url, key, tmp_path / "s2.json")
    assert proc.returncode == 2 and "the server holds no keyword table" in proc.stderr
    proc = query(srv.url, key, tmp_path / "s.json", "--index", "3")
    assert proc.returncode == 2 and "give --index I (or I,J,K) or --key KEY" in proc.stderr


def test_single_queries_are_refused_naming_key_lookups(client: PirClient) -> None:
    with pytest.raises(SpiralpirError, match=r"answers keyword lookups: one blocked query in "
                       r"POST /v1/keyword \(spiralpir query --key KEY\)"):
        client.query(0)


def test_bad_keyword_requests_are_refused_and_the_server_keeps_serving(
        client: PirClient, served: tuple[str, dict[bytes, bytes], KeywordServer]) -> None:
    client.get(b"warm-up")
    query = client.keys.query(0)
    for body, needle in ((query[:-1], "a keyword query is"),
                         (bytes(len(query)), "rejected query")):  # no header
        r = client._post_query("/v1/keyword", body, 1 << 20)[0]
        assert r.status_code == 400 and needle in r.json()["error"], r.text
    key = next(iter(served[1]))
    assert client.get(key) == served[1][key]
