"""Integer minimisation helpers used by the attacks' parameter searches.

The cost curves in β, d, ζ are unimodal to a good approximation but have plateaus of
``inf`` (infeasible) on one side; a coarse grid followed by a local refinement finds the
global minimum of such curves far more reliably than a pure binary search, at a cost that
stays small because every evaluation here is a few float operations.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def grid_min(
    f: Callable[[int], T],
    lo: int,
    hi: int,
    step: int,
    key: Callable[[T], float],
) -> tuple[int, T] | None:
    """Minimise ``f`` over integers in ``[lo, hi]``: every ``step``-th point, then the
    ``±step`` neighbourhood of the best one at unit resolution.  ``None`` if the range is
    empty."""
    if hi < lo:
        return None
    step = max(1, step)
    best_x: int | None = None
    best_y: T | None = None
    best_k = math.inf
    seen: dict[int, float] = {}

    def visit(x: int) -> None:
        nonlocal best_x, best_y, best_k
        if x in seen or x < lo or x > hi:
            return
        y = f(x)
        k = key(y)
        seen[x] = k
        if best_x is None or k < best_k:
            best_x, best_y, best_k = x, y, k

    x = lo
    while x <= hi:
        visit(x)
        x += step
    visit(hi)
    if step > 1 and best_x is not None:
        centre = best_x
        for x in range(centre - step + 1, centre + step):
            visit(x)
    assert best_x is not None and best_y is not None
    return best_x, best_y


def refine_min(
    f: Callable[[int], T],
    lo: int,
    hi: int,
    key: Callable[[T], float],
    steps: tuple[int, ...] = (32, 4, 1),
) -> tuple[int, T] | None:
    """Coarse-to-fine minimisation over ``[lo, hi]``: a grid at ``steps[0]``, then grids at
    the following steps inside ``±`` the previous step around the best point."""
    cache: dict[int, T] = {}

    def g(x: int) -> T:
        if x not in cache:
            cache[x] = f(x)
        return cache[x]

    found = _grid_only(g, lo, hi, steps[0], key)
    if found is None:
        return None
    for prev, step in zip(steps, steps[1:], strict=False):
        c = found[0]
        found2 = _grid_only(g, max(lo, c - prev), min(hi, c + prev), step, key)
        if found2 is not None and key(found2[1]) <= key(found[1]):
            found = found2
    return found


def _grid_only(
    f: Callable[[int], T], lo: int, hi: int, step: int, key: Callable[[T], float]
) -> tuple[int, T] | None:
    if hi < lo:
        return None
    xs = list(range(lo, hi + 1, step))
    if xs[-1] != hi:
        xs.append(hi)
    best: tuple[int, T] | None = None
    for x in xs:
        y = f(x)
        if best is None or key(y) < key(best[1]):
            best = (x, y)
    return best


def descend(
    f: Callable[[int], float], x0: int, lo: int, hi: int, steps: tuple[int, ...] = (8, 2, 1)
) -> tuple[int, float]:
    """Hill-climb from ``x0`` within ``[lo, hi]``: move by ``±step`` while it lowers ``f``,
    for each step size in turn (a warm-started local search)."""
    x = min(max(x0, lo), hi)
    y = f(x)
    for step in steps:
        moved = True
        while moved:
            moved = False
            for cand in (x - step, x + step):
                if lo <= cand <= hi:
                    yc = f(cand)
                    if yc < y:
                        x, y, moved = cand, yc, True
                        break
    return x, y


def first_true(pred: Callable[[int], bool], lo: int, hi: int) -> int | None:
    """Smallest x in ``[lo, hi]`` with ``pred(x)`` for a predicate that is monotone
    (false … false true … true); ``None`` if ``pred(hi)`` is false."""
    if hi < lo or not pred(hi):
        return None
    if pred(lo):
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi
