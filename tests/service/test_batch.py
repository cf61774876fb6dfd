"""Batch retrieval end to end: a BatchServer of the demo build's CI twin (as the bucket
database) served over HTTP from a thread, PirClient.get_many against it with real
decryption. Every record is compared with the database's bytes at index x record size."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests
from service_helpers import DEMO, serve_in_thread
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.models import host_memory
from spiralpir.optimizer.models.bucket_layout import BucketLayout
from spiralpir.optimizer.models.placement_bound import log2_failure_bound, min_buckets
from spiralpir.optimizer.params import sizes
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.service import batch_wire
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service.batch_server import BatchServer
from spiralpir.optimizer.service.binding import Build, ClientKeys
from spiralpir.optimizer.service.http_api import BATCH, CLIENT_HEADER
from spiralpir.optimizer.service.pir_client import PirClient
from spiralpir.optimizer.service.placement import PlacementFailed

RS = 32  # the demo build's record size
N = 4000
K_MAX = 64
W = 4


def make_layout(rng: random.Random, records: int, w: int, buckets: int) -> BucketLayout:
    return BucketLayout(records, w, buckets, rng.randbytes(16).hex(), 0).sized()


@pytest.fixture(scope="module")
def ci_build(demo_inst: builder.Instance) -> Build:
    return Build(demo_inst, ci=True)


@pytest.fixture(scope="module")
def batch(ci_build: Build, tmp_path_factory: pytest.TempPathFactory,
          seeded: Any, request: pytest.FixtureRequest) -> Iterator[tuple[str, bytes, Path]]:
    """(url, database bytes, store dir) of a server of N random records in the buckets of a
    layout planned for batches of K_MAX (its bucket count meets the 2^-40 bound)."""
    rng = seeded(request.node.nodeid)
    data = rng.randbytes(N * RS)
    lay = make_layout(rng, N, W, min_buckets(K_MAX, W))
    assert log2_failure_bound(K_MAX, lay.buckets, W) <= -40
    assert lay.capacity <= ci_build.num_records
    d = tmp_path_factory.mktemp("batch")
    recs = database.Records(bytearray(data), N, RS, "random", "binary")
    srv = BatchServer(ci_build, lay, recs, preprocessed_dir=d / "stores", threads=2,
                      progress=False, log=lambda _m: None)
    url = serve_in_thread(srv)
    yield url, data, d / "stores"
    srv.close()


@pytest.fixture(scope="module")
def client(batch: tuple[str, bytes, Path], ci_build: Build,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[PirClient]:
    c = PirClient(batch[0], build=ci_build,
                  state_path=tmp_path_factory.mktemp("client") / "state.json")
    yield c
    c.close()


def raw(data: bytes, i: int) -> bytes:
    return data[i * RS:(i + 1) * RS]


@pytest.mark.parametrize("k", [1, 2, 16, 64])
def test_random_subsets_decode_to_the_raw_records(client: PirClient,
                                                  batch: tuple[str, bytes, Path],
                                                  rng: random.Random, k: int) -> None:
    data = batch[1]
    for _ in range(2):
        idx = rng.sample(range(N), k)
        res = client.get_many(idx)
        assert res.indices == idx
        assert [r for r in res.records] == [raw(data, i) for i in idx]


def test_duplicates_and_order_are_kept(client: PirClient, batch: tuple[str, bytes, Path],
                                       rng: random.Random) -> None:
    data = batch[1]
    base = rng.sample(range(N), 10)
    idx = [base[3], base[0], base[3], N - 1, 0, base[0], *base]
    res = client.get_many(idx)
    assert res.records == [raw(data, i) for i in idx]
    assert res.to_json()["distinct_records"] == len(set(idx))
    assert res.record == b"".join(raw(data, i) for i in idx)


def test_request_sizes_do_not_depend_on_the_indices(client: PirClient,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    rng: random.Random) -> None:
    sent: list[tuple[str, int, bytes]] = []
    real = client._post_query

    def spy(path: str, q: bytes, limit: int) -> Any:
        sent.append((path, len(q), q[:batch_wire.HEAD_BYTES]))
        return real(path, q, limit)

    monkeypatch.setattr(client, "_post_query", spy)
    for idx in ([0], [N - 1], list(range(K_MAX)), rng.sample(range(N), 30), [7, 7, 7]):
        client.get_many(idx)
    assert len(sent) == 5, "one request per batch"
    assert len({s for s in sent}) == 1, sent  # same path, length and framing head


def test_sizes_are_as_planned(client: PirClient, rng: random.Random) -> None:
    """Request and reply are B planned queries and responses (the demo plan's sizes; its CI
    twin differs only in the hypercube, which sizes neither) plus the framing head."""
    est = json.loads((DEMO / "params.json").read_text())["estimate"]
    res = client.get_many(rng.sample(range(N), 5))
    b = res.buckets
    assert res.request_bytes == batch_wire.framed_bytes(b, est["query_bytes"])
    assert res.response_bytes == batch_wire.framed_bytes(b, est["response_bytes"])


def test_bucket_stores_are_saved_and_mapped_on_restart(ci_build: Build,
                                                       batch: tuple[str, bytes, Path],
                                                       rng: random.Random) -> None:
    url, data, stores = batch
    info = requests.get(url + "/v1/params", timeout=10).json()["batch"]
    lay = BucketLayout.from_json({k: info[k] for k in ("records", "w", "buckets", "seed",
                                                       "capacity")}, "test")
    files = sorted(stores.glob("bucket-*.spiralpir-db"))
    assert len(files) == lay.buckets
    recs = database.Records(bytearray(data), N, RS, "random", "binary")
    logs: list[str] = []
    again = BatchServer(ci_build, lay, recs, preprocessed_dir=stores, threads=2,
                        progress=False, log=logs.append)
    try:
        assert again.loaded_from_cache and all("mapped" in m for m in logs), logs
        keys = ClientKeys.new(ci_build.lib)
        cid = again.setup(keys.public_params())
        i = rng.randrange(N)
        t = lay.table()
        b = int(t.cand[i][0])
        queries = [keys.query(t.position(i, b) if j == b else 0) for j in range(lay.buckets)]
        reply, _, _ = again.answer_batch(cid, batch_wire.pack(queries))
        resp = batch_wire.unpack(reply, lay.buckets, again.response_bytes,
                                 batch_wire.REPLY_MAGIC)
        assert keys.decode(t.position(i, b), resp[b], RS) == raw(data, i)
        keys.close()
    finally:
        again.close()


def test_malformed_batches_get_4xx_and_the_server_keeps_serving(
        client: PirClient, batch: tuple[str, bytes, Path], ci_build: Build,
        rng: random.Random) -> None:
    url, data, _ = batch
    client.setup()
    cid = str(client.client_id)
    buckets = client.info["batch"]["buckets"]
    good = [client.keys.query(0) for _ in range(buckets)]
    foreign = bytearray(good[1])
    foreign[8:16] = bytes(8)  # another parameter set's hash in the object header
    bodies = {
        "wrong bucket count": batch_wire.pack(good[:-1]),
        "mixed parameter hashes": batch_wire.pack([good[0], bytes(foreign), *good[2:]]),
        "truncated": batch_wire.pack(good)[:-100],
        "garbage": rng.randbytes(200),
        "single query": good[0],
    }
    for what, body in bodies.items():
        r = requests.post(url + BATCH, data=body, headers={CLIENT_HEADER: cid}, timeout=60)
        assert 400 <= r.status_code < 500, (what, r.status_code, r.text)
        assert "error" in r.json(), what
    r = requests.post(url + BATCH, data=batch_wire.pack(good), timeout=60)
    assert r.status_code == 400 and "Client-Id" in r.json()["error"]
    r = requests.post(url + "/v1/query", data=good[0], headers={CLIENT_HEADER: cid}, timeout=60)
    assert r.status_code == 400 and "/v1/batch" in r.json()["error"]
    i = rng.randrange(N)
    assert client.get_many([i]).records == [raw(data, i)]


def test_forced_placement_failure_is_a_clear_error(ci_build: Build, tmp_path: Path,
                                                   rng: random.Random) -> None:
    """One candidate per record in 3 buckets: two indices of one bucket can never be placed."""
    lay = make_layout(rng, 200, 1, 3)
    data = rng.randbytes(200 * RS)
    recs = database.Records(bytearray(data), 200, RS, "random", "binary")
    srv = BatchServer(ci_build, lay, recs, threads=1, progress=False, log=lambda _m: None)
    url = serve_in_thread(srv)
    c = PirClient(url, build=ci_build, state_path=tmp_path / "s.json")
    try:
        cand = lay.candidates(np.arange(200))[:, 0]
        same = [int(i) for i in np.nonzero(cand == cand[0])[0][:2]]
        with pytest.raises(PlacementFailed, match="retrying cannot help"):
            c.get_many(same)
        with pytest.raises(PlacementFailed, match="at most one index per bucket"):
            c.get_many([0, 1, 2, 3])
        one_each = [int(np.nonzero(cand == b)[0][0]) for b in range(3)]
        assert c.get_many(one_each).records == [raw(data, i) for i in one_each]
    finally:
        c.close()
        srv.close()


def test_batch_bench_reports_checked_figures(ci_build: Build, rng: random.Random) -> None:
    """The bench of a batch build: a layout too large for the CI twin is scaled down to fit,
    the figures are per batch and per record, and every record was checked."""
    big = BucketLayout(50_000, 3, 24, rng.randbytes(16).hex(), 8000)
    from spiralpir.optimizer.service.batch_bench import run_batch_bench

    r = run_batch_bench(ci_build, big, 8, trials=2, threads=1, seed=rng.randrange(1 << 30))
    assert r["correct"] and r["k"] == 8 and r["buckets"] == 24 and r["w"] == 3
    assert r["bucket_capacity"] <= ci_build.num_records < big.capacity
    assert r["batch_request_bytes"] == batch_wire.framed_bytes(24, len(
        ClientKeys.new(ci_build.lib).query(0)))
    assert r["per_record_bytes"] == pytest.approx(
        (r["batch_request_bytes"] + r["batch_response_bytes"]) / 8)
    assert set(r["batch_stage_seconds"]) == {"expansion", "conversion", "first_dimension",
                                             "folding", "modswitch"}


def test_buckets_beyond_the_memory_budget_are_announced_once(
        ci_build: Build, rng: random.Random, monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget holds for all buckets together: under one bucket's bytes times the count,
    one warning; over it, none."""
    lay = make_layout(rng, 200, 2, 3)
    recs = database.Records(bytearray(rng.randbytes(200 * RS)), 200, RS, "random", "binary")
    one = sizes.preprocessed_db_bytes(Parameters.from_literal(ci_build.params))
    for budget, expected in ((3 * one, 0), (3 * one - 1, 1)):
        monkeypatch.setattr(host_memory, "database_budget_bytes", lambda b=budget: b)
        log: list[str] = []
        srv = BatchServer(ci_build, lay, recs, threads=1, progress=False, log=log.append)
        srv.close()
        assert len([m for m in log if m.startswith("warning:")]) == expected, (budget, log)
