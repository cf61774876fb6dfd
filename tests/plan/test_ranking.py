"""The ranking (plan/ranking.py) keeps the byte objectives from absurd plans: at 2^20 × 32 B,
`response` and `traffic` once chose ν1 = 1, ν2 = 16 (29 s per query, a 2.1 GB preprocessed
database) to tie on bytes. Now their plan must stay within a stated factor of the time-optimal
plan's server seconds and preprocessed bytes, and pay at most the band in bytes for it."""

from __future__ import annotations

import numpy as np
import pytest
from spiralpir.optimizer.plan.planner import plan
from spiralpir.optimizer.plan.ranking import band_limit, tie_order

SECONDS_FACTOR = 4.0  # the byte objectives' plan may be this much slower than `time`'s ...
MEMORY_FACTOR = 8.0  # ... and hold this many times its preprocessed bytes (denser p)


@pytest.fixture(scope="module")
def fastest() -> dict[str, float]:
    return plan(2**20, 32, objective="time").estimate


@pytest.mark.parametrize("objective", ["response", "traffic"])
def test_byte_objectives_pick_sane_plans(objective: str, fastest: dict[str, float]) -> None:
    pl = plan(2**20, 32, objective=objective, top=2)
    e = pl.estimate
    assert e["server_seconds"] <= SECONDS_FACTOR * fastest["server_seconds"], (
        pl.params.to_literal(), e["server_seconds"], fastest["server_seconds"])
    assert e["preprocessed_db_bytes"] <= MEMORY_FACTOR * fastest["preprocessed_db_bytes"]
    key = "response_bytes" if objective == "response" else None
    mine = e[key] if key else e["response_bytes"] + e["query_bytes"]
    theirs = fastest[key] if key else fastest["response_bytes"] + fastest["query_bytes"]
    assert mine <= theirs  # the byte objective still wins on bytes


def test_band_widths() -> None:
    """Bytes: max(1%, 256 B) above the optimum; the others: exact ties only."""
    assert band_limit("response", 4000.0) == 4256.0
    assert band_limit("traffic", 100_000.0) == 101_000.0
    for objective in ("time", "dollars", "stream"):
        assert band_limit(objective, 0.5) < 0.5 * (1 + 1e-6)


def test_tie_key_order() -> None:
    """Seconds lead the tie key except under `time`, where traffic does."""
    seconds = np.array([2.0, 1.0, 1.0])
    traffic = np.array([10.0, 30.0, 20.0])
    zero = np.zeros(3)
    assert list(tie_order("response", seconds, traffic, zero, zero)) == [2, 1, 0]
    assert list(tie_order("time", seconds, traffic, zero, zero)) == [0, 2, 1]
