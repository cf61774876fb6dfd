"""The SPIRAL paper's parameters: its published ring and its example set (2^20 × 256 B).

The ring is ~124.9-bit secure only (see estimator/): it is here as a reference, not as a
default; the planner uses it with `ring="paper"` when it meets the asked security.
"""

from __future__ import annotations

from typing import Any

from spiralpir.optimizer.params.primes import SPIRAL_MODULI

PAPER_RING: dict[str, Any] = {
    "poly_len": 2048,
    "moduli": list(SPIRAL_MODULI),
    "noise_width": 6.4,
    "secret_distribution": "gaussian",
}
PAPER_EXAMPLE: dict[str, Any] = {
    **PAPER_RING,
    "variant": "spiral",
    "n": 2, "nu_1": 9, "nu_2": 6, "p": 256, "q2_bits": 20,
    "t_gsw": 8, "t_conv": 4, "t_exp_left": 8, "t_exp_right": 56,
    "instances": 1, "db_item_size": 256, "records": 1 << 20, "record_size": 256,
}
