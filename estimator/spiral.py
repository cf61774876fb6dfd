"""The SPIRAL mapping: which LWE instance a SPIRAL parameter set exposes, and its report.

Everything the server sees — the query's Regev/GSW ciphertexts, the expansion and
conversion key-switching keys (encryptions of automorphisms/products of the secret) — is
ring-LWE in R_q = Z_q[x]/(x^d + 1) under ONE secret s, with d = ``poly_len``,
q = ∏ ``moduli`` and error a discrete Gaussian of width ``noise_width`` (s = σ·√(2π)).
Ring-LWE is treated as LWE of dimension d with as many samples as the attacker wants
(SPIRAL publishes many ring elements under s).  The secret is either drawn from the error
distribution (``gaussian``), uniform ternary, or sparse ternary with fixed ±1 counts.
The response is modulus-switched to smaller moduli, but only the client sees it, so it
exposes nothing to the server.
"""

from __future__ import annotations

import math
from importlib import metadata
from pathlib import Path
from typing import Any

from .distributions import (
    Distribution,
    gaussian_from_width,
    sparse_ternary,
    ternary,
    uniform_mod,
)
from .errors import SpiralpirError
from .estimate import Report, estimate
from .jsonfile import read_json_object
from .levels import bits_json
from .lwe_parameters import LWEParameters

MAX_LOG2_MODULUS = 220.0


def version() -> str:
    try:
        return metadata.version("spiralpir")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "0+unknown"


def parse_secret(
    secret: str, error: Distribution, q: int | None = None,
    what: str = "field 'secret_distribution'",
) -> Distribution:
    """``gaussian`` (same as the error), ``ternary``, ``sparse-ternary:PLUS,MINUS``,
    ``uniform`` (uniform mod q).  ``what`` names the input in errors."""
    s = secret.strip().lower().replace("_", "-")
    if s == "gaussian":
        return error
    if s == "ternary":
        return ternary()
    if s == "uniform":
        if q is None:
            raise SpiralpirError(f"{what}: secret 'uniform' needs the modulus")
        return uniform_mod(q)
    if s.startswith("sparse-ternary:"):
        try:
            plus_s, minus_s = s.split(":", 1)[1].split(",")
            plus, minus = int(plus_s), int(minus_s)
        except ValueError:
            raise SpiralpirError(
                f"{what}: {secret!r}: expected 'sparse-ternary:PLUS,MINUS' with two integers"
            ) from None
        if plus < 0 or minus < 0 or plus + minus == 0:
            raise SpiralpirError(
                f"{what}: {secret!r}: PLUS and MINUS must be >= 0 and not both 0"
            )
        return sparse_ternary(plus, minus)
    raise SpiralpirError(
        f"{what}: {secret!r} is not one of: gaussian, ternary, sparse-ternary:PLUS,MINUS, "
        "uniform"
    )


def secret_name(xs: Distribution, error: Distribution) -> str:
    """The spelling ``parse_secret`` reads back for the secret ``xs`` (error ``error``)."""
    if xs.kind == "gaussian":
        return "gaussian" if xs.stddev == error.stddev else f"gaussian:{xs.stddev:g}"
    if xs.kind == "sparse_ternary":
        return f"sparse-ternary:{xs.plus},{xs.minus}"
    if xs.lo == -1 and xs.hi == 1:
        return "ternary"
    return "uniform"


def lwe_instance(
    poly_len: int, modulus: int, noise_width: float, secret: str, m: float = math.inf
) -> LWEParameters:
    """The LWE instance of a SPIRAL ring (validated, with actionable errors)."""
    if not isinstance(poly_len, int) or poly_len < 16 or poly_len > 65536:
        raise SpiralpirError(
            f"field 'poly_len': must be an integer in [16, 65536], got {poly_len!r}"
        )
    if not isinstance(modulus, int) or modulus < 3:
        raise SpiralpirError(f"field 'moduli': the modulus must be >= 3, got {modulus!r}")
    if math.log2(modulus) > MAX_LOG2_MODULUS:
        raise SpiralpirError(
            f"field 'moduli': the modulus has {modulus.bit_length()} bits; at most "
            f"{MAX_LOG2_MODULUS:.0f} supported"
        )
    if not (isinstance(noise_width, int | float) and 0 < noise_width < modulus):
        raise SpiralpirError(
            f"field 'noise_width': must be > 0 and < the modulus, got {noise_width!r}"
        )
    error = gaussian_from_width(float(noise_width))
    xs = parse_secret(secret, error, modulus)
    if xs.kind == "sparse_ternary" and xs.plus + xs.minus > poly_len:
        raise SpiralpirError(
            f"field 'secret_distribution': sparse-ternary weight {xs.plus}+{xs.minus} "
            f"exceeds poly_len={poly_len}"
        )
    return LWEParameters(poly_len, modulus, xs, error, m)


def report_json(report: Report) -> dict[str, Any]:
    """The JSON shape shared by the CLI and the optimizer."""
    cheapest = report.cheapest
    return {
        "security_bits": bits_json(report.security_bits),
        "cheapest_attack": cheapest.attack,
        "attacks": {name: c.summary() for name, c in report.attacks.items()},
        "cost_model": report.cost_model,
        "estimator": f"spiralpir {version()}",
    }


def security_report(
    poly_len: int, modulus: int, noise_width: float, secret: str, cost_model: str = "matzov"
) -> dict[str, Any]:
    """Full estimate of a SPIRAL ring: ``{"security_bits", "cheapest_attack", "attacks":
    {name: {"log2_rop", "beta", "dim"}}, "cost_model", "estimator"}``."""
    params = lwe_instance(poly_len, modulus, noise_width, secret)
    try:
        rep = estimate(params, cost_model)
    except ValueError as exc:
        raise SpiralpirError(str(exc)) from None
    return report_json(rep)


def params_from_mapping(data: dict[str, Any]) -> tuple[int, int, float, str]:
    """(poly_len, modulus, noise_width, secret) from a params dict, either top level or
    under ``"params"`` (the optimizer's plan file).  Errors name the field as the file spells
    it (``field 'params.moduli': ...``)."""
    where = ""
    if "params" in data and isinstance(data["params"], dict):
        data, where = data["params"], "params."
    missing = [f"'{where}{k}'" for k in ("poly_len", "moduli", "noise_width") if k not in data]
    if missing:
        raise SpiralpirError(f"missing field(s) {', '.join(missing)}")
    moduli = data["moduli"]
    if not isinstance(moduli, list) or not moduli or not all(
        type(x) is int and x >= 2 for x in moduli
    ):
        raise SpiralpirError(
            f"field '{where}moduli': must be a non-empty list of integers >= 2, got {moduli!r}"
        )
    modulus = math.prod(moduli)
    poly_len = data["poly_len"]
    if type(poly_len) is not int:
        raise SpiralpirError(f"field '{where}poly_len': must be an integer, got {poly_len!r}")
    width = data["noise_width"]
    if type(width) not in (int, float):
        raise SpiralpirError(f"field '{where}noise_width': must be a number, got {width!r}")
    secret = data.get("secret_distribution", "gaussian")
    if not isinstance(secret, str):
        raise SpiralpirError(
            f"field '{where}secret_distribution': must be a string, got {secret!r}"
        )
    return poly_len, modulus, float(width), secret


def load_params_file(path: str | Path) -> tuple[int, int, float, str]:
    doc = read_json_object(path, "parameters file")
    try:
        return params_from_mapping(doc)
    except SpiralpirError as exc:
        raise SpiralpirError(f"{path}: {exc}") from None
