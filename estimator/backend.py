"""Optional backend: the public lattice-estimator, run in a Sage environment that has it.

Only on request (``spiralpir security --reference``).  The estimator runs in its own Python
(``--sage-python``, ``$SPIRALPIR_SAGE_PYTHON``, or this one) as a subprocess executing
reference_runner.py, so spiralpir need not be installed next to Sage.  The result carries the
estimator's git commit and per-attack figures next to ours; README.md gives the recipe that
installs such an environment.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

from .distributions import Distribution
from .errors import SpiralpirError
from .lwe_parameters import LWEParameters

ENV_PYTHON = "SPIRALPIR_SAGE_PYTHON"
DEFAULT_TIMEOUT = 1800.0  # the primal hybrids take minutes at d = 4096


def sage_python(option: str | None) -> str:
    """The interpreter that runs the lattice-estimator: option, environment, or this one."""
    return option or os.environ.get(ENV_PYTHON) or sys.executable


def _dist(d: Distribution) -> dict[str, Any]:
    return {"kind": d.kind, "stddev": d.stddev, "lo": None if math.isinf(d.lo) else int(d.lo),
            "hi": None if math.isinf(d.hi) else int(d.hi), "plus": d.plus, "minus": d.minus}


def reference_estimate(params: LWEParameters, cost_model: str, attacks: list[str],
                       python: str, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
    """Run the lattice-estimator's ``attacks`` on ``params`` under ``python``.  Returns
    ``{"commit", "attacks": {name: {"log2_rop", "beta", "d"}}, "security_bits",
    "cheapest_attack", "seconds", "python"}``; raises ``SpiralpirError`` (one line, with the
    reason) when that Python has no Sage or no estimator, or the run fails."""
    spec = {"n": params.n, "q": str(params.q), "Xs": _dist(params.Xs), "Xe": _dist(params.Xe),
            "m": None if math.isinf(params.m) else int(params.m), "cost_model": cost_model,
            "attacks": attacks}
    runner = resources.files("spiralpir.estimator") / "reference_runner.py"
    with tempfile.TemporaryDirectory() as tmp, resources.as_file(runner) as script:
        src, dst = Path(tmp) / "in.json", Path(tmp) / "out.json"
        src.write_text(json.dumps(spec), encoding="utf-8")
        try:
            # -P: the runner's folder (full of spiralpir modules) must not shadow Sage's imports
            proc = subprocess.run([python, "-P", str(script), str(src), str(dst)],
                                  capture_output=True, text=True, timeout=timeout, check=False)
        except FileNotFoundError:
            raise SpiralpirError(f"--reference: no Python at {python!r} (set --sage-python or "
                                 f"${ENV_PYTHON})") from None
        except subprocess.TimeoutExpired:
            raise SpiralpirError(f"--reference: the lattice-estimator took over {timeout:g} s"
                                 ) from None
        if proc.returncode != 0 or not dst.exists():
            lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
            why = lines[-1] if lines else f"exit status {proc.returncode}"
            raise SpiralpirError(
                f"--reference: {python} cannot run the lattice-estimator ({why}); install it "
                "with the recipe in README.md (Reference estimator) and pass --sage-python"
            )
        out: dict[str, Any] = json.loads(dst.read_text(encoding="utf-8"))
    finite = {k: v for k, v in out["attacks"].items() if v["log2_rop"] is not None}
    best = min(finite, key=lambda k: finite[k]["log2_rop"]) if finite else None
    out["security_bits"] = finite[best]["log2_rop"] if best else math.inf
    out["cheapest_attack"] = best
    out["python"] = python
    return out
