"""`spiralpir plan` and the planning API: input parsing, JSON shape, paper sanity, paper ring."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner
from spiralpir.optimizer.cli.cmd_plan import plan as plan_cmd
from spiralpir.optimizer.cli.counts import parse_count
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.plan.planner import ESTIMATE_KEYS, plan


@pytest.mark.parametrize("text,value", [
    ("1048576", 2**20), ("2^20", 2**20), ("1M", 10**6), ("1Mi", 2**20), ("100KB", 100_000),
    ("100KiB", 102_400), ("30kb", 30_000), ("256", 256), ("1.5K", 1500), ("4 KiB", 4096),
])
def test_parse_count(text: str, value: int) -> None:
    assert parse_count(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1.2345K", "-5", "0", "2^", "1MB2"])
def test_parse_count_rejects(text: str) -> None:
    with pytest.raises(SpiralpirError):
        parse_count(text, "--records")


def test_bad_input_is_one_line_and_nonzero() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "spiralpir.optimizer.cli", "plan", "--records", "12x",
         "--record-size", "256"], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--records" in lines[0]


# The SPIRAL paper's databases (Table I): query 14 KB, responses 21 / 84 / 242 KB.
PAPER = [(2**20, 256, 21_000), (2**18, 30_000, 84_000), (2**14, 100_000, 242_000)]


@pytest.mark.parametrize("records,size,paper_response", PAPER)
def test_paper_databases(records: int, size: int, paper_response: int) -> None:
    # the cheapest plan may trade a larger ring (bigger query) for speed; with the query capped
    # at 16 KB the optimizer must still reach the paper's response sizes
    pl = plan(records, size, max_query_bytes=16_000)
    e = pl.estimate
    assert set(e) == set(ESTIMATE_KEYS)
    assert e["security_bits"] >= 128.0
    assert e["log2_failure_probability"] <= -40.0
    assert e["query_bytes"] <= 16_000
    assert e["response_bytes"] <= 1.25 * paper_response
    assert pl.params.records == records and pl.params.record_size == size
    assert pl.params.capacity >= records


def test_plan_json_shape_and_paper_ring_note() -> None:
    res = CliRunner().invoke(plan_cmd, ["--records", "2^16", "--record-size", "1KB", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert set(doc) == {"params", "estimate"}
    assert set(doc["estimate"]) == set(ESTIMATE_KEYS)
    pl = plan(2**16, 1000, ring="paper")
    assert any("paper" in n and "124" in n and "not used" in n for n in pl.notes)
    assert pl.estimate["security_bits"] >= 128.0
    text = CliRunner().invoke(plan_cmd, ["--records", "65536", "--record-size", "1000",
                                         "--ring", "paper", "--top", "2"])
    assert text.exit_code == 0, text.output
    assert "124" in text.output and "next-best alternatives" in text.output
    assert "cost profile: shipped default" in text.output  # the profile it planned with
    assert "binding constraints" in text.output
