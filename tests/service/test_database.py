"""Database inputs: binary, directory and JSON Lines; padding; errors that name the record
and both shapes; the sample database."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
from pathlib import Path

import pytest
import xxhash
from service_helpers import CLI, DEMO
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service import sample_db as sampledb
from spiralpir.optimizer.service import store


def test_binary_records(tmp_path: Path, rng: random.Random) -> None:
    data = rng.randbytes(24 * 10)
    (tmp_path / "db.bin").write_bytes(data)
    recs = database.read_records(tmp_path / "db.bin", planned_size=32, record_size=24)
    assert (recs.num_records, recs.record_size) == (10, 24)
    assert recs.record(3) == data[72:96]
    fitted = database.fit_to_build(recs, 100, 32, "demo")
    assert fitted.record(3) == data[72:96] + bytes(8)
    with pytest.raises(SpiralpirError, match="not a multiple of the record size 7"):
        database.read_records(tmp_path / "db.bin", planned_size=32, record_size=7)


def test_variable_values_keep_their_length_and_are_never_cut(tmp_path: Path) -> None:
    lines = [json.dumps("héllo"), json.dumps({"hex": "00ff00"}), json.dumps({"base64": "AAE="}),
             "", json.dumps({"text": "x" * 15}), json.dumps("")]
    (tmp_path / "db.jsonl").write_text("\n".join(lines) + "\n")
    recs = database.read_records(tmp_path / "db.jsonl", planned_size=16)
    assert recs.num_records == 5 and recs.record_size == 16 and recs.framed
    # a 1-byte length, the value, zeros (FORMATS.md 5.2)
    assert recs.record(0) == b"\x06" + "héllo".encode() + bytes(9)
    assert recs.record(1) == b"\x03\x00\xff\x00" + bytes(12)
    assert recs.record(2) == b"\x02\x00\x01" + bytes(13)
    assert recs.record(3) == b"\x0f" + b"x" * 15
    assert recs.record(4) == bytes(16)
    (tmp_path / "long.jsonl").write_text(json.dumps("a") + "\n" + json.dumps("b" * 16) + "\n")
    with pytest.raises(SpiralpirError, match=r"record 1 \(line 2 of .*\) is 16 bytes, longer "
                       r"than the 15 bytes a 16-byte item holds beside the value's 1-byte length"):
        database.read_records(tmp_path / "long.jsonl", planned_size=16)
    (tmp_path / "bad.jsonl").write_text('{"oops": "1"}\n')
    with pytest.raises(SpiralpirError, match="line 1"):
        database.read_records(tmp_path / "bad.jsonl", planned_size=16)


def test_directory_of_values(tmp_path: Path) -> None:
    d = tmp_path / "values"
    d.mkdir()
    (d / "b.txt").write_bytes(b"second")
    (d / "a.txt").write_bytes(b"first")
    recs = database.read_records(d, planned_size=8)
    assert [recs.record(0), recs.record(1)] == [b"\x05first\0\0", b"\x06second\0"]
    (d / "c.txt").write_bytes(b"12345678")
    with pytest.raises(SpiralpirError, match=r"record 2 \(file .*/values/c\.txt\) is 8 bytes"):
        database.read_records(d, planned_size=8)


def test_shape_mismatch_names_both_shapes(tmp_path: Path) -> None:
    (tmp_path / "db.bin").write_bytes(bytes(64 * 5))
    recs = database.read_records(tmp_path / "db.bin", planned_size=32, record_size=64)
    with pytest.raises(SpiralpirError) as exc:
        database.fit_to_build(recs, 4, 32, "demo")
    msg = str(exc.value)
    assert "5 records x 64 bytes" in msg and "4 records x 32 bytes" in msg and "demo" in msg


def test_sample_db_is_deterministic(tmp_path: Path, rng: random.Random) -> None:
    path = sampledb.write_sample_db(tmp_path / "s.db")
    data = path.read_bytes()
    assert len(data) == sampledb.SAMPLE_RECORDS * sampledb.SAMPLE_RECORD_SIZE
    i = rng.randrange(sampledb.SAMPLE_RECORDS)
    assert data[32 * i : 32 * (i + 1)] == hashlib.sha256(i.to_bytes(8, "big")).digest()


@pytest.mark.parametrize("content, problem", [
    (b'"ok"\n"caf\xe9"\n', r"line 2 of .*bad\.jsonl: not valid UTF-8 \(byte 0xe9 at column 5\)"),
    (b'"ok"\n\xff\xfe\n', r"line 2 of .*: not valid UTF-8 \(byte 0xff at column 1\)"),
    (b'"\\ud800"\n', r"line 1 of .*: the string holds a lone surrogate \(U\+D800\)"),
    (b'{"text": "\\udfff"}\n', r"line 1 of .*: the string holds a lone surrogate \(U\+DFFF\)"),
    (b"1" * 5000 + b"\n", r"line 1 of .*: unreadable JSON value"),
    (b"[" * 100000 + b"\n", r"line 1 of .*: unreadable JSON value"),
    (b'{"hex": "0g"}\n', r"line 1 of .*: bad hex value"),
])
def test_bad_jsonl_is_one_error_naming_file_and_line(tmp_path: Path, content: bytes,
                                                    problem: str) -> None:
    (tmp_path / "bad.jsonl").write_bytes(content)
    with pytest.raises(SpiralpirError, match=problem) as exc:
        database.read_records(tmp_path / "bad.jsonl", planned_size=16)
    assert "\n" not in str(exc.value) and exc.value.__cause__ is None


def test_unreadable_files_are_named(tmp_path: Path) -> None:
    d = tmp_path / "dir.jsonl"
    d.mkdir()
    with pytest.raises(SpiralpirError, match=f"cannot read {d}"):
        database.read_records(d, planned_size=16, fmt="jsonl")


def test_bad_jsonl_through_the_cli_exits_2_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'"fine"\n"\xc3\x28"\n')
    proc = subprocess.run([*CLI, "serve", "--build", str(DEMO), "--ci", "--no-cache", "--db",
                           str(bad), "--port", "0"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert lines[-1] == (f"spiralpir: error: line 2 of {bad}: not valid UTF-8 (byte 0xc3 at "
                         "column 2)"), proc.stderr
    assert "Traceback" not in proc.stderr


def test_record_bounds(tmp_path: Path, rng: random.Random) -> None:
    data = rng.randbytes(8 * 5)
    (tmp_path / "db.bin").write_bytes(data)
    recs = database.read_records(tmp_path / "db.bin", planned_size=8)
    assert recs.record(4) == data[32:] and recs.record(0) == data[:8]
    for bad in (5, -1):
        with pytest.raises(SpiralpirError, match=r"out of range \[0, 5\)"):
            recs.record(bad)


def test_fingerprint_covers_the_shape_and_every_byte(rng: random.Random) -> None:
    data = bytearray(rng.randbytes(24 * 7))
    want = xxhash.xxh3_128(b"spiralpir-records\n7x24\n" + bytes(data)).digest()
    assert store.records_fingerprint(data, 7, 24) == want
    data[-1] ^= 1  # the last byte counts
    assert store.records_fingerprint(data, 7, 24) != want
    zeros = bytes(48)
    assert store.records_fingerprint(zeros, 2, 24) != store.records_fingerprint(zeros, 1, 48)


def test_fit_to_build_edges(tmp_path: Path) -> None:
    recs = database.Records(bytearray(b"abcdef"), 3, 2, "x", "binary")
    assert database.fit_to_build(recs, 3, 2, "b") is recs  # exactly the planned shape
    padded = database.fit_to_build(recs, 4, 3, "b")
    assert (padded.num_records, padded.record_size) == (3, 3)
    assert [padded.record(i) for i in range(3)] == [b"ab\0", b"cd\0", b"ef\0"]
    for records, size in ((2, 2), (3, 1)):  # one record too many, one byte too long
        with pytest.raises(SpiralpirError, match="planned for"):
            database.fit_to_build(recs, records, size, "b")


@pytest.mark.parametrize("content,needle", [
    (b"", "is empty"),
])
def test_binary_errors(tmp_path: Path, content: bytes, needle: str) -> None:
    (tmp_path / "db.bin").write_bytes(content)
    with pytest.raises(SpiralpirError, match=needle):
        database.read_records(tmp_path / "db.bin", planned_size=8)
    with pytest.raises(SpiralpirError, match="directory"):
        database.read_records(tmp_path, planned_size=8, fmt="binary")
    with pytest.raises(SpiralpirError, match="unknown database format"):
        database.read_records(tmp_path / "db.bin", planned_size=8, fmt="csv")


@pytest.mark.parametrize("line,needle", [
    ('{"base64": "AA=E"}', "bad base64"), ('{"base64": "AAE=!"}', "bad base64"),
    ('{"hex": "zz"}', "bad hex"), ("[1]", "JSON string"),
    ('{"text": 5}', "must be a string"), ('{"text": "a", "hex": "00"}', "one of"),
    ('{"blob": "00"}', "unknown key"),
])
def test_jsonl_value_errors(tmp_path: Path, line: str, needle: str) -> None:
    (tmp_path / "db.jsonl").write_text('"ok"\n\n' + line + "\n")
    with pytest.raises(SpiralpirError, match=needle) as exc:
        database.read_records(tmp_path / "db.jsonl", planned_size=8)
    assert "line 3" in str(exc.value)


def test_empty_variable_inputs(tmp_path: Path) -> None:
    (tmp_path / "db.jsonl").write_text("\n  \n")
    with pytest.raises(SpiralpirError, match="holds no records"):
        database.read_records(tmp_path / "db.jsonl", planned_size=8)
    (tmp_path / "db.jsonl").write_text('"abc"\n')
    with pytest.raises(SpiralpirError, match="exceeds the build's item size"):
        database.read_records(tmp_path / "db.jsonl", planned_size=8, record_size=9)
    recs = database.read_records(tmp_path / "db.jsonl", planned_size=8, record_size=4)
    assert (recs.num_records, recs.record_size, recs.record(0)) == (1, 4, b"\x03abc")
    whole = database.read_records(tmp_path / "db.jsonl", planned_size=8, record_size=8)
    assert whole.record(0) == b"\x03abc" + bytes(4)  # the item size itself is allowed
