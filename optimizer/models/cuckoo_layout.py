"""Where a key lives in a keyword table (cuckoo hashing), and the tag that recognises it.

A table is h sub-tables of S slots. Key k may only sit at slot H_j(k) of sub-table j, for j in
0..h-1, where the H_j and the key's tag come from one BLAKE2b digest of k keyed by the
table's public seed: 8 bytes per sub-table (a 64-bit number reduced mod S) then the tag's
bytes. The tag is never zero (zero marks an empty slot), so an absent key matches a present
entry's tag in one of its h candidate slots with probability at most h · 2^-(8·tag_bytes).

Keys are placed by random-walk cuckoo insertion: a key takes a free candidate slot, else
evicts the occupant of a random candidate, which moves on to one of its own, up to MAX_KICKS
moves. A key that cannot be placed means the seed is unlucky (or the load too high): the
table is built again under the next seed (derived from the last by hashing, so a build is
reproducible from its first seed), at most MAX_ATTEMPTS times, then an error naming the load.

The layout is public: the seed, h, S and the tag width are all a client needs to know where
to look (service/keyword_table.py stores the entries, service/keyword_client.py looks up).
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
_HALF = 8  # bytes of digest per sub-table slot


def tag_bytes_for(h: int) -> int:
    """The fewest tag bytes keeping h · 2^-bits <= 2^FALSE_POSITIVE_LOG2."""
    return math.ceil((-FALSE_POSITIVE_LOG2 + math.log2(h)) / 8)


def next_seed(seed: str) -> str:
    """The seed tried after ``seed`` fails (public, deterministic)."""
    return hashlib.blake2b(b"spiralpir-cuckoo-reseed" + bytes.fromhex(seed),
                           digest_size=16).hexdigest()


@dataclass(frozen=True)
class CuckooLayout:
    """h sub-tables of ``slots`` slots, hashed under ``seed``, tags of ``tag_bytes`` bytes."""

    h: int
    slots: int
    seed: str  # 32 hex digits, public
    tag_bytes: int

    def __post_init__(self) -> None:
        if not 2 <= self.h <= 8:
            raise SpiralpirError(f"keyword table: need 2 <= h <= 8 sub-tables, got {self.h}")
        if self.slots < 1:
            raise SpiralpirError(f"keyword table: slots must be >= 1, not {self.slots}")
        if not tag_bytes_for(self.h) <= self.tag_bytes <= 32:
            raise SpiralpirError(f"keyword table: tags of {self.tag_bytes} bytes; {self.h} "
                                 f"sub-tables need {tag_bytes_for(self.h)} to 32")
        try:
            ok = len(self.seed) == 32 and bytes.fromhex(self.seed).hex() == self.seed
        except ValueError:
            ok = False
        if not ok:
            raise SpiralpirError(f"keyword table: seed must be 32 lowercase hex digits, not "
                                 f"{self.seed[:40]!r}")

    def locate(self, key: bytes) -> tuple[list[int], bytes]:
        """The key's candidate slot in each sub-table, and its tag (never all zeros)."""
        size = self.h * _HALF + self.tag_bytes
        d = hashlib.blake2b(key, digest_size=min(size, 64), key=bytes.fromhex(self.seed),
                            person=b"spiralpir-kw").digest()
        if size > 64:  # a second block for wide tags with many sub-tables
            d += hashlib.blake2b(key, digest_size=size - 64, key=bytes.fromhex(self.seed),
                                 person=b"spiralpir-kw2").digest()
        slots = [int.from_bytes(d[j * _HALF:(j + 1) * _HALF], "little") % self.slots
                 for j in range(self.h)]
        tag = d[self.h * _HALF:]
        if not any(tag):
            tag = bytes(self.tag_bytes - 1) + b"\x01"
        return slots, tag

    @property
    def total_slots(self) -> int:
        return self.h * self.slots

    def to_json(self) -> dict[str, Any]:
        return {"h": self.h, "slots": self.slots, "seed": self.seed, "tag_bytes": self.tag_bytes}

    @classmethod
    def from_json(cls, doc: Any, where: str) -> CuckooLayout:
        if not isinstance(doc, dict):
            raise SpiralpirError(f"{where}: the keyword table is not a JSON object")
        fields: dict[str, Any] = {}
        for key, kind in (("h", int), ("slots", int), ("seed", str), ("tag_bytes", int)):
            value = doc.get(key)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise SpiralpirError(f"{where}: keyword field '{key}' missing or not "
                                     f"{'an integer' if kind is int else 'a string'}")
            fields[key] = value
        return cls(**fields)


@dataclass(frozen=True)
class CuckooTable:
    """A placement: ``where[i]`` = (sub-table, slot) of key i, under ``layout`` (whose seed
    is the one that worked, after ``attempts`` seeds)."""

    layout: CuckooLayout
    where: list[tuple[int, int]]
    tags: list[bytes]
    attempts: int


def _place(layout: CuckooLayout, keys: Sequence[bytes], rng: random.Random
           ) -> CuckooTable | None:
    cands: list[list[int]] = []
    tags: list[bytes] = []
    for k in keys:
        c, t = layout.locate(k)
        cands.append(c)
        tags.append(t)
    s = layout.slots
    owner = [-1] * layout.total_slots  # flat slot j*S + slot -> key index
    where = [(-1, -1)] * len(keys)
    for i in range(len(keys)):
        cur, last = i, -1
        for _ in range(MAX_KICKS + 1):
            cand = cands[cur]
            free = next((j for j in range(layout.h) if owner[j * s + cand[j]] < 0), None)
            if free is not None:
                owner[free * s + cand[free]] = cur
                where[cur] = (free, cand[free])
                break
            j = rng.randrange(layout.h - 1) if last >= 0 else rng.randrange(layout.h)
            if last >= 0 and j >= last:
                j += 1  # not straight back to the slot just left
            flat = j * s + cand[j]
            cur, owner[flat] = owner[flat], cur
            where[owner[flat]] = (j, cand[j])
            last = j
        else:
            return None
    return CuckooTable(layout, where, tags, 0)


def build(keys: Sequence[bytes], h: int, slots: int, seed: str,
          tag_bytes: int | None = None, seeds: Iterable[str] | None = None) -> CuckooTable:
    """Place ``keys`` (distinct) in h sub-tables of ``slots`` slots, trying ``seed`` and then
    its successors (or the given ``seeds``, in order) until one works."""
    tb = tag_bytes if tag_bytes is not None else tag_bytes_for(h)
    if len(keys) > h * slots:
        raise SpiralpirError(f"keyword table: {len(keys)} keys do not fit {h} x {slots} slots")
    tried = list(seeds) if seeds is not None else []
    if not tried:
        tried = [seed]
        for _ in range(MAX_ATTEMPTS - 1):
            tried.append(next_seed(tried[-1]))
    for n, sd in enumerate(tried, 1):
        layout = CuckooLayout(h, slots, sd, tb)
        table = _place(layout, keys, random.Random(sd))
        if table is not None:
            return CuckooTable(layout, table.where, table.tags, n)
    raise SpiralpirError(f"keyword table: cuckoo insertion of {len(keys)} keys into {h} x "
                         f"{slots} slots (load {len(keys) / (h * slots):.3f}) failed under "
                         f"{len(tried)} seeds; plan a lower load (more slots)")
