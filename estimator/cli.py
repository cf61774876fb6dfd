"""``spiralpir security``: the security level of a parameter set or an LWE instance."""

from __future__ import annotations

import json
import math

import click

from .backend import reference_backend
from .distributions import Distribution, gaussian
from .errors import SpiralpirError
from .estimate import estimate
from .lwe_parameters import LWEParameters
from .spiral import load_params_file, lwe_instance, parse_secret, report_json


def _parse_dist(text: str, what: str, q: int, error: Distribution | None) -> Distribution:
    t = text.strip().lower()
    if t.startswith("gaussian:"):
        try:
            stddev = float(t.split(":", 1)[1])
        except ValueError:
            raise SpiralpirError(
                f"--{what} {text!r}: expected gaussian:STDDEV with a number"
            ) from None
        if not stddev > 0:
            raise SpiralpirError(f"--{what} {text!r}: STDDEV must be > 0")
        return gaussian(stddev)
    if t == "gaussian":
        if error is None:
            raise SpiralpirError(f"--{what} gaussian needs a standard deviation: gaussian:STDDEV")
        return error
    if error is None and t not in ("uniform",):
        raise SpiralpirError(
            f"--{what} {text!r}: the error must be gaussian:STDDEV (standard deviation)"
        )
    assert error is not None
    return parse_secret(t, error, q)


def _print_table(rep: dict) -> None:
    click.echo(f"security: {rep['security_bits']} bits (cheapest attack: {rep['cheapest_attack']},"
               f" cost model {rep['cost_model']}, {rep['estimator']})")
    for name, a in rep["attacks"].items():
        lr = "inf" if a["log2_rop"] is None else f"{a['log2_rop']:.2f}"
        click.echo(f"  {name:16s} log2(rop) = {lr:>8s}   beta = {a['beta']}   dim = {a['dim']}")


@click.command(name="security")
@click.argument("params_file", required=False, type=click.Path(dir_okay=False))
@click.option("--lwe-dim", type=int, help="LWE dimension (ring dimension for ring-LWE).")
@click.option("--modulus", type=str, help="Modulus q (integer; may be huge).")
@click.option("--secret", type=str,
              help="gaussian:STDDEV | ternary | sparse-ternary:PLUS,MINUS | uniform")
@click.option("--error", type=str, help="gaussian:STDDEV (standard deviation, not width)")
@click.option("--samples", type=int, default=None, help="Number of LWE samples (default: ∞).")
@click.option("--cost-model", type=click.Choice(["matzov", "adps16"], case_sensitive=False),
              default="matzov", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--reference", is_flag=True,
              help="Also run the real lattice-estimator if a Sage environment has it.")
def security(
    params_file: str | None,
    lwe_dim: int | None,
    modulus: str | None,
    secret: str | None,
    error: str | None,
    samples: int | None,
    cost_model: str,
    as_json: bool,
    reference: bool,
) -> None:
    """Estimate the lattice security of PARAMS_FILE (a params.json: poly_len, moduli,
    noise_width = Gaussian WIDTH s = σ·√(2π), secret_distribution) or of an LWE instance
    given by --lwe-dim/--modulus/--secret/--error."""
    manual = [lwe_dim, modulus, secret, error]
    if params_file is not None:
        if any(v is not None for v in manual):
            raise SpiralpirError("give either PARAMS_FILE or --lwe-dim/--modulus/--secret/--error")
        poly_len, q, width, sec = load_params_file(params_file)
        params = lwe_instance(poly_len, q, width, sec)
    else:
        if any(v is None for v in manual):
            raise SpiralpirError(
                "need PARAMS_FILE, or all of --lwe-dim, --modulus, --secret, --error"
            )
        assert lwe_dim is not None and modulus is not None
        assert secret is not None and error is not None
        try:
            q = int(modulus, 0)
        except ValueError:
            raise SpiralpirError(f"--modulus {modulus!r} is not an integer") from None
        if q < 3:
            raise SpiralpirError(f"--modulus must be ≥ 3, got {q}")
        if lwe_dim < 1:
            raise SpiralpirError(f"--lwe-dim must be ≥ 1, got {lwe_dim}")
        xe = _parse_dist(error, "error", q, None)
        if xe.kind != "gaussian":
            raise SpiralpirError("--error must be gaussian:STDDEV")
        xs = _parse_dist(secret, "secret", q, xe)
        params = LWEParameters(lwe_dim, q, xs, xe, math.inf if samples is None else samples)
    rep = report_json(estimate(params, cost_model.lower()))
    if reference:
        rep["reference"] = reference_backend(params, cost_model.lower())
    if as_json:
        click.echo(json.dumps(rep))
    else:
        _print_table(rep)
        if reference:
            click.echo(f"reference: {json.dumps(rep['reference'])}")
