"""Errors of the installed `spiralpir` command: one line on stderr, exit status 2, and found
before the command does its work (a query sent, a database preprocessed)."""

from __future__ import annotations

import signal
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from ux_helpers import DEMO, SPIRALPIR, closed_port, one_line_error, run


def test_console_script_is_installed() -> None:
    assert SPIRALPIR.is_file(), f"{SPIRALPIR}: pip install -e '.[test]' installs it"


def test_repeated_index_is_refused() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    line = one_line_error(run("query", "--server", url, "--index", "1", "--index", "2"))
    assert line.endswith("give one --index (several records: --index I,J,K)")


def test_query_out_into_missing_directory_fails_before_querying(tmp_path: Path) -> None:
    # the server URL is unreachable: an error about it would mean the query was attempted
    url = f"http://127.0.0.1:{closed_port()}"
    out = tmp_path / "missing" / "record.bin"
    line = one_line_error(run("query", "--server", url, "--index", "1", "--out", out))
    assert f"--out {out}: directory {out.parent} does not exist" in line


def test_query_out_that_is_a_directory(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    line = one_line_error(run("query", "--server", url, "--index", "1", "--out", tmp_path))
    assert "is a directory" in line


def test_calibrate_out_into_missing_directory(tmp_path: Path) -> None:
    out = tmp_path / "nope" / "profile.json"
    line = one_line_error(run("calibrate", "--out", out))
    assert f"directory {out.parent} does not exist" in line


def test_serve_port_in_use_fails_before_reading_the_database(tmp_path: Path) -> None:
    # the database does not exist: reaching it would give a different error
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        proc = run("serve", "--build", DEMO, "--db", tmp_path / "absent.bin", "--port", port)
    line = one_line_error(proc)
    assert f"cannot listen on 127.0.0.1:{port}: the port is in use" in line


@pytest.mark.parametrize("args", [
    ["query", "--index", "1"],                     # missing required option
    ["query", "--server", "http://x", "--index"],  # option without its value
    ["serve", "--build", "generated/demo", "--port", "eighty"],  # bad type
    ["nosuchcommand"],
])
def test_usage_errors_are_one_line(args: list[str]) -> None:
    line = one_line_error(run(*args))
    assert "--help" in line


def test_serve_refuses_a_binary_file_of_another_record_size(tmp_path: Path) -> None:
    # 101 records of 48 bytes: the demo build's 32-byte records do not divide the file (an
    # even count would: a binary file does not record its record size)
    db = tmp_path / "r48.bin"
    db.write_bytes(bytes(48 * 101))
    line = one_line_error(run("serve", "--build", DEMO, "--ci", "--no-cache", "--db", db,
                              "--port", "0"))
    assert f"{db} is 4848 bytes, not a multiple of the record size 32" in line


def test_serve_states_the_record_size_it_assumed(tmp_path: Path) -> None:
    db = tmp_path / "r.bin"
    db.write_bytes(bytes(32 * 10))
    proc = subprocess.Popen([str(SPIRALPIR), "serve", "--build", str(DEMO), "--ci", "--no-cache",
                             "--db", str(db), "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        serving = next((ln for ln in proc.stderr if ln.startswith("serving ")), "")
    finally:
        proc.kill()
        proc.wait()
    assert serving.startswith("serving 10 records x 32 bytes"), serving
    assert f"({db} read as 32-byte records, the build's record size; give --record-size" \
        in serving


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:8080", "http://", "http://host:port", "::"])
def test_server_url_that_is_not_http_is_refused(url: str) -> None:
    line = one_line_error(run("query", "--server", url, "--index", "1"))
    assert line.endswith(f"--server '{url}': expected a server URL such as http://127.0.0.1:8080")


def test_server_url_without_scheme_means_http() -> None:
    port = closed_port()
    line = one_line_error(run("query", "--server", f"127.0.0.1:{port}", "--index", "1",
                              "--wait", "0"))
    assert f"cannot reach http://127.0.0.1:{port}" in line


def serve_log(db: Path, tmp_path: Path, *extra: str) -> str:
    """Start serve (stderr to a file, as under a service manager), make two requests, stop it;
    its stderr."""
    log = tmp_path / "serve.log"
    with open(log, "w") as err:
        proc = subprocess.Popen([str(SPIRALPIR), "serve", "--build", str(DEMO), "--ci", "--db",
                                 str(db), "--port", "0", *extra], stdout=subprocess.PIPE,
                                stderr=err, text=True)
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().split()[-1]
            assert url.startswith("http://"), log.read_text()
            with urllib.request.urlopen(url + "/v1/health", timeout=30) as r:
                assert r.status == 200
            with pytest.raises(urllib.error.HTTPError):
                urllib.request.urlopen(url + "/v1/nope", timeout=30)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
    return log.read_text()


def test_serve_states_disk_use_and_logs_requests(tmp_path: Path) -> None:
    db = tmp_path / "r.bin"
    db.write_bytes(bytes(32 * 50))
    text = serve_log(db, tmp_path)
    store = tmp_path / "r.bin.demo_ci.spiralpir-db"
    writing = next(ln for ln in text.splitlines() if ln.startswith("writing "))
    assert writing.endswith(f" to {store} ({writing.split('(')[1]}")
    assert " free; --no-cache to skip)" in writing
    size, unit = writing.split()[1:3]
    # the stated size is the file's, to the digit shown
    scale = {"GB": 1e9, "MB": 1e6, "kB": 1e3}[unit]
    assert abs(float(size) - store.stat().st_size / scale) < 0.1
    assert text.index("writing ") < text.index("saved preprocessed database")
    lines = text.splitlines()
    assert any(ln.startswith("127.0.0.1 GET /v1/health 200 ") and ln.endswith(" s")
               for ln in lines), text
    assert any(ln.startswith("127.0.0.1 GET /v1/nope 404 ") for ln in lines), text


def test_serve_quiet_has_no_access_log(tmp_path: Path) -> None:
    db = tmp_path / "r.bin"
    db.write_bytes(bytes(32 * 50))
    text = serve_log(db, tmp_path, "--quiet", "--no-cache")
    assert "/v1/health" not in text and "/v1/nope" not in text
    assert "writing " not in text
