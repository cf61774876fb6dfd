"""Reading a user's database into fixed-size records, and the preprocessed-database cache.

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
import hashlib
import json
import mmap
import os
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

    def fingerprint(self) -> str:
        """sha256 over the shape and the record bytes (identifies a preprocessed file's source)."""
        h = hashlib.sha256(f"{self.num_records}x{self.record_size}\n".encode())
        view = memoryview(self.data)
        step = 1 << 24
        total = self.num_records * self.record_size
        for off in range(0, total, step):
            h.update(view[off : min(off + step, total)])
        return h.hexdigest()


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
    with open(path, "rb") as fh:
        data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
    return Records(data, size // record_size, record_size, str(path), "binary")


def _jsonl_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line; invalid UTF-8 names the line."""
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                yield lineno, raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SpiralpirError(f"line {lineno} of {path}: not valid UTF-8 "
                                     f"(byte {exc.start}: {exc.reason})") from None


def _jsonl_values(path: Path) -> Iterator[tuple[str, bytes]]:
    for lineno, line in _jsonl_lines(path):
        if not line.strip():
            continue
        where = f"line {lineno} of {path}"
        try:
            value = json.loads(line)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, over-long integers, nesting
            raise SpiralpirError(f"{where}: not valid JSON: {exc}") from None
        if isinstance(value, str):
            value = {"text": value}
        if not isinstance(value, dict) or len(value) != 1:
            raise SpiralpirError(
                f"{where}: expected a JSON string or an object with one of text/hex/base64"
            )
        (kind, payload), = value.items()
        if not isinstance(payload, str):
            raise SpiralpirError(f"{where}: '{kind}' must be a string")
        try:
            if kind == "text":
                yield where, payload.encode("utf-8")  # a lone surrogate is a ValueError
            elif kind == "hex":
                yield where, bytes.fromhex(payload)
            elif kind == "base64":
                yield where, base64.b64decode(payload, validate=True)
            else:
                raise SpiralpirError(f"{where}: unknown key '{kind}' (use text, hex or base64)")
        except (ValueError, binascii.Error) as exc:
            raise SpiralpirError(f"{where}: bad {kind} value: {exc}") from None


def _dir_values(path: Path) -> Iterator[tuple[str, bytes]]:
    files = sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        yield f"file {f}", f.read_bytes()


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


# ---------------------------------------------------------------------------------------------
# Preprocessed database cache: FILE (the runtime's header'd NTT form) + FILE.json (its source)
# ---------------------------------------------------------------------------------------------


def default_preprocessed_path(db_path: Path, build: str) -> Path:
    db_path = Path(db_path)
    return db_path.with_name(db_path.name + f".{build}.spiralpir-db")


def cache_matches(pre_path: Path, meta: dict[str, Any]) -> bool:
    side = Path(str(pre_path) + ".json")
    if not pre_path.is_file() or not side.is_file():
        return False
    try:
        return bool(json.loads(side.read_text()) == meta)
    except (OSError, json.JSONDecodeError):
        return False


def write_cache_meta(pre_path: Path, meta: dict[str, Any]) -> None:
    side = Path(str(pre_path) + ".json")
    tmp = side.with_name(side.name + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(meta, sort_keys=True, indent=2) + "\n")
    os.replace(tmp, side)
