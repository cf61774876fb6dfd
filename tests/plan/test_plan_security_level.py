"""`plan` and `security` print the same level for the same ring (levels.py's one rule)."""

from __future__ import annotations

import json
import subprocess
import sys

from spiralpir.estimator.levels import bits_text
from spiralpir.estimator.spiral import security_report
from spiralpir.optimizer.cli.plan_text import render
from spiralpir.optimizer.plan.planner import plan


def test_plan_reports_the_level_security_prints() -> None:
    pl = plan(2**16, 32, top=2)
    p = pl.params
    full = security_report(p.poly_len, p.q, p.noise_width, p.secret_distribution)
    assert pl.estimate["security_bits"] == full["security_bits"]
    assert f"  security {bits_text(full['security_bits'])} bits," in render(pl)
    for ap, ae in pl.alternatives:
        assert ae["security_bits"] == security_report(
            ap.poly_len, ap.q, ap.noise_width, ap.secret_distribution)["security_bits"]
    doc = {"params": p.to_literal(), "estimate": pl.estimate}
    res = subprocess.run(
        [sys.executable, "-c", "from spiralpir.optimizer.cli import main; main()", "security",
         "/dev/stdin"], input=json.dumps(doc), capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"security: {bits_text(full['security_bits'])} bits ")
