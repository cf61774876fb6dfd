"""Reading a keyword database: (key, value) pairs from JSON Lines or CSV, every one checked.

  * JSON Lines (.jsonl, .ndjson): one object per line, ``{"key": "...", "value": "..."}``;
    the value is UTF-8 text, or base64 with ``base64_values``.
  * CSV (.csv): a header row naming the columns; the key and value columns are chosen by
    name (default ``key`` and ``value``), other columns are ignored.

Keys are strings, stored as their UTF-8 bytes. A key given twice is an error naming both
lines; a value longer than ``max_value`` is an error naming its key; an empty file is an
error. Nothing is dropped or truncated.
"""

from __future__ import annotations

import base64
import binascii
import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from spiralpir.optimizer.errors import SpiralpirError

KEYWORD_FORMATS = ("jsonl", "csv")


@dataclass(frozen=True)
class KeywordOptions:
    """How to read values and which CSV columns hold the key and the value."""

    base64_values: bool = False
    key_column: str = "key"
    value_column: str = "value"


@dataclass
class KeywordData:
    """The pairs of a keyword database, in file order."""

    keys: list[bytes]
    values: list[bytes]
    source: str

    @property
    def longest(self) -> int:
        return max((len(v) for v in self.values), default=0)


def keyword_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    raise SpiralpirError(f"{path}: a keyword database is a .jsonl or .csv file")


def _value(text: object, where: str, field: str, opts: KeywordOptions) -> bytes:
    if not isinstance(text, str):
        raise SpiralpirError(f"{where}: '{field}' must be a string")
    if opts.base64_values:
        try:
            return base64.b64decode(text, validate=True)
        except (ValueError, binascii.Error) as exc:
            raise SpiralpirError(f"{where}: '{field}' is not base64: {exc}") from None
    return _utf8(text, where, field)


def _utf8(text: str, where: str, field: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise SpiralpirError(f"{where}: '{field}' holds a lone surrogate, which UTF-8 cannot "
                             "encode") from None


def _jsonl(path: Path, opts: KeywordOptions) -> Iterator[tuple[str, bytes, bytes]]:
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            where = f"line {lineno} of {path}"
            try:
                doc = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError) as exc:
                raise SpiralpirError(f"{where}: not a JSON object: {str(exc)[:80]}") from None
            if not isinstance(doc, dict) or set(doc) != {"key", "value"}:
                raise SpiralpirError(f'{where}: expected {{"key": ..., "value": ...}} and '
                                     "nothing else")
            if not isinstance(doc["key"], str):
                raise SpiralpirError(f"{where}: 'key' must be a string")
            yield where, _utf8(doc["key"], where, "key"), _value(doc["value"], where, "value",
                                                                  opts)


def _csv(path: Path, opts: KeywordOptions) -> Iterator[tuple[str, bytes, bytes]]:
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        try:
            header = next(reader)
        except StopIteration:
            return
        for name, flag in ((opts.key_column, "--key-column"),
                           (opts.value_column, "--value-column")):
            if name not in header:
                raise SpiralpirError(f"{path}: no column '{name}' in the header ({flag}; "
                                     f"the header has {', '.join(header)})")
        ki, vi = header.index(opts.key_column), header.index(opts.value_column)
        for row in reader:
            where = f"line {reader.line_num} of {path}"
            if not row:
                continue
            if len(row) != len(header):
                raise SpiralpirError(f"{where}: {len(row)} fields, the header has {len(header)}")
            yield where, _utf8(row[ki], where, opts.key_column), _value(
                row[vi], where, opts.value_column, opts)


def read_keyword_db(path: Path, opts: KeywordOptions | None = None,
                    max_value: int | None = None) -> KeywordData:
    """Every (key, value) of ``path``; values over ``max_value`` bytes are an error."""
    path = Path(path)
    opts = opts or KeywordOptions()
    fmt = keyword_format(path)
    if not path.is_file():
        raise SpiralpirError(f"no such keyword database: {path}")
    seen: dict[bytes, str] = {}
    keys: list[bytes] = []
    values: list[bytes] = []
    try:
        rows = _jsonl(path, opts) if fmt == "jsonl" else _csv(path, opts)
        for where, key, value in rows:
            if key in seen:
                raise SpiralpirError(f"{where}: key {shown(key)} already given at {seen[key]}")
            if max_value is not None and len(value) > max_value:
                raise SpiralpirError(f"{where}: the value of key {shown(key)} is {len(value)} "
                                     f"bytes, longer than the table's {max_value}; values are "
                                     "never truncated")
            seen[key] = where
            keys.append(key)
            values.append(value)
    except UnicodeDecodeError as exc:
        raise SpiralpirError(f"{path}: not UTF-8 text: {exc}") from None
    except OSError as exc:
        raise SpiralpirError(f"cannot read {path}: {exc.strerror}") from None
    if not keys:
        raise SpiralpirError(f"{path} holds no keys")
    return KeywordData(keys, values, str(path))


def shown(key: bytes) -> str:
    """A key in an error message: its text (JSON-quoted), cut after 60 characters."""
    text = json.dumps(key.decode("utf-8", errors="replace"))
    return text if len(text) <= 62 else text[:60] + '..."'
