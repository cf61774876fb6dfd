"""Primal hybrid attacks: guess part of the secret, solve the rest as BDD.

Owns ``bdd_hybrid`` and ``bdd_mitm_hybrid`` [HowgraveGraham07, AlbCurWun19]: guess ζ
secret coordinates (all guesses up to some Hamming weight; exhaustively, or as a
meet-in-the-middle with √|S| work and [SonChe19] admissibility), then solve the remaining
BDD instance of dimension n − ζ with BKZ-β and Babai's nearest plane.  ζ, β and the
guessing weight are optimised.  The BKZ + final-step engine at a fixed ζ is the primal
one (``primal.hybrid_at_zeta``); this module only searches ζ.  The dual hybrid is in
``dual``.
"""

from __future__ import annotations

from functools import lru_cache

from ..cost import AttackCost
from ..lwe_parameters import LWEParameters
from ..reduction import CostModel
from ..search import refine_min
from .primal import embedding_samples, hybrid_at_zeta


def _primal_hybrid(
    params: LWEParameters, model: CostModel, babai: bool, mitm: bool, name: str
) -> AttackCost:
    params = params.normalize()
    m = embedding_samples(params)
    n = params.n
    cache: dict[int, AttackCost] = {}

    def f(zeta: int) -> AttackCost:
        if zeta not in cache:
            cache[zeta] = hybrid_at_zeta(params, model, zeta, babai, mitm, m, False)
        return cache[zeta]

    # the feasible ζ form an interval; find its ends
    lo = 0
    if not f(0).feasible:
        a, b = 0, n - 1
        while b - a > 1:
            mid = (a + b) // 2
            if f(mid).feasible:
                b = mid
            else:
                a = mid
        lo = b
    hi = n - 1
    if not f(n - 1).feasible:
        a, b = lo, n - 1
        while b - a > 1:
            mid = (a + b) // 2
            if f(mid).feasible:
                a = mid
            else:
                b = mid
        hi = a
    # the cost is rugged in ζ (guess weights jump): a 1/12 grid, then ±step at 8, then ±8 at 1
    found = refine_min(f, lo, hi, key=lambda c: c.log2_rop, steps=(max(1, (hi - lo) // 12), 8, 1))
    best = found[1] if found is not None else AttackCost(name)
    for c in (f(lo), f(hi)):
        if c.log2_rop < best.log2_rop:
            best = c
    best.attack = name
    return best


@lru_cache(maxsize=1024)
def bdd_hybrid(params: LWEParameters, model: CostModel) -> AttackCost:
    """Primal hybrid without meet-in-the-middle: guess, then BDD with a final SVP call."""
    return _primal_hybrid(params, model, False, False, "bdd_hybrid")


@lru_cache(maxsize=1024)
def bdd_mitm_hybrid(params: LWEParameters, model: CostModel) -> AttackCost:
    """Primal hybrid with meet-in-the-middle guessing and Babai lifting."""
    return _primal_hybrid(params, model, True, True, "bdd_mitm_hybrid")
