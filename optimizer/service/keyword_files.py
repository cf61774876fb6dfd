"""A keyword table kept on disk so that updates can change it (runtime/FORMATS.md §11).

Next to the key file KEYS:
  * ``KEYS.spiralpir-table``: the table's slots, a binary records file of rows·columns·slots
    records of ``slot_size`` bytes (keyword_table.py's slot layout). It is what is served and
    what updates change: as an index database, with the same journal, store and recovery
    (db_updates.py), so a kill leaves the old or the new table, never a mix.
  * ``KEYS.spiralpir-table.json``: the table's shape, seed and the BLAKE2b digest of KEYS it
    was filled from, written last, so a table without it (or of another KEYS) is filled again.
  * ``KEYS.spiralpir-table-keys``: every key an update inserted, appended (and fsynced) before
    the batch's journal is committed.

Where a key sits is derived from the stored table, never by inserting the keys again: the
candidate keys (KEYS's keys and the inserted ones; deleted ones stay listed) are located and
each is found in the slot of its bins holding its tag, as a client finds it. A listed key whose
batch never committed is simply not found.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import atomic_file
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service.keyword_table import TableShape

TABLE_SUFFIX = ".spiralpir-table"
META_SUFFIX = ".spiralpir-table.json"
KEYS_SUFFIX = ".spiralpir-table-keys"
META_FORMAT = 1
_KEYS_MAGIC = b"SPRLKEYS"
_LEN = struct.Struct("<I")


@dataclass(frozen=True)
class TablePaths:
    table: Path
    meta: Path
    keys: Path

    @classmethod
    def of(cls, db_path: Path) -> TablePaths:
        p = Path(db_path)
        return cls(*(p.with_name(p.name + s) for s in (TABLE_SUFFIX, META_SUFFIX, KEYS_SUFFIX)))


def source_digest(db_path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    try:
        with open(db_path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError as exc:
        raise SpiralpirError(f"cannot read {db_path}: {exc.strerror}") from None
    return h.hexdigest()


def _shape_json(shape: TableShape) -> dict[str, int]:
    return {"h": shape.h, "rows": shape.rows, "columns": shape.columns, "slots": shape.slots,
            "tag_bytes": shape.tag_bytes, "slot_size": shape.slot_size}


def stored_seed(paths: TablePaths, shape: TableShape, digest: str) -> tuple[str, int] | None:
    """The seed (and seeds tried) of a stored table of this shape filled from a key file of
    this digest, or None (no table, another shape, another key file, a missing table file)."""
    try:
        doc = json.loads(paths.meta.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != META_FORMAT or \
            doc.get("shape") != _shape_json(shape) or doc.get("source_digest") != digest:
        return None
    seed, attempts = doc.get("seed"), doc.get("attempts")
    try:
        size = paths.table.stat().st_size
    except OSError:
        return None
    if not isinstance(seed, str) or not isinstance(attempts, int) or \
            size != shape.capacity * shape.slot_size:
        return None
    return seed, attempts


def store_table(paths: TablePaths, shape: TableShape, digest: str, seed: str, attempts: int,
                records: database.Records) -> None:
    """Write a freshly filled table: its slots, an empty key list, then its metadata."""
    for old in (paths.meta, paths.keys):  # the table is not valid until the metadata is back
        old.unlink(missing_ok=True)
    with atomic_file.replacing(paths.table) as tmp:
        tmp.write_bytes(bytes(records.data[: records.num_records * records.record_size]))
    with atomic_file.replacing(paths.keys) as tmp:
        tmp.write_bytes(_KEYS_MAGIC)
    doc = {"format": META_FORMAT, "shape": _shape_json(shape), "seed": seed,
           "attempts": attempts, "source_digest": digest}
    with atomic_file.replacing(paths.meta) as tmp:
        tmp.write_text(json.dumps(doc, sort_keys=True) + "\n", encoding="utf-8")


def read_keys(path: Path, repair: bool = True) -> list[bytes]:
    """The inserted keys, in order; a torn last entry (a kill while appending, before its
    batch was committed) is ignored, and cut off the file when ``repair``."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise SpiralpirError(f"cannot read {path}: {exc.strerror}") from None
    if not data.startswith(_KEYS_MAGIC):
        raise SpiralpirError(f"{path}: not a keyword table's key list (bad magic)")
    keys: list[bytes] = []
    off = len(_KEYS_MAGIC)
    while off + _LEN.size <= len(data):
        (n,) = _LEN.unpack_from(data, off)
        if off + _LEN.size + n > len(data):
            break
        keys.append(data[off + _LEN.size: off + _LEN.size + n])
        off += _LEN.size + n
    if off != len(data) and repair:
        try:
            os.truncate(path, off)
        except OSError as exc:
            raise SpiralpirError(f"cannot truncate {path}: {exc.strerror}") from None
    return keys


def append_keys(path: Path, keys: list[bytes]) -> None:
    """Append ``keys`` to the key list and fsync it."""
    if not keys:
        return
    body = b"".join(_LEN.pack(len(k)) + k for k in keys)
    try:
        with open(path, "ab") as fh:
            fh.write(body)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise SpiralpirError(f"cannot append to {path}: {exc.strerror}") from None
