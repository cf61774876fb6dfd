"""The client's state file is checked when read: `spiralpir query` with a state file that is not
a client state of the server's build, or whose client id is not the id of its keys, stops with
a one-line error naming the file (exit 2) and prints no record."""

from __future__ import annotations

import base64
import json
import random
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from service_helpers import CLI, DEMO, ServerProcess
from spiralpir.optimizer.service import sample_db as sampledb


def query(url: str, state: Path, index: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "query", "--server", url, "--index", str(index), "--state",
                           str(state), "--build", str(DEMO)],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def good_state(sample_server: ServerProcess, tmp_path_factory: pytest.TempPathFactory,
               seeded: Callable[[str], random.Random]) -> dict[str, Any]:
    """A real client's state, after one correct query."""
    state = tmp_path_factory.mktemp("good") / "client.json"
    index = seeded("good_state").randrange(sampledb.SAMPLE_RECORDS)
    proc = query(sample_server.url, state, index)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == sampledb.sample_record(index).hex()
    return dict(json.loads(state.read_text()))


def edited(good: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = dict(good)
    for key, value in changes.items():
        if value is ...:
            del out[key]
        else:
            out[key] = value
    return out


def other_client_id(sample_server: ServerProcess, tmp_path: Path) -> str:
    """The id of another client (registered with the server too)."""
    state = tmp_path / "other.json"
    assert query(sample_server.url, state, 0).returncode == 0
    return str(json.loads(state.read_text())["client_id"])


CASES: dict[str, tuple[Any, str]] = {
    "list": ([], "expected a JSON object, found list"),
    "null": (None, "expected a JSON object, found null"),
    "string": ("x", "expected a JSON object, found str"),
    "no client_state": ("drop", "'client_state' is missing"),
    "client_state null": ("null", "'client_state' is missing"),
    "client_state a number": (5, "'client_state' is a JSON int, not a string"),
    "client_state not base64": ("@@not base64@@", "'client_state' is not base64"),
    "client_state non-ASCII": ("ünïcode", "'client_state' is not base64"),
    "client_state not a client": (base64.b64encode(b"x" * 64).decode(),
                                  "'client_state' is not a client of build 'demo'"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_state_files_are_one_line_errors(case: str, sample_server: ServerProcess,
                                             good_state: dict[str, Any], tmp_path: Path) -> None:
    value, needle = CASES[case]
    if case.startswith("client_state"):
        doc: Any = edited(good_state, client_state=None if value == "null" else value)
    elif value == "drop":
        doc = edited(good_state, client_state=...)
    else:
        doc = value
    state = tmp_path / "bad.json"
    state.write_text(json.dumps(doc))
    proc = query(sample_server.url, state, 1)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert f"client state {state}: {needle}" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and not proc.stdout, proc.stderr


def test_unreadable_state_files(sample_server: ServerProcess, tmp_path: Path) -> None:
    for name, data in (("not-json.json", b"{bad"), ("binary.json", b"\xff\xfe\x00garbage")):
        state = tmp_path / name
        state.write_bytes(data)
        proc = query(sample_server.url, state, 1)
        assert proc.returncode == 2 and f"client state {state}: not JSON" in proc.stderr
        assert proc.stderr.count("\n") == 1, proc.stderr
    proc = query(sample_server.url, tmp_path, 1)  # a directory
    assert proc.returncode == 2 and "is a directory" in proc.stderr, proc.stderr


def test_a_client_id_not_of_its_keys_is_refused(sample_server: ServerProcess,
                                                good_state: dict[str, Any],
                                                tmp_path: Path) -> None:
    """Another registered client's id with our keys would get answers computed with the other
    client's parameters: garbage decoded as a record. Refused before any query."""
    for cid in (other_client_id(sample_server, tmp_path), "0" * 32, 7):
        state = tmp_path / "mixed.json"
        state.write_text(json.dumps(edited(good_state, client_id=cid)))
        proc = query(sample_server.url, state, 1)
        assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
        assert "'client_id'" in proc.stderr and "is not the id of the keys" in proc.stderr
        assert not proc.stdout and proc.stderr.count("\n") == 1, proc.stderr
