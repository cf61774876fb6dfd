"""The parameter sets ``spiralpir security`` checks, whatever file they come in.

A file is one JSON object of one of three kinds, told apart by its keys:

* a **plan document** — ``{"params": {...}, ...}``: what ``spiralpir plan --json`` prints and
  what a generated build keeps as ``generated/NAME/params.json``;
* a **parameters literal** — ``poly_len``, ``moduli``, ``noise_width`` (the Gaussian WIDTH
  s = σ·√(2π)), optional ``secret_distribution``, at the top level;
* a **ring file** — another implementation's ring, written by hand (``ring_dimension``; the
  format is ``RING_FIELDS`` below and estimator/README.md).

Every error names the file and the field.  Ring-LWE is read as LWE of the ring's dimension
with as many samples as the attacker wants unless ``samples`` says otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .distributions import Distribution, gaussian, gaussian_from_width, stddev_to_width
from .errors import SpiralpirError
from .integers import parse_integer
from .jsonfile import read_json_object
from .lwe_parameters import LWEParameters
from .spiral import MAX_LOG2_MODULUS, lwe_instance, params_from_mapping, parse_secret, secret_name

# ring file: field -> what it holds (also the list of allowed keys)
RING_FIELDS: dict[str, str] = {
    "ring_dimension": "integer in [16, 65536]: the ring (LWE) dimension",
    "modulus": "the ciphertext modulus q: an integer or a string such as \"2^60 - 2^18 + 1\"",
    "moduli": "instead of modulus: the CRT primes (integers or strings); q is their product",
    "error_stddev": "standard deviation σ of the discrete Gaussian error (SEAL's 3.2)",
    "error_width": "instead of error_stddev: its width s = σ·√(2π) (SPIRAL's 6.4)",
    "secret": "gaussian (as the error) | ternary | sparse-ternary:PLUS,MINUS | uniform",
    "samples": "optional: the number of LWE samples an attacker gets (default: unlimited)",
    "name": "optional: a name for the set",
    "source": "optional: where the numbers come from",
    "tags": "optional: a list of strings",
}


@dataclass(frozen=True)
class ParamSet:
    """One parameter set to estimate: where it came from and the LWE instance it exposes."""

    label: str  # the file as given, or a preset's name
    kind: str  # "plan document" | "parameters" | "ring file" | "command line"
    lwe: LWEParameters
    name: str = ""
    source: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)

    def describe(self) -> dict[str, Any]:
        """The instance as JSON: dimension, modulus (exact, as a string), error, secret."""
        p = self.lwe
        return {
            "ring_dimension": p.n,
            "modulus": str(p.q),
            "log2_modulus": round(p.log2_q, 4),
            "error_stddev": round(p.Xe.stddev, 6),
            "error_width": round(stddev_to_width(p.Xe.stddev), 6),
            "secret": secret_name(p.Xs, p.Xe),
            "samples": None if math.isinf(p.m) else int(p.m),
        }


def load(path: str | Path) -> ParamSet:
    """Read any of the three kinds; errors are ``SpiralpirError("FILE: field 'x': ...")``."""
    doc = read_json_object(path, "parameters file")
    try:
        if "ring_dimension" in doc:
            return ring_file(doc, str(path))
        if "params" in doc or "poly_len" in doc:
            kind = "plan document" if "params" in doc else "parameters"
            poly_len, q, width, secret = params_from_mapping(doc)
            return ParamSet(str(path), kind, lwe_instance(poly_len, q, width, secret))
    except SpiralpirError as exc:
        raise SpiralpirError(f"{path}: {exc}") from None
    raise SpiralpirError(
        f"{path}: not a plan document, parameters literal or ring file (expected a field "
        "'params', 'poly_len' or 'ring_dimension')"
    )


def ring_file(doc: dict[str, Any], label: str) -> ParamSet:
    """A ring file's instance (errors name the field, not the file)."""
    unknown = sorted(set(doc) - set(RING_FIELDS))
    if unknown:
        raise SpiralpirError(
            f"unknown field(s) {', '.join(repr(k) for k in unknown)} (a ring file has: "
            f"{', '.join(RING_FIELDS)})"
        )
    n = doc["ring_dimension"]
    if type(n) is not int or not 16 <= n <= 65536:
        raise SpiralpirError(f"field 'ring_dimension': must be an integer in [16, 65536], "
                             f"got {n!r}")
    q = _modulus(doc)
    error = _error(doc, q)
    if "secret" not in doc:
        raise SpiralpirError("missing field 'secret' (gaussian | ternary | "
                             "sparse-ternary:PLUS,MINUS | uniform)")
    if not isinstance(doc["secret"], str):
        raise SpiralpirError(f"field 'secret': must be a string, got {doc['secret']!r}")
    xs = parse_secret(doc["secret"], error, q, what="field 'secret'")
    if xs.kind == "sparse_ternary" and xs.plus + xs.minus > n:
        raise SpiralpirError(f"field 'secret': weight {xs.plus}+{xs.minus} exceeds "
                             f"ring_dimension={n}")
    samples = doc.get("samples")
    if samples is not None and (type(samples) is not int or samples < 1):
        raise SpiralpirError(f"field 'samples': must be a positive integer or null, "
                             f"got {samples!r}")
    name, source = doc.get("name", ""), doc.get("source", "")
    for key, val in (("name", name), ("source", source)):
        if not isinstance(val, str):
            raise SpiralpirError(f"field '{key}': must be a string, got {val!r}")
    tags = doc.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise SpiralpirError(f"field 'tags': must be a list of strings, got {tags!r}")
    lwe = LWEParameters(n, q, xs, error, math.inf if samples is None else samples)
    return ParamSet(label, "ring file", lwe, name, source, tuple(tags))


def _integer(value: Any, what: str) -> int:
    if type(value) is int:
        return value
    if isinstance(value, str):
        return parse_integer(value, what)
    raise SpiralpirError(f"{what}: must be an integer or a string such as \"2^54\", "
                         f"got {value!r}")


def _modulus(doc: dict[str, Any]) -> int:
    if ("modulus" in doc) == ("moduli" in doc):
        raise SpiralpirError("give exactly one of the fields 'modulus' and 'moduli'")
    if "modulus" in doc:
        q, key = _integer(doc["modulus"], "field 'modulus'"), "modulus"
    else:
        moduli = doc["moduli"]
        if not isinstance(moduli, list) or not moduli:
            raise SpiralpirError(f"field 'moduli': must be a non-empty list, got {moduli!r}")
        factors = [_integer(m, f"field 'moduli'[{i}]") for i, m in enumerate(moduli)]
        bad = [m for m in factors if m < 2]
        if bad:
            raise SpiralpirError(f"field 'moduli': every modulus must be >= 2, got {bad[0]}")
        q, key = math.prod(factors), "moduli"
    if q < 3:
        raise SpiralpirError(f"field '{key}': the modulus must be >= 3, got {q}")
    if q.bit_length() - 1 > MAX_LOG2_MODULUS:
        raise SpiralpirError(f"field '{key}': the modulus has {q.bit_length()} bits; at most "
                             f"{MAX_LOG2_MODULUS:.0f} supported")
    return q


def _error(doc: dict[str, Any], q: int) -> Distribution:
    if ("error_stddev" in doc) == ("error_width" in doc):
        raise SpiralpirError("give exactly one of the fields 'error_stddev' (standard "
                             "deviation σ) and 'error_width' (s = σ·√(2π))")
    key = "error_stddev" if "error_stddev" in doc else "error_width"
    val = doc[key]
    if type(val) not in (int, float) or not 0 < val < q:
        raise SpiralpirError(f"field '{key}': must be a number > 0 and < the modulus, "
                             f"got {val!r}")
    return gaussian(float(val)) if key == "error_stddev" else gaussian_from_width(float(val))
