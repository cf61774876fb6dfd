"""The placement-failure bound: an upper bound on the failure rate measured where failures
are frequent (few buckets), exact agreement of the matching with Hall's condition, and the
smallest bucket count meeting 2^-40."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from spiralpir.optimizer.models.bucket_layout import BucketLayout
from spiralpir.optimizer.models.placement_bound import log2_failure_bound, min_buckets
from spiralpir.optimizer.service.placement import PlacementFailed, place


def failure_rate(rng: random.Random, k: int, buckets: int, w: int, trials: int) -> float:
    """Fraction of random k-subsets of random layouts that the matching cannot place."""
    fails = 0
    for _ in range(trials):
        lay = BucketLayout(10_000, w, buckets, rng.randbytes(16).hex(), 0)
        idx = rng.sample(range(10_000), k)
        try:
            place(idx, lay.candidates(idx), buckets)
        except PlacementFailed:
            fails += 1
    return fails / trials


@pytest.mark.parametrize(("k", "buckets", "w"), [(6, 8, 2), (8, 12, 2), (10, 12, 3),
                                                 (12, 16, 3)])
def test_bound_is_above_the_measured_failure_rate(rng: random.Random, k: int, buckets: int,
                                                  w: int) -> None:
    trials = 3000
    bound = 2 ** log2_failure_bound(k, buckets, w)
    rate = failure_rate(rng, k, buckets, w, trials)
    # the bound must hold with room for sampling error (4 standard deviations)
    slack = 4 * math.sqrt(max(rate * (1 - rate), 1 / trials) / trials)
    assert rate <= bound + slack, (rate, bound)
    assert rate > 0, "a case meant to fail often never failed: the test would prove nothing"


def hall_holds(cand: list[set[int]]) -> bool:
    return all(len(set().union(*(cand[j] for j in sub))) >= len(sub)
               for s in range(1, len(cand) + 1)
               for sub in itertools.combinations(range(len(cand)), s))


def test_matching_fails_exactly_when_hall_fails(rng: random.Random) -> None:
    seen = {True: 0, False: 0}
    for _ in range(400):
        k, buckets, w = rng.randint(2, 7), rng.randint(2, 8), rng.randint(1, 2)
        if w > buckets:
            continue
        cand = np.array([rng.sample(range(buckets), w) for _ in range(k)])
        ok = hall_holds([set(r) for r in cand.tolist()])
        seen[ok] += 1
        idx = list(range(100, 100 + k))
        if ok:
            got = place(idx, cand, buckets)
            assert sorted(got) == idx and len(set(got.values())) == k
            assert all(got[i] in cand[j] for j, i in enumerate(idx))
        else:
            with pytest.raises(PlacementFailed, match="cannot"):
                place(idx, cand, buckets)
    assert min(seen.values()) > 20, seen


@pytest.mark.parametrize("k", [2, 16, 32, 64])
@pytest.mark.parametrize("w", [3, 4, 5])
def test_min_buckets_is_the_smallest_meeting_the_target(k: int, w: int) -> None:
    b = min_buckets(k, w)
    assert log2_failure_bound(k, b, w) <= -40
    if b > max(k, w):
        assert log2_failure_bound(k, b - 1, w) > -40


def test_no_witness_means_no_failure() -> None:
    # w distinct candidates: fewer than w + 1 indices can always be placed
    assert log2_failure_bound(3, 3, 3) == -math.inf
    assert min_buckets(1, 1) == 1
