"""Optional backend: the real lattice-estimator, when a Sage environment provides it.

Only used on request (``spiralpir security --reference``); reports the estimator's git
commit (from the ``LATTICE_ESTIMATOR_COMMIT`` environment variable or the package's git
checkout) next to its per-attack figures.
"""

from __future__ import annotations

import math
import os
import subprocess
from pathlib import Path
from typing import Any

from .lwe_parameters import LWEParameters


def _commit(module_file: str | None) -> str | None:
    env = os.environ.get("LATTICE_ESTIMATOR_COMMIT")
    if env:
        return env
    if module_file is None:
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(Path(module_file).parent), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=10, check=True,
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def reference_backend(params: LWEParameters, cost_model: str) -> dict[str, Any]:
    """Run lattice-estimator's attacks on ``params``; ``{"available": False}`` without Sage."""
    try:
        from sage.all import oo  # type: ignore[import-not-found]

        import estimator as le  # type: ignore[import-not-found]
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        return {"available": False, "reason": f"{type(exc).__name__}: {exc}"}
    nd = le.ND
    def conv(d: Any) -> Any:
        if d.kind == "gaussian":
            return nd.DiscreteGaussian(d.stddev)
        if d.kind == "sparse_ternary":
            return nd.SparseTernary(d.plus, d.minus)
        return nd.Uniform(int(d.lo), int(d.hi))
    p = le.LWE.Parameters(
        n=params.n, q=params.q, Xs=conv(params.Xs), Xe=conv(params.Xe),
        m=oo if math.isinf(params.m) else int(params.m),
    )
    rc = le.RC.MATZOV if cost_model == "matzov" else le.RC.ADPS16
    res = le.LWE.estimate(p, red_cost_model=rc, deny_list=("arora-gb", "bkw"))
    attacks = {
        k: {"log2_rop": float(math.log2(v["rop"])) if v["rop"] < oo else None,
            "beta": int(v["beta"]) if "beta" in v else None}
        for k, v in res.items()
    }
    return {"available": True, "commit": _commit(getattr(le, "__file__", None)),
            "attacks": attacks}
