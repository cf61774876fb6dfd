"""Keyword updates: a batch of (key, value | delete) turned into new bytes of the table's slots,
applied like an index batch (db_updates.Updater: journal, double-buffered publish, store).

Where keys sit (``SlotIndex``) is derived from the stored table (keyword_files.py). A batch is
planned on a draft over it, line by line: a replaced value keeps its slot; an insert follows the
table's own cuckoo rule (models/cuckoo_layout.py) inside the key's column: a free slot of its
least-loaded candidate bin, else a random occupant of a random candidate bin is evicted and
moves on the same way, at most MAX_KICKS moves; a delete zeroes its slot (tag zero: empty). An
insert that does not fit refuses the whole batch, naming the column and its load; nothing is
applied. Deleting a key the table does not hold is an error too (a batch means exactly what it
says or nothing). Only the slots whose bytes changed become the batch's records, so only their
plaintexts are encoded again.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from spiralpir.optimizer.models.cuckoo_layout import MAX_KICKS, CuckooLayout, CuckooTable
from spiralpir.optimizer.service import changes, db_updates, keyword_files, value_frame
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service.binding import Build
from spiralpir.optimizer.service.changes import BadChanges, ChangeBatch
from spiralpir.optimizer.service.db_lock import DbLock
from spiralpir.optimizer.service.keyword_input import KeywordOptions, read_keyword_db, shown
from spiralpir.optimizer.service.keyword_table import (
    KeywordTable,
    TableShape,
    make_table,
    value_capacity,
)

_FREE = object()  # a draft's mark of a slot emptied in this batch


class SlotIndex:
    """Which key holds which slot of a table (``owner``: slot -> key, or None for an occupied
    slot of no listed key, which is never moved), and each bin's load."""

    def __init__(self, layout: CuckooLayout, slot_size: int, record_size: int, data: Any,
                 keys: Iterable[bytes]) -> None:
        self.layout = layout
        self.slot_size = slot_size
        self.record_size = record_size
        self.data = data
        m, tb, cap = layout.slots, layout.tag_bytes, layout.capacity
        view = np.frombuffer(data, dtype=np.uint8, count=cap * record_size)
        tags = view.reshape(cap, record_size)[:, :tb]
        occupied = np.flatnonzero(tags.any(axis=1))
        raw = np.ascontiguousarray(tags[occupied]).tobytes()
        by_tag: dict[bytes, list[int]] = {}
        for j, s in enumerate(occupied.tolist()):
            by_tag.setdefault(raw[j * tb:(j + 1) * tb], []).append(s)
        self.owner: dict[int, bytes | None] = dict.fromkeys(occupied.tolist())
        self.slot_of: dict[bytes, int] = {}
        for k in keys:
            column, rows, tag = layout.locate(k)
            hits = by_tag.get(tag)
            if not hits or k in self.slot_of:
                continue
            bins = [layout.bin_of(r, column) for r in rows]
            for s in hits:
                if s // m in bins and self.owner[s] is None:
                    self.owner[s] = k
                    self.slot_of[k] = s
                    break
        counts = np.bincount(occupied // m, minlength=cap // m)
        self.load: dict[int, int] = {int(b): int(counts[b]) for b in np.flatnonzero(counts)}

    def slot_bytes(self, s: int) -> bytes:
        return bytes(self.data[s * self.record_size: s * self.record_size + self.slot_size])

    @property
    def orphans(self) -> int:
        return len(self.owner) - len(self.slot_of)

    def as_table(self, attempts: int) -> CuckooTable:
        """The placement as a CuckooTable of the keys held (in slot order)."""
        m = self.layout.slots
        keys = sorted(self.slot_of, key=self.slot_of.__getitem__)
        where = [self.slot_of[k] // m for k in keys]
        order: dict[int, list[int]] = {}
        for i, b in enumerate(where):
            order.setdefault(b, []).append(i)
        tb = self.layout.tag_bytes
        return CuckooTable(self.layout, where, order,
                           [self.slot_bytes(self.slot_of[k])[:tb] for k in keys], attempts)


class _Draft:
    """A batch's changes over a SlotIndex, applied to it only if the whole batch fits."""

    def __init__(self, index: SlotIndex, rng: random.Random) -> None:
        self.index = index
        self.rng = rng
        self.owner: dict[int, Any] = {}
        self.slot_of: dict[bytes, int | None] = {}
        self.load: dict[int, int] = {}
        self.content: dict[bytes, bytes] = {}
        self.counts = {"inserted": 0, "replaced": 0, "deleted": 0, "moves": 0}
        self._located: dict[bytes, tuple[list[int], bytes]] = {}

    def locate(self, key: bytes) -> tuple[list[int], bytes]:
        """The key's candidate bins and tag (hashed once per batch)."""
        got = self._located.get(key)
        if got is None:
            lay = self.index.layout
            column, rows, tag = lay.locate(key)
            got = self._located[key] = ([lay.bin_of(r, column) for r in rows], tag)
        return got

    def owner_at(self, s: int) -> Any:
        return self.owner[s] if s in self.owner else self.index.owner.get(s, _FREE)

    def slot(self, key: bytes) -> int | None:
        return self.slot_of[key] if key in self.slot_of else self.index.slot_of.get(key)

    def bin_load(self, b: int) -> int:
        return self.load[b] if b in self.load else self.index.load.get(b, 0)

    def put(self, s: int, key: Any) -> None:
        """Slot s gets ``key`` (or _FREE); the key it held, if any, is left unplaced."""
        b = s // self.index.layout.slots
        was = self.owner_at(s)
        self.load[b] = self.bin_load(b) + (was is _FREE) - (key is _FREE)
        if was is not _FREE and was is not None:
            self.slot_of[was] = None
        self.owner[s] = key
        if key is not _FREE:
            self.slot_of[key] = s

    def slot_content(self, key: bytes, value: bytes) -> bytes:
        item = self.index.slot_size - self.index.layout.tag_bytes
        return self.locate(key)[1] + value_frame.frame(value, item)

    def apply(self, ch: changes.KeywordChange) -> None:
        s = self.slot(ch.key)
        if ch.value is None:
            if s is None:
                raise BadChanges(f"{ch.where}: field 'key': delete of key {shown(ch.key)}, "
                                 "which the table does not hold")
            self.put(s, _FREE)
            self.content.pop(ch.key, None)
            self.counts["deleted"] += 1
            return
        self.content[ch.key] = self.slot_content(ch.key, ch.value)
        if s is not None:
            self.owner[s] = ch.key  # touched: its bytes change in place
            self.counts["replaced"] += 1
            return
        self.insert(ch.key, ch.where)
        self.counts["inserted"] += 1

    def insert(self, key: bytes, where: str) -> None:
        lay = self.index.layout
        m, h = lay.slots, lay.h
        cur, last = key, -1
        for _ in range(MAX_KICKS + 1):
            cand = self.locate(cur)[0]
            loads = [self.bin_load(b) for b in cand]
            best = min(range(h), key=loads.__getitem__)
            if loads[best] < m:
                b = cand[best]
                self.put(next(b * m + i for i in range(m) if self.owner_at(b * m + i) is _FREE),
                         cur)
                return
            j = self.rng.randrange(h - 1) if last >= 0 else self.rng.randrange(h)
            if last >= 0 and j >= last:
                j += 1  # not straight back to the bin just left
            s = cand[j] * m + self.rng.randrange(m)
            victim = self.owner_at(s)
            if victim is None:  # an occupant of no listed key stays where it is
                continue
            self.put(s, cur)
            self.counts["moves"] += 1
            cur = victim
            last = self.locate(cur)[0].index(cand[j])
        column = lay.locate(key)[0]
        taken = sum(self.bin_load(lay.bin_of(r, column)) for r in range(lay.rows))
        room = lay.rows * m
        raise BadChanges(f"{where}: field 'key': key {shown(key)} does not fit its column "
                         f"{column} ({taken} of its {room} slots taken, load "
                         f"{taken / room:.3f}) within {MAX_KICKS} cuckoo moves; nothing was "
                         "applied (the table needs more room: a build with more slots, or "
                         "fewer keys)")

    def records(self) -> dict[int, bytes]:
        """The new bytes of every slot whose bytes change."""
        idx = self.index
        out: dict[int, bytes] = {}
        for s, key in sorted(self.owner.items()):
            if key is _FREE:
                new = bytes(idx.slot_size)
            elif key in self.content:
                new = self.content[key]
            else:
                old = idx.slot_of[key]
                if old == s:
                    continue
                new = idx.slot_bytes(old)
            if new.ljust(idx.slot_size, b"\0") != idx.slot_bytes(s):
                out[s] = new.ljust(idx.slot_size, b"\0")
        return out

    def commit(self) -> None:
        idx = self.index
        for s, key in self.owner.items():
            if key is _FREE:
                idx.owner.pop(s, None)
            else:
                idx.owner[s] = key
        for key, s in self.slot_of.items():
            if s is None:
                idx.slot_of.pop(key, None)
            else:
                idx.slot_of[key] = s
        for b, n in self.load.items():
            if n:
                idx.load[b] = n
            else:
                idx.load.pop(b, None)


class KeywordUpdater:
    """Applies keyword batches to a stored table through ``updater`` (one at a time)."""

    def __init__(self, updater: db_updates.Updater, index: SlotIndex, keys_path: Path,
                 known: set[bytes], kt: KeywordTable | None = None) -> None:
        self.updater = updater
        self.index = index
        self.keys_path = keys_path
        self.known = known
        self.kt = kt
        self.max_value = value_capacity(index.slot_size, index.layout.tag_bytes)
        self._lock = threading.Lock()

    def apply_text(self, text: str, source: str) -> dict[str, Any]:
        """Apply the batch in ``text`` whole, or raise BadChanges having applied nothing."""
        batch = changes.parse_keyword(text, source, self.max_value)
        with self._lock:
            u = self.updater
            draft = _Draft(self.index, random.Random(f"{self.index.layout.seed}:{u.version}"))
            for ch in batch:
                draft.apply(ch)
            values = draft.records()
            fresh = [k for k, s in draft.slot_of.items() if s is not None and k not in self.known]
            keyword_files.append_keys(self.keys_path, fresh)  # before the journal names them
            self.known.update(fresh)
            before = u.version
            try:
                report = u.apply(ChangeBatch(values, self.index.slot_size))
            finally:
                if u.version != before:  # committed: the journal holds the new slots
                    draft.commit()
                    if self.kt is not None:
                        self.kt.keys = len(self.index.slot_of)
            return {**report.to_json(), **draft.counts, "keys": len(self.index.slot_of)}

    def close(self) -> None:
        self.updater.close()


@dataclass
class StoredTable:
    """A keyword table opened from its files: what a server serves and what updates it."""

    kt: KeywordTable
    version: int
    files: db_updates.DbFiles | None  # None: filled in memory, not stored (read-only)
    index: SlotIndex | None
    paths: keyword_files.TablePaths
    known: set[bytes]
    lock: DbLock | None

    def updater(self, live: Any = None, threads: int = 1, log: db_updates.Log | None = None,
                **kwargs: Any) -> KeywordUpdater:
        assert self.files is not None and self.index is not None
        u = db_updates.Updater(self.files, self.version, live, threads, log, **kwargs)
        return KeywordUpdater(u, self.index, self.paths.keys, self.known, self.kt)

    def close(self) -> None:
        if self.lock is not None:
            self.lock.close()


def open_table(build: Build, shape: TableShape, db_path: Path, opts: KeywordOptions,
               store_path: Path | None, log: db_updates.Log, writer: bool) -> StoredTable:
    """The table of key file ``db_path``: its stored table (recovered, keys found in it) if
    there is one of this key file and shape; else filled from the key file, and stored when
    ``writer`` (a server taking updates, an offline update), kept in memory otherwise."""
    data = read_keyword_db(db_path, opts, value_capacity(shape.slot_size, shape.tag_bytes))
    paths = keyword_files.TablePaths.of(db_path)
    digest = keyword_files.source_digest(db_path)
    lock, alone = (DbLock(db_path, writer=True), True) if writer else \
        DbLock.reader_first_writing(db_path)
    try:
        stored = keyword_files.stored_seed(paths, shape, digest)
        if stored is None:
            kt = make_table(data, shape)
            if not writer:
                lock.close()
                return StoredTable(kt, 0, None, None, paths, set(data.keys), None)
            lay = kt.table.layout
            keyword_files.store_table(paths, shape, digest, lay.seed, kt.table.attempts,
                                      kt.records)
            stored = lay.seed, kt.table.attempts
            log(f"stored the table of {db_path} in {paths.table}")
        seed, attempts = stored
        records = database.read_records(paths.table, build.record_size, shape.slot_size,
                                        "binary")
        files, fitted, version = db_updates.open_files(build, paths.table, records, store_path,
                                                       log, may_write=alone, resident=writer)
        if not writer and alone:
            lock.downgrade()
        known = dict.fromkeys(data.keys)
        known.update(dict.fromkeys(keyword_files.read_keys(paths.keys, repair=alone)))
        layout = CuckooLayout(shape.h, shape.rows, shape.columns, shape.slots, seed,
                              shape.tag_bytes)
        index = SlotIndex(layout, shape.slot_size, fitted.record_size, fitted.data, known)
        if index.orphans:
            log(f"{paths.table}: {index.orphans} occupied slot(s) of no listed key (kept)")
        kt = KeywordTable(index.as_table(attempts), shape.slot_size,
                          database.Records(fitted.data, fitted.num_records, fitted.record_size,
                                           str(db_path), "binary"),
                          len(index.slot_of))
        return StoredTable(kt, version, files, index, paths, set(known), lock)
    except BaseException:
        lock.close()
        raise
