"""Exhaustive enumerator over the optimization model: the test oracle for the Z3 search.

Evaluates EVERY candidate of the search space (plan/space.py: every secure ring, every structure,
every gadget combination; q2_bits is the smallest correct one) with no pruning, and returns the best
ones by the objective. It is slow (seconds to minutes): use it in tests, on small domains, and to
audit a plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from spiralpir.optimizer.plan.evaluate import evaluate, literal
from spiralpir.optimizer.plan.space import Options, default_profile, rings, structures


@dataclass(frozen=True)
class Candidate:
    objective: float
    literal: dict[str, Any]
    seconds: float
    params_bytes: int
    response_bytes: int
    query_bytes: int
    security_bits: float


def enumerate_all(
    records: int, record_size: int, options: Options, top: int = 1
) -> list[Candidate]:
    """The `top` best candidates (objective ascending); [] if nothing is feasible."""
    profile = default_profile(options)
    best: list[Candidate] = []
    for ring in rings(options):
        for s in structures(records, record_size, ring, options):
            ev = evaluate(s, records, record_size, options, profile)
            idx = np.flatnonzero(ev.feasible)
            if idx.size == 0:
                continue
            order = idx[np.argsort(ev.objective[idx], kind="stable")[:top]]
            for i in order:
                best.append(Candidate(
                    objective=float(ev.objective[i]),
                    literal=literal(s, ev, int(i), records, record_size, options),
                    seconds=float(ev.seconds[i]),
                    params_bytes=int(ev.params_bytes[i]),
                    response_bytes=int(ev.response_bytes[i]),
                    query_bytes=int(np.ravel(ev.query_bytes)[i] if np.ndim(ev.query_bytes)
                                else ev.query_bytes),  # per row for the stream variants
                    security_bits=ring.security_bits,
                ))
            best.sort(key=lambda c: c.objective)
            del best[top:]
    return best
