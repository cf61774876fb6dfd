"""The framing of a batch request and reply: round trip, and every malformed field refused
with its name; the client's check of the layout a server reports."""

from __future__ import annotations

import random
import struct

import pytest
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import batch_wire
from spiralpir.optimizer.service.batch_client import layout_of


def test_round_trip(rng: random.Random) -> None:
    msgs = [rng.randbytes(40) for _ in range(5)]
    body = batch_wire.pack(msgs)
    assert len(body) == batch_wire.framed_bytes(5, 40)
    assert batch_wire.unpack(body, 5, 40) == msgs
    reply = batch_wire.pack(msgs, batch_wire.REPLY_MAGIC)
    assert batch_wire.unpack(reply, 5, 40, batch_wire.REPLY_MAGIC) == msgs


def test_malformed_bodies(rng: random.Random) -> None:
    msgs = [rng.randbytes(16) for _ in range(3)]
    body = batch_wire.pack(msgs)
    cases = {
        "shorter than its": body[:10],
        "magic": batch_wire.pack(msgs, batch_wire.REPLY_MAGIC),
        "version": body[:8] + struct.pack("<I", 9) + body[12:],
        "2 buckets, this build has 3": batch_wire.pack(msgs[:2]),
        "message length 17": batch_wire.pack([m + b"x" for m in msgs]),
        "truncated or padded": body[:-1],
    }
    for needle, bad in cases.items():
        with pytest.raises(batch_wire.BadBatch, match=needle):
            batch_wire.unpack(bad, 3, 16)
    with pytest.raises(batch_wire.BadBatch, match="same length"):
        batch_wire.pack([b"a", b"bb"])
    with pytest.raises(batch_wire.BadBatch, match="at least one"):
        batch_wire.pack([])


def test_client_refuses_a_layout_that_does_not_fit_its_build() -> None:
    ok = {"records": 100, "w": 2, "buckets": 4, "seed": "00" * 16, "capacity": 50}
    assert layout_of({"batch": ok}, 64).capacity == 50
    for bad in ({**ok, "capacity": 65}, {**ok, "records": 101}, {**ok, "buckets": 1 << 17}):
        with pytest.raises(SpiralpirError, match="does not fit its build"):
            layout_of({"batch": bad}, 64)
    with pytest.raises(SpiralpirError, match="one database"):
        layout_of({}, 64)
