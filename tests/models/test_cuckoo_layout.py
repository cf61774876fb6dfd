"""The keyword table's cuckoo layout at scale (no PIR): every key placed at one of its own
candidates, every present key found by its tag, absent keys not found; the rebuild path."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models import cuckoo_layout
from spiralpir.optimizer.models.cuckoo_layout import CuckooLayout, next_seed, tag_bytes_for

Seeded = Callable[[str], random.Random]


def test_tag_width_meets_the_false_positive_bound() -> None:
    for h in (2, 3, 4, 8):
        bits = 8 * tag_bytes_for(h)
        assert h * 2.0 ** -bits <= 2.0 ** -40 < h * 2.0 ** -(bits - 8)  # and the fewest


@pytest.mark.parametrize("h,load", [(3, 0.85), (2, 0.45)])
def test_many_keys_placed_and_found(h: int, load: float, seeded: Seeded,
                                    request: pytest.FixtureRequest) -> None:
    rng = seeded(request.node.nodeid)
    n = 100_000
    keys = [rng.randbytes(rng.randrange(1, 40)) for _ in range(n)]
    keys = list(dict.fromkeys(keys))
    slots = int(len(keys) / (h * load)) + 1
    table = cuckoo_layout.build(keys, h, slots, rng.randbytes(16).hex())
    lay = table.layout
    occupied: dict[tuple[int, int], int] = {}
    for i, k in enumerate(keys):
        cands, tag = lay.locate(k)
        j, s = table.where[i]
        assert s == cands[j], "a key sits outside its candidate slots"
        assert (j, s) not in occupied, "two keys share a slot"
        occupied[(j, s)] = i
        assert tag == table.tags[i] and any(tag)
    # the lookup a client does: the entry whose tag matches among the h candidates
    slot_tag = {pos: table.tags[i] for pos, i in occupied.items()}
    for k in keys[:20_000]:
        cands, tag = lay.locate(k)
        hits = [j for j in range(h) if slot_tag.get((j, cands[j])) == tag]
        assert len(hits) == 1
    present = set(keys)
    absent = 0
    while absent < 10_000:
        k = rng.randbytes(rng.randrange(1, 40))
        if k in present:
            continue
        absent += 1
        cands, tag = lay.locate(k)
        assert not any(slot_tag.get((j, cands[j])) == tag for j in range(h))


def _three_keys_on_one_pair(seed: str) -> bool:
    """Whether keys a, b, c all have the same two candidates in a 2 x 2 table (then no
    placement exists: three keys, two slots)."""
    lay = CuckooLayout(2, 2, seed, tag_bytes_for(2))
    return len({tuple(lay.locate(k)[0]) for k in (b"a", b"b", b"c")}) == 1


def test_rebuild_with_a_fresh_seed(seeded: Seeded, request: pytest.FixtureRequest) -> None:
    rng = seeded(request.node.nodeid)
    bad = good = None
    while bad is None or good is None:
        seed = rng.randbytes(16).hex()
        if _three_keys_on_one_pair(seed):
            bad = bad or seed
        else:
            good = good or seed
    table = cuckoo_layout.build([b"a", b"b", b"c"], 2, 2, bad, seeds=[bad, good])
    assert table.layout.seed == good and table.attempts == 2
    with pytest.raises(SpiralpirError, match=r"load 0\.750\) failed under 2 seeds"):
        cuckoo_layout.build([b"a", b"b", b"c"], 2, 2, bad, seeds=[bad, bad])


def test_reseeding_is_deterministic_and_bounded() -> None:
    seed = "00" * 16
    assert next_seed(seed) == next_seed(seed) != seed
    # 13 keys in 2 x 6 slots cannot fit: refused before any attempt
    with pytest.raises(SpiralpirError, match="13 keys do not fit 2 x 6 slots"):
        cuckoo_layout.build([bytes([i]) for i in range(13)], 2, 6, seed)
    # 12 keys in 2 x 6 slots at load 1: every seed fails, the error names the load
    with pytest.raises(SpiralpirError, match=rf"load 1\.000\) failed under "
                       rf"{cuckoo_layout.MAX_ATTEMPTS} seeds"):
        cuckoo_layout.build([bytes([i]) for i in range(12)], 2, 6, seed)


def test_layout_json_round_trip_and_checks() -> None:
    lay = CuckooLayout(3, 100, "ab" * 16, 6)
    assert CuckooLayout.from_json(lay.to_json(), "x") == lay
    with pytest.raises(SpiralpirError, match="need 6 to 32"):
        CuckooLayout(3, 100, "ab" * 16, 5)
    with pytest.raises(SpiralpirError, match="seed must be 32 lowercase hex"):
        CuckooLayout(3, 100, "AB" * 16, 6)
    with pytest.raises(SpiralpirError, match="keyword field 'slots' missing"):
        CuckooLayout.from_json({"h": 3, "seed": "ab" * 16, "tag_bytes": 6}, "x")
