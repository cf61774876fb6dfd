"""Code generation: a resolved parameter set -> a specialized C++ build in ``generated/<name>/``.

This module owns the generator. It validates its inputs strictly (unknown keys are errors),
computes every derived constant in Python (gadget bases, the CRT constants, NTT root seeds,
q2, lazy-reduction bounds, the CI-sized twin), and renders the Jinja2 templates in
``templates/`` with ``StrictUndefined``. Templates hold constants and thin glue only.

Every generated file starts with a banner: generated, do not edit; the exact command that
reproduces it; the generator version; a hash of the inputs. No dates. Output is
deterministic, and every file is written atomically (temporary file, then rename), so CI can
regenerate the checked-in builds and diff them.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError

GENERATOR_VERSION = "spiralpir-codegen 1"

REPO_ROOT = Path(__file__).resolve().parents[1]
TEMPLATES_DIR = REPO_ROOT / "templates"
DEFAULT_OUT = REPO_ROOT / "generated"

NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,47}$")

# CI-sized twin: the same parameters with a smaller hypercube, so CI answers real queries fast.
CI_MAX_NU_1 = 4
CI_MAX_NU_2 = 2

# Files rendered from templates: output name -> template name.
TEMPLATE_FILES = {
    "params.hpp": "params.hpp.j2",
    "instance.cpp": "instance.cpp.j2",
    "instance_ci.cpp": "instance_ci.cpp.j2",
    "bench.cpp": "bench.cpp.j2",
    "bench_ci.cpp": "bench_ci.cpp.j2",
    "CMakeLists.txt": "CMakeLists.txt.j2",
}


# ---------------------------------------------------------------------------------------------
# Number theory (exact, Python integers)
# ---------------------------------------------------------------------------------------------

_MR_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)


def is_prime(n: int) -> bool:
    """Deterministic Miller-Rabin for n < 3.3e24 (covers every modulus we use)."""
    if n < 2:
        return False
    for b in _MR_BASES:
        if n % b == 0:
            return n == b
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in _MR_BASES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def q2_prime(q2_bits: int, poly_len: int) -> int:
    """The largest prime q2 < 2^q2_bits with q2 = 1 mod 2*poly_len (CONTRACT.md)."""
    step = 2 * poly_len
    cand = ((1 << q2_bits) - 1) // step * step + 1
    if cand >= 1 << q2_bits:
        cand -= step
    while cand > step:
        if is_prime(cand):
            return cand
        cand -= step
    raise SpiralpirError(f"no prime q2 < 2^{q2_bits} with q2 = 1 mod {step}")


def gadget_bits(q: int, t: int) -> int:
    """log2 of the gadget base z = 2^ceil(log2(q)/t): the smallest b with 2^(b*t) >= q."""
    if t < 1:
        raise SpiralpirError(f"gadget length must be >= 1, got {t}")
    b = 1
    while (1 << (b * t)) < q:
        b += 1
    return b


def min_root_2n(prime: int, poly_len: int) -> int:
    """The smallest primitive 2*poly_len-th root of unity mod prime (the NTT seed)."""
    order = 2 * poly_len
    exp = (prime - 1) // order
    for g in range(2, prime):
        psi = pow(g, exp, prime)
        if pow(psi, poly_len, prime) == prime - 1:
            best = psi
            # every primitive root is psi^k for odd k; take the smallest
            cur, sq = psi, psi * psi % prime
            for _ in range(poly_len):
                best = min(best, cur)
                cur = cur * sq % prime
            return best
    raise SpiralpirError(f"{prime} has no primitive {order}-th root of unity")


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------


def normalize_params(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a plan's ``params`` literal with O's ``Parameters`` (unknown keys are errors,
    every failure names the field) and return the canonical literal."""
    from spiralpir.optimizer.params import Parameters

    if not isinstance(raw, Mapping):
        raise SpiralpirError("'params' must be a JSON object")
    lit = Parameters.from_literal(dict(raw)).to_literal()
    return dict(json.loads(json.dumps(lit, sort_keys=True)))


def struct_fields(lit: Mapping[str, Any]) -> dict[str, Any]:
    """The params struct's fields (CONTRACT.md) from a canonical literal."""
    from spiralpir.optimizer.params import Parameters

    p = Parameters.from_literal(dict(lit))
    return {
        "poly_len": p.poly_len, "moduli": list(p.moduli), "variant": p.variant,
        "noise_width": p.noise_width, "secret_dist": p.secret_kind,
        "secret_plus": p.secret_plus, "secret_minus": p.secret_minus, "n": p.n,
        "nu_1": p.nu_1, "nu_2": p.nu_2, "p": p.p, "q2_bits": p.q2_bits, "t_gsw": p.t_gsw,
        "t_conv": p.t_conv, "t_exp_left": p.t_exp_left, "t_exp_right": p.t_exp_right,
        "instances": p.instances, "db_item_size": p.db_item_size,
        "num_records": p.records, "record_size": p.record_size,
    }


def parse_plan_document(doc: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a plan JSON document (or a checked-in params.json) into (params, estimate)."""
    allowed = {"params", "estimate", "security"}
    unknown = sorted(set(doc) - allowed)
    if unknown:
        raise SpiralpirError(f"unknown top-level key(s) in plan document: {', '.join(unknown)}")
    if "params" not in doc:
        raise SpiralpirError("plan document has no 'params' object")
    estimate = doc.get("estimate", {})
    if not isinstance(estimate, dict):
        raise SpiralpirError("plan document's 'estimate' must be an object")
    return normalize_params(doc["params"]), dict(estimate)


# ---------------------------------------------------------------------------------------------
# Derived constants
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Derived:
    """Everything computed from the parameters that the header spells out."""

    q: int
    log2_q: float
    q2: int
    q1: int
    delta: int
    gadget: dict[str, int]  # name -> base bits
    crt_hat_mod: list[int]  # (q/p_i) mod p_i
    crt_hat_inv: list[int]  # ((q/p_i) mod p_i)^-1 mod p_i
    barrett: list[int]  # floor(2^64 / p_i)
    psi: list[int]  # smallest primitive 2d-th root of unity mod p_i
    max_lazy_products: int  # products < (p_i - 1)^2 that fit on top of [0, p_i) in a uint64
    first_dim_terms: int  # 2^nu_1
    ci_nu_1: int
    ci_nu_2: int
    ci_num_records: int


def ci_shape(p: Mapping[str, Any]) -> tuple[int, int, int]:
    """(nu_1, nu_2, records) of the CI-sized twin: every other parameter is identical.

    The hypercube shrinks by 2^shift and so does the record count (rounded up), so the twin's
    records still fit its capacity. Accepts a literal (``records``) or struct fields."""
    records = p["records"] if "records" in p else p["num_records"]
    nu_1 = min(p["nu_1"], CI_MAX_NU_1)
    nu_2 = min(p["nu_2"], CI_MAX_NU_2)
    shift = (p["nu_1"] - nu_1) + (p["nu_2"] - nu_2)
    return nu_1, nu_2, max(1, -(-records // (1 << shift)))


def ci_literal(lit: Mapping[str, Any]) -> dict[str, Any]:
    """The CI-sized twin's parameter literal."""
    nu_1, nu_2, records = ci_shape(lit)
    return {**lit, "nu_1": nu_1, "nu_2": nu_2, "records": records}


def derive(p: Mapping[str, Any]) -> Derived:
    """Derived constants from struct fields, computed here independently of params.py and
    cross-checked against it (and, at compile time, against the runtime)."""
    moduli = p["moduli"]
    d = p["poly_len"]
    q = math.prod(moduli)
    hat_mod = [(q // m) % m for m in moduli]
    hat_inv = [pow(h, -1, m) for h, m in zip(hat_mod, moduli, strict=True)]
    gadget = {
        key: gadget_bits(q, p[key]) for key in ("t_gsw", "t_conv", "t_exp_left", "t_exp_right")
    }
    # products a*b (a, b < p_i) added to an accumulator already in [0, p_i) within a uint64
    max_lazy = min(((1 << 64) - 1 - (m - 1)) // ((m - 1) ** 2) for m in moduli)
    if max_lazy < p["n"]:
        raise SpiralpirError(
            f"moduli {moduli} are too large for n = {p['n']}: the first-dimension accumulator "
            f"holds {max_lazy} product(s) of residues before reducing and must hold n "
            "(pick smaller primes or n <= that bound)"
        )
    nu_1, nu_2, recs = ci_shape(p)
    der = Derived(
        q=q,
        log2_q=math.log2(q),
        q2=q2_prime(p["q2_bits"], d),
        q1=4 * p["p"],
        delta=q // p["p"],
        gadget=gadget,
        crt_hat_mod=hat_mod,
        crt_hat_inv=hat_inv,
        barrett=[(1 << 64) // m for m in moduli],
        psi=[min_root_2n(m, d) for m in moduli],
        max_lazy_products=max_lazy,
        first_dim_terms=1 << p["nu_1"],
        ci_nu_1=nu_1,
        ci_nu_2=nu_2,
        ci_num_records=recs,
    )
    _cross_check(p, der)
    return der


def _cross_check(p: Mapping[str, Any], der: Derived) -> None:
    from spiralpir.optimizer.params import Parameters

    ref = Parameters.from_literal({
        "variant": p["variant"], "poly_len": p["poly_len"], "moduli": p["moduli"],
        "noise_width": p["noise_width"], "secret_distribution": "gaussian", "n": p["n"],
        "nu_1": p["nu_1"], "nu_2": p["nu_2"], "p": p["p"], "q2_bits": p["q2_bits"],
        "t_gsw": p["t_gsw"], "t_conv": p["t_conv"], "t_exp_left": p["t_exp_left"],
        "t_exp_right": p["t_exp_right"], "instances": p["instances"],
        "db_item_size": p["db_item_size"], "records": p["num_records"],
        "record_size": p["record_size"],
    })
    mine = (der.q, der.q2, der.q1, der.delta, der.gadget["t_gsw"], der.gadget["t_conv"],
            der.gadget["t_exp_left"], der.gadget["t_exp_right"])
    theirs = (ref.q, ref.q2, ref.q1, ref.delta, ref.bits_gsw, ref.bits_conv, ref.bits_exp_left,
              ref.bits_exp_right)
    if mine != theirs:
        raise SpiralpirError(f"generator and params.py disagree on derived constants: "
                             f"{mine} != {theirs}")


# ---------------------------------------------------------------------------------------------
# Security report (E's estimator)
# ---------------------------------------------------------------------------------------------


def security_report(params: Mapping[str, Any]) -> dict[str, Any]:
    """The estimator's security report for this parameter literal (JSON-ready)."""
    try:
        from spiralpir.estimator import spiral
    except ImportError as exc:  # pragma: no cover - depends on the estimator being installed
        raise SpiralpirError(f"the security estimator is not available: {exc}") from exc
    poly_len, modulus, width, secret = spiral.params_from_mapping(dict(params))
    result = spiral.security_report(poly_len, modulus, width, secret)
    return dict(json.loads(json.dumps(result, sort_keys=True)))


# ---------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, indent=2) + "\n"


def reproduce_command(name: str) -> str:
    return f"spiralpir generate --params generated/{name}/params.json --name {name}"


def _templates_hash() -> str:
    h = hashlib.sha256()
    for tpl in sorted(set(TEMPLATE_FILES.values())):
        h.update(tpl.encode())
        h.update(b"\0")
        h.update((TEMPLATES_DIR / tpl).read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def _cpp_u128(x: int) -> str:
    hi, lo = x >> 64, x & ((1 << 64) - 1)
    if hi == 0:
        return f"static_cast<unsigned __int128>({lo}ULL)"
    return f"((static_cast<unsigned __int128>({hi}ULL) << 64) | {lo}ULL)"


def _context(name: str, lit: dict[str, Any], doc_json: str) -> dict[str, Any]:
    params = struct_fields(lit)
    der = derive(params)
    inputs_hash = hashlib.sha256(
        (GENERATOR_VERSION + "\0" + _templates_hash() + "\0" + doc_json).encode()
    ).hexdigest()
    return {
        "name": name,
        "p": params,
        "d": der,
        "variant": params["variant"],
        "q_cpp": _cpp_u128(der.q),
        "delta_cpp": _cpp_u128(der.delta),
        "noise_width_cpp": repr(float(params["noise_width"])),
        "generator_version": GENERATOR_VERSION,
        "inputs_hash": inputs_hash,
        "command": reproduce_command(name),
        "max_u64": (1 << 64) - 1,
    }


def _environment() -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render(name: str, doc: Mapping[str, Any]) -> dict[str, str]:
    """Render every file of a build: relative name -> contents. Pure, deterministic."""
    if not NAME_RE.match(name):
        raise SpiralpirError(
            f"invalid build name '{name}': use lowercase letters, digits and '_', starting "
            "with a letter (it becomes a C++ identifier)"
        )
    params, _ = parse_plan_document(doc)
    doc_json = canonical_json(doc)
    ctx = _context(name, params, doc_json)
    env = _environment()
    files = {"params.json": doc_json}
    for out_name, tpl in TEMPLATE_FILES.items():
        files[out_name] = env.get_template(tpl).render(**ctx)
    return files


def write_atomic(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(content)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def generate(
    name: str,
    params: Mapping[str, Any],
    estimate: Mapping[str, Any],
    out_dir: Path = DEFAULT_OUT,
    security: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``out_dir/name/``; returns that directory. Files no longer generated are removed."""
    params = normalize_params(params)
    if security is None:
        security = security_report(params)
    doc = {"params": params, "estimate": dict(estimate), "security": dict(security)}
    doc = json.loads(canonical_json(doc))
    files = render(name, doc)
    target = Path(out_dir) / name
    for rel, content in files.items():
        dest = target / rel
        if dest.exists() and dest.read_text(encoding="utf-8") == content:
            continue
        write_atomic(dest, content)
    return target


def generate_from_document(name: str, doc: Mapping[str, Any], out_dir: Path = DEFAULT_OUT,
                           refresh_security: bool = False) -> Path:
    """Generate from a plan document or a build's params.json. A security report already in
    the document is kept (so regeneration is a pure function of params.json and the
    templates) unless refresh_security; otherwise the estimator computes it."""
    params, estimate = parse_plan_document(doc)
    security = doc.get("security")
    if refresh_security or not isinstance(security, dict) or not security:
        security = None
    return generate(name, params, estimate, out_dir, security=security)


def load_document(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise SpiralpirError(f"no such parameters file: {path}") from exc
    except json.JSONDecodeError as exc:
        raise SpiralpirError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise SpiralpirError(f"{path} must hold a JSON object")
    return doc
