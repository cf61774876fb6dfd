"""The CI gate: does each parameter set reach a required level?

``check`` turns one parameter set into one record (the ``--json`` line of ``spiralpir
security``); ``exit_status`` folds the records into the command's exit status: 0 when every
set meets the requirement, 1 when one falls short, 2 when a file could not be read.  Levels
are compared unrounded; levels.py says how they are printed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .backend import reference_estimate
from .errors import SpiralpirError
from .estimate import ATTACKS, estimate
from .levels import bits_json, bits_text, shortfall_json, shortfall_text
from .paramsets import ParamSet, load
from .spiral import report_json

PASS, FAIL, ERROR, ESTIMATED = "pass", "fail", "error", "estimated"


def check(ps: ParamSet, required: float | None, cost_model: str = "matzov",
          reference_python: str | None = None) -> dict[str, Any]:
    """The record of one parameter set: its instance, our per-attack estimate, with
    ``reference_python`` the lattice-estimator's too, and with ``required`` the verdict.
    With a reference the lower of the two levels decides."""
    try:
        rep = estimate(ps.lwe, cost_model)
    except ValueError as exc:
        raise SpiralpirError(f"{ps.label}: {exc}") from None
    rec: dict[str, Any] = {"file": ps.label, "kind": ps.kind, **report_json(rep),
                           "instance": ps.describe()}
    if ps.name:
        rec.update(name=ps.name, tags=list(ps.tags), source=ps.source)
    level = rep.security_bits
    if reference_python is not None:
        ref = reference_estimate(ps.lwe, cost_model, list(ATTACKS), reference_python)
        rec["reference"] = _comparison(rec, ref)
        level = min(level, ref["security_bits"])
    if required is not None:
        rec["required_bits"] = required
        rec["status"] = PASS if level >= required else FAIL
        rec["shortfall_bits"] = shortfall_json(required, level) if level < required else 0.0
        rec["deciding_level"] = bits_json(level)
    else:
        rec["status"] = ESTIMATED
    return rec


def _comparison(ours: dict[str, Any], ref: dict[str, Any]) -> dict[str, Any]:
    """The reference's figures and ours − reference, overall and per attack."""
    def diff(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else round(a - b, 4) + 0.0  # no -0.0

    attacks = {}
    for name, r in ref["attacks"].items():
        mine = ours["attacks"].get(name, {}).get("log2_rop")
        attacks[name] = {**r, "log2_rop": bits_json(r["log2_rop"]),
                         "ours_minus_reference": diff(mine, r["log2_rop"])}
    level = ref["security_bits"]
    return {"estimator": "lattice-estimator", "commit": ref["commit"],
            "python": ref["python"], "seconds": round(ref["seconds"], 1),
            "security_bits": bits_json(level), "cheapest_attack": ref["cheapest_attack"],
            "ours_minus_reference": diff(ours["security_bits"],
                                         None if math.isinf(level) else level),
            "attacks": attacks}


def error_record(label: str, message: str) -> dict[str, Any]:
    return {"file": label, "status": ERROR, "error": message}


def exit_status(records: list[dict[str, Any]]) -> int:
    statuses = {r["status"] for r in records}
    return 2 if ERROR in statuses else 1 if FAIL in statuses else 0


def check_params_file(path: str | Path, floor: float = 128) -> dict[str, Any]:
    """Estimate any parameters file (paramsets.load); raise ``SpiralpirError`` naming the
    file, its level, the cheapest attack and the shortfall if it is below ``floor`` bits.
    Returns the record."""
    rec = check(load(path), floor)
    if rec["status"] == FAIL:
        raise SpiralpirError(failure_line(rec))
    return rec


def failure_line(rec: dict[str, Any]) -> str:
    """``FILE: 124.8 bits < 128 required, short by 3.2 bits (cheapest attack bdd, ...)``."""
    a = rec["attacks"][rec["cheapest_attack"]]
    level = rec["deciding_level"]
    return (f"{rec['file']}: {bits_text(level)} bits < {rec['required_bits']:g} required, short "
            f"by {shortfall_text(rec['required_bits'], level)} bits (cheapest attack "
            f"{rec['cheapest_attack']}: beta = {a['beta']}, cost model {rec['cost_model']})")
