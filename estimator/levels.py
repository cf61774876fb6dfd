"""How a security level is shown: the one rounding rule of every command.

A level is computed in full precision and compared with a requirement unrounded.  Wherever it
is written down it is truncated toward −∞ — to 0.1 bit in text (``plan``, ``security``, the
README), to 0.0001 bit in JSON — so a printed level never exceeds the computed one, and a
level printed as at least R (R with one decimal) really is at least R.  A shortfall is
rounded up to 0.1 bit, so it is never understated: 128 − 124.8998 prints as 3.2
(= 128 − 124.8, the level as printed).
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

TEXT_DIGITS = 1
JSON_DIGITS = 4


def _quantize(x: float, digits: int, rounding: str) -> Decimal:
    # Decimal(x) is the float's exact binary value, so the rounding cannot go the wrong way
    return Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=rounding)


def bits_text(x: float | None) -> str:
    """The level as text: ``129.644 -> "129.6"``, ``124.8998 -> "124.8"``; ``"inf"`` if
    no attack applies."""
    if x is None or math.isinf(x):
        return "inf"
    return str(_quantize(x, TEXT_DIGITS, ROUND_FLOOR))


def bits_json(x: float | None) -> float | None:
    """The level in JSON: truncated to 4 decimals; ``None`` if no attack applies."""
    if x is None or not math.isfinite(x):
        return None
    return float(_quantize(x, JSON_DIGITS, ROUND_FLOOR))


def shortfall_text(required: float, level: float) -> str:
    """How far ``level`` falls short of ``required``, rounded up to 0.1 bit."""
    return str(_quantize(max(required - level, 0.0), TEXT_DIGITS, ROUND_CEILING))


def shortfall_json(required: float, level: float) -> float:
    """The shortfall in JSON: rounded up to 4 decimals."""
    return float(_quantize(max(required - level, 0.0), JSON_DIGITS, ROUND_CEILING))
