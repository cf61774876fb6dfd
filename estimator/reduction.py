"""Lattice reduction: root-Hermite factor δ(β), the GSA basis shape, and BKZ cost models.

Cost models are pluggable objects with two methods, both returning log2 costs in ring
operations ("rop", the reference's unit):

* ``log2_bkz(beta, d)`` — BKZ-β on a d-dimensional basis;
* ``short_vectors(beta, d, log2_n, sieve_dim)`` — cost of producing many short vectors after
  BKZ-β (used by dual attacks), returning ``(rho, log2_cost, log2_n_out, sieve_dim)``.

Models:

* ``MATZOV`` (the reference's default): progressive BKZ with a list-decoding sieve, with the
  gate-count fit of the [AGPS20] data as corrected by [MATZOV22]:
  T_sieve(k) = 2^(a·k + b) with a ≈ 0.29614, b ≈ 20.388, "dimensions for free"
  k = β − β·ln(4/3)/ln(β/2πe) [Ducas18], progressive overhead C = 1/(1 − 2^−a) both on the
  number of SVP calls, C·(d − β), and on each sieve; plus LLL d³. Short vectors come from
  one extra sieve in a dimension chosen to cost about as much as BKZ [GJ21].
* ``ADPS16`` (core-SVP, "classical"): 2^(0.292·β), one SVP call, short vectors from the
  2^(0.2075·β) vectors one sieve outputs.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Protocol

from .logmath import INF, log2_add, log2_ceil, log2_floor

# δ for small β, measured by the reference (step function below β = 40).
_SMALL_DELTA = (
    (2, 1.02190),
    (5, 1.01862),
    (10, 1.01616),
    (15, 1.01485),
    (20, 1.01420),
    (25, 1.01342),
    (28, 1.01331),
    (40, 1.01295),
)
TWO_PI_E = 2.0 * math.pi * math.e
MAX_BETA = 1754  # β whose core-SVP cost is ≈ 2^512: the reference's search cap


def _round(x: float) -> int:
    return int(math.floor(x + 0.5))


@cache
def delta(beta: float) -> float:
    """Root-Hermite factor of BKZ-β (β rounded to an integer):
    δ = (β/(2πe) · (πβ)^(1/β))^(1/(2(β−1))) for β > 40, the measured table below."""
    b = _round(beta)
    if b <= 2:
        return 1.0219
    if b < 40:
        for i in range(1, len(_SMALL_DELTA)):
            if _SMALL_DELTA[i][0] > b:
                return _SMALL_DELTA[i - 1][1]
    if b == 40:
        return _SMALL_DELTA[-1][1]
    return (b / TWO_PI_E * (math.pi * b) ** (1.0 / b)) ** (1.0 / (2.0 * (b - 1)))


def beta_for_delta(target: float) -> float:
    """Smallest integer β ≥ 40 with δ(β) ≤ target (``inf`` beyond β = 2^16)."""
    if delta(40) < target:
        return 40
    lo, hi = 40, 2**16
    if delta(hi) > target:
        return INF
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if delta(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi


def gsa_log2_norm(i: int, d: int, log2_vol: float, log2_delta: float) -> float:
    """GSA: log2 ‖b*_i‖ (not squared) of a BKZ-reduced basis of rank d and volume 2^log2_vol."""
    return (d - 1 - 2 * i) * log2_delta + log2_vol / d


def d4f(beta: float) -> float:
    """Dimensions for free [Ducas18]: sieving in β − d4f(β) suffices for SVP-β."""
    return max(beta * math.log(4.0 / 3.0) / math.log(beta / TWO_PI_E), 0.0)


class CostModel(Protocol):
    name: str

    def log2_bkz(self, beta: float, d: float) -> float: ...

    def short_vectors(
        self, beta: int, d: int, log2_n: float | None = None, sieve_dim: int | None = None
    ) -> tuple[float, float, float, int]: ...


def _chen_nguyen_log2(beta: float, d: float) -> float:
    """Enumeration-based BKZ cost [CheNgu12] (used by MATZOV for tiny β < 20)."""
    repeat = 8 * d if beta < d else 1
    c = (
        0.270188776350190 * beta * math.log(beta)
        - 1.0192050451318417 * beta
        + 16.10253135200765
        + math.log2(100)
    )
    return log2_add(3 * math.log2(d), math.log2(repeat) + c)


class Matzov:
    """BKZ cost from [MATZOV22] (list-decoding sieve, progressive BKZ), see module doc."""

    name = "matzov"
    a = 0.29613500308205365
    b = 20.387885985467914

    def __init__(self) -> None:
        self.log2_c = -math.log2(1.0 - 2.0 ** (-self.a))

    def log2_sieve(self, dim: float) -> float:
        """One progressive sieve in dimension ``dim`` (includes the overhead C)."""
        return self.log2_c + self.a * dim + self.b

    def log2_bkz(self, beta: float, d: float) -> float:
        if beta < 20:
            return _chen_nguyen_log2(beta, d)
        calls = self.log2_c + math.log2(max(d - beta, 1))
        sieve = self.log2_sieve(beta - d4f(beta))
        return log2_add(3 * math.log2(d), calls + sieve)

    def sieve_dim(self, beta: int, d: int) -> int:
        """[GJ21]: sieve on the first block in a dimension costing about as much as BKZ."""
        beta_ = beta - math.floor(d4f(beta))
        if beta < d:
            return min(d, math.floor(beta_ + math.log2((d - beta) * 2.0**self.log2_c) / self.a))
        return beta_

    def short_vectors(
        self, beta: int, d: int, log2_n: float | None = None, sieve_dim: int | None = None
    ) -> tuple[float, float, float, int]:
        sd = self.sieve_dim(beta, d) if sieve_dim is None else sieve_dim
        rho = math.sqrt(4.0 / 3.0) * delta(sd) ** (sd - 1) * delta(beta) ** (1 - sd)
        if log2_n == 0.0:
            return 1.0, self.log2_bkz(beta, d), 0.0, beta
        log2_c1 = log2_floor(0.2075 * sd)
        if log2_n is None:
            log2_n = log2_c1
        log2_c = log2_n - log2_c1
        if log2_c > 1000:
            return rho, INF, INF, sd
        reps = log2_ceil(log2_c)
        cost = reps + log2_add(self.log2_bkz(beta, d), self.log2_sieve(sd))
        return rho, cost, reps + log2_c1, sd


class ADPS16:
    """Core-SVP [ADPS16]: one sieve in dimension β, 2^(0.292β) ("classical")."""

    name = "adps16"
    c = 0.292

    def log2_bkz(self, beta: float, d: float) -> float:
        return self.c * beta

    def short_vectors(
        self, beta: int, d: int, log2_n: float | None = None, sieve_dim: int | None = None
    ) -> tuple[float, float, float, int]:
        sd = beta if sieve_dim is None else sieve_dim
        rho = math.sqrt(4.0 / 3.0) * delta(sd) ** (sd - 1) * delta(beta) ** (1 - sd)
        if log2_n == 0.0:
            return 1.0, self.log2_bkz(beta, d), 0.0, sd
        log2_c1 = 0.2075 * beta
        if log2_n is None:
            log2_n = log2_floor(log2_c1)
        log2_c = log2_n - log2_c1
        if log2_c > 1000:
            return rho, INF, INF, sd
        reps = log2_ceil(log2_c)
        return rho, reps + self.log2_bkz(beta, d), reps + log2_floor(log2_c1), sd


MATZOV = Matzov()
ADPS16_MODEL = ADPS16()
COST_MODELS: dict[str, CostModel] = {"matzov": MATZOV, "adps16": ADPS16_MODEL}


def register_cost_model(model: CostModel) -> None:
    """Make another BKZ cost model available by its ``name`` (e.g. a quantum variant)."""
    COST_MODELS[model.name.lower()] = model


def get_cost_model(name: str) -> CostModel:
    """Cost model by name (case-insensitive): ``matzov`` or ``adps16``."""
    try:
        return COST_MODELS[name.lower()]
    except KeyError:
        raise ValueError(
            f"unknown cost model {name!r}; choose one of {sorted(COST_MODELS)}"
        ) from None
