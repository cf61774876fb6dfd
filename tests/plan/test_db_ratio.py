"""The density cap: max_db_ratio bounds the preprocessed database's bytes per record byte (the
file's fixed 32-byte header aside).

The plans are checked with the serialized sizes (params/sizes.py, byte-exact with the runtime)
and the noise model, not with the search's own filter.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.noise import CORRECTNESS_LOG2, log2_failure
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.params.sizes import HEADER_BYTES, Sizes
from spiralpir.optimizer.plan.errors import NoFeasibleParameters
from spiralpir.optimizer.plan.planner import plan

RECORDS, SIZE = 1 << 20, 32


def _ratio(p: Parameters) -> float:
    return (Sizes.of(p).preprocessed_db_bytes - HEADER_BYTES) / (p.records * p.record_size)


def test_cap_bounds_the_chosen_plan() -> None:
    free = plan(RECORDS, SIZE, objective="time").params
    assert _ratio(free) > 4  # today's 32-byte plans hold 8 bits per 64-bit word: the cap binds
    capped = plan(RECORDS, SIZE, objective="time", max_db_ratio=4).params
    assert _ratio(capped) <= 4
    assert log2_failure(capped) <= CORRECTNESS_LOG2
    assert capped.records == RECORDS and capped.record_size == SIZE


def test_unreachable_cap_is_infeasible_and_named() -> None:
    # below every ring: a 32-bit word per residue and p <= 2^30 (>= 64/30 with two primes,
    # 96/30 with three); one prime keeps p small (modulus-switch offset 4p²/q <= 2^-8)
    with pytest.raises(NoFeasibleParameters, match="max_db_ratio 2"):
        plan(RECORDS, SIZE, max_db_ratio=2)


@pytest.mark.parametrize("value", [0.0, -1.0, math.nan])
def test_bad_cap_is_rejected(value: float) -> None:
    with pytest.raises(SpiralpirError, match="max_db_ratio"):
        plan(RECORDS, SIZE, max_db_ratio=value)


def test_cli_option() -> None:
    cmd = [sys.executable, "-m", "spiralpir.optimizer.cli", "plan", "--records", "2^16",
           "--record-size", "32", "--objective", "time"]
    proc = subprocess.run([*cmd, "--max-db-ratio", "4", "--json"], capture_output=True,
                          text=True, check=True)
    doc = json.loads(proc.stdout)
    assert doc["estimate"]["preprocessed_db_bytes"] - HEADER_BYTES <= 4 * (1 << 16) * 32
    bad = subprocess.run([*cmd, "--max-db-ratio", "0"], capture_output=True, text=True,
                         check=False)
    assert bad.returncode == 2
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and "--max-db-ratio" in lines[0]
