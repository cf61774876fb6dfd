"""Database inputs: binary, directory and JSON Lines; padding; errors that name the record
and both shapes; the sample database."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service import sample_db as sampledb


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


def test_variable_values_are_padded_never_cut(tmp_path: Path) -> None:
    lines = [json.dumps("héllo"), json.dumps({"hex": "00ff"}), json.dumps({"base64": "AAE="}),
             "", json.dumps({"text": "x" * 16})]
    (tmp_path / "db.jsonl").write_text("\n".join(lines) + "\n")
    recs = database.read_records(tmp_path / "db.jsonl", planned_size=16)
    assert recs.num_records == 4 and recs.record_size == 16
    assert recs.record(0) == "héllo".encode() + bytes(10)
    assert recs.record(1) == b"\x00\xff" + bytes(14)
    assert recs.record(2) == b"\x00\x01" + bytes(14)
    (tmp_path / "long.jsonl").write_text(json.dumps("a") + "\n" + json.dumps("b" * 17) + "\n")
    with pytest.raises(SpiralpirError, match=r"record 1 \(line 2 of .*\) is 17 bytes"):
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
    assert [recs.record(0), recs.record(1)] == [b"first\0\0\0", b"second\0\0"]
    (d / "c.txt").write_bytes(b"123456789")
    with pytest.raises(SpiralpirError, match="record 2 \\(file c.txt\\) is 9 bytes"):
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


def test_record_bounds(tmp_path: Path, rng: random.Random) -> None:
    data = rng.randbytes(8 * 5)
    (tmp_path / "db.bin").write_bytes(data)
    recs = database.read_records(tmp_path / "db.bin", planned_size=8)
    assert recs.record(4) == data[32:] and recs.record(0) == data[:8]
    for bad in (5, -1):
        with pytest.raises(SpiralpirError, match=r"out of range \[0, 5\)"):
            recs.record(bad)


def test_fingerprint_covers_the_shape_and_every_byte(tmp_path: Path, rng: random.Random) -> None:
    data = bytearray(rng.randbytes(24 * 7))
    recs = database.Records(data, 7, 24, "x", "binary")
    want = hashlib.sha256(b"7x24\n" + bytes(data)).hexdigest()
    assert recs.fingerprint() == want
    data[-1] ^= 1  # the last byte counts
    assert database.Records(data, 7, 24, "x", "binary").fingerprint() != want
    assert database.Records(bytes(48), 2, 24, "x", "binary").fingerprint() != (
        database.Records(bytes(48), 1, 48, "x", "binary").fingerprint())


def test_fit_to_build_edges(tmp_path: Path) -> None:
    recs = database.Records(bytearray(b"abcdef"), 3, 2, "x", "binary")
    assert database.fit_to_build(recs, 3, 2, "b") is recs  # exactly the planned shape
    padded = database.fit_to_build(recs, 4, 3, "b")
    assert (padded.num_records, padded.record_size) == (3, 3)
    assert [padded.record(i) for i in range(3)] == [b"ab\0", b"cd\0", b"ef\0"]
    for records, size in ((2, 2), (3, 1)):  # one record too many, one byte too long
        with pytest.raises(SpiralpirError, match="planned for"):
            database.fit_to_build(recs, records, size, "b")


def test_preprocessed_cache_metadata(tmp_path: Path) -> None:
    pre = tmp_path / "db.bin.demo.spiralpir-db"
    assert database.default_preprocessed_path(tmp_path / "db.bin", "demo") == pre
    meta = {"fingerprint": "ab", "params_hash": "cd"}
    assert not database.cache_matches(pre, meta)  # nothing there
    pre.write_bytes(b"x")
    assert not database.cache_matches(pre, meta)  # no side file
    database.write_cache_meta(pre, meta)
    assert database.cache_matches(pre, meta)
    assert not database.cache_matches(pre, {**meta, "fingerprint": "other"})
    Path(str(pre) + ".json").write_text("{broken")
    assert not database.cache_matches(pre, meta)
    database.write_cache_meta(pre, meta)
    pre.unlink()  # the side file without the database it describes
    assert not database.cache_matches(pre, meta)
    pre.write_bytes(b"x")
    assert sorted(p.name for p in tmp_path.iterdir()) == [pre.name, pre.name + ".json"]


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
    assert (recs.num_records, recs.record_size, recs.record(0)) == (1, 4, b"abc\0")
    whole = database.read_records(tmp_path / "db.jsonl", planned_size=8, record_size=8)
    assert whole.record(0) == b"abc" + bytes(5)  # the item size itself is allowed
