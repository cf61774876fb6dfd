"""Reading a user's database into fixed-size records (store.py keeps their preprocessed form).

Inputs:
  * a binary file of fixed-size records (``record_size`` given, or the build's record size);
  * a directory: one record per regular file (sorted by relative path);
  * a JSON Lines file: one record per line, a JSON string (UTF-8) or an object with exactly
    one of ``text``, ``hex``, ``base64``.
Values of the last two are stored with their length (service/value_frame.py), so a client gets
back exactly their bytes. Values longer than an item holds are an error naming the record,
never cut. Record count
and size are read from the data; a database that does not fit the build's planned shape is
rejected with a message naming both shapes.
"""

from __future__ import annotations

import base64
import binascii
import json
import mmap
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import value_frame

FORMATS = ("binary", "dir", "jsonl")
MAX_NAMED = 5  # over-long values named in an error (all are counted)


@dataclass
class Records:
    """num_records records of record_size bytes, contiguous in ``data``."""

    data: Any  # bytes-like: bytearray or a copy-on-write mmap
    num_records: int
    record_size: int
    source: str
    fmt: str
    framed: bool = False  # records hold length-prefixed values (value_frame.py)

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


def _binary_count(path: Path, record_size: int) -> int:
    """The records of a binary file of record_size-byte records (a length that does not
    divide is an error: the file holds records of another size)."""
    if record_size < 1:
        raise SpiralpirError("--record-size must be >= 1")
    size = path.stat().st_size
    if size == 0:
        raise SpiralpirError(f"{path} is empty")
    if size % record_size:
        raise SpiralpirError(
            f"{path} is {size} bytes, not a multiple of the record size {record_size}: "
            "give the right --record-size"
        )
    return size // record_size


def _binary(path: Path, record_size: int) -> Records:
    size = _binary_count(path, record_size) * record_size
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


@dataclass
class TooLong:
    """The values longer than an item size: the first MAX_NAMED named, all counted."""

    item_size: int
    framed: bool = False  # the item also holds the value's length
    named: list[str] = field(default_factory=list)
    count: int = 0
    longest: int = 0

    def add(self, index: int, where: str, length: int) -> None:
        if len(self.named) < MAX_NAMED:
            self.named.append(f"record {index} ({where}) is {length} bytes")
        self.count += 1
        self.longest = max(self.longest, length)

    @property
    def limit(self) -> int:
        return value_frame.capacity(self.item_size) if self.framed else self.item_size

    def _bound(self) -> str:
        if not self.framed:
            return f"the item size {self.item_size} bytes"
        width = value_frame.length_bytes(self.item_size)
        return (f"the {self.limit} bytes a {self.item_size}-byte item holds beside the value's "
                f"{width}-byte length")

    def check(self) -> None:
        if self.count == 1:
            raise SpiralpirError(f"{self.named[0]}, longer than {self._bound()}; values are "
                                 "never truncated")
        if self.count:
            more = self.count - len(self.named)
            raise SpiralpirError(
                f"{self.count} records are longer than {self._bound()} "
                f"(the longest {self.longest} bytes; values are never truncated): "
                + "; ".join(self.named) + (f"; and {more} more" if more else ""))


@dataclass
class Survey:
    """What a database holds, read from the data: its records and the longest value."""

    num_records: int
    max_size: int
    fmt: str
    item_size: int  # the record size that stores every value (with its length if framed)


def _variable(path: Path, fmt: str, item_size: int) -> Records:
    values = _jsonl_values(path) if fmt == "jsonl" else _dir_values(path)
    data = bytearray()
    count = 0
    too_long = TooLong(item_size, framed=True)
    for where, value in values:
        if len(value) > too_long.limit:
            too_long.add(count, where, len(value))
        elif not too_long.count:
            data += value_frame.frame(value, item_size)
        count += 1
    too_long.check()
    if count == 0:
        raise SpiralpirError(f"{path} holds no records")
    return Records(data, count, item_size, str(path), fmt, framed=True)


def survey(path: Path, record_size: int | None = None, fmt: str | None = None) -> Survey:
    """Count the records of a database and find its longest value, without keeping them. A
    binary file does not record its record size: it needs record_size. With record_size,
    values longer than it are an error listing them."""
    path = Path(path)
    fmt = _check_path(path, fmt)
    if fmt == "binary":
        if record_size is None:
            raise SpiralpirError(f"{path} is a binary file, which does not record its record "
                                 "size: give --record-size")
        return Survey(_binary_count(path, record_size), record_size, fmt, record_size)
    if record_size is not None and record_size < 1:
        raise SpiralpirError("--record-size must be >= 1")
    values = _jsonl_values(path) if fmt == "jsonl" else _dir_values(path)
    count = longest = 0
    too_long = TooLong(record_size or 0, framed=True)
    for where, value in values:
        if record_size is not None and len(value) > too_long.limit:
            too_long.add(count, where, len(value))
        longest = max(longest, len(value))
        count += 1
    too_long.check()
    if count == 0:
        raise SpiralpirError(f"{path} holds no records")
    return Survey(count, longest, fmt,
                  record_size if record_size is not None else value_frame.item_size_for(longest))


def _check_path(path: Path, fmt: str | None) -> str:
    if not path.exists():
        raise SpiralpirError(f"no such database: {path}")
    fmt = fmt or detect_format(path)
    if fmt not in FORMATS:
        raise SpiralpirError(f"unknown database format '{fmt}' (use {', '.join(FORMATS)})")
    if fmt == "binary" and path.is_dir():
        raise SpiralpirError(f"{path} is a directory, not a binary records file")
    return fmt


def read_records(path: Path, planned_size: int, record_size: int | None = None,
                 fmt: str | None = None) -> Records:
    """Read a database. Binary files use record_size (default: the build's planned size);
    variable-size values are padded to the planned size."""
    path = Path(path)
    fmt = _check_path(path, fmt)
    if fmt == "binary":
        return _binary(path, record_size or planned_size)
    if record_size is not None and record_size > planned_size:
        raise SpiralpirError(
            f"--record-size {record_size} exceeds the build's item size {planned_size}"
        )
    return _variable(path, fmt, record_size or planned_size)


def resident(records: Records) -> Records:
    """``records`` in private memory. A copy-on-write mapping is copied whole now: each first
    write to one of its pages would otherwise fault in a private copy, and the page-table
    change interrupts every core running the process (a 100,000-record update doubled the CPU
    time of the answers running beside it)."""
    if not isinstance(records.data, mmap.mmap):
        return records
    return replace(records, data=bytearray(records.data))


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
    return Records(out, records.num_records, planned_size, records.source, records.fmt,
                   records.framed)
