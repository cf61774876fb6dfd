"""The server's bounds under load and hostile connections, with real `spiralpir serve`
processes: an admitted query survives the eviction of its client; a full queue or full upload
slots answer 503 with Retry-After (and the Python client waits and resends); a slowloris batch
(heads or bodies trickled a byte a second) is cut within the timeouts and the server's
resident memory comes back near its baseline."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from raw_http import HeldRequest, address, head, health, wait_health
from service_helpers import DEMO, ServerProcess
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.service import http_api as api
from spiralpir.optimizer.service import sample_db as sampledb
from spiralpir.optimizer.service.binding import Build, ClientKeys
from spiralpir.optimizer.service.http_server import LINGER_SECONDS, TRIM_PERIOD
from spiralpir.optimizer.service.pir_client import PirClient
from spiralpir.optimizer.service.pir_server import resident_bytes

MIB = 1 << 20


@pytest.fixture(scope="module")
def build(demo_inst: builder.Instance) -> Build:
    return Build(demo_inst)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("limits") / "sample.db"
    sampledb.write_sample_db(db)
    return db


def serve(sample: Path, log: Path, *args: str) -> ServerProcess:
    return ServerProcess(["--build", str(DEMO), "--db", str(sample), "--no-cache", "--threads",
                          "1", *args], log)


@pytest.fixture(scope="module")
def crowded(demo_inst: builder.Instance, sample: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One client kept, one worker and one queued request: 2 admitted at most."""
    srv = serve(sample, tmp_path_factory.mktemp("crowded") / "server.log", "--max-clients", "1",
                "--workers", "1", "--max-queue", "1", "--max-uploads", "8")
    yield srv
    srv.stop()


def setup(url: str, keys: ClientKeys) -> str:
    r = requests.post(url + api.SETUP, data=keys.public_params(), timeout=120)
    assert r.status_code == 200, r.text
    return str(r.json()["client_id"])


def query(url: str, keys: ClientKeys, cid: str, build: Build, rng: random.Random) -> None:
    """One query, checked (the client is then no longer new: a later setup may evict it)."""
    index = rng.randrange(sampledb.SAMPLE_RECORDS)
    r = requests.post(url + api.QUERY, data=keys.query(index), timeout=120,
                      headers={api.CLIENT_HEADER: cid})
    assert r.status_code == 200, r.text
    assert keys.decode(index, r.content, build.record_size) == sampledb.sample_record(index)


def test_an_admitted_query_survives_the_eviction_of_its_client(crowded: ServerProcess,
                                                               build: Build,
                                                               rng: random.Random) -> None:
    a, b = ClientKeys.new(build.lib), ClientKeys.new(build.lib)
    cid_a = setup(crowded.url, a)
    index = rng.randrange(sampledb.SAMPLE_RECORDS)
    held = HeldRequest(crowded.url, "POST", api.QUERY, a.query(index), {api.CLIENT_HEADER: cid_a})
    wait_health(crowded.url, "admitted", 1)  # admitted, its body not sent yet
    cid_b = setup(crowded.url, b)  # --max-clients 1: a (no longer new) is evicted
    assert health(crowded.url)["clients"] == 1
    late = requests.post(crowded.url + api.QUERY, data=a.query(0), timeout=120,
                         headers={api.CLIENT_HEADER: cid_a})
    assert late.status_code == 404 and "setup" in late.json()["error"], late.text
    reply = held.finish()
    assert reply.status == 200, reply.body[:300]
    assert a.decode(index, reply.body, build.record_size) == sampledb.sample_record(index)
    query(crowded.url, b, cid_b, build, rng)  # leave a client that may be evicted


def test_a_new_client_keeps_its_place_until_it_queried(crowded: ServerProcess, build: Build,
                                                       rng: random.Random) -> None:
    """With more clients than places, a setup waits (503) rather than evict a client that set
    up a moment ago and has not queried yet; once that client queried, it may be evicted."""
    b, c = ClientKeys.new(build.lib), ClientKeys.new(build.lib)
    cid_b = setup(crowded.url, b)
    r = requests.post(crowded.url + api.SETUP, data=c.public_params(), timeout=120)
    assert r.status_code == 503 and "not queried yet" in r.json()["error"], r.text
    assert api.parse_decimal(r.headers["Retry-After"]) is not None
    query(crowded.url, b, cid_b, build, rng)
    cid_c = setup(crowded.url, c)
    query(crowded.url, c, cid_c, build, rng)  # leave a client that may be evicted


def test_a_full_queue_answers_503_and_the_client_waits(crowded: ServerProcess, build: Build,
                                                      tmp_path: Path, rng: random.Random) -> None:
    keys = ClientKeys.new(build.lib)
    pp = keys.public_params()
    query(crowded.url, keys, setup(crowded.url, keys), build, rng)
    held = [HeldRequest(crowded.url, "POST", api.SETUP, pp) for _ in range(2)]  # known: no eviction
    wait_health(crowded.url, "admitted", 2)
    r = requests.post(crowded.url + api.SETUP, data=pp, timeout=120)
    assert r.status_code == 503, r.text
    assert "queued or running" in r.json()["error"]
    retry_after = api.parse_decimal(r.headers["Retry-After"])
    assert retry_after is not None and 1 <= retry_after <= 60
    before = health(crowded.url)
    assert before["busy"] >= 1 and before["admitted"] == before["max_admitted"] == 2

    # a client meeting the full queue waits and resends: free the queue while it waits
    client = PirClient(crowded.url, build=build, state_path=tmp_path / "client.json")
    index = rng.randrange(sampledb.SAMPLE_RECORDS)
    result: list[bytes] = []
    t = threading.Thread(target=lambda: result.append(client.query(index).record))
    t.start()
    deadline = time.monotonic() + 60
    while health(crowded.url)["busy"] == before["busy"]:
        assert time.monotonic() < deadline, "the client never met the full queue"
        time.sleep(0.05)
    for h in held:
        assert h.finish().status == 200
    t.join(timeout=300)
    client.close()
    assert result == [sampledb.sample_record(index)]
    assert client.retries["busy"] >= 1


@pytest.fixture(scope="module")
def guarded(demo_inst: builder.Instance, sample: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Short timeouts (head 2 s, body 3 s) and 4 upload slots."""
    srv = serve(sample, tmp_path_factory.mktemp("guarded") / "server.log", "--max-uploads",
                "4", "--header-timeout", "2", "--body-timeout", "3")
    yield srv
    srv.stop()


HEADER_TIMEOUT, BODY_TIMEOUT, UPLOADS = 2.0, 3.0, 4


def test_upload_slots_are_bounded(guarded: ServerProcess, build: Build) -> None:
    pp = ClientKeys.new(build.lib).public_params()
    held = [HeldRequest(guarded.url, "POST", api.SETUP, pp, sent=1000) for _ in range(UPLOADS)]
    wait_health(guarded.url, "uploads", UPLOADS)
    r = requests.post(guarded.url + api.SETUP, data=pp, timeout=120)
    assert r.status_code == 503 and "bodies are being received" in r.json()["error"], r.text
    assert api.parse_decimal(r.headers["Retry-After"]) is not None
    for h in held:
        h.close()
    wait_health(guarded.url, "uploads", 0)


async def slow_connection(url: str, data: bytes, first: int) -> tuple[float, int | None]:
    """Send data[:first] at once, then a byte a second until the server closes; the seconds
    from connecting to the close, and the reply's status if one came."""
    host, port = address(url)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    reader, writer = await asyncio.open_connection(host, port)
    received = bytearray()

    async def read() -> None:
        try:
            while chunk := await reader.read(1 << 16):
                received.extend(chunk)
        except OSError:
            pass

    reading = asyncio.create_task(read())
    try:
        writer.write(data[:first])
        await writer.drain()
        for k in range(first, len(data)):
            if reading.done():
                break
            writer.write(data[k:k + 1])
            await writer.drain()
            await asyncio.wait([reading], timeout=1.0)
    except OSError:
        pass
    await reading
    closed = loop.time() - t0
    writer.close()
    status = int(received.split()[1]) if received.startswith(b"HTTP/1.") else None
    return closed, status


async def slowloris(url: str, pp: bytes, count: int) -> list[tuple[str, float, int | None]]:
    """`count` heads trickled and `count` bodies trickled after most of a setup body."""
    trickled_head = head("GET", api.HEALTH)[:-2] + b"X-Slow: " + b"a" * 120 + b"\r\n\r\n"
    setup_head = head("POST", api.SETUP, body_bytes=len(pp))
    heads = [slow_connection(url, trickled_head, 20) for _ in range(count)]
    bodies = [slow_connection(url, setup_head + pp, len(setup_head) + len(pp) - 100)
              for _ in range(count)]
    out = await asyncio.wait_for(asyncio.gather(*heads, *bodies), timeout=120)
    return [("head" if k < count else "body", s, st) for k, (s, st) in enumerate(out)]


def idle_rss(pid: int) -> int:
    time.sleep(TRIM_PERIOD + 2)  # the server returns freed memory once idle
    return resident_bytes(pid)


def test_slowloris_is_cut_off_and_memory_returns(guarded: ServerProcess, build: Build,
                                                 tmp_path: Path, rng: random.Random) -> None:
    url, pid = guarded.url, guarded.proc.pid
    client = PirClient(url, build=build, state_path=tmp_path / "client.json")
    index = rng.randrange(sampledb.SAMPLE_RECORDS)
    assert client.query(index).record == sampledb.sample_record(index)  # warm up
    pp = ClientKeys.new(build.lib).public_params()
    baseline = idle_rss(pid)
    cut_within = BODY_TIMEOUT + LINGER_SECONDS + 5.0  # + slack for a loaded machine
    for rnd in range(2):
        peak = [baseline]
        sampling = threading.Event()

        def sample_rss(peak: list[int] = peak, sampling: threading.Event = sampling) -> None:
            while not sampling.wait(0.1):
                peak[0] = max(peak[0], resident_bytes(pid))

        sampler = threading.Thread(target=sample_rss)
        sampler.start()
        t0 = time.monotonic()
        try:
            conns = asyncio.run(slowloris(url, pp, 100))
        finally:
            sampling.set()
            sampler.join()
        took = time.monotonic() - t0
        after = idle_rss(pid)
        worst = {kind: max(s for k, s, _ in conns if k == kind) for kind in ("head", "body")}
        statuses = sorted({str(st) for _, _, st in conns})
        print(f"round {rnd}: {len(conns)} slow connections closed in {took:.1f} s (slowest "
              f"head {worst['head']:.1f} s, body {worst['body']:.1f} s; replies {statuses}); "
              f"server RSS baseline {baseline / MIB:.0f} MiB, peak {peak[0] / MIB:.0f} MiB, "
              f"after {after / MIB:.0f} MiB")
        assert worst["head"] <= HEADER_TIMEOUT + 5.0, worst
        assert worst["body"] <= cut_within, worst
        # bodies past the upload slots are refused at once; the others time out
        assert {st for k, _, st in conns if k == "body"} <= {408, 503, None}, statuses
        # an unbounded server holds 100 x 788 KB of bodies here
        assert peak[0] - baseline <= 64 * MIB
        assert after - baseline <= 16 * MIB
    h = health(url)
    assert h["timeouts"] >= 2 * UPLOADS - 2 and h["uploads"] == 0 and h["admitted"] == 0, h
    assert client.query(index).record == sampledb.sample_record(index)
    client.close()
