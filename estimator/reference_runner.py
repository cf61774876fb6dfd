"""Runs the public lattice-estimator on one LWE instance; executed by backend.py in a
separate Python (a Sage environment), so it imports nothing from spiralpir.

    python -P reference_runner.py IN.json OUT.json

IN: {"n", "q" (decimal string), "Xs": {"kind", "stddev", "lo", "hi", "plus", "minus"},
"Xe": {...}, "m" (null: unlimited), "cost_model" ("matzov" | "adps16"), "attacks": [...]}.
OUT: {"commit", "attacks": {name: {"log2_rop", "beta", "d"}}, "seconds"}.  The estimator's own
log goes to stderr.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from importlib import metadata
from typing import Any


def _commit() -> str | None:
    env = os.environ.get("LATTICE_ESTIMATOR_COMMIT")
    if env:
        return env
    try:  # pip records the commit of a git+https install
        text = metadata.distribution("lattice-estimator").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    info = json.loads(text or "{}").get("vcs_info", {})
    commit = info.get("commit_id")
    return str(commit) if commit else None


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    from sage.all import oo  # type: ignore[import-not-found]

    import estimator as le  # type: ignore[import-not-found]

    def dist(d: dict[str, Any]) -> Any:
        if d["kind"] == "gaussian":
            return le.ND.DiscreteGaussian(d["stddev"])
        if d["kind"] == "sparse_ternary":
            return le.ND.SparseTernary(d["plus"], d["minus"])
        return le.ND.Uniform(int(d["lo"]), int(d["hi"]))

    params = le.LWE.Parameters(
        n=spec["n"], q=int(spec["q"]), Xs=dist(spec["Xs"]), Xe=dist(spec["Xe"]),
        m=oo if spec["m"] is None else int(spec["m"]),
    )
    model = le.RC.MATZOV if spec["cost_model"] == "matzov" else le.RC.ADPS16
    every = ("arora-gb", "bkw", "usvp", "bdd", "bdd_hybrid", "bdd_mitm_hybrid", "dual",
             "dual_hybrid")
    deny = tuple(a for a in every if a not in spec["attacks"])
    start = time.monotonic()
    with contextlib.redirect_stdout(sys.stderr):
        res = le.LWE.estimate(params, red_cost_model=model, deny_list=deny)
    attacks = {}
    for name, cost in res.items():
        rop = cost["rop"]
        attacks[name] = {
            "log2_rop": float(math.log2(rop)) if rop < oo else None,
            "beta": int(cost["beta"]) if "beta" in cost else None,
            "d": int(cost["d"]) if "d" in cost else None,
        }
    out = {"commit": _commit(), "attacks": attacks, "seconds": time.monotonic() - start}
    with open(argv[2], "w", encoding="utf-8") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
