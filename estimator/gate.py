"""CI gate: every shipped or generated parameter set must reach a security floor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import SpiralpirError
from .spiral import load_params_file, security_report


def check_params_file(path: str | Path, floor: float = 128) -> dict[str, Any]:
    """Estimate the ring of a params.json (top level or under "params"); raise
    ``SpiralpirError`` naming the file, the level and the cheapest attack if it is below
    ``floor`` bits.  Returns the report."""
    poly_len, q, width, secret = load_params_file(path)
    rep = security_report(poly_len, q, width, secret)
    bits = rep["security_bits"]
    if bits is None or bits < floor:
        raise SpiralpirError(
            f"{path}: security {bits} bits < floor {floor} (cheapest attack "
            f"{rep['cheapest_attack']}; poly_len={poly_len}, log2 q={q.bit_length()}, "
            f"noise_width={width}, secret={secret})"
        )
    return rep
