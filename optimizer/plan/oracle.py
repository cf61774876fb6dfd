"""Exhaustive enumerator over the optimization model: the test oracle for the Z3 search.

Evaluates EVERY candidate of the search space (plan/space.py: every secure ring, every structure,
every gadget combination; q2_bits is the smallest correct one) with no pruning, and returns the best
ones by the objective. It is slow (seconds to minutes): use it in tests, on small domains, and to
audit a plan.
"""

from __future__ import annotations

from spiralpir.optimizer.plan.evaluate import Row, best_rows, evaluate
from spiralpir.optimizer.plan.space import Options, default_profile, rings, structures

Candidate = Row  # what the oracle returns: the search's rows


def enumerate_all(
    records: int, record_size: int, options: Options, top: int = 1
) -> list[Candidate]:
    """The `top` best candidates (objective ascending); [] if nothing is feasible."""
    profile = default_profile(options)
    best: list[Candidate] = []
    for ring in rings(options):
        for s in structures(records, record_size, ring, options):
            ev = evaluate(s, records, record_size, options, profile)
            best.extend(best_rows(s, ev, top, records, record_size, options))
            best.sort(key=lambda c: c.objective)
            del best[top:]
    return best
