"""Exact values: a database of values (JSON Lines, a directory) keeps each value's length, and a
private lookup returns exactly the value's bytes (trailing zeros, empty values and UTF-8
text included); a binary file of fixed-size records comes back record for record."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import requests
from service_helpers import CLI, DEMO, ServerProcess
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import value_frame

VALUES = ["https://example.com/a", "", "héllo wörld ✓", "x" * 31]
BINARY_VALUES = [bytes([0, 1, 0, 0]), bytes(3)]  # trailing zeros are part of the value


@pytest.mark.parametrize("item_size,width", [(1, 1), (2, 1), (256, 1), (257, 2), (65537, 2),
                                             (65538, 4)])
def test_length_field_width(item_size: int, width: int) -> None:
    # the width is the fewest of 1, 2, 4 bytes counting up to item_size - width
    assert value_frame.length_bytes(item_size) == width
    longest = item_size - width
    record = value_frame.frame(b"\x07" * longest, item_size)
    assert record[:width] == longest.to_bytes(width, "little") and len(record) == item_size
    assert value_frame.unframe(record, "r") == b"\x07" * longest
    with pytest.raises(SpiralpirError, match="does not fit"):
        value_frame.frame(b"\x07" * (longest + 1), item_size)


@pytest.mark.parametrize("longest", [0, 1, 255, 256, 65535, 65536])
def test_item_size_for_is_the_smallest_that_fits(longest: int) -> None:
    size = value_frame.item_size_for(longest)
    assert value_frame.capacity(size) >= longest
    assert size == 1 or value_frame.capacity(size - 1) < longest


def test_a_length_past_the_record_is_an_error() -> None:
    with pytest.raises(SpiralpirError, match="record 3: its length field says 9 bytes"):
        value_frame.unframe(b"\x09" + bytes(7), "record 3")


def test_query_returns_exact_values(tmp_path: Path) -> None:
    db = tmp_path / "values.jsonl"
    lines = [json.dumps(v) for v in VALUES] + [json.dumps({"hex": v.hex()})
                                                for v in BINARY_VALUES]
    db.write_text("\n".join(lines) + "\n", encoding="utf-8")
    srv = ServerProcess(["--build", str(DEMO), "--db", str(db), "--no-cache", "--threads", "1",
                         "--quiet"], tmp_path / "server.log")
    try:
        info = requests.get(srv.url + "/v1/params", timeout=60).json()
        assert info["values"] == "length-prefixed"
        expected = [v.encode() for v in VALUES] + BINARY_VALUES
        for index, want in enumerate(expected):
            out = tmp_path / f"v{index}.bin"
            base = [*CLI, "query", "--server", srv.url, "--index", str(index), "--build",
                    str(DEMO), "--state", str(tmp_path / "state.json")]
            r = subprocess.run([*base, "--out", str(out)], capture_output=True, text=True,
                               timeout=600)
            assert r.returncode == 0, r.stderr
            assert out.read_bytes() == want
            if index < len(VALUES):
                r = subprocess.run([*base, "--text"], capture_output=True, timeout=600)
                assert r.returncode == 0, r.stderr
                assert r.stdout == want + b"\n"
        r = subprocess.run([*base, "--index", "0", "--text"], capture_output=True, text=True,
                           timeout=600)  # the repeated --index is refused before any query
        assert r.returncode == 2
    finally:
        srv.stop()


def test_text_of_a_binary_record_is_one_line_error(sample_server: ServerProcess,
                                                    tmp_path: Path) -> None:
    # the sample database's records are SHA-256 digests: not UTF-8
    r = subprocess.run([*CLI, "query", "--server", sample_server.url, "--index", "0", "--build",
                        str(DEMO), "--state", str(tmp_path / "s.json"), "--text"],
                       capture_output=True, text=True, timeout=600)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, r.stderr
    assert lines[-1].startswith("spiralpir: error: the record is not UTF-8 text (byte 0x")
    assert lines[-1].endswith("print it in hex without --text")
    assert requests.get(sample_server.url + "/v1/params", timeout=60).json()["values"] == "fixed"
