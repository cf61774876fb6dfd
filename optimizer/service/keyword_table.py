"""A keyword table's slots: what each of the h sub-table databases holds.

Slot layout (``slot_size`` bytes, the build's record size):

    tag (tag_bytes) | value length (1, 2 or 4 bytes, value_frame.py) | value | zero padding

An empty slot is all zeros: its tag (zero) matches no key (models/cuckoo_layout.py never
gives a zero tag). Sub-table j is one bucket database of S slots; a lookup fetches the key's
candidate slot in every sub-table and keeps the one whose tag is the key's.
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
    same table (and its stores are reused) on every start. Public, like every seed."""
    h = hashlib.blake2b(b"spiralpir-keyword-seed", digest_size=16)
    for k in keys:
        h.update(len(k).to_bytes(8, "little") + k)
    return h.hexdigest()


@dataclass
class KeywordTable:
    """The placed table and its h sub-table databases (``subtables[j]``: S slots)."""

    table: CuckooTable
    slot_size: int
    subtables: list[database.Records]
    keys: int


def make_table(data: KeywordData, h: int, slots: int, slot_size: int, tag_bytes: int,
               seed: str | None = None) -> KeywordTable:
    """Place ``data`` in h sub-tables of ``slots`` slots of ``slot_size`` bytes."""
    cap = value_capacity(slot_size, tag_bytes)
    for k, v in zip(data.keys, data.values, strict=True):
        if len(v) > cap:
            raise SpiralpirError(f"{data.source}: the value of key {shown(k)} is {len(v)} bytes, "
                                 f"longer than the {cap} a {slot_size}-byte slot holds")
    table = cuckoo_layout.build(data.keys, h, slots, seed or first_seed(data.keys), tag_bytes)
    out = np.zeros((h, slots, slot_size), dtype=np.uint8)
    item = slot_size - tag_bytes
    for i, (j, s) in enumerate(table.where):
        out[j, s] = np.frombuffer(table.tags[i] + value_frame.frame(data.values[i], item),
                                  dtype=np.uint8)
    subs = [database.Records(bytearray(out[j].tobytes()), slots, slot_size,
                             f"sub-table {j} of {data.source}", "binary") for j in range(h)]
    return KeywordTable(table, slot_size, subs, len(data.keys))


def find(layout: CuckooLayout, key: bytes, slots: list[bytes]) -> bytes | None:
    """The key's value among the h fetched candidate slots (in sub-table order), or None."""
    _, tag = layout.locate(key)
    hits = [s for s in slots if s[: layout.tag_bytes] == tag]
    if not hits:
        return None
    return value_frame.unframe(hits[0][layout.tag_bytes:], "the keyword table's slot")
