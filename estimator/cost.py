"""The cost record every attack returns."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .levels import bits_json


@dataclass
class AttackCost:
    """Result of one attack: log2 of its cost in ring operations, BKZ block size β, the
    lattice dimension it reduces (``None`` when the attack has no single one), and the
    attack's own parameters in ``details`` (log2-encoded where marked ``log2_``)."""

    attack: str
    log2_rop: float = math.inf
    beta: int | None = None
    dim: int | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def feasible(self) -> bool:
        return math.isfinite(self.log2_rop)

    def summary(self) -> dict[str, Any]:
        """The three headline numbers (JSON-ready: log2 cost truncated to 4 decimals, see
        levels.py; infinite costs become ``None``)."""
        return {
            "log2_rop": bits_json(self.log2_rop),
            "beta": self.beta,
            "dim": self.dim,
        }


INFEASIBLE = math.inf
