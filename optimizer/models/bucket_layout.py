"""Which bucket holds which record in a batch build (probabilistic batch codes).

Every record i of N is stored in w distinct buckets of B, its *candidates*, chosen by public
hash functions keyed by the database's public seed; inside bucket b the records sit in index
order, so record i's position in b is the number of records below i that b also holds. Server
and client both compute the layout from (N, w, B, seed) alone, so it never goes on the wire.

The hash is SplitMix64 over (seed, index, attempt) reduced mod B, drawn again for a candidate
already taken (sampling without replacement: two records can never share all their candidates
unless w = B, which is what makes small batches cheap; models/placement_bound.py). It is not a
cryptographic hash: the layout is public and only has to look uniform for honest indices.

This module knows only the layout; the protocol that answers B buckets in one request
(service/batch_*.py) takes any layout of equal-sized buckets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from spiralpir.optimizer.errors import SpiralpirError

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
MAX_ATTEMPTS = 4096  # draws per record before giving up (only reachable with w close to B)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, elementwise on uint64 (wrapping)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


@dataclass(frozen=True)
class BucketLayout:
    """N records in B buckets of ``capacity`` slots, each record in w of them."""

    records: int
    w: int
    buckets: int
    seed: str  # 32 hex digits, public
    capacity: int  # slots per bucket: at least the largest bucket's load

    def __post_init__(self) -> None:
        if self.records < 1:
            raise SpiralpirError(f"batch layout: records must be >= 1, not {self.records}")
        if not 1 <= self.w <= self.buckets:
            raise SpiralpirError(f"batch layout: need 1 <= w <= buckets, got w={self.w}, "
                                 f"buckets={self.buckets}")
        try:
            ok = len(self.seed) == 32 and bytes.fromhex(self.seed).hex() == self.seed
        except ValueError:
            ok = False
        if not ok:
            raise SpiralpirError(f"batch layout: seed must be 32 lowercase hex digits, not "
                                 f"{self.seed[:40]!r}")

    def _keys(self) -> tuple[np.uint64, np.uint64]:
        raw = bytes.fromhex(self.seed)
        return (np.uint64(int.from_bytes(raw[:8], "little")),
                np.uint64(int.from_bytes(raw[8:], "little")))

    def candidates(self, indices: Any) -> np.ndarray:
        """The w distinct candidate buckets of each index: int64 array (len(indices), w)."""
        idx = np.asarray(indices, dtype=np.uint64).reshape(-1)
        k0, k1 = self._keys()
        base = _mix(idx ^ k0)
        out = np.full((idx.size, self.w), -1, dtype=np.int64)
        filled = np.zeros(idx.size, dtype=np.int64)
        rows = np.arange(idx.size)
        todo = rows
        for attempt in range(MAX_ATTEMPTS):
            if todo.size == 0:
                return out
            salt = np.uint64((int(k1) + (attempt + 1) * int(_GOLDEN)) % (1 << 64))
            v = (_mix(base[todo] ^ salt) % np.uint64(self.buckets)).astype(np.int64)
            fresh = ~(out[todo] == v[:, None]).any(axis=1)
            take = todo[fresh]
            out[take, filled[take]] = v[fresh]
            filled[take] += 1
            todo = todo[filled[todo] < self.w]
        raise SpiralpirError(f"batch layout: could not draw {self.w} distinct buckets of "
                             f"{self.buckets} in {MAX_ATTEMPTS} attempts")

    def max_load(self) -> int:
        """The largest bucket's load (records placed in it)."""
        cand = self.candidates(np.arange(self.records))
        return int(np.bincount(cand.reshape(-1), minlength=self.buckets).max())

    def sized(self) -> BucketLayout:
        """This layout with capacity = the largest bucket's load."""
        return BucketLayout(self.records, self.w, self.buckets, self.seed, self.max_load())

    def table(self) -> BucketTable:
        """Every bucket's members and every record's positions (O(w·N) memory)."""
        return BucketTable.of(self)

    def to_json(self) -> dict[str, Any]:
        return {"records": self.records, "w": self.w, "buckets": self.buckets,
                "seed": self.seed, "capacity": self.capacity}

    @classmethod
    def from_json(cls, doc: Any, where: str) -> BucketLayout:
        if not isinstance(doc, dict):
            raise SpiralpirError(f"{where}: the batch layout is not a JSON object")
        fields = {}
        for key, kind in (("records", int), ("w", int), ("buckets", int), ("seed", str),
                          ("capacity", int)):
            value = doc.get(key)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise SpiralpirError(f"{where}: batch field '{key}' missing or not "
                                     f"{'an integer' if kind is int else 'a string'}")
            fields[key] = value
        return cls(**fields)


@dataclass(frozen=True)
class BucketTable:
    """The layout spelled out: cand[i] (w buckets), pos[i] (position in each), members of b
    = order[starts[b]:starts[b+1]] (record indices, ascending)."""

    layout: BucketLayout
    cand: np.ndarray
    pos: np.ndarray
    order: np.ndarray
    starts: np.ndarray

    @classmethod
    def of(cls, layout: BucketLayout) -> BucketTable:
        cand = layout.candidates(np.arange(layout.records))
        flat = cand.reshape(-1)
        order = np.argsort(flat, kind="stable")  # by bucket, then by index (rows ascending)
        counts = np.bincount(flat, minlength=layout.buckets)
        starts = np.zeros(layout.buckets + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        pos = np.empty(flat.size, dtype=np.int64)
        pos[order] = np.arange(flat.size) - starts[flat[order]]
        members = (order // layout.w).astype(np.int64)
        return cls(layout, cand, pos.reshape(cand.shape), members, starts)

    @property
    def max_load(self) -> int:
        return int(np.diff(self.starts).max())

    def members(self, bucket: int) -> np.ndarray:
        return self.order[self.starts[bucket]:self.starts[bucket + 1]]

    def position(self, index: int, bucket: int) -> int:
        """Record ``index``'s slot in ``bucket`` (one of its candidates)."""
        row = self.cand[index]
        hit = np.nonzero(row == bucket)[0]
        if hit.size != 1:
            raise SpiralpirError(f"record {index} is not stored in bucket {bucket}")
        return int(self.pos[index, hit[0]])
