"""The CI-sized twin of a parameter set: the same parameters over a smaller hypercube, so CI
answers real queries fast. Every generated build carries one (instance_ci.cpp, bench_ci.cpp)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CI_MAX_NU_1 = 4
CI_MAX_NU_2 = 2


def ci_shape(p: Mapping[str, Any]) -> tuple[int, int, int]:
    """(nu_1, nu_2, records) of the CI-sized twin: every other parameter is identical.

    The hypercube shrinks by 2^shift and so does the record count (rounded up), so the twin's
    records still fit its capacity. Accepts a literal (``records``) or struct fields."""
    records = p["records"] if "records" in p else p["num_records"]
    nu_1 = min(p["nu_1"], CI_MAX_NU_1)
    nu_2 = min(p["nu_2"], CI_MAX_NU_2)
    shift = (p["nu_1"] - nu_1) + (p["nu_2"] - nu_2)
    return nu_1, nu_2, max(1, -(-records // (1 << shift)))


def ci_literal(lit: Mapping[str, Any]) -> dict[str, Any]:
    """The CI-sized twin's parameter literal."""
    nu_1, nu_2, records = ci_shape(lit)
    return {**lit, "nu_1": nu_1, "nu_2": nu_2, "records": records}
