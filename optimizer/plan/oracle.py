"""Exhaustive enumerator over the optimization model: the test oracle for the Z3 search.

Evaluates EVERY candidate of the search space (plan/space.py: every secure ring, every structure,
every gadget combination; q2_bits is the smallest correct one) with no pruning, and returns the best
ones by the planner's ranking (plan/ranking.py): the objective's optimum over everything, then,
among the candidates in its band, the smallest tie key. It is slow (seconds to minutes): use it
in tests, on small domains, and to audit a plan.
"""

from __future__ import annotations

import math

from spiralpir.optimizer.plan.evaluate import Row, best_rows, evaluate
from spiralpir.optimizer.plan.ranking import band_limit, tie_key
from spiralpir.optimizer.plan.space import Options, default_profile, rings, structures

Candidate = Row  # what the oracle returns: the search's rows


def enumerate_all(
    records: int, record_size: int, options: Options, top: int = 1
) -> list[Candidate]:
    """The `top` best candidates in the optimum's band (tie key ascending); [] if nothing is
    feasible. Two full passes: the optimum, then the band."""
    profile = default_profile(options)
    every = [s for ring in rings(options)
             for s in structures(records, record_size, ring, options)]
    optimum = math.inf
    for s in every:
        ev = evaluate(s, records, record_size, options, profile)
        for row in best_rows(s, ev, 1, records, record_size, options):
            optimum = min(optimum, row.objective)
    if not math.isfinite(optimum):
        return []
    limit = band_limit(options.objective, optimum)
    best: list[Candidate] = []
    for s in every:
        ev = evaluate(s, records, record_size, options, profile)
        best.extend(best_rows(s, ev, top, records, record_size, options, limit=limit))
        best.sort(key=lambda c: tie_key(options.objective, c))
        del best[top:]
    return best
