"""The bridge to the lattice estimator (spiralpir.estimator): security bits of a ring.

`estimator_security` is what the planner asks while it searches (the estimator's cached table,
memoised here: conservative, about 0.25 bit below the full estimate); `reported_security` is
the full estimate a plan reports for the sets it chose, the level `spiralpir security` prints
for the same ring; `security_report` is the full report a generated build records in its
params.json.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from spiralpir.estimator import spiral
from spiralpir.estimator.table import security_bits_fast
from spiralpir.optimizer.errors import SpiralpirError

# (poly_len, log2 q, noise width, secret distribution) -> security bits
SecurityFn = Callable[[int, float, float, str], float]


def estimator_security(poly_len: int, log2_q: float, noise_width: float, secret: str) -> float:
    """Security bits from the estimator's cached table (estimator.table.security_bits_fast)."""
    return _estimator_security(poly_len, round(log2_q, 6), noise_width, secret)


@lru_cache(maxsize=4096)
def _estimator_security(poly_len: int, log2_q: float, noise_width: float, secret: str) -> float:
    try:
        return float(security_bits_fast(poly_len, log2_q, noise_width, secret))
    except (ValueError, ArithmeticError) as exc:
        raise SpiralpirError(f"security estimate failed for d={poly_len}, log2 q={log2_q:.2f}: "
                             f"{exc}") from exc


@lru_cache(maxsize=256)
def reported_security(poly_len: int, modulus: int, noise_width: float, secret: str) -> float:
    """The full estimate's level (bits, MATZOV) of a ring, as `spiralpir security` reports it."""
    try:
        bits = spiral.security_report(poly_len, modulus, noise_width, secret)["security_bits"]
    except (ValueError, ArithmeticError) as exc:
        raise SpiralpirError(f"security estimate failed for d={poly_len}, q={modulus}: "
                             f"{exc}") from exc
    return math.inf if bits is None else float(bits)


def security_report(params: Mapping[str, Any]) -> dict[str, Any]:
    """The estimator's security report for a parameter literal (JSON-ready)."""
    poly_len, modulus, width, secret = spiral.params_from_mapping(dict(params))
    result = spiral.security_report(poly_len, modulus, width, secret)
    return dict(json.loads(json.dumps(result, sort_keys=True)))
