"""A keyword table's records: the one database a keyword build serves.

Slot layout (``slot_size`` bytes, the build's record size):

    tag (tag_bytes) | value length (1, 2 or 4 bytes, value_frame.py) | value | zero padding

An empty slot is all zeros: its tag (zero) matches no key (models/cuckoo_layout.py never
gives a zero tag). Bin (row, column) is the plaintext row·columns + column; its ``slots``
records are the database's records bin·slots + s, holding the bin's entries in slots 0, 1, …
(the placement's order) and zeros after them. A lookup fetches the key's h candidate bins and
keeps the entry whose tag is the key's, scanning every slot of every bin.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models import cuckoo_layout
from spiralpir.optimizer.models.cuckoo_layout import CuckooLayout, CuckooTable
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service import value_frame
from spiralpir.optimizer.service.keyword_input import KeywordData, shown


def slot_size_for(max_value: int, tag_bytes: int) -> int:
    """The slot size holding a tag and any value up to max_value bytes with its length."""
    return tag_bytes + value_frame.item_size_for(max_value)


def value_capacity(slot_size: int, tag_bytes: int) -> int:
    return value_frame.capacity(slot_size - tag_bytes)


def first_seed(keys: list[bytes]) -> str:
    """The first seed tried for a key set: a hash of the keys, so the same database gets the
    same table (and its store is reused) on every start. Public, like every seed."""
    h = hashlib.blake2b(b"spiralpir-keyword-seed", digest_size=16)
    for k in keys:
        h.update(len(k).to_bytes(8, "little") + k)
    return h.hexdigest()


@dataclass(frozen=True)
class TableShape:
    """A keyword table's shape (``NAME/keyword.json``, from the plan): the seed is chosen
    when the table is filled (first_seed), the rest when it is planned."""

    h: int
    rows: int
    columns: int
    slots: int
    tag_bytes: int
    slot_size: int

    @property
    def capacity(self) -> int:
        return self.rows * self.columns * self.slots


@dataclass
class KeywordTable:
    """The placed table and its database (``records``: rows·columns·slots slots)."""

    table: CuckooTable
    slot_size: int
    records: database.Records
    keys: int


def make_table(data: KeywordData, shape: TableShape, seed: str | None = None) -> KeywordTable:
    """Place ``data`` in a table of ``shape``."""
    cap = value_capacity(shape.slot_size, shape.tag_bytes)
    for k, v in zip(data.keys, data.values, strict=True):
        if len(v) > cap:
            raise SpiralpirError(f"{data.source}: the value of key {shown(k)} is {len(v)} bytes, "
                                 f"longer than the {cap} a {shape.slot_size}-byte slot holds")
    table = cuckoo_layout.build(data.keys, shape.h, shape.rows, shape.columns, shape.slots,
                                seed or first_seed(data.keys), shape.tag_bytes)
    size, m = shape.slot_size, shape.slots
    out = np.zeros((shape.capacity, size), dtype=np.uint8)
    item = size - shape.tag_bytes
    for b, members in table.order.items():
        for s, i in enumerate(members):
            out[b * m + s] = np.frombuffer(table.tags[i] + value_frame.frame(data.values[i], item),
                                           dtype=np.uint8)
    recs = database.Records(bytearray(out.tobytes()), shape.capacity, size,
                            data.source, "binary")
    return KeywordTable(table, size, recs, len(data.keys))


def find(layout: CuckooLayout, key: bytes, bins: list[bytes], slot_size: int,
         record_size: int) -> bytes | None:
    """The key's value among its h fetched bins (each ``slots`` records of ``record_size``
    bytes, slot_size of them used), or None. Every slot of every bin is compared."""
    _, _, tag = layout.locate(key)
    t = layout.tag_bytes
    hit: bytes | None = None
    for data in bins:
        for s in range(layout.slots):
            slot = data[s * record_size: s * record_size + slot_size]
            if slot[:t] == tag and hit is None:
                hit = slot
    if hit is None:
        return None
    return value_frame.unframe(hit[t:], "the keyword table's slot")
