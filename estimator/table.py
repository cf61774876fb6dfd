"""Cached security table so that the optimizer never waits on the estimator.

``security_table.json`` (next to this module) holds, for each ring dimension, secret
distribution and error width of a grid, the security level (MATZOV; usvp, bdd, dual and
dual hybrid — the primal hybrids never set the level for these secrets, which the tests
check at sampled points) at log2 q on a 1-bit grid, and the largest log2 q reaching
128/192/256 bits.

Lookups are conservative — never above the full estimate:

* a width between grid widths uses the next smaller grid width (more noise never helps
  the attacker), a ring dimension between grid dimensions the next smaller one;
* between two log2 q grid points the level is interpolated linearly, then lowered by
  ``MARGIN_DROP`` (25 %) of its drop across that 1-bit interval, but not below the
  interval's right end, and by ``MARGIN`` (0.25 bit): the curve is convex except for the
  dual hybrid's discrete optimisation steps (p, k_fft in steps of 10), which put it up to
  ~12 % of the interval's drop below the chord (measured); beyond the last point (below
  ~100 bits) the last secant is extended (below a convex curve);
* ``max_log2_modulus`` is the bisected value from the table minus ``MARGIN_Q`` bits.

Parameters outside the grid (other secrets, dimensions below 1024, widths below the
smallest grid width) fall back to the full estimate (seconds), cached in memory.

Regenerate with ``python -m spiralpir.estimator.table`` (≈ 40 min on two busy cores), or
only recompute the thresholds with ``python -m spiralpir.estimator.table --annotate``.
"""

from __future__ import annotations

import bisect
import json
import math
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import SpiralpirError

TABLE_PATH = Path(__file__).with_name("security_table.json")
POLY_LENS = (1024, 2048, 4096, 8192)
SECRETS = ("gaussian", "ternary", "sparse-ternary:256,256")
WIDTHS = (3.2, 4.0, 6.4, 8.0, 12.8, 16.0, 25.6)
LEVELS = (128, 192, 256)
STEP = 1.0
MARGIN = 0.25
MARGIN_DROP = 0.25
MARGIN_Q = 0.05


def _key(poly_len: int, secret: str, width: float) -> str:
    return f"{poly_len}|{secret}|{width:g}"


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    if not TABLE_PATH.exists():
        return {"entries": {}}
    return json.loads(TABLE_PATH.read_text())


def _grid_point(poly_len: int, noise_width: float, secret: str) -> str | None:
    s = secret.strip().lower()
    if s not in SECRETS:
        return None
    ns = [n for n in POLY_LENS if n <= poly_len]
    ws = [w for w in WIDTHS if w <= noise_width + 1e-12]
    if not ns or not ws:
        return None
    key = _key(ns[-1], s, ws[-1])
    return key if key in _table()["entries"] else None


@lru_cache(maxsize=4096)
def _full_security(poly_len: int, log2_modulus: float, noise_width: float, secret: str) -> float:
    from .spiral import security_report

    q = max(3, round(2.0**log2_modulus))
    bits = security_report(poly_len, q, noise_width, secret)["security_bits"]
    return math.inf if bits is None else float(bits)


def _up(log2_modulus: float) -> float:
    """Round log2 q UP to 1/1000 (a larger modulus is never more secure), for caching."""
    return math.ceil(log2_modulus * 1000.0) / 1000.0


def security_bits_fast(
    poly_len: int, log2_modulus: float, noise_width: float, secret: str = "gaussian"
) -> float:
    """Security level (bits, MATZOV) from the cached table, conservative (see module doc)."""
    key = _grid_point(poly_len, noise_width, secret)
    if key is None:
        return _full_security(poly_len, _up(log2_modulus), noise_width, secret)
    e = _table()["entries"][key]
    xs: list[float] = e["log2_q"]
    ys: list[float] = e["bits"]
    if log2_modulus <= xs[0]:
        return ys[0] - MARGIN  # more secure than the table's first point; stay conservative
    if log2_modulus >= xs[-1]:
        # beyond the curve (below ~100 bits): extend its last secant; the level is convex
        # and decreasing in log2 q, so the extension lies below it (conservative)
        slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        return max(0.0, ys[-1] + slope * (log2_modulus - xs[-1]) - MARGIN)
    return _interpolate(xs, ys, log2_modulus)


def _interpolate(xs: list[float], ys: list[float], x: float) -> float:
    """Linear interpolation of the level at log2 q = x (inside the curve), lowered by
    MARGIN plus MARGIN_DROP of the level's drop across the 1-bit interval (never below the
    interval's right end point, which bounds a decreasing curve from below)."""
    j = min(max(bisect.bisect_right(xs, x), 1), len(xs) - 1)
    x0, x1, y0, y1 = xs[j - 1], xs[j], ys[j - 1], ys[j]
    t = (x - x0) / (x1 - x0)
    drop = max(y0 - y1, 0.0)
    chord = min(y0, y0 + t * (y1 - y0))
    return max(chord - MARGIN_DROP * drop, y1) - MARGIN


def max_log2_modulus(
    poly_len: int, noise_width: float, secret: str = "gaussian", bits: int = 128
) -> float:
    """Largest log2 q keeping the ring at ≥ ``bits`` of security (MATZOV), conservative."""
    if bits <= 0:
        raise SpiralpirError(f"bits must be positive, got {bits}")
    key = _grid_point(poly_len, noise_width, secret)
    if key is not None:
        e = _table()["entries"][key]
        stored = e.get("max_log2_q", {}).get(str(bits))
        if stored is not None:
            return float(stored)
        found = _threshold(e["log2_q"], e["bits"], bits)
        if found is not None:
            return found
    return _max_log2_full(poly_len, noise_width, secret, bits)


@lru_cache(maxsize=1024)
def _max_log2_full(poly_len: int, noise_width: float, secret: str, bits: int) -> float:
    lo, hi = 4.0, 220.0
    if _full_security(poly_len, lo, noise_width, secret) < bits:
        return 0.0
    for _ in range(24):
        mid = (lo + hi) / 2
        if _full_security(poly_len, round(mid, 3), noise_width, secret) >= bits:
            lo = mid
        else:
            hi = mid
    return lo - MARGIN_Q


# ----------------------------------------------------------------------------------------
# generation

# The table is built from the attacks that set the level for these secrets; the primal
# hybrids never undercut plain BDD/dual hybrid here (checked against the reference and,
# at sampled points, by tests/estimator/test_table.py against the full estimate).
TABLE_ATTACKS = ("usvp", "bdd", "dual", "dual_hybrid")


def _fast_security(poly_len: int, log2_q: float, width: float, secret: str) -> float:
    from .estimate import estimate
    from .spiral import lwe_instance

    q = max(3, round(2.0**log2_q))
    return estimate(lwe_instance(poly_len, q, width, secret), "matzov", only=TABLE_ATTACKS)\
        .security_bits


def _entry(poly_len: int, secret: str, width: float) -> dict[str, Any]:
    """Security on a 1-bit log2 q grid from where it drops below 330 bits down to 100 bits
    (or the largest supported modulus)."""

    def level(x: float) -> float:
        return _fast_security(poly_len, x, width, secret)

    lo, hi = 8.0, 220.0
    # first grid point below 330 bits, last one above 100 bits (level decreases with q)
    a, b = lo, hi
    while b - a > STEP:
        mid = (a + b) / 2
        if level(mid) < 330:
            b = mid
        else:
            a = mid
    start = max(lo, math.floor(a / STEP) * STEP)
    xs: list[float] = []
    ys: list[float] = []
    x = start
    while x <= hi:
        y = level(x)
        xs.append(x)
        ys.append(round(y, 4))
        if y < 100:
            break
        x += STEP
    return {"log2_q": xs, "bits": ys}


def generate(path: Path = TABLE_PATH) -> None:
    from .spiral import version

    entries: dict[str, Any] = {}
    for n in POLY_LENS:
        for s in SECRETS:
            for w in WIDTHS:
                entries[_key(n, s, w)] = _entry(n, s, w)
                print(f"table: {_key(n, s, w)} done", file=sys.stderr, flush=True)
    data = {
        "generator": f"spiralpir {version()} (python -m spiralpir.estimator.table)",
        "cost_model": "matzov",
        "attacks": list(TABLE_ATTACKS),
        "step": STEP,
        "entries": entries,
    }
    _write(annotate(data), path)


def annotate(data: dict[str, Any]) -> dict[str, Any]:
    """Add each entry's conservative ``max_log2_q`` for 128/192/256 bits (from its curve,
    exactly as ``max_log2_modulus`` computes it; ``null`` if outside the curve)."""
    data["note"] = (
        "bits: MATZOV level at log2_q (attacks listed); max_log2_q: conservative thresholds "
        "(what max_log2_modulus returns)"
    )
    for e in data["entries"].values():
        e["max_log2_q"] = {
            str(b): _threshold(e["log2_q"], e["bits"], b) for b in LEVELS
        }
    return data


def _threshold(xs: list[float], ys: list[float], bits: int) -> float | None:
    if not ys[0] - MARGIN >= bits >= ys[-1]:
        return None
    lo, hi = xs[0], xs[-1]
    for _ in range(40):
        mid = (lo + hi) / 2
        if _interpolate(xs, ys, mid) >= bits:
            lo = mid
        else:
            hi = mid
    return round(lo - MARGIN_Q, 4)


def _write(data: dict[str, Any], path: Path) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, sort_keys=True) + "\n")
    tmp.replace(path)
    _table.cache_clear()


if __name__ == "__main__":
    if sys.argv[1:] == ["--annotate"]:  # recompute thresholds of the existing table
        _write(annotate(json.loads(TABLE_PATH.read_text())), TABLE_PATH)
    else:
        generate()
