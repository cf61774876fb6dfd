"""The cached security table: conservative against the full estimate, and fast."""

from __future__ import annotations

import random
import time

import pytest
from spiralpir.estimator import table
from spiralpir.estimator.spiral import security_report

RNG = random.Random(20261122)


def full(poly_len: int, log2_q: float, width: float, secret: str) -> float:
    bits = security_report(poly_len, round(2.0**log2_q), width, secret)["security_bits"]
    assert bits is not None
    return float(bits)


def test_table_covers_the_grid() -> None:
    entries = table._table()["entries"]
    for n in table.POLY_LENS:
        for s in table.SECRETS:
            for w in table.WIDTHS:
                e = entries[table._key(n, s, w)]
                assert len(e["log2_q"]) == len(e["bits"]) >= 10
                assert e["bits"][-1] < 128 or e["log2_q"][-1] >= 219  # reaches below 128


def _sample_points(k: int) -> list[tuple[int, float, float, str]]:
    pts = []
    for _ in range(k):
        n = RNG.choice([1024, 2048, 4096, 3000])  # 3000: between grid dimensions
        s = RNG.choice(table.SECRETS)
        w = RNG.choice([3.2, 6.4, 7.0, 12.8, 20.0])  # 7.0, 20.0: between grid widths
        hi = {1024: 45.0, 2048: 90.0, 3000: 120.0, 4096: 180.0}[n]  # also beyond the curves
        pts.append((n, RNG.uniform(hi / 2.5, hi), w, s))
    return pts


@pytest.mark.parametrize("point", _sample_points(12))
def test_fast_level_is_never_above_the_full_estimate(point: tuple[int, float, float, str]) -> None:
    n, lq, w, s = point
    fast = table.security_bits_fast(n, lq, w, s)
    ref = full(n, lq, w, s)
    assert fast <= ref + 1e-9
    if n in table.POLY_LENS and w in table.WIDTHS and ref >= 100:
        assert fast >= ref - 1.0  # on the grid (and above 100 bits) the table is also tight


@pytest.mark.parametrize("bits", table.LEVELS)
def test_max_modulus_is_secure_and_tight(bits: int) -> None:
    n = RNG.choice([1024, 2048, 4096])
    s = RNG.choice(table.SECRETS)
    lq = table.max_log2_modulus(n, 6.4, s, bits)
    assert full(n, lq, 6.4, s) >= bits
    assert full(n, lq + 1.0, 6.4, s) < bits + 4  # within about a bit of q


def test_known_anchor_from_the_table() -> None:
    # d = 2048, width 6.4, Gaussian secret: 128 bits up to log2 q ≈ 54.6 (129.6 at 54)
    assert 54.0 <= table.max_log2_modulus(2048, 6.4, "gaussian", 128) <= 54.8
    assert 124.2 <= table.security_bits_fast(2048, 55.894, 6.4, "gaussian") <= 124.9


def test_lookups_take_microseconds() -> None:
    t = time.perf_counter()
    for i in range(20000):
        table.security_bits_fast(2048, 30.0 + (i % 600) / 10, 6.4, "ternary")
    per_call = (time.perf_counter() - t) / 20000
    assert per_call < 50e-6
    t = time.perf_counter()
    for b in (128, 192, 256):
        table.max_log2_modulus(4096, 6.4, "gaussian", b)
    assert time.perf_counter() - t < 0.1
