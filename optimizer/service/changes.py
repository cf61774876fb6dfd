"""A batch of record changes (CHANGES, JSON Lines) checked against a database's shape.

One change per line:
  {"index": I, "value_hex": "…"}   record I gets these bytes (zero-padded to the record size)
  {"index": I, "value": "text"}    the same with UTF-8 text
Keyword databases will take {"key": …, "value": …} and {"key": …, "delete": true} lines; the
parser knows their shape (``KEYWORD_FIELDS``) and refuses them, naming the line, until a keyword
database exists to apply them to (runtime/README.md, "Live updates").

A batch is checked whole before anything is applied: every error names the line and the field,
indices out of range and values longer than a record are refused, and a later change of the same
index replaces an earlier one. ``parse`` reads text (the offline file or an HTTP body).
"""

from __future__ import annotations

import binascii
import json
from dataclasses import dataclass

from spiralpir.optimizer.errors import SpiralpirError

INDEX_FIELDS = frozenset({"index", "value", "value_hex"})
KEYWORD_FIELDS = frozenset({"key", "value", "value_hex", "delete"})
MAX_ERRORS = 5  # errors named in one message (all are counted)


class BadChanges(SpiralpirError):
    """A change file that cannot be applied; nothing of it was."""


@dataclass(frozen=True)
class ChangeBatch:
    """New values of records of an index database, by index (ascending), each exactly
    ``record_size`` bytes."""

    values: dict[int, bytes]
    record_size: int

    def __len__(self) -> int:
        return len(self.values)

    def plaintexts(self, items_per_plaintext: int) -> list[int]:
        """The plaintexts holding the changed records (sorted, distinct)."""
        return sorted({i // items_per_plaintext for i in self.values})


def _value(obj: dict[str, object], where: str) -> bytes:
    has_text, has_hex = "value" in obj, "value_hex" in obj
    if has_text == has_hex:
        raise BadChanges(f"{where}: give exactly one of 'value' (text) and 'value_hex'")
    if has_text:
        text = obj["value"]
        if not isinstance(text, str):
            raise BadChanges(f"{where}: field 'value' must be a string (UTF-8 text)")
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            raise BadChanges(f"{where}: field 'value' holds a lone surrogate") from None
    text = obj["value_hex"]
    if not isinstance(text, str):
        raise BadChanges(f"{where}: field 'value_hex' must be a string of hex digits")
    try:
        return bytes.fromhex(text)
    except (ValueError, binascii.Error):
        raise BadChanges(f"{where}: field 'value_hex' is not an even number of hex "
                         "digits") from None


def _change(raw: str, where: str, num_records: int, record_size: int) -> tuple[int, bytes]:
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise BadChanges(f"{where}: not valid JSON: {str(exc)[:80]}") from None
    if not isinstance(obj, dict):
        raise BadChanges(f"{where}: expected a JSON object such as "
                         '{"index": 3, "value_hex": "00ff"}')
    if "key" in obj and set(obj) <= KEYWORD_FIELDS:
        raise BadChanges(f"{where}: field 'key': a keyword change, but this is an index "
                         "database (changes name records by 'index')")
    unknown = sorted(set(obj) - INDEX_FIELDS)
    if unknown:
        raise BadChanges(f"{where}: unknown field '{unknown[0]}' (an index change has 'index' "
                         "and one of 'value', 'value_hex')")
    index = obj.get("index")
    if isinstance(index, bool) or not isinstance(index, int):
        raise BadChanges(f"{where}: field 'index' must be an integer")
    if not 0 <= index < num_records:
        raise BadChanges(f"{where}: field 'index' {index} out of range: the database holds "
                         f"{num_records} records (0 .. {num_records - 1})")
    value = _value(obj, where)
    if len(value) > record_size:
        raise BadChanges(f"{where}: field '{'value' if 'value' in obj else 'value_hex'}' is "
                         f"{len(value)} bytes, longer than the record size {record_size} "
                         "(values are never truncated)")
    return index, value + bytes(record_size - len(value))


def parse(text: str, source: str, num_records: int, record_size: int) -> ChangeBatch:
    """The batch in ``text`` (JSON Lines; blank lines skipped), or BadChanges naming every
    bad line (the first MAX_ERRORS of them)."""
    values: dict[int, bytes] = {}
    errors: list[str] = []
    count = 0
    for lineno, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            index, value = _change(raw, f"{source} line {lineno}", num_records, record_size)
        except BadChanges as exc:
            count += 1
            if len(errors) < MAX_ERRORS:
                errors.append(str(exc))
            continue
        values[index] = value
    if count:
        more = f" (and {count - len(errors)} more bad lines)" if count > len(errors) else ""
        raise BadChanges("; ".join(errors) + more + "; nothing was applied")
    if not values:
        raise BadChanges(f"{source}: no changes (one JSON object per line: "
                         '{"index": I, "value_hex": "…"} or {"index": I, "value": "text"})')
    return ChangeBatch(dict(sorted(values.items())), record_size)


def read(path: str, num_records: int, record_size: int) -> ChangeBatch:
    """parse() of a file."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise BadChanges(f"cannot read {path}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadChanges(f"{path}: not UTF-8 (byte {exc.start})") from None
    return parse(text, path, num_records, record_size)
