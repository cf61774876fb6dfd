"""spiralpir.estimator against the public lattice-estimator, row by row.

For every reference row (tests/estimator/reference/lattice_estimator.jsonl):
* each attack within ±3 bits of the reference;
* the overall level (min over the attacks the reference considered) within ±1.5 bits
  and never more than 0.5 bit above it (a gate may be pessimistic, never optimistic).

Exceptions, stated rather than hidden (``UNMATCHED`` below): two rows whose reference cost
exceeds 2^512, beyond the reference's own block-size cap (β ≤ 1754, chosen so that
core-SVP(1754) ≈ 2^512), where its local searches stop at arbitrary points (β = 1755 for a
2^1107 "cost"; a BDD local minimum at β = 1171 where β ≈ 1700 is 2 bits cheaper).  For
those we require only that our figure is also beyond reach (≥ 2^500).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from spiralpir.estimator.distributions import Distribution, gaussian, sparse_ternary, ternary
from spiralpir.estimator.estimate import ATTACKS, estimate_rough
from spiralpir.estimator.lwe_parameters import LWEParameters
from spiralpir.estimator.reduction import get_cost_model

REFERENCE = Path(__file__).with_name("reference") / "lattice_estimator.jsonl"
BEYOND = 512.0
UNMATCHED = {
    # (set_id, cost_model, attack): reference 2^1107.5 vs ours 2^1598.6; 2^512.97 vs 2^510.88
    ("n=4096,log2q=27,q=134217728,sigma=3.2,secret=ternary,m=oo", "MATZOV", "bdd_mitm_hybrid"),
    ("n=4096,log2q=32,q=4294967296,sigma=2.55323,secret=gaussian,m=oo", "MATZOV", "min"),
}
PER_ATTACK_TOL = 3.0
LEVEL_TOL = 1.5
LEVEL_MAX_ABOVE = 0.5


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in REFERENCE.read_text().splitlines() if line.strip()]


def _groups() -> dict[tuple[str, str, bool], list[dict[str, Any]]]:
    groups: dict[tuple[str, str, bool], list[dict[str, Any]]] = defaultdict(list)
    for r in _rows():
        groups[(r["set_id"], r["cost_model"], bool(r["rough"]))].append(r)
    return dict(groups)


GROUPS = _groups()


def params_of(row: dict[str, Any]) -> LWEParameters:
    xe = gaussian(row["sigma"])  # the reference's sigma is a standard deviation
    secrets: dict[str, Distribution] = {
        "gaussian": xe,
        "ternary": ternary(),
        "sparse_ternary_h512": sparse_ternary(256, 256),
    }
    m = math.inf if row["m_samples"] == "oo" else int(row["m_samples"])
    return LWEParameters(int(row["n"]), int(row["q"]), secrets[row["secret"]], xe, m)


def ours(row: dict[str, Any], attack: str) -> float:
    return ATTACKS[attack](params_of(row), get_cost_model(row["cost_model"])).log2_rop


def test_reference_file_is_complete() -> None:
    rows = _rows()
    assert len(rows) > 2000
    assert {r["attack"] for r in rows} >= set(ATTACKS) | {"min"}


def _id(key: tuple[str, str, bool]) -> str:
    return f"{key[1]}{'-rough' if key[2] else ''}:{key[0]}"


@pytest.mark.parametrize("key", sorted(GROUPS), ids=_id)
def test_parameter_set(key: tuple[str, str, bool]) -> None:
    failures: list[str] = []
    for row in GROUPS[key]:
        attack = row["attack"]
        if attack == "bkw":  # not modelled: never competitive (2^524 on the one row)
            continue
        ref = float(row["log2_rop"])
        if attack == "min":
            if row["rough"]:
                mine = estimate_rough(params_of(row)).security_bits
            else:
                considered = [a for a in row["attacks_considered"] if a in ATTACKS]
                mine = min(ours(row, a) for a in considered)
            ok = -LEVEL_TOL <= mine - ref <= LEVEL_MAX_ABOVE
        else:
            mine = ours(row, attack)
            ok = abs(mine - ref) <= PER_ATTACK_TOL
        if (row["set_id"], row["cost_model"], attack) in UNMATCHED:
            assert ref > BEYOND
            ok = mine >= BEYOND - 12
        if not ok:
            failures.append(f"{attack}: ours {mine:.3f} vs reference {ref:.3f}")
    assert not failures, "; ".join(failures)
