"""The streaming mode: one query, uploaded and prepared once, answers a sequence of
databases of the same build (`serve --stream`, `query --stream`). Real server processes over
HTTP on random databases with real decryption; hostile input; the session cache's bounds;
every variant of the family through the Python API."""

from __future__ import annotations

import json
import random
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
from service_helpers import CLI, DEMO, REPO, ServerProcess
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service import sample_db as sampledb
from spiralpir.optimizer.service.binding import Build, ClientKeys, PublicParams, ServerDb
from spiralpir.optimizer.service.http_api import CLIENT_HEADER
from spiralpir.optimizer.service.http_server import run
from spiralpir.optimizer.service.pir_client import PirClient, StreamResult
from spiralpir.optimizer.service.pir_server import PirServer
from spiralpir.optimizer.service.sessions import StreamSessions

RS = 32  # the demo build's record size
FULL = sampledb.SAMPLE_RECORDS  # the demo build's record count
# block file names whose order only a numeric sort gets right (part10 after part2)
NAMES = ["part0.bin", "part1.bin", "part2.bin", "part10.bin"]


@pytest.fixture(scope="module")
def blocks(tmp_path_factory: pytest.TempPathFactory, seeded: Callable[[str], random.Random],
           request: pytest.FixtureRequest) -> tuple[Path, list[bytes]]:
    """Four random databases; the last one shorter (a media file's last block)."""
    d = tmp_path_factory.mktemp("stream") / "blocks"
    d.mkdir()
    rng = seeded(request.node.nodeid)
    counts = [FULL, FULL, FULL, rng.randrange(1000, FULL // 2)]
    data = [rng.randbytes(n * RS) for n in counts]
    for name, blob in zip(NAMES, data, strict=True):
        (d / name).write_bytes(blob)
    return d, data


@pytest.fixture(scope="module")
def stream_server(demo_inst: builder.Instance, blocks: tuple[Path, list[bytes]],
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    log = tmp_path_factory.mktemp("stream-log") / "server.log"
    srv = ServerProcess(["--build", str(DEMO), "--stream", str(blocks[0]), "--threads", "2",
                         "--max-streams", "2"], log)
    yield srv
    srv.stop()


def record_of(blob: bytes, index: int) -> bytes | None:
    return blob[index * RS:(index + 1) * RS] if (index + 1) * RS <= len(blob) else None


def run_stream_query(url: str, index: int, state: Path, out: Path, *extra: str) -> dict:
    proc = subprocess.run(
        [*CLI, "query", "--server", url, "--index", str(index), "--stream", "--state", str(state),
         "--out", str(out), "--json", *extra], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_stream_query_returns_the_record_of_every_block(
        stream_server: ServerProcess, blocks: tuple[Path, list[bytes]], tmp_path: Path,
        rng: random.Random) -> None:
    _, data = blocks
    short = len(data[-1]) // RS
    state = tmp_path / "client.json"
    # one index every block holds, one beyond the short last block
    for k, index in enumerate([rng.randrange(short), rng.randrange(short, FULL)]):
        out = tmp_path / f"rec{k}.bin"
        report = run_stream_query(stream_server.url, index, state, out)
        expected = [record_of(blob, index) for blob in data]
        got = [b["record_hex"] for b in report["blocks"]]
        assert got == [None if e is None else e.hex() for e in expected]
        assert [b["block"] for b in report["blocks"]] == [0, 1, 2, 3]
        assert out.read_bytes() == b"".join(e for e in expected if e is not None)
        assert report["query_uploads"] == 1  # one query for all blocks
        assert (report["public_params_bytes_uploaded"] > 0) == (k == 0)
        assert {"server_expansion", "server_conversion", "query_gen"} <= set(
            report["prepare_seconds"])
        assert report["per_block"]["blocks"] == 4
        assert report["per_block"]["db_bytes"] == sum(len(blob) for blob in data)
        for b in report["blocks"]:
            assert {"server", "server_first_dimension", "server_folding"} <= set(b["seconds"])
    # a range of blocks
    index = rng.randrange(short)
    report = run_stream_query(stream_server.url, index, state, tmp_path / "part.bin",
                              "--blocks", "1:3")
    assert [(b["block"], b["record_hex"]) for b in report["blocks"]] == [
        (k, record_of(data[k], index).hex()) for k in (1, 2)]  # type: ignore[union-attr]
    log = stream_server.log.read_text()
    assert "prepared a" in log and "block 3 (of 4)" in log


def test_restart_maps_the_saved_blocks(stream_server: ServerProcess,
                                      blocks: tuple[Path, list[bytes]],
                                      serve_process: Callable[[list[str], Path], ServerProcess],
                                      tmp_path: Path, rng: random.Random) -> None:
    """The first server saved each block's preprocessed file next to it; a second one maps
    them all instead of preprocessing again, and answers correctly."""
    d, data = blocks
    assert "mapped preprocessed" not in stream_server.log.read_text()
    again = serve_process(["--build", str(DEMO), "--stream", str(d), "--threads", "2"],
                          tmp_path / "again.log")
    assert (tmp_path / "again.log").read_text().count("mapped preprocessed block") == len(data)
    index = rng.randrange(len(data[-1]) // RS)
    report = run_stream_query(again.url, index, tmp_path / "client.json", tmp_path / "r.bin")
    assert [b["record_hex"] for b in report["blocks"]] == [
        record_of(blob, index).hex() for blob in data]  # type: ignore[union-attr]


def test_hostile_stream_requests_get_4xx_and_server_survives(
        stream_server: ServerProcess, demo_inst: builder.Instance,
        blocks: tuple[Path, list[bytes]], rng: random.Random) -> None:
    _, data = blocks
    url = stream_server.url
    full, twin = Build(demo_inst), Build(demo_inst, ci=True)
    keys, foreign = ClientKeys.new(full.lib), ClientKeys.new(twin.lib)
    r = requests.post(url + "/v1/setup", data=keys.public_params(), timeout=120)
    assert r.status_code == 200, r.text
    hdr = {CLIENT_HEADER: r.json()["client_id"]}
    index = rng.randrange(len(data[-1]) // RS)
    query = keys.query(index)

    def open_stream(body: bytes, headers: dict | None = hdr) -> requests.Response:
        return requests.post(url + "/v1/stream", data=body, headers=headers, timeout=120)

    r = open_stream(query)
    assert r.status_code == 201, r.text
    sid = r.json()["stream_id"]
    assert [b["num_records"] for b in r.json()["blocks"]] == [len(b) // RS for b in data]

    def block(k: str, s: str = sid) -> requests.Response:
        return requests.get(f"{url}/v1/stream/{s}/blocks/{k}", timeout=120)

    cases = {
        "block past the end": (block("4"), 400, "4 block(s), 0 .. 3"),
        "negative block": (block("-1"), 400, "not a non-negative integer"),
        "non-integer block": (block("x"), 400, "not a non-negative integer"),
        "unknown session": (block("0", "f" * 32), 404, "unknown stream session"),
        "truncated query": (open_stream(query[: len(query) // 2]), 400, "rejected query"),
        "oversized query": (open_stream(query + bytes(100_000)), 413, "limit"),
        "foreign params": (open_stream(foreign.query(0)), 400, "rejected query"),
        "garbage": (open_stream(bytes(len(query))), 400, "rejected query"),
        "empty": (open_stream(b""), 400, "empty query"),
        "no client id": (open_stream(query, None), 400, CLIENT_HEADER),
        "unknown client": (open_stream(query, {CLIENT_HEADER: "0" * 32}), 404, "setup"),
        "single query to 4 blocks": (requests.post(url + "/v1/query", data=query, headers=hdr,
                                                   timeout=120), 400, "POST /v1/stream"),
        "delete unknown": (requests.delete(f"{url}/v1/stream/{'e' * 32}", timeout=30), 404,
                           "unknown stream session"),
    }
    for what, (resp, status, needle) in cases.items():
        assert resp.status_code == status, (what, resp.status_code, resp.text)
        assert needle in resp.json()["error"], (what, resp.json())
    # the session survived all that and answers every block
    for k, blob in enumerate(data):
        resp = block(str(k))
        assert resp.status_code == 200, resp.text
        assert resp.headers["X-Spiralpir-Block"] == str(k)
        assert int(resp.headers["X-Spiralpir-Block-Bytes"]) == len(blob)
        assert keys.decode(index, resp.content, RS) == record_of(blob, index)
    r = requests.delete(f"{url}/v1/stream/{sid}", timeout=30)
    assert r.status_code == 200 and r.json()["blocks_answered"] == len(data)
    gone = block("0")
    assert gone.status_code == 404 and "closed" in gone.json()["error"]
    health = requests.get(url + "/v1/health", timeout=30).json()
    assert health["status"] == "ok"
    info = requests.get(url + "/v1/params", timeout=30).json()
    assert info["variant"] == "spiral" and len(info["stream"]["blocks"]) == len(data)


def test_session_cache_eviction_and_client_recovery(
        demo_inst: builder.Instance, serve_process: Callable[[list[str], Path], ServerProcess],
        tmp_path: Path, rng: random.Random) -> None:
    """`sample-db --blocks` writes a stream; a server keeping 2 sessions evicts the least
    recently used, names the bound, and a client whose session was evicted re-uploads."""
    blocks_dir = tmp_path / "sample-blocks"
    proc = subprocess.run([*CLI, "sample-db", "--out", str(blocks_dir), "--blocks", "3",
                           "--records", "2000"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in blocks_dir.iterdir()) == [sampledb.block_name(k)
                                                           for k in range(3)]
    srv = serve_process(["--build", str(DEMO), "--stream", str(blocks_dir), "--threads", "2",
                         "--max-streams", "2", "--no-cache"], tmp_path / "server.log")
    build = Build(demo_inst)
    keys = ClientKeys.new(build.lib)
    cid = requests.post(srv.url + "/v1/setup", data=keys.public_params(), timeout=120)
    hdr = {CLIENT_HEADER: cid.json()["client_id"]}

    def open_stream(index: int) -> str:
        r = requests.post(srv.url + "/v1/stream", data=keys.query(index), headers=hdr,
                          timeout=120)
        assert r.status_code == 201, r.text
        return str(r.json()["stream_id"])

    indices = rng.sample(range(2000), 3)
    sids = [open_stream(i) for i in indices]  # the third evicts the first
    r = requests.get(f"{srv.url}/v1/stream/{sids[0]}/blocks/0", timeout=120)
    assert r.status_code == 404, r.text
    assert "evicted" in r.json()["error"] and "max_streams = 2" in r.json()["error"]
    for sid, index in zip(sids[1:], indices[1:], strict=True):
        k = rng.randrange(3)
        r = requests.get(f"{srv.url}/v1/stream/{sid}/blocks/{k}", timeout=120)
        assert r.status_code == 200, r.text
        assert keys.decode(index, r.content, RS) == sampledb.sample_record(index, k)

    # a client iterating the blocks loses its session half-way and recovers
    client = PirClient(srv.url, build=build, state_path=tmp_path / "client.json")
    index = rng.randrange(2000)
    report = StreamResult(index)
    it = client.iter_stream(index, report=report, in_flight=1)  # nothing fetched ahead
    got = [next(it)]
    open_stream(0), open_stream(1)  # evict the client's session
    got += list(it)
    client.close()
    assert [g.record for g in got] == [sampledb.sample_record(index, k) for k in range(3)]
    assert report.opens == 2
    assert "evicted" in (tmp_path / "server.log").read_text()

    # idle sessions are swept without further requests, and their ids say they expired
    short = serve_process(["--build", str(DEMO), "--stream", str(blocks_dir), "--threads", "1",
                           "--stream-ttl", "0.5", "--no-cache"], tmp_path / "server-ttl.log")
    cid = requests.post(short.url + "/v1/setup", data=keys.public_params(), timeout=120)
    r = requests.post(short.url + "/v1/stream", data=keys.query(0), timeout=120,
                      headers={CLIENT_HEADER: cid.json()["client_id"]})
    assert r.status_code == 201, r.text
    deadline = time.time() + 120
    while requests.get(short.url + "/v1/health", timeout=30).json()["open_streams"]:
        assert time.time() < deadline, "the idle session was never swept"
        time.sleep(0.2)
    r = requests.get(f"{short.url}/v1/stream/{r.json()['stream_id']}/blocks/0", timeout=120)
    assert r.status_code == 404 and "stream_ttl = 0.5 s" in r.json()["error"], r.text


def test_cli_rejects_inconsistent_stream_options(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / ".hidden").write_bytes(bytes(32))
    block = tmp_path / "block.bin"
    block.write_bytes(bytes(64))
    odd = tmp_path / "odd"
    odd.mkdir()
    for name in ("1", "2²"):  # '²' is a digit to str.isdigit, not to int()
        (odd / name).write_bytes(bytes(64))
    cases = [
        (["serve", "--build", str(DEMO), "--stream", str(odd)], "non-ASCII digit '²'"),
        (["serve", "--build", str(DEMO)], "either --db"),
        (["serve", "--build", str(DEMO), "--db", "x.db", "--stream", str(empty)], "either --db"),
        (["serve", "--build", str(DEMO), "--stream", str(tmp_path / "missing")],
         "no such stream block"),
        (["serve", "--build", str(DEMO), "--stream", str(empty)], "holds no blocks"),
        (["serve", "--build", str(DEMO), "--stream", str(block), "--preprocessed", str(block)],
         "give a directory"),
        (["query", "--server", "http://127.0.0.1:9", "--index", "0", "--blocks", "1"],
         "need --stream"),
    ]
    for args, needle in cases:
        proc = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (args, proc.stderr)
        assert needle in proc.stderr and proc.stderr.count("\n") <= 2, (args, proc.stderr)


class FakePrepared:
    def __init__(self) -> None:
        self.seconds = {"expansion": 0.0, "conversion": 0.0}
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_stream_sessions_bounds_with_a_fake_clock() -> None:
    now = [0.0]
    dropped: list[str] = []
    cache = StreamSessions(2, 10.0, on_drop=lambda sid, _s, why: dropped.append(why),
                           clock=lambda: now[0])
    p = [FakePrepared() for _ in range(4)]
    a = cache.add(p[0], "c")  # type: ignore[arg-type]
    b = cache.add(p[1], "c")  # type: ignore[arg-type]
    now[0] = 5.0
    cache.get(a)  # a is now the most recently used: adding c evicts b
    c = cache.add(p[2], "c")  # type: ignore[arg-type]
    assert p[1].closed and not p[0].closed and len(cache) == 2
    with pytest.raises(SpiralpirError, match="evicted: .*max_streams = 2"):
        cache.get(b)
    now[0] = 15.5  # a idle 10.5 s, c idle 10.5 s
    cache.sweep()
    assert p[0].closed and p[2].closed and len(cache) == 0
    with pytest.raises(SpiralpirError, match="expired: .*stream_ttl = 10 s"):
        cache.get(c)
    d = cache.add(p[3], "c")  # type: ignore[arg-type]
    cache.close(d)
    assert p[3].closed
    with pytest.raises(SpiralpirError, match="closed by its client"):
        cache.get(d)
    with pytest.raises(SpiralpirError, match="unknown stream session"):
        cache.get("nope")
    assert len(dropped) == 4
    with pytest.raises(SpiralpirError, match="max_streams"):
        StreamSessions(0, 1.0)


def test_prepared_query_bindings(demo_inst: builder.Instance, rng: random.Random) -> None:
    """One prepared query answers several databases; misuse raises SpiralpirError; a prepared
    query released while an answer runs on it stays valid until that answer is done."""
    small, other = Build(demo_inst, ci=True), Build(demo_inst)
    n = small.num_records
    datas = [rng.randbytes(n * RS) for _ in range(2)]
    dbs = []
    for blob in datas:
        db = ServerDb(small.lib, 2)
        db.load_records(blob, n, RS)
        dbs.append(db)
    keys = ClientKeys.new(small.lib)
    pp = PublicParams(small.lib, keys.public_params())
    index = rng.randrange(n)
    prepared = dbs[0].prepare(pp, keys.query(index))
    assert set(prepared.seconds) == {"expansion", "conversion"}
    for db, blob in zip(dbs, datas, strict=True):
        resp, stages = db.answer_prepared(prepared)
        assert keys.decode(index, resp, RS) == record_of(blob, index)
        assert set(stages) == {"first_dimension", "folding", "packing", "modswitch"}
    # objects of one library (here the CI twin's) never reach another's functions
    other_keys = ClientKeys.new(other.lib)
    other_pp = PublicParams(other.lib, other_keys.public_params())
    other_db = ServerDb(other.lib, 1)
    with pytest.raises(SpiralpirError, match="different parameters"):
        other_db.answer_prepared(prepared)
    with pytest.raises(SpiralpirError, match="different parameters"):
        dbs[0].prepare(other_pp, other_keys.query(0))
    with pytest.raises(SpiralpirError, match="length"):
        dbs[0].prepare(pp, keys.query(0)[:-7])
    with prepared.use() as handle:
        prepared.close()  # deferred: the handle is in use
        assert prepared.closed
        resp = small.lib.take_buffer_then("server_answer_prepared", (dbs[1].h, handle), (None,))
        assert keys.decode(index, resp, RS) == record_of(datas[1], index)
    with pytest.raises(SpiralpirError, match="released"):
        dbs[0].answer_prepared(prepared)


VARIANT_BUILDS = ["stream_2e20x256b", "pack_2e14x100kb", "streampack_2e14x100kb"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name", VARIANT_BUILDS)
def test_every_variant_streams(name: str, tmp_path: Path, rng: random.Random) -> None:
    """The CI twins of the SpiralStream / SpiralPack / SpiralStreamPack builds (the demo is
    vanilla Spiral) through PirServer(blocks=...) and PirClient.stream over HTTP."""
    inst = builder.build(REPO / "generated" / name, show_progress=False, targets=["library"])
    build = Build(inst, ci=True)
    n, rs = build.num_records, build.record_size
    datas = [rng.randbytes(n * rs) for _ in range(3)]
    recs = [(database.Records(bytearray(blob), n, rs, f"random block {k}", "binary"), None)
            for k, blob in enumerate(datas)]
    srv = PirServer(build, blocks=recs, threads=2, progress=False, max_streams=2,
                    log=lambda _msg: None)
    port = _free_port()
    threading.Thread(target=run, args=(srv, "127.0.0.1", port), daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if requests.get(url + "/v1/health", timeout=5).ok:
                break
        except requests.ConnectionError:
            time.sleep(0.1)
    client = PirClient(url, build=build, state_path=tmp_path / "client.json")
    assert client.info["variant"] == build.params["variant"] == build.variant
    index = rng.randrange(n)
    result = client.stream(index)
    client.close()
    assert [b.record for b in result.blocks] == [
        blob[index * rs:(index + 1) * rs] for blob in datas]
    assert result.opens == 1
    packs = build.variant in ("pack", "stream_pack")
    for b in result.blocks:  # the packing stage runs exactly for the packing variants
        assert (b.seconds["server_packing"] > 0) == packs
