"""The public bucket layout of a batch build: w distinct candidates per record, positions that
name each record's slot in every bucket holding it, deterministic in the public seed."""

from __future__ import annotations

import random

import numpy as np
import pytest
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.bucket_layout import BucketLayout


def layout(rng: random.Random, records: int, w: int, buckets: int) -> BucketLayout:
    return BucketLayout(records, w, buckets, rng.randbytes(16).hex(), 0)


@pytest.mark.parametrize(("records", "w", "buckets"), [(1, 1, 1), (500, 2, 2), (3000, 3, 40),
                                                       (5000, 5, 7), (2000, 4, 89)])
def test_candidates_are_distinct_and_in_range(rng: random.Random, records: int, w: int,
                                              buckets: int) -> None:
    lay = layout(rng, records, w, buckets)
    cand = lay.candidates(np.arange(records))
    assert cand.shape == (records, w)
    assert cand.min() >= 0 and cand.max() < buckets
    assert all(len(set(row)) == w for row in cand.tolist())
    # the same indices in another order or alone: the same candidates (a pure function)
    some = rng.sample(range(records), min(records, 50))
    assert (lay.candidates(some) == cand[some]).all()
    assert (lay.candidates([some[0]])[0] == cand[some[0]]).all()


def test_seed_changes_the_layout(rng: random.Random) -> None:
    a, b = layout(rng, 2000, 3, 50), layout(rng, 2000, 3, 50)
    assert (a.candidates(np.arange(2000)) != b.candidates(np.arange(2000))).any()


def test_loads_look_uniform(rng: random.Random) -> None:
    lay = layout(rng, 60000, 3, 30)
    loads = np.bincount(lay.candidates(np.arange(60000)).reshape(-1), minlength=30)
    mean = 60000 * 3 / 30
    assert abs(loads - mean).max() < 6 * mean**0.5, loads


def test_table_positions_name_each_records_slot(rng: random.Random) -> None:
    lay = layout(rng, 3000, 4, 37)
    t = lay.table()
    assert int(np.diff(t.starts).sum()) == 3000 * 4
    for b in range(lay.buckets):
        m = t.members(b)
        assert (np.diff(m) > 0).all(), "members in index order"
    for i in rng.sample(range(3000), 300):
        for b in t.cand[i]:
            slot = t.position(i, int(b))
            assert t.members(int(b))[slot] == i
    spare = next(b for b in range(lay.buckets) if b not in set(t.cand[5].tolist()))
    with pytest.raises(SpiralpirError, match="not stored in bucket"):
        t.position(5, spare)


@pytest.mark.parametrize(("doc", "match"), [
    ({"records": 10, "w": 3, "buckets": 2, "seed": "00" * 16, "capacity": 5}, "w <= buckets"),
    ({"records": 10, "w": 1, "buckets": 2, "seed": "zz" * 16, "capacity": 5}, "seed"),
    ({"records": 10, "w": 1, "buckets": 2, "seed": "AB" * 16, "capacity": 5}, "seed"),
    ({"records": 10, "w": 1, "buckets": 2, "capacity": 5}, "'seed'"),
    ({"records": True, "w": 1, "buckets": 2, "seed": "00" * 16, "capacity": 5}, "'records'"),
    ([], "not a JSON object"),
])
def test_malformed_layouts_are_refused(doc: object, match: str) -> None:
    with pytest.raises(SpiralpirError, match=match):
        BucketLayout.from_json(doc, "batch.json")
