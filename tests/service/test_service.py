"""The product path with real processes: `spiralpir serve` on a free loopback port, real
`spiralpir query` clients, restart on the saved preprocessed file, and hostile input."""

from __future__ import annotations

import json
import random
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from service_helpers import CLI, DEMO, ServerProcess
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.models.parallel import wall_seconds
from spiralpir.optimizer.models.profile import Profile
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.service import sample_db as sampledb
from spiralpir.optimizer.service.binding import Build, ClientKeys
from spiralpir.optimizer.service.http_api import CLIENT_HEADER


def serve_sample(db: Path, pre: Path, log: Path) -> ServerProcess:
    return ServerProcess(["--build", str(DEMO), "--db", str(db), "--threads", "2",
                          "--preprocessed", str(pre)], log)


@pytest.fixture(scope="module")
def inst(demo_inst: builder.Instance) -> builder.Instance:
    return demo_inst


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("service")
    sampledb.write_sample_db(d / "sample.db")
    return d


@pytest.fixture(scope="module")
def server(inst: builder.Instance, workdir: Path) -> Iterator[ServerProcess]:
    srv = serve_sample(workdir / "sample.db", workdir / "sample.pre", workdir / "server1.log")
    yield srv
    srv.stop()


def run_query(url: str, index: int, state: Path, out: Path) -> dict:
    proc = subprocess.run(
        [*CLI, "query", "--server", url, "--index", str(index), "--state", str(state),
         "--out", str(out), "--json"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_private_queries_with_real_clients(server: ServerProcess, workdir: Path,
                                           rng: random.Random) -> None:
    state = workdir / "client-a.json"
    for k, index in enumerate([rng.randrange(sampledb.SAMPLE_RECORDS) for _ in range(3)]):
        out = workdir / f"rec{k}.bin"
        report = run_query(server.url, index, state, out)
        assert out.read_bytes() == sampledb.sample_record(index)
        assert bytes.fromhex(report["record_hex"]) == sampledb.sample_record(index)
        # public parameters go up once per client state, then never again
        assert (report["public_params_bytes_uploaded"] > 0) == (k == 0)
        assert report["query_bytes"] > 0 and report["response_bytes"] > 0
    assert state.stat().st_mode & 0o077 == 0, "client state must not be world-readable"


def test_concurrent_clients(server: ServerProcess, workdir: Path, rng: random.Random) -> None:
    indices = [rng.randrange(sampledb.SAMPLE_RECORDS) for _ in range(3)]
    procs = []
    for k, index in enumerate(indices):
        cmd = [*CLI, "query", "--server", server.url, "--index", str(index),
               "--state", str(workdir / f"conc{k}.json"), "--out", str(workdir / f"conc{k}.bin")]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      text=True))
    for k, (p, index) in enumerate(zip(procs, indices, strict=True)):
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        assert (workdir / f"conc{k}.bin").read_bytes() == sampledb.sample_record(index)


def test_hostile_input_gets_4xx_and_server_survives(server: ServerProcess,
                                                     inst: builder.Instance,
                                                     rng: random.Random) -> None:
    full = Build(inst)
    twin = Build(inst, ci=True)  # same build, different parameters (a foreign client)
    keys = ClientKeys.new(full.lib)
    foreign = ClientKeys.new(twin.lib)
    url = server.url
    pp = keys.public_params()
    r = requests.post(url + "/v1/setup", data=pp, timeout=120)
    assert r.status_code == 200, r.text
    cid = r.json()["client_id"]
    index = rng.randrange(sampledb.SAMPLE_RECORDS)
    query = keys.query(index)
    hdr = {CLIENT_HEADER: cid}

    def post(data: bytes, headers: dict | None = None) -> requests.Response:
        return requests.post(url + "/v1/query", data=data, headers=headers, timeout=120)

    cases = {
        "truncated": (post(query[: len(query) // 2], hdr), 400),
        "oversized": (post(query + bytes(100_000), hdr), 413),
        "garbage": (post(bytes(len(query)), hdr), 400),
        "flipped header": (post(b"XXXX" + query[4:], hdr), 400),
        "foreign params": (post(foreign.query(0), hdr), 400),
        "no client id": (post(query), 400),
        "unknown client": (post(query, {CLIENT_HEADER: "0" * 32}), 404),
        "empty": (post(b"", hdr), 400),
        "foreign setup": (requests.post(url + "/v1/setup", data=foreign.public_params(),
                                        timeout=120), 400),
        "truncated setup": (requests.post(url + "/v1/setup", data=pp[: len(pp) // 2],
                                          timeout=120), 400),
    }
    for what, (resp, status) in cases.items():
        assert resp.status_code == status, (what, resp.status_code, resp.text)
        assert resp.json()["error"], what
    assert requests.get(url + "/v1/health", timeout=30).json()["status"] == "ok"
    # and the server still answers correctly
    resp = post(query, hdr)
    assert resp.status_code == 200, resp.text
    assert keys.decode(index, resp.content, full.record_size) == sampledb.sample_record(index)
    info = requests.get(url + "/v1/params", timeout=30).json()
    assert info["build"] == "demo" and info["num_records"] == sampledb.SAMPLE_RECORDS
    assert info["sizes"]["query_bytes"] == len(query)
    # the active profile's estimate (the shipped one under the tests) at the server's threads
    est = info["estimate"]
    assert est["profile"] == Profile.shipped().describe() and est["threads"] == 2
    demo = Parameters.from_literal(json.loads((DEMO / "params.json").read_text())["params"])
    assert est["server_seconds"] == pytest.approx(wall_seconds(demo, Profile.shipped(), 2))


def test_restart_maps_the_saved_preprocessed_file(server: ServerProcess, workdir: Path,
                                                  rng: random.Random) -> None:
    server.stop()
    assert (workdir / "sample.pre").is_file()
    again = serve_sample(workdir / "sample.db", workdir / "sample.pre", workdir / "server2.log")
    try:
        assert "mapped preprocessed database" in again.log.read_text()
        index = rng.randrange(sampledb.SAMPLE_RECORDS)
        out = workdir / "after-restart.bin"
        # the old client state: its id is unknown to the new process, so it re-uploads
        report = run_query(again.url, index, workdir / "client-a.json", out)
        assert out.read_bytes() == sampledb.sample_record(index)
        assert report["public_params_bytes_uploaded"] > 0
    finally:
        again.stop()


def test_serve_rejects_wrong_shapes_and_long_values(inst: builder.Instance,
                                                   workdir: Path) -> None:
    too_many = workdir / "too-many.db"
    sampledb.write_sample_db(too_many, sampledb.SAMPLE_RECORDS + 1)
    long_value = workdir / "long.jsonl"
    long_value.write_text('"short"\n' + json.dumps("x" * 33) + "\n")
    for db, needle in ((too_many, "65537 records x 32 bytes"), (long_value, "record 1")):
        proc = subprocess.run([*CLI, "serve", "--build", str(DEMO), "--db", str(db), "--port",
                               "0", "--no-cache"], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2, proc.stderr
        assert needle in proc.stderr, proc.stderr
        assert proc.stderr.count("\n") <= 2, "one-line error, no traceback"


def test_python_api_in_process(inst: builder.Instance, tmp_path: Path,
                               rng: random.Random) -> None:
    """The importable API: PirServer served from a thread, PirClient against it."""
    import socket
    import threading

    from spiralpir.optimizer.service.http_server import run
    from spiralpir.optimizer.service.pir_client import PirClient
    from spiralpir.optimizer.service.pir_server import PirServer

    build = Build(inst)
    sampledb.write_sample_db(tmp_path / "s.db")
    srv = PirServer(build, db_path=tmp_path / "s.db", threads=2, progress=False,
                    preprocessed=tmp_path / "s.pre")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    threading.Thread(target=run, args=(srv, "127.0.0.1", port), daemon=True).start()
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/v1/health", timeout=5).ok:
                break
        except requests.ConnectionError:
            time.sleep(0.1)
    client = PirClient(f"http://127.0.0.1:{port}", build=build, state_path=tmp_path / "c.json")
    for index in rng.sample(range(sampledb.SAMPLE_RECORDS), 2):
        assert client.query(index).record == sampledb.sample_record(index)
    client.close()


def test_shorter_records_are_returned_at_their_size(tmp_path: Path, rng: random.Random) -> None:
    """`serve --record-size 20` of a file of 20-byte records on a 32-byte build: the server
    reports 20-byte records and the client returns each record's 20 bytes, not the padding."""
    from spiralpir.optimizer.service.pir_client import PirClient

    rs, n = 20, 300
    data = rng.randbytes(rs * n)
    (tmp_path / "short.bin").write_bytes(data)
    srv = ServerProcess(["--build", str(DEMO), "--db", str(tmp_path / "short.bin"),
                         "--record-size", str(rs), "--no-cache"], tmp_path / "server.log")
    try:
        assert requests.get(srv.url + "/v1/params", timeout=30).json()["record_size"] == rs
        client = PirClient(srv.url, build=Build(builder.build(DEMO, show_progress=False)),
                           state_path=tmp_path / "c.json")
        for i in (0, n - 1, rng.randrange(n)):
            assert client.query(i).record == data[i * rs:(i + 1) * rs]
        client.close()
    finally:
        srv.stop()
