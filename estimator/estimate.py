"""The driver: run every attack (minus a deny list) under one cost model and report.

Attack names follow the reference estimator: ``usvp``, ``bdd``, ``bdd_hybrid``,
``bdd_mitm_hybrid``, ``dual``, ``dual_hybrid``.  The security level is the minimum of
log2(rop) over the attacks run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .attacks import dual as _dual
from .attacks import hybrid as _hybrid
from .attacks import primal as _primal
from .cost import AttackCost
from .lwe_parameters import LWEParameters
from .reduction import CostModel, get_cost_model

AttackFn = Callable[[LWEParameters, CostModel], AttackCost]

ATTACKS: dict[str, AttackFn] = {
    "usvp": _primal.usvp,
    "bdd": _primal.bdd,
    "bdd_hybrid": _hybrid.bdd_hybrid,
    "bdd_mitm_hybrid": _hybrid.bdd_mitm_hybrid,
    "dual": _dual.dual,
    "dual_hybrid": _dual.dual_hybrid,
}


@dataclass
class Report:
    """Per-attack costs of one LWE instance under one cost model."""

    params: LWEParameters
    cost_model: str
    attacks: dict[str, AttackCost] = field(default_factory=dict)

    @property
    def cheapest(self) -> AttackCost:
        return min(self.attacks.values(), key=lambda c: c.log2_rop)

    @property
    def security_bits(self) -> float:
        return self.cheapest.log2_rop if self.attacks else math.inf


def estimate(
    params: LWEParameters,
    cost_model: str = "matzov",
    deny: Iterable[str] = (),
    only: Iterable[str] | None = None,
) -> Report:
    """Estimate every attack in ``ATTACKS`` (or ``only``) not named in ``deny``."""
    model = get_cost_model(cost_model)
    denied = set(deny)
    names = list(only) if only is not None else list(ATTACKS)
    unknown = [a for a in list(denied) + names if a not in ATTACKS]
    if unknown:
        raise ValueError(f"unknown attack(s) {unknown}; known: {sorted(ATTACKS)}")
    report = Report(params, model.name)
    for name in names:
        if name in denied:
            continue
        report.attacks[name] = ATTACKS[name](params, model)
    return report


def estimate_rough(params: LWEParameters) -> Report:
    """The reference's ``LWE.estimate.rough``: core-SVP (ADPS16) cost of primal uSVP and of
    the dual hybrid only — comparable with most of the literature, not with ``estimate``."""
    return estimate(params, "adps16", only=("usvp", "dual_hybrid"))
