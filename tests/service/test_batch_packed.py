"""Batch retrieval with packed queries end to end: the bucket database is the CI twin of
demo_packed, generated here from generated/demo's plan with query_buckets = 4 (one query ct
carries the indices of 4 buckets), served over HTTP from a thread; PirClient.get_many against
it with real decryption, every record compared with the database's bytes at index x record
size. The bucket count is chosen not to be a multiple of 4, so every batch's last query is
partial."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from service_helpers import DEMO, serve_in_thread
from spiralpir.optimizer import codegen
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.models.bucket_layout import BucketLayout
from spiralpir.optimizer.models.noise import log2_failure
from spiralpir.optimizer.models.placement_bound import log2_failure_bound, min_buckets
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.service import batch_wire
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service.batch_bench import run_batch_bench
from spiralpir.optimizer.service.batch_server import BatchServer
from spiralpir.optimizer.service.binding import Build, ClientKeys
from spiralpir.optimizer.service.http_api import BATCH, CLIENT_HEADER
from spiralpir.optimizer.service.pir_client import PirClient

G = 4
RS = 32
N = 4000
K_MAX = 64
W = 4


@pytest.fixture(scope="module")
def packed_build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    doc = json.loads((DEMO / "params.json").read_text())
    # the demo's ring (its security report still holds) over a 2^6 × 2^6 hypercube, whose
    # noise has room for the deeper expansion of G buckets (2^7 rows would need longer
    # expansion gadgets)
    doc["params"].update(nu_1=6, nu_2=6, t_gsw=4, t_conv=3, t_exp_right=6, query_buckets=G)
    params = Parameters.from_literal(doc["params"])
    assert log2_failure(params) <= -40  # the deeper expansion's noise
    src = codegen.generate_from_document("demo_packed", doc, tmp_path_factory.mktemp("gen"))
    b = Build(builder.build(src, show_progress=False, targets=["library"]), ci=True)
    assert int(b.lib.params["query_buckets"]) == G
    twin = Parameters.from_literal(codegen.ci_literal(doc["params"]))
    assert b.lib.params["params_hash"] == twin.params_hash().hex()  # Python and C++ agree
    return b


@pytest.fixture(scope="module")
def layout(seeded: Any, request: pytest.FixtureRequest) -> BucketLayout:
    rng = seeded(request.node.nodeid)
    buckets = min_buckets(K_MAX, W)
    buckets += 1 if buckets % G == 0 else 0  # a partial last query
    lay = BucketLayout(N, W, buckets, rng.randbytes(16).hex(), 0).sized()
    assert log2_failure_bound(K_MAX, lay.buckets, W) <= -40
    return lay


@pytest.fixture(scope="module")
def batch(packed_build: Build, layout: BucketLayout, tmp_path_factory: pytest.TempPathFactory,
          seeded: Any, request: pytest.FixtureRequest) -> Iterator[tuple[str, bytes]]:
    rng = seeded(request.node.nodeid)
    data = rng.randbytes(N * RS)
    assert layout.capacity <= packed_build.num_records
    recs = database.Records(bytearray(data), N, RS, "random", "binary")
    srv = BatchServer(packed_build, layout, recs,
                      preprocessed_dir=tmp_path_factory.mktemp("packed") / "stores", threads=2,
                      progress=False, log=lambda _m: None)
    url = serve_in_thread(srv)
    yield url, data
    srv.close()


@pytest.fixture(scope="module")
def client(batch: tuple[str, bytes], packed_build: Build,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[PirClient]:
    c = PirClient(batch[0], build=packed_build,
                  state_path=tmp_path_factory.mktemp("client") / "state.json")
    yield c
    c.close()


def raw(data: bytes, i: int) -> bytes:
    return data[i * RS:(i + 1) * RS]


@pytest.mark.parametrize("k", [1, 2, 16, 64])
def test_random_subsets_decode_to_the_raw_records(client: PirClient, batch: tuple[str, bytes],
                                                  rng: random.Random, k: int) -> None:
    data = batch[1]
    for _ in range(2):
        idx = rng.sample(range(N), k)
        res = client.get_many(idx)
        assert res.records == [raw(data, i) for i in idx]


def test_request_is_one_query_per_g_buckets_whatever_the_indices(
        client: PirClient, layout: BucketLayout, monkeypatch: pytest.MonkeyPatch,
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
    assert len(set(sent)) == 1, sent  # same path, length and framing head
    queries = -(-layout.buckets // G)
    query_bytes = int(client.build.lib.params["query_bytes"])
    assert sent[0][1] == batch_wire.framed_bytes(queries, query_bytes)
    # the plain build of the same records would send one query per bucket
    assert sent[0][1] < batch_wire.framed_bytes(layout.buckets, query_bytes)


def test_malformed_packed_batches_get_4xx_and_the_server_keeps_serving(
        client: PirClient, layout: BucketLayout, batch: tuple[str, bytes],
        rng: random.Random) -> None:
    url, data = batch
    client.setup()
    cid = str(client.client_id)
    groups = batch_wire.query_groups(layout.buckets, G)
    good = [client.keys.query_packed([0] * len(grp)) for grp in groups]
    plain = Build(builder.build(DEMO, show_progress=False, targets=["library"]), ci=True)
    keys = ClientKeys.new(plain.lib)
    unpacked = keys.query(0)  # same size, the G = 1 parameters' hash
    keys.close()
    assert len(unpacked) == len(good[0])
    bodies = {
        "one query per bucket": batch_wire.pack([good[0]] * layout.buckets),
        "one query too few": batch_wire.pack(good[:-1]),
        "an unpacked query among them": batch_wire.pack([unpacked, *good[1:]]),
        "truncated": batch_wire.pack(good)[:-100],
        "garbage": rng.randbytes(200),
    }
    for what, body in bodies.items():
        r = requests.post(url + BATCH, data=body, headers={CLIENT_HEADER: cid}, timeout=60)
        assert 400 <= r.status_code < 500, (what, r.status_code, r.text)
        assert "error" in r.json(), what
    i = rng.randrange(N)
    assert client.get_many([i]).records == [raw(data, i)]


def test_batch_bench_counts_packed_queries(packed_build: Build, layout: BucketLayout,
                                           rng: random.Random) -> None:
    r = run_batch_bench(packed_build, layout, 8, trials=1, threads=1,
                        seed=rng.randrange(1 << 30))
    assert r["correct"] and r["query_buckets"] == G
    assert r["batch_queries"] == -(-layout.buckets // G)
    assert r["batch_request_bytes"] == batch_wire.framed_bytes(
        r["batch_queries"], int(packed_build.lib.params["query_bytes"]))

