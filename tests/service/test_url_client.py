"""A client that knows only the server's URL: the server's published plan regenerates its build
exactly, and `spiralpir query` on a machine without generated/ and without a compiler or CMake
on PATH builds a client (the ziglang package's clang), caches it, and decrypts real records,
also with the AVX-512 and AVX2 kernels disabled.

Cost: the URL-only test compiles the runtime and the demo's client unit with zig (~45
CPU-seconds; where zig's cache is empty zig first builds its libc++, ~135 CPU-seconds more);
its later queries reuse the cached library, which holds the client's part of the C ABI alone.
"""

from __future__ import annotations

import filecmp
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from service_helpers import CLI, DEMO, ServerProcess
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service.client_cache import server_plan


def bare_env(tmp: Path) -> dict[str, str]:
    """An environment whose PATH has python and nothing else: no c++, g++, clang, cmake."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "python").exists():
        (bin_dir / "python").symlink_to(sys.executable)
    env = {k: v for k, v in os.environ.items()
           if k not in ("CXX", "CC", "SPIRALPIR_BUILD_DIR", "CMAKE_CXX_COMPILER_LAUNCHER")}
    env.update(PATH=str(bin_dir), SPIRALPIR_CACHE_DIR=str(tmp / "cache"),
               XDG_STATE_HOME=str(tmp / "state"))
    return env


def record_at(db: Path, index: int, size: int = 32) -> bytes:
    with open(db, "rb") as fh:
        fh.seek(index * size)
        return fh.read(size)


def test_published_plan_regenerates_the_servers_build(sample_server: ServerProcess,
                                                      tmp_path: Path) -> None:
    reply = requests.get(sample_server.url + "/v1/params", timeout=60)
    (tmp_path / "params.json").write_bytes(reply.content)
    subprocess.run([*CLI, "generate", "--params", "params.json", "--name", "demo", "--out",
                    "out"], cwd=tmp_path, check=True, capture_output=True, timeout=300)
    names = sorted(p.name for p in DEMO.iterdir() if p.is_file())  # not wasm/, compiled
    match, mismatch, errors = filecmp.cmpfiles(DEMO, tmp_path / "out" / "demo", names,
                                               shallow=False)
    assert (mismatch, errors) == ([], []), (mismatch, errors)
    assert sorted(match) == names


def test_query_with_the_url_alone(tmp_path: Path) -> None:
    sample = tmp_path / "sample.db"
    subprocess.run([*CLI, "sample-db", "--out", str(sample)], check=True, capture_output=True)
    srv = ServerProcess(["--build", str(DEMO), "--db", str(sample), "--no-cache",
                         "--threads", "1", "--quiet"], tmp_path / "server.log")
    client_dir = tmp_path / "client"  # no generated/ here
    client_dir.mkdir()
    env = bare_env(tmp_path)
    try:
        runs = [(7, {}), (4242, {"SPIRALPIR_DISABLE_AVX512": "1"}),
                (65535, {"SPIRALPIR_DISABLE_AVX512": "1", "SPIRALPIR_DISABLE_AVX2": "1"})]
        for k, (index, extra) in enumerate(runs):
            out = tmp_path / f"record{index}.bin"
            r = subprocess.run([*CLI, "query", "--server", srv.url, "--index", str(index),
                                "--out", str(out)], cwd=client_dir, env={**env, **extra},
                               capture_output=True, text=True, timeout=1500)
            assert r.returncode == 0, r.stderr
            assert out.read_bytes() == record_at(sample, index), (index, extra)
            built = "building a matching client" in r.stderr
            assert built == (k == 0), r.stderr  # built once, then taken from the cache
    finally:
        srv.stop()
    libs = list((tmp_path / "cache" / "clients").glob("demo-*/lib/libspiralpir_demo.so"))
    assert len(libs) == 1, libs
    assert not (client_dir / "generated").exists() and not (client_dir / "build").exists()
    check_client_only(libs[0])


CLIENT_ONLY_CHECK = """
import ctypes, sys
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service.binding import ClientKeys, Library
path = sys.argv[1]
dll = ctypes.CDLL(path)
print("server_answer", hasattr(dll, "spiralpir_demo_server_answer"))
print("shard_new", hasattr(dll, "spiralpir_demo_shard_new"))
lib = Library(path, "spiralpir_demo", client_only=True)
keys = ClientKeys.new(lib)
print("packed query bytes", len(keys.query_packed([5])))
print("plain query bytes", len(keys.query(5)))
try:
    lib.fn("server_answer")
except SpiralpirError as exc:
    print("error:", exc)
"""


def check_client_only(lib: Path) -> None:
    """The cached library holds the client's part of the C ABI alone, packed queries included,
    and the binding names what is missing when asked for a server function."""
    r = subprocess.run([sys.executable, "-c", CLIENT_ONLY_CHECK, str(lib)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:2] == ["server_answer False", "shard_new False"], r.stdout
    query_bytes = int(json.loads((DEMO / "params.json").read_text())["estimate"]["query_bytes"])
    assert lines[2:4] == [f"packed query bytes {query_bytes}",
                          f"plain query bytes {query_bytes}"], r.stdout
    assert lines[4] == (f"error: {lib} is a client library: it has no server function "
                        "spiralpir_demo_server_answer"), r.stdout


def demo_info() -> dict[str, object]:
    plan = json.loads((DEMO / "params.json").read_text())
    return {"api": 1, "build": "demo", "ci": False, "params": dict(plan["params"]),
            "plan": plan}


def test_a_plan_other_than_the_servers_parameters_is_refused() -> None:
    info = demo_info()
    assert server_plan(info)["params"] == info["params"]
    nu_1 = info["params"]["nu_1"]  # type: ignore[index]
    info["params"] = {**info["params"], "nu_1": nu_1 + 1}  # type: ignore[dict-item]
    with pytest.raises(SpiralpirError, match=f"nu_1: server {nu_1 + 1}, local {nu_1}"):
        server_plan(info)


def test_a_server_without_a_plan_is_a_clear_error() -> None:
    info = demo_info()
    del info["plan"]
    with pytest.raises(SpiralpirError, match="does not publish its plan"):
        server_plan(info)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_query_waits_for_a_server_that_is_starting(demo_inst: object, tmp_path: Path) -> None:
    """The query is started first; the server only later (its port free until then)."""
    sample = tmp_path / "sample.db"
    subprocess.run([*CLI, "sample-db", "--out", str(sample)], check=True, capture_output=True)
    port = free_port()
    query = subprocess.Popen([*CLI, "query", "--server", f"127.0.0.1:{port}", "--index", "5",
                              "--build", str(DEMO), "--state", str(tmp_path / "state.json"),
                              "--wait", "300"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    time.sleep(1.0)
    server = subprocess.Popen([*CLI, "serve", "--build", str(DEMO), "--db", str(sample),
                               "--no-cache", "--threads", "1", "--quiet", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        out, err = query.communicate(timeout=600)
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
    assert query.returncode == 0, err
    assert f"waiting for the server at http://127.0.0.1:{port} to start" in err
    assert out.split()[0] == record_at(sample, 5).hex()


def test_a_server_that_never_answers_is_one_line_after_the_wait(tmp_path: Path) -> None:
    with socket.socket() as s:  # accepts connections (the kernel's backlog), answers nothing
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        port = s.getsockname()[1]
        r = subprocess.run([*CLI, "query", "--server", f"127.0.0.1:{port}", "--index", "1",
                            "--wait", "3"], capture_output=True, text=True, timeout=120)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, r.stderr
    assert lines[-1] == (f"spiralpir: error: http://127.0.0.1:{port} accepted the connection "
                         "but did not answer within 3 s (still preparing its database?); give "
                         "--wait SECONDS to wait longer"), r.stderr
    assert lines[0].startswith("spiralpir: waiting for the server"), r.stderr


def test_the_listening_line_comes_when_the_server_answers(demo_inst: object,
                                                         tmp_path: Path) -> None:
    """`listening on URL` is the ready line: the port is bound before the database is
    prepared, but the line comes only once requests are answered."""
    sample = tmp_path / "sample.db"
    subprocess.run([*CLI, "sample-db", "--out", str(sample)], check=True, capture_output=True)
    srv = ServerProcess(["--build", str(DEMO), "--db", str(sample), "--no-cache", "--threads",
                         "1", "--quiet"], tmp_path / "server.log")
    try:
        r = requests.get(srv.url + "/v1/health", timeout=(1, 1))  # no waiting
        assert r.status_code == 200 and r.json()["status"] == "ok"
    finally:
        srv.stop()
