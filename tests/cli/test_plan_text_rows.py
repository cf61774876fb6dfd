"""`plan` says how many first-dimension rows a partly filled hypercube stores, and says
nothing when every row is stored."""

from __future__ import annotations

from spiralpir.optimizer.cli.plan_text import render
from spiralpir.optimizer.plan.planner import plan


def test_plan_text_names_the_stored_rows() -> None:
    partial = plan(300_007, 32)
    p = partial.params
    assert p.rows_stored < 1 << p.nu_1
    assert f", {p.rows_stored} of {1 << p.nu_1} rows stored" in render(partial)
    full = plan(1 << 16, 32)
    assert full.params.rows_stored == 1 << full.params.nu_1
    assert "rows stored" not in render(full)
