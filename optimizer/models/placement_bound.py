"""How likely a batch of k indices fails to place in distinct buckets, and the smallest bucket
count that makes it negligible.

The client places its k distinct indices by a bipartite matching (service/placement.py), which
succeeds exactly when Hall's condition holds: every set of s indices has at least s candidate
buckets between them. A failure therefore has a witness: s indices whose candidates all fall
inside some s − 1 buckets. Each index draws w distinct buckets uniformly (models/
bucket_layout.py), so its candidates lie in a given set of s − 1 buckets with probability
C(s−1, w) / C(B, w) (zero when s − 1 < w), and the union bound over the witnesses gives

    P(fail) <= sum_{s = w+1}^{k} C(k, s) · C(B, s−1) · (C(s−1, w) / C(B, w))^s.

Without distinct candidates the s = 2 term alone (two indices whose 2w draws hit one bucket,
C(k,2)·B^(1−2w)) would force B in the hundreds for w = 3 at 2^-40.
"""

from __future__ import annotations

import math

TARGET_LOG2 = -40.0  # the failure probability a plan must reach per batch


def _lc(n: int, r: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(r + 1) - math.lgamma(n - r + 1)


def log2_failure_bound(k: int, buckets: int, w: int) -> float:
    """log2 of the union bound above (-inf when no witness is possible)."""
    terms = []
    for s in range(w + 1, k + 1):
        if s - 1 > buckets:
            break
        per_index = _lc(s - 1, w) - _lc(buckets, w)
        terms.append(_lc(k, s) + _lc(buckets, s - 1) + s * per_index)
    if not terms:
        return -math.inf
    top = max(terms)
    return (top + math.log(sum(math.exp(t - top) for t in terms))) / math.log(2)


def min_buckets(k: int, w: int, target_log2: float = TARGET_LOG2) -> int:
    """The fewest buckets (>= max(k, w)) whose bound is <= 2^target_log2 (the bound falls as
    buckets grow: binary search after doubling)."""
    lo = max(k, w)
    if log2_failure_bound(k, lo, w) <= target_log2:
        return lo
    hi = lo * 2
    while log2_failure_bound(k, hi, w) > target_log2:
        hi *= 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if log2_failure_bound(k, mid, w) <= target_log2:
            hi = mid
        else:
            lo = mid
    return hi
