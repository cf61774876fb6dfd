"""The memory cap: max_db_bytes bounds the preprocessed database (its file, header included; a
batch build's buckets together), and the CLI's default is this machine's budget.

The chosen plans are checked with the serialized sizes (params/sizes.py, byte-exact with the
runtime) and the noise model, not with the search's own filter.
"""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner
from spiralpir.optimizer.cli import plan_options
from spiralpir.optimizer.cli.cmd_plan import plan as plan_cmd
from spiralpir.optimizer.cli.main import message
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.noise import CORRECTNESS_LOG2, log2_failure
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.params.sizes import Sizes
from spiralpir.optimizer.plan.batch_plan import plan_batch
from spiralpir.optimizer.plan.errors import NoFeasibleBatch, NoFeasibleParameters
from spiralpir.optimizer.plan.planner import plan

RECORDS, SIZE = 1 << 22, 256  # the default plan stores ~6 bytes per record byte


def _stored(params: Parameters) -> int:
    return Sizes.of(params).preprocessed_db_bytes


def test_cap_bounds_the_chosen_plan_and_binds() -> None:
    free = plan(RECORDS, SIZE)
    cap = 0.7 * _stored(free.params)  # below the free choice: the cap must bind
    capped = plan(RECORDS, SIZE, max_db_bytes=cap, explain=True)
    assert _stored(capped.params) <= cap
    assert log2_failure(capped.params) <= CORRECTNESS_LOG2
    assert capped.params.records == RECORDS and capped.params.record_size == SIZE
    assert any(b.startswith("preprocessed database <=") for b in capped.binding), capped.binding


def test_unreachable_cap_is_infeasible_and_named() -> None:
    # 1 GiB of records in 100 MB: no plan stores less than its records
    with pytest.raises(NoFeasibleParameters, match="max_db_bytes 1e"):
        plan(RECORDS, SIZE, max_db_bytes=100e6)


@pytest.mark.parametrize("value", [0.0, -1.0, math.nan])
def test_bad_cap_is_rejected(value: float) -> None:
    with pytest.raises(SpiralpirError, match="max_db_bytes"):
        plan(RECORDS, SIZE, max_db_bytes=value)


def test_batch_cap_holds_for_all_buckets_and_skips_the_ws_that_cannot_fit() -> None:
    records, k = 1 << 16, 16
    free = plan_batch(records, 32, k, seed="00" * 16)
    cap = 30e6  # measured: w = 2's 7,090 buckets and w >= 5 do not fit, w = 3 or 4 does
    assert free.figures["preprocessed_bytes"] > cap
    capped = plan_batch(records, 32, k, seed="00" * 16, max_db_bytes=cap)
    assert capped.layout.buckets * _stored(capped.plan.params) <= cap
    assert capped.figures["preprocessed_bytes"] <= cap
    skipped = [c["w"] for c in capped.considered if "infeasible" in c]
    assert skipped and capped.layout.w not in skipped
    with pytest.raises(NoFeasibleBatch, match=r"w = 2 \(\d+ buckets\).*w = 6"):
        plan_batch(records, 32, k, seed="00" * 16, max_db_bytes=5e6)


def _cli_stored(args: list[str]) -> int:
    res = CliRunner().invoke(plan_cmd, ["--records", str(RECORDS), "--record-size", str(SIZE),
                                        "--json", *args])
    assert res.exit_code == 0, res.output
    return int(json.loads(res.output)["estimate"]["preprocessed_db_bytes"])


def test_cli_default_is_this_machines_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    free = _cli_stored(["--max-db-bytes", "none"])
    budget = int(0.7 * free)
    monkeypatch.setattr(plan_options, "database_budget_bytes", lambda: budget)
    assert _cli_stored([]) <= budget
    assert _cli_stored(["--max-db-bytes", "none"]) == free  # 'none' lifts the default
    monkeypatch.setattr(plan_options, "database_budget_bytes", lambda: 2 * free)
    assert _cli_stored([]) == free
    assert _cli_stored(["--max-db-bytes", f"{budget // 2**20}MiB"]) <= budget  # given: binds


def test_cli_names_the_budget_when_nothing_fits() -> None:
    res = CliRunner().invoke(plan_cmd, ["--records", str(RECORDS), "--record-size", str(SIZE),
                                        "--max-db-bytes", "100MB"])
    assert isinstance(res.exception, NoFeasibleParameters)
    line = message(res.exception)
    assert "--max-db-bytes 100000000" in line and "'none' lifts it" in line
    bad = CliRunner().invoke(plan_cmd, ["--records", "2^10", "--record-size", "32",
                                        "--max-db-bytes", "lots"])
    assert isinstance(bad.exception, SpiralpirError) and "--max-db-bytes" in str(bad.exception)
