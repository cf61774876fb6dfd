"""The measured noise's tail against the model's Gaussian law (what the failure probability
assumes), on every stored reference (tests/models/data/measured*/, see test_measured.py).

The failure probability treats the first dimension's output, each fold's and the packing
output as Gaussian with the model's variance (noise.py: a sum of many products). A distribution
with the same variance but heavier tails, or a variance the model under-predicts, would make
that probability optimistic. The runtime's noise hook records each stage's largest |error|
(`max_abs`) over `count` coefficients; under the model, P(max of count |N(0, v)| ≥ max_abs) =
1 − (1 − 2Q(max_abs/√v))^count. Every such stage measured on ≥ 10^5 coefficients must have that
probability ≥ 2^TAIL_LOG2: today the smallest over the references is 2^-6.1 (61 stages, 34
sets); a variance under-predicted 2× gives about 2^-28, and a Laplace law of the model's
variance about 2^-40.

Where the bounded shared terms dominate (test_measured._shared_dominates) the mean model is not
the law: the stage is checked against (√v + √v_shared)², the bound the failure probability
uses. Expansion and conversion are not checked: their per-coefficient variances differ by
design (coefficient 0 keeps its error through every expansion round: 4^R σ² where the mean is
2^R σ²), which the first dimension's products average out.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from spiralpir.optimizer.models.noise import stage_variances
from test_measured import NOISE_DATA, _ids, _load, _shared_dominates

MIN_COUNT = 100_000
TAIL_LOG2 = -16.0


def _gaussian_stage(stage: str) -> bool:
    return stage == "first_dimension" or stage.startswith("fold_") or stage in (
        "folding", "packing")


def log2_max_at_least(z: float, count: int) -> float:
    """log2 P(max of `count` |N(0, 1)| ≥ z)."""
    two_q = math.erfc(z / math.sqrt(2.0))
    if two_q <= 0.0:
        return -math.inf
    p = -math.expm1(count * math.log1p(-two_q))
    # far in the tail p underflows relative to count·2Q: use the union bound's leading term
    return math.log2(p) if p > 1e-300 else math.log2(count) + math.log2(two_q)


def checked_stages(path: Path) -> dict[str, float]:
    """stage -> log2 P(max ≥ measured max | model) for the stages this test checks."""
    p, rep = _load(path)
    sn = stage_variances(p)
    shared = _shared_dominates(sn)
    out = {}
    for stage, m in rep["noise"].items():
        if not _gaussian_stage(stage) or stage not in sn.variances or m["count"] < MIN_COUNT:
            continue
        if rep.get("implicit_db") and stage != "first_dimension":  # folds repeat cts there
            continue
        v = sn.variances[stage]
        if shared:
            v = (math.sqrt(v) + math.sqrt(sn.shared_variance)) ** 2
        out[stage] = log2_max_at_least(m["max_abs"] / math.sqrt(v), m["count"])
    return out


TAIL_DATA = [path for path in NOISE_DATA if checked_stages(path)]


def test_tail_law_against_oracle() -> None:
    """log2_max_at_least against the exact formula where it does not underflow, and its
    monotonicity; the probability of exceeding the median of the max is 1/2."""
    for count in (1, 10, 10**5):
        median = 0.5 ** (1.0 / count)  # P(|X| < z)^count = 1/2
        lo, hi = 0.0, 40.0
        for _ in range(200):
            mid = (lo + hi) / 2
            if math.erf(mid / math.sqrt(2.0)) < median:
                lo = mid
            else:
                hi = mid
        assert abs(log2_max_at_least(lo, count) + 1.0) < 1e-6
    zs = [3.0, 5.0, 8.0, 12.0, 20.0, 40.0]
    values = [log2_max_at_least(z, 10**6) for z in zs]
    assert all(a > b for a, b in zip(values, values[1:], strict=False))
    # the far tail: count·2Q(z), Q(40) = 3.7e-350 (below the float range)
    assert values[-1] == -math.inf or values[-1] < -1000


def test_enough_references_have_a_checked_tail() -> None:
    """≥ 10^5 coefficients of a Gaussian stage in most references (first dimension at least)."""
    assert len(TAIL_DATA) >= 25
    assert all("first_dimension" in checked_stages(path) for path in TAIL_DATA
               if _load(path)[1]["noise"].get("first_dimension", {}).get("count", 0)
               >= MIN_COUNT)


@pytest.mark.parametrize("path", TAIL_DATA, ids=_ids(TAIL_DATA))
def test_measured_tail_within_model(path: Path) -> None:
    for stage, log2_p in checked_stages(path).items():
        assert log2_p >= TAIL_LOG2, (
            f"{path.name}: {stage}'s largest |error| has probability 2^{log2_p:.1f} < "
            f"2^{TAIL_LOG2:g} under the model's Gaussian law")
