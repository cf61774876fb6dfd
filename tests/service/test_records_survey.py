"""Surveying a database (count and longest value, nothing kept) and the errors that list
over-long values, checked against the inputs' own shapes written here: the survey agrees with
reading the same data, the first five over-long values are named and the rest counted. Values
of a JSON Lines or directory database are stored with their length (FORMATS.md §5.2), spelled
out independently here by `framed`."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import records


def framed(value: bytes, item_size: int) -> bytes:
    """The stored record: a little-endian length of the fewest of 1, 2, 4 bytes that counts up
    to what the item holds beside it, the value, zeros."""
    width = next(w for w in (1, 2, 4) if item_size - w < 256 ** w)
    return len(value).to_bytes(width, "little") + value + bytes(item_size - width - len(value))


def _jsonl(path: Path, values: list[bytes]) -> Path:
    path.write_text("".join(json.dumps({"hex": v.hex()}) + "\n" for v in values))
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".JSONL", ".ndjson", ".NdJson"])
def test_json_lines_by_suffix(tmp_path: Path, suffix: str) -> None:
    path = _jsonl(tmp_path / f"db{suffix}", [b"ab", b"c"])
    assert records.detect_format(path) == "jsonl"
    recs = records.read_records(path, planned_size=4)
    assert (recs.fmt, recs.num_records, recs.record(1)) == ("jsonl", 2, b"\x01c\0\0")


def test_formats_by_path(tmp_path: Path) -> None:
    (tmp_path / "db.json").write_bytes(b"x")
    assert records.detect_format(tmp_path / "db.json") == "binary"
    assert records.detect_format(tmp_path) == "dir"
    with pytest.raises(SpiralpirError, match=f"no such database: {tmp_path / 'gone'}"):
        records.survey(tmp_path / "gone")


def test_survey_counts_and_measures_like_reading(tmp_path: Path, rng: random.Random) -> None:
    values = [rng.randbytes(rng.randrange(0, 40)) for _ in range(rng.randrange(5, 30))]
    values[rng.randrange(len(values))] = rng.randbytes(41)  # one longest value, known
    path = _jsonl(tmp_path / "db.jsonl", values)
    got = records.survey(path)
    assert (got.num_records, got.max_size, got.fmt, got.item_size) == (len(values), 41, "jsonl",
                                                                        42)
    recs = records.read_records(path, planned_size=42)
    for i, v in enumerate(values):
        assert recs.record(i) == framed(v, 42)
    # an item that holds the longest value beside its length is fine; one byte less names it
    assert records.survey(path, 42).max_size == 41
    with pytest.raises(SpiralpirError, match=r"is 41 bytes, longer than the 40 bytes a 41-byte "
                       r"item holds beside the value's 1-byte length"):
        records.survey(path, 41)


def test_a_zero_record_size_is_refused_for_values_too(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "db.jsonl", [b"a", b"", b"bc"])
    with pytest.raises(SpiralpirError, match=r"^--record-size must be >= 1$"):
        records.survey(path, 0)


def test_survey_of_a_directory_and_a_binary_file(tmp_path: Path) -> None:
    d = tmp_path / "values"
    (d / "sub").mkdir(parents=True)
    (d / "a").write_bytes(b"12345")
    (d / "sub" / "b").write_bytes(b"1234567")
    (d / "c").write_bytes(b"")
    got = records.survey(d)
    assert (got.num_records, got.max_size, got.fmt, got.item_size) == (3, 7, "dir", 8)
    (tmp_path / "db.bin").write_bytes(bytes(12 * 7))
    assert records.survey(tmp_path / "db.bin", 12) == records.Survey(7, 12, "binary", 12)
    assert records.survey(tmp_path / "db.bin", 1).num_records == 84
    with pytest.raises(SpiralpirError, match="does not record its record size"):
        records.survey(tmp_path / "db.bin")
    with pytest.raises(SpiralpirError, match="--record-size must be >= 1"):
        records.survey(tmp_path / "db.bin", 0)
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(SpiralpirError, match="holds no records"):
        records.survey(tmp_path / "empty.jsonl")


NAMED = 5  # an error names the first five over-long values (as `spiralpir generate` shows)


@pytest.mark.parametrize("over", [2, 5, 6, 12])
def test_every_over_long_value_is_counted_the_first_few_named(
        tmp_path: Path, rng: random.Random, over: int) -> None:
    size, holds = 8, 7  # an 8-byte item holds 7 bytes beside a 1-byte length
    lengths = [rng.randrange(0, holds + 1) for _ in range(20)]
    long_at = sorted(rng.sample(range(20), over))
    for k, i in enumerate(long_at):
        lengths[i] = size + 1 + k  # distinct lengths: the longest is the last one
    path = _jsonl(tmp_path / "db.jsonl", [bytes(n) for n in lengths])
    for call in (lambda: records.survey(path, size),
                 lambda: records.read_records(path, planned_size=size)):
        with pytest.raises(SpiralpirError) as exc:
            call()
        msg = str(exc.value)
        assert msg.startswith(f"{over} records are longer than the {holds} bytes a {size}-byte "
                              f"item holds beside the value's 1-byte length (the longest "
                              f"{size + over} bytes; values are never truncated)")
        named = [int(i) for i in re.findall(r"record (\d+) \(line", msg)]
        assert named == long_at[:NAMED]
        for i in named:
            assert f"record {i} (line {i + 1} of {path}) is {lengths[i]} bytes" in msg
        more = over - NAMED
        assert msg.endswith(f"; and {more} more") if more > 0 else msg.endswith(
            f"is {lengths[long_at[-1]]} bytes")


def test_one_over_long_value(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "db.jsonl", [b"ok", bytes(9), b""])
    want = (f"record 1 (line 2 of {path}) is 9 bytes, longer than the 7 bytes a 8-byte item "
            "holds beside the value's 1-byte length; values are never truncated")
    for call in (lambda: records.survey(path, 8),
                 lambda: records.read_records(path, planned_size=8)):
        with pytest.raises(SpiralpirError) as exc:
            call()
        assert str(exc.value) == want


def test_unreadable_json_value_quotes_the_start_of_the_reason(tmp_path: Path) -> None:
    """A value json cannot read (a 5000-digit integer) is named with the first 80 characters
    of Python's own reason, on one line."""
    path = tmp_path / "db.jsonl"
    path.write_text("1" * 5000 + "\n")
    with pytest.raises(ValueError) as exc:  # Python's digit limit (3.11+)
        int("1" * 5000)
    reason = str(exc.value)
    assert len(reason) > 80
    with pytest.raises(SpiralpirError) as err:
        records.read_records(path, planned_size=8)
    assert str(err.value) == f"line 1 of {path}: unreadable JSON value: {reason[:80]}"
