"""Reading a user's database into fixed-size records (store.py keeps their preprocessed form).

Inputs:
  * a binary file of fixed-size records (``record_size`` given, or the build's record size);
  * a directory: one record per regular file (sorted by relative path), padded with zeros;
  * a JSON Lines file: one record per line, a JSON string (UTF-8) or an object with exactly
    one of ``text``, ``hex``, ``base64``; padded with zeros.
Values longer than the item size are an error naming the record, never cut. Record count
and size are read from the data; a database that does not fit the build's planned shape is
rejected with a message naming both shapes.
"""

from __future__ import annotations

import base64
import binascii
import json
import mmap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError

FORMATS = ("binary", "dir", "jsonl")


@dataclass
class Records:
    """num_records records of record_size bytes, contiguous in ``data``."""

    data: Any  # bytes-like: bytearray or a copy-on-write mmap
    num_records: int
    record_size: int
    source: str
    fmt: str

    def record(self, i: int) -> bytes:
        if not 0 <= i < self.num_records:
            raise SpiralpirError(f"record index {i} out of range [0, {self.num_records})")
        return bytes(memoryview(self.data)[i * self.record_size : (i + 1) * self.record_size])


def detect_format(path: Path) -> str:
    if path.is_dir():
        return "dir"
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return "jsonl"
    return "binary"


def shape_str(num_records: int, record_size: int) -> str:
    return f"{num_records} records x {record_size} bytes"


def _binary(path: Path, record_size: int) -> Records:
    size = path.stat().st_size
    if size == 0:
        raise SpiralpirError(f"{path} is empty")
    if size % record_size:
        raise SpiralpirError(
            f"{path} is {size} bytes, not a multiple of the record size {record_size}: "
            "give the right --record-size"
        )
    try:
        with open(path, "rb") as fh:
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
    except OSError as exc:
        raise SpiralpirError(f"cannot read {path}: {exc.strerror}") from None
    return Records(data, size // record_size, record_size, str(path), "binary")


def _utf8(payload: str, where: str) -> bytes:
    try:
        return payload.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = payload[exc.start]
        raise SpiralpirError(f"{where}: the string holds a lone surrogate (U+{ord(bad):04X}), "
                             "which UTF-8 cannot encode") from None


def _json_line(raw: bytes, where: str) -> Any:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpiralpirError(f"{where}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column "
                             f"{exc.start + 1})") from None
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise SpiralpirError(f"{where}: not valid JSON: {exc}") from None
    except (ValueError, RecursionError) as exc:  # huge integers, deep nesting
        raise SpiralpirError(f"{where}: unreadable JSON value: {str(exc)[:80]}") from None


def _jsonl_values(path: Path) -> Iterator[tuple[str, bytes]]:
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise SpiralpirError(f"cannot read {path}: {exc.strerror}") from None
    with fh:
        for lineno, raw in enumerate(_lines(fh, path), 1):
            if not raw.strip():
                continue
            where = f"line {lineno} of {path}"
            value = _json_line(raw, where)
            if isinstance(value, str):
                yield where, _utf8(value, where)
                continue
            if not isinstance(value, dict) or len(value) != 1:
                raise SpiralpirError(
                    f"{where}: expected a JSON string or an object with one of text/hex/base64"
                )
            (kind, payload), = value.items()
            if not isinstance(payload, str):
                raise SpiralpirError(f"{where}: '{kind}' must be a string")
            try:
                if kind == "text":
                    yield where, _utf8(payload, where)
                elif kind == "hex":
                    yield where, bytes.fromhex(payload)
                elif kind == "base64":
                    yield where, base64.b64decode(payload, validate=True)
                else:
                    raise SpiralpirError(f"{where}: unknown key '{kind}' (use text, hex or base64)")
            except (ValueError, binascii.Error) as exc:
                raise SpiralpirError(f"{where}: bad {kind} value: {exc}") from None


def _lines(fh: Any, path: Path) -> Iterator[bytes]:
    """The file's lines; a read error (an I/O error, a directory) names the file."""
    try:
        yield from fh
    except OSError as exc:
        raise SpiralpirError(f"cannot read {path}: {exc.strerror}") from None


def _dir_values(path: Path) -> Iterator[tuple[str, bytes]]:
    files = sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        try:
            data = f.read_bytes()
        except OSError as exc:
            raise SpiralpirError(f"cannot read {f}: {exc.strerror}") from None
        yield f"file {f}", data


def _variable(path: Path, fmt: str, item_size: int) -> Records:
    values = _jsonl_values(path) if fmt == "jsonl" else _dir_values(path)
    data = bytearray()
    count = 0
    for where, value in values:
        if len(value) > item_size:
            raise SpiralpirError(
                f"record {count} ({where}) is {len(value)} bytes, longer than the item size "
                f"{item_size} bytes; values are never truncated"
            )
        data += value
        data += bytes(item_size - len(value))
        count += 1
    if count == 0:
        raise SpiralpirError(f"{path} holds no records")
    return Records(data, count, item_size, str(path), fmt)


def read_records(path: Path, planned_size: int, record_size: int | None = None,
                 fmt: str | None = None) -> Records:
    """Read a database. Binary files use record_size (default: the build's planned size);
    variable-size values are padded to the planned size."""
    path = Path(path)
    if not path.exists():
        raise SpiralpirError(f"no such database: {path}")
    fmt = fmt or detect_format(path)
    if fmt not in FORMATS:
        raise SpiralpirError(f"unknown database format '{fmt}' (use {', '.join(FORMATS)})")
    if fmt == "binary":
        if path.is_dir():
            raise SpiralpirError(f"{path} is a directory, not a binary records file")
        rs = record_size or planned_size
        if rs < 1:
            raise SpiralpirError("--record-size must be >= 1")
        return _binary(path, rs)
    if record_size is not None and record_size > planned_size:
        raise SpiralpirError(
            f"--record-size {record_size} exceeds the build's item size {planned_size}"
        )
    return _variable(path, fmt, record_size or planned_size)


def fit_to_build(records: Records, planned_records: int, planned_size: int, build: str) -> Records:
    """Check that records fit the build's planned shape; pad shorter records with zeros."""
    if records.num_records > planned_records or records.record_size > planned_size:
        raise SpiralpirError(
            f"database {records.source} has {shape_str(records.num_records, records.record_size)}"
            f" but build '{build}' was planned for {shape_str(planned_records, planned_size)}; "
            "generate a build for this shape with `spiralpir generate --records N --record-size B`"
        )
    if records.record_size == planned_size:
        return records
    out = bytearray(records.num_records * planned_size)
    src = memoryview(records.data)
    rs = records.record_size
    for i in range(records.num_records):
        out[i * planned_size : i * planned_size + rs] = src[i * rs : (i + 1) * rs]
    return Records(out, records.num_records, planned_size, records.source, records.fmt)
