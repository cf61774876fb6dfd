"""``spiralpir security``: the security level of parameter sets, and the CI gate over them.

``spiralpir security [--require BITS] FILE... [--preset NAME]... [--json] [--reference]``
estimates each file (paramsets.py: plan document, parameters literal or ring file) or preset;
``--presets`` tabulates the shipped presets; ``--lwe-dim/--modulus/--secret/--error`` give an
LWE instance on the command line.  Exit status: 0 every set meets ``--require``, 1 one does
not, 2 a file could not be read (gate.exit_status).
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import click

from .backend import ENV_PYTHON, sage_python
from .distributions import Distribution, gaussian
from .errors import SpiralpirError
from .gate import ERROR, FAIL, PASS, check, error_record, exit_status, failure_line
from .integers import parse_integer
from .levels import bits_text
from .lwe_parameters import LWEParameters
from .paramsets import ParamSet, load
from .presets import all_presets, preset
from .spiral import parse_secret

WHY_OURS = ("spiralpir keeps SPIRAL's error (width 6.4) and Gaussian secret but plans only rings "
            "at or above --min-security (128 by default): q ~ 2^54 at d = 2048, or d = 4096. "
            "The published sets above fall short under the same MATZOV model.")


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
    if error is None:
        raise SpiralpirError(
            f"--{what} {text!r}: the error must be gaussian:STDDEV (standard deviation)"
        )
    return parse_secret(t, error, q, what=f"--{what}")


def _command_line_set(lwe_dim: int, modulus: str, secret: str, error: str,
                      samples: int | None) -> ParamSet:
    q = parse_integer(modulus, "--modulus")
    if q < 3:
        raise SpiralpirError(f"--modulus must be >= 3, got {q}")
    if lwe_dim < 1:
        raise SpiralpirError(f"--lwe-dim must be >= 1, got {lwe_dim}")
    xe = _parse_dist(error, "error", q, None)
    xs = _parse_dist(secret, "secret", q, xe)
    params = LWEParameters(lwe_dim, q, xs, xe, math.inf if samples is None else samples)
    return ParamSet("command line", "command line", params)


def _print_table(rec: dict[str, Any]) -> None:
    click.echo(f"security: {bits_text(rec['security_bits'])} bits (cheapest attack: "
               f"{rec['cheapest_attack']}, cost model {rec['cost_model']}, {rec['estimator']})")
    for name, a in rec["attacks"].items():
        lr = bits_text(a["log2_rop"])
        click.echo(f"  {name:16s} log2(rop) = {lr:>7s}   beta = {a['beta']}   dim = {a['dim']}")


def _print_reference(rec: dict[str, Any]) -> None:
    ref = rec.get("reference")
    if ref is None:
        return
    commit = (ref["commit"] or "unknown commit")[:12]
    diff = ref["ours_minus_reference"]
    click.echo(f"  reference: lattice-estimator {commit}: {bits_text(ref['security_bits'])} bits "
               f"({ref['cheapest_attack']}, {ref['seconds']:g} s); ours "
               f"{bits_text(rec['security_bits'])} bits ({rec['cheapest_attack']}); ours - "
               f"reference = {'n/a' if diff is None else f'{diff:+.4f}'} bits")


def _print_verdict(rec: dict[str, Any]) -> None:
    if rec["status"] == PASS:
        click.echo(f"PASS {rec['file']}: {bits_text(rec['deciding_level'])} bits >= "
                   f"{rec['required_bits']:g} (cheapest attack {rec['cheapest_attack']}, cost "
                   f"model {rec['cost_model']})")
    elif rec["status"] == FAIL:
        click.echo(f"FAIL {failure_line(rec)}")


def _print_presets(records: list[dict[str, Any]], required: float | None) -> None:
    head = f"{'preset':16s} {'d':>5s} {'log2 q':>6s} {'error σ (width)':>16s} {'secret':22s} " \
           f"{'bits':>6s} {'cheapest':12s} tags"
    click.echo(head)
    for r in records:
        i = r["instance"]
        err = f"{i['error_stddev']:.3f} ({i['error_width']:.2f})"
        mark = "" if required is None else ("  " + r["status"].upper())
        click.echo(f"{r['name']:16s} {i['ring_dimension']:>5d} {i['log2_modulus']:>6.1f} "
                   f"{err:>16s} {i['secret']:22s} {bits_text(r['security_bits']):>6s} "
                   f"{r['cheapest_attack']:12s} {', '.join(r['tags'])}{mark}")
    click.echo(f"\nlevels: {records[0]['cost_model']} cost model, {records[0]['estimator']}, "
               "printed truncated to 0.1 bit\n" + WHY_OURS + "\nsources:")
    for r in records:
        click.echo(f"  {r['name']}: {r['source']}")


@click.command(name="security")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--require", type=float, default=None, metavar="BITS",
              help="Gate: exit 1 unless every set reaches BITS (e.g. 128).")
@click.option("--preset", "preset_names", multiple=True, metavar="NAME",
              help="Check a shipped preset like a file (see --presets).")
@click.option("--presets", "list_presets", is_flag=True,
              help="Print the shipped presets (named, tagged, with sources) and their levels.")
@click.option("--lwe-dim", type=int, help="LWE dimension (ring dimension for ring-LWE).")
@click.option("--modulus", type=str,
              help="Modulus q: 66974689739603969, 2^54, 268369921*249561089, 2^60-2^18+1.")
@click.option("--secret", type=str,
              help="gaussian:STDDEV | ternary | sparse-ternary:PLUS,MINUS | uniform")
@click.option("--error", type=str, help="gaussian:STDDEV (standard deviation, not width)")
@click.option("--samples", type=int, default=None, help="Number of LWE samples (default: ∞).")
@click.option("--cost-model", type=click.Choice(["matzov", "adps16"], case_sensitive=False),
              default="matzov", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON record per set, one per line.")
@click.option("--reference", is_flag=True,
              help="Also run the public lattice-estimator (a Sage environment that has it) and "
                   "report both levels and their difference; the lower one decides --require.")
@click.option("--sage-python", "sage_python_path", type=str, default=None, metavar="PATH",
              help=f"The Python of that environment (default: ${ENV_PYTHON}, else this one).")
def security(
    files: tuple[str, ...],
    require: float | None,
    preset_names: tuple[str, ...],
    list_presets: bool,
    lwe_dim: int | None,
    modulus: str | None,
    secret: str | None,
    error: str | None,
    samples: int | None,
    cost_model: str,
    as_json: bool,
    reference: bool,
    sage_python_path: str | None,
) -> None:
    """Estimate the lattice security of FILES (plan documents such as generated/NAME/params.json
    or `plan --json` output, parameters literals, or ring files: README.md, "Security checks
    in CI"), of presets, or of an LWE instance given by --lwe-dim/--modulus/--secret/--error.

    Exit status: 0 every set reaches --require, 1 one does not, 2 a file cannot be read.
    Levels are printed truncated to 0.1 bit (JSON: 0.0001), never above the estimate."""
    model = cost_model.lower()
    if require is not None and not (math.isfinite(require) and require > 0):
        raise SpiralpirError(f"--require must be a positive number of bits, got {require:g}")
    manual = [lwe_dim, modulus, secret, error]
    if samples is not None and lwe_dim is None:
        raise SpiralpirError("--samples applies to an instance given by --lwe-dim/--modulus/"
                             "--secret/--error (a ring file has a 'samples' field)")
    sets: list[ParamSet | dict[str, Any]] = []
    if any(v is not None for v in manual):
        if files or preset_names or list_presets:
            raise SpiralpirError("give either FILES/--preset or --lwe-dim/--modulus/--secret/"
                                 "--error, not both")
        if any(v is None for v in manual):
            raise SpiralpirError(
                "need FILES, or all of --lwe-dim, --modulus, --secret, --error"
            )
        assert lwe_dim is not None and modulus is not None
        assert secret is not None and error is not None
        sets.append(_command_line_set(lwe_dim, modulus, secret, error, samples))
    if list_presets:
        if files or preset_names:
            raise SpiralpirError("--presets prints the preset table; check files or a --preset "
                                 "NAME in a separate call")
        sets.extend(all_presets())
    for name in preset_names:
        sets.append(preset(name))
    for f in files:
        try:
            sets.append(load(f))
        except SpiralpirError as exc:
            sets.append(error_record(f, str(exc)))
    if not sets:
        raise SpiralpirError("nothing to estimate: give FILES, --preset NAME, --presets or "
                             "--lwe-dim/--modulus/--secret/--error")
    python = sage_python(sage_python_path) if reference else None
    records = []
    for s in sets:
        if isinstance(s, dict):
            rec = s
        else:
            try:
                rec = check(s, require, model, python)
            except SpiralpirError as exc:
                msg = str(exc)
                rec = error_record(s.label, msg if msg.startswith(s.label) else
                                   f"{s.label}: {msg}")
        records.append(rec)
        if rec["status"] == ERROR:
            click.echo(f"spiralpir: error: {rec['error']}", err=True)
    _report(records, require, as_json, list_presets)
    sys.exit(exit_status(records))


def _report(records: list[dict[str, Any]], require: float | None, as_json: bool,
            list_presets: bool) -> None:
    ok = [r for r in records if r["status"] != ERROR]
    if as_json:
        for r in records:
            click.echo(json.dumps(r))
        return
    if list_presets:
        _print_presets(ok, require)
        return
    for r in ok:
        if require is not None:
            _print_verdict(r)
        else:
            if len(records) > 1:
                click.echo(f"== {r['file']}")
            _print_table(r)
        _print_reference(r)
