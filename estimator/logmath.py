"""Arithmetic on log2-encoded costs and probabilities (costs reach 2^1000 and probabilities
2^-2000, beyond the float range, so everything is carried as log2)."""

from __future__ import annotations

import math

INF = math.inf
LN2 = math.log(2.0)


def log2_add(x: float, y: float) -> float:
    """log2(2^x + 2^y)."""
    if x < y:
        x, y = y, x
    if y == -INF:
        return x
    if x == INF:
        return INF
    return x + math.log2(1.0 + 2.0 ** (y - x))


def log2_ceil(x: float) -> float:
    """log2(ceil(2^x)) for x ≥ ... (exact while 2^x is representable, else x)."""
    if x > 52:
        return x
    return math.log2(max(1.0, math.ceil(2.0**x - 1e-12)))


def log2_floor(x: float) -> float:
    """log2(floor(2^x)), ``-inf`` when 2^x < 1."""
    if x > 52:
        return x
    f = math.floor(2.0**x)
    return math.log2(f) if f >= 1 else -INF


def log2_one_minus(lp: float) -> float:
    """log2(1 − 2^lp) for lp ≤ 0."""
    if lp >= 0:
        return -INF
    p = 2.0**lp
    return math.log1p(-p) / LN2


def log2_amplify(target: float, log2_p: float) -> float:
    """log2 of the number of independent trials to raise a success probability 2^log2_p
    to ``target`` (one success suffices): ceil(ln(1−target)/ln(1−p))."""
    if log2_p == -INF:
        return INF
    p = 2.0**log2_p
    if p >= target:
        return 0.0
    ln1mp = math.log1p(-p) if p > 1e-300 else -p
    if ln1mp == 0.0:  # p below double resolution: ln(1-p) ≈ -p
        return math.log2(-math.log(1.0 - target)) - log2_p
    trials = math.log(1.0 - target) / ln1mp
    if trials > 2.0**52:
        return math.log2(trials)
    return math.log2(math.ceil(trials))
