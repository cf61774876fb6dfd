"""Where a key lives in a keyword table (bucketized cuckoo hashing over one PIR database), and
the tag that recognises it.

The table is one database of ``rows`` x ``columns`` plaintexts of ``slots`` records each (the
database's first dimension, 2^nu_1 rows, split into h equal row blocks; its folded dimension,
2^nu_2 columns). Key k hashes (one BLAKE2b digest keyed by the table's public seed) to one
column c shared by all its candidates, to one row r_j inside each block j, and to its tag. Its
h candidate *bins* are the plaintexts (r_j, c): a key sits in any slot of any of them, so one
query selecting row r_j in every block and column c (runtime answer_blocked) fetches them all.

Each column is an independent bucketized cuckoo table of h·(rows/h) bins of ``slots`` slots.
A key takes a slot of its least-loaded candidate bin with room; else it evicts a random
occupant of a random candidate bin (never straight back to the bin it was evicted from), and
the evicted key moves on the same way, up to MAX_KICKS moves. A key that cannot be placed
means the seed is unlucky (or the load too high): the table is built again under the next seed
(derived from the last by hashing, so a build is reproducible from its first seed), at most
MAX_ATTEMPTS times, then an error naming the load.

The tag is never zero (zero marks an empty slot); an absent key matches one of the h·slots
tags the client scans with probability at most h·slots·2^-(8·tag_bytes) (tag_bytes_for).
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError

MAX_KICKS = 500  # evictions per insertion before the seed is given up
MAX_ATTEMPTS = 8  # seeds tried before the build fails
FALSE_POSITIVE_LOG2 = -40  # an absent key is reported present with probability <= 2^this
H_CHOICES = (2, 4)  # row blocks
_WORD = 8  # digest bytes per hashed coordinate (column, then one row per block)
_DIGEST = 64  # BLAKE2b's widest digest


def tag_bytes_for(h: int, slots: int) -> int:
    """The fewest tag bytes keeping h·slots·2^-bits <= 2^FALSE_POSITIVE_LOG2 (the client
    compares its tag with every slot of its h bins)."""
    return math.ceil((-FALSE_POSITIVE_LOG2 + math.log2(h * slots)) / 8)


def max_tag_bytes(h: int) -> int:
    return _DIGEST - _WORD * (h + 1)


# Load (keys / slots) planned per column by bins per key h and slots per bin: below the
# random-walk insertion thresholds (about 0.5, 0.90, 0.96, 0.98 and > 0.99 for 1, 2, 3, 4 and
# >= 8 slots at h = 2; 0.98 and > 0.99 for 1 and >= 2 slots at h = 4) with room for finite
# columns. tests/models/test_cuckoo_layout.py measures the failure rate at these loads.
_LOADS = {2: ((1, 0.45), (2, 0.85), (3, 0.88), (4, 0.92), (5, 0.94), (8, 0.96)),
          4: ((1, 0.88), (2, 0.94), (3, 0.96))}
COLUMN_SIGMAS = 3.0  # a column's key count (binomial) stays below its capacity this far out


def planned_load(h: int, slots: int) -> float:
    """The load a column of bins of ``slots`` slots is filled to at h bins per key."""
    return next(load for m, load in reversed(_LOADS[h]) if slots >= m)


def max_keys(h: int, rows: int, columns: int, slots: int) -> int:
    """The most keys planned into a rows x columns table of bins of ``slots`` slots: the
    average column holds K keys with K + COLUMN_SIGMAS·sqrt(K) <= planned_load · rows·slots
    (the keys of a column are binomial, about K ± sqrt(K))."""
    room = planned_load(h, slots) * rows * slots
    root = (-COLUMN_SIGMAS + math.sqrt(COLUMN_SIGMAS ** 2 + 4 * room)) / 2  # sqrt(K)
    return max(0, math.floor(root * root * columns))


def next_seed(seed: str) -> str:
    """The seed tried after ``seed`` fails (public, deterministic)."""
    return hashlib.blake2b(b"spiralpir-cuckoo-reseed" + bytes.fromhex(seed),
                           digest_size=16).hexdigest()


def _positive(doc: dict[str, Any], key: str, where: str) -> int:
    value = doc.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SpiralpirError(f"{where}: keyword field '{key}' missing or not a positive integer")
    return value


@dataclass(frozen=True)
class CuckooLayout:
    """h row blocks of a ``rows`` x ``columns`` table of bins of ``slots`` slots, hashed
    under ``seed``, tags of ``tag_bytes`` bytes."""

    h: int
    rows: int  # 2^nu_1, all blocks
    columns: int  # 2^nu_2
    slots: int  # records per plaintext (per bin)
    seed: str  # 32 hex digits, public
    tag_bytes: int

    def __post_init__(self) -> None:
        if self.h not in H_CHOICES:
            raise SpiralpirError(f"keyword table: h (row blocks) must be one of {H_CHOICES}, "
                                 f"not {self.h}")
        for name, v in (("rows", self.rows), ("columns", self.columns)):
            if v < 1 or v & (v - 1):
                raise SpiralpirError(f"keyword table: {name} must be a power of two, not {v}")
        if self.rows % self.h:
            raise SpiralpirError(f"keyword table: {self.h} row blocks do not divide "
                                 f"{self.rows} rows")
        if self.slots < 1:
            raise SpiralpirError(f"keyword table: slots per bin must be >= 1, not {self.slots}")
        low, high = tag_bytes_for(self.h, self.slots), max_tag_bytes(self.h)
        if not low <= self.tag_bytes <= high:
            raise SpiralpirError(f"keyword table: tags of {self.tag_bytes} bytes; {self.h} bins "
                                 f"of {self.slots} slots need {low} to {high}")
        try:
            ok = len(self.seed) == 32 and bytes.fromhex(self.seed).hex() == self.seed
        except ValueError:
            ok = False
        if not ok:
            raise SpiralpirError(f"keyword table: seed must be 32 lowercase hex digits, not "
                                 f"{self.seed[:40]!r}")

    @property
    def block_rows(self) -> int:
        return self.rows // self.h

    @property
    def capacity(self) -> int:
        """Records (slots) of the whole table: the database's record count."""
        return self.rows * self.columns * self.slots

    def locate(self, key: bytes) -> tuple[int, list[int], bytes]:
        """The key's column, its row in each block (absolute rows, block j's in
        [j·rows/h, (j+1)·rows/h)), and its tag (never all zeros)."""
        d = hashlib.blake2b(key, digest_size=_WORD * (self.h + 1) + self.tag_bytes,
                            key=bytes.fromhex(self.seed), person=b"spiralpir-kwbin").digest()
        word = [int.from_bytes(d[i * _WORD:(i + 1) * _WORD], "little")
                for i in range(self.h + 1)]
        column = word[0] % self.columns
        rows = [j * self.block_rows + word[1 + j] % self.block_rows for j in range(self.h)]
        tag = d[_WORD * (self.h + 1):]
        if not any(tag):
            tag = bytes(self.tag_bytes - 1) + b"\x01"
        return column, rows, tag

    def bin_of(self, row: int, column: int) -> int:
        """The plaintext index of bin (row, column): its records are bin·slots + s."""
        return row * self.columns + column

    def to_json(self) -> dict[str, Any]:
        return {"h": self.h, "rows": self.rows, "columns": self.columns, "slots": self.slots,
                "seed": self.seed, "tag_bytes": self.tag_bytes}

    @classmethod
    def from_json(cls, doc: Any, where: str) -> CuckooLayout:
        if not isinstance(doc, dict):
            raise SpiralpirError(f"{where}: the keyword table is not a JSON object")
        seed = doc.get("seed")
        if not isinstance(seed, str):
            raise SpiralpirError(f"{where}: keyword field 'seed' missing or not a string")
        return cls(**{k: _positive(doc, k, where)
                      for k in ("h", "rows", "columns", "slots", "tag_bytes")}, seed=seed)


@dataclass(frozen=True)
class CuckooTable:
    """A placement: ``where[i]`` = the bin (plaintext index) of key i, ``order[b]`` the keys
    of bin b in slot order, under ``layout`` (whose seed is the one that worked, after
    ``attempts`` seeds)."""

    layout: CuckooLayout
    where: list[int]
    order: dict[int, list[int]]
    tags: list[bytes]
    attempts: int


def _place(layout: CuckooLayout, keys: Sequence[bytes], rng: random.Random
           ) -> CuckooTable | None:
    cands: list[list[int]] = []
    tags: list[bytes] = []
    for k in keys:
        c, rows, t = layout.locate(k)
        cands.append([layout.bin_of(r, c) for r in rows])
        tags.append(t)
    m, h = layout.slots, layout.h
    bins: dict[int, list[int]] = {}
    where = [-1] * len(keys)
    for i in range(len(keys)):
        cur, last = i, -1
        for _ in range(MAX_KICKS + 1):
            cand = cands[cur]
            loads = [len(bins.get(b, ())) for b in cand]
            best = min(range(h), key=loads.__getitem__)
            if loads[best] < m:
                bins.setdefault(cand[best], []).append(cur)
                where[cur] = cand[best]
                break
            j = rng.randrange(h - 1) if last >= 0 else rng.randrange(h)
            if last >= 0 and j >= last:
                j += 1  # not straight back to the bin just left
            members = bins[cand[j]]
            s = rng.randrange(m)
            cur, members[s] = members[s], cur
            where[members[s]] = cand[j]
            last = cands[cur].index(cand[j])
        else:
            return None
    return CuckooTable(layout, where, bins, tags, 0)


def build(keys: Sequence[bytes], h: int, rows: int, columns: int, slots: int, seed: str,
          tag_bytes: int | None = None, seeds: Iterable[str] | None = None) -> CuckooTable:
    """Place ``keys`` (distinct) in the bins of a ``rows`` x ``columns`` table of ``slots``
    slots per bin in h row blocks, trying ``seed`` and then its successors (or the given
    ``seeds``, in order) until one works."""
    tb = tag_bytes if tag_bytes is not None else tag_bytes_for(h, slots)
    capacity = rows * columns * slots
    if len(keys) > capacity:
        raise SpiralpirError(f"keyword table: {len(keys)} keys do not fit {capacity} slots")
    tried = list(seeds) if seeds is not None else []
    if not tried:
        tried = [seed]
        for _ in range(MAX_ATTEMPTS - 1):
            tried.append(next_seed(tried[-1]))
    for n, sd in enumerate(tried, 1):
        layout = CuckooLayout(h, rows, columns, slots, sd, tb)
        table = _place(layout, keys, random.Random(sd))
        if table is not None:
            return CuckooTable(layout, table.where, table.order, table.tags, n)
    raise SpiralpirError(f"keyword table: cuckoo insertion of {len(keys)} keys into {rows} x "
                         f"{columns} bins of {slots} slots in {h} row blocks (load "
                         f"{len(keys) / capacity:.3f}) failed under {len(tried)} seeds; plan a "
                         "lower load (more slots)")
