"""How plans are ranked: the objective first, within a tolerance band, then the other costs.

A bare objective picks absurd plans: under `response` or `traffic` every plan with the same
(n, p, q2) ties to the byte, and the first of them found may fold over 2^16 GSW digits (tens
of seconds per query, gigabytes of preprocessed database) to save nothing, or save a few
hundred bytes. So a plan is chosen in two steps, by the search (plan/search.py) and the
oracle (plan/oracle.py) alike:

1. the band: every plan whose objective is at most `band_limit(objective, best)`, where
   `best` is the optimum of the objective. For the byte objectives (`response`, `traffic`)
   the band is max(BAND_FRACTION · best, BAND_BYTES) wide; for the others (`dollars`, `time`,
   `stream`) it holds the exact ties only (relative 1e-9).
2. the tie key: within the band, the lexicographically smallest (server seconds, query +
   response bytes, public-params bytes, objective) — `time` skips its own first term.
"""

from __future__ import annotations

from typing import Any

import numpy as np

BAND_FRACTION = 0.01  # the byte objectives accept 1% more bytes ...
BAND_BYTES = 256.0  # ... or 256 bytes, whichever is larger, for a faster plan
EXACT = 1e-9  # other objectives: ties up to float rounding


def band_limit(objective: str, best: float) -> float:
    """The largest objective value in the band around the optimum `best`."""
    if objective in ("response", "traffic"):
        return best + max(BAND_FRACTION * best, BAND_BYTES)
    return best + EXACT * abs(best)


def tie_columns(objective: str, seconds: Any, traffic: Any, params_bytes: Any,
                value: Any) -> list[Any]:
    """The tie key's terms, most significant first (arrays or scalars)."""
    if objective == "time":
        return [traffic, params_bytes, value]
    return [seconds, traffic, params_bytes, value]


def tie_order(objective: str, seconds: np.ndarray, traffic: np.ndarray,
              params_bytes: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Indices sorting candidates by the tie key (np.lexsort takes the last key first)."""
    cols = tie_columns(objective, seconds, traffic, params_bytes, value)
    return np.lexsort(tuple(np.asarray(c, dtype=np.float64) for c in reversed(cols)))


def tie_key(objective: str, row: Any) -> tuple[float, ...]:
    """The tie key of a Row (plan/evaluate.py)."""
    return tuple(float(x) for x in tie_columns(
        objective, row.seconds, row.response_bytes + row.query_bytes, row.params_bytes,
        row.objective))
