"""Counts on the command line: '2^20', '1M', '100KB', '4KiB', '1048576' -> int.

K/M/G/T = 10^3/10^6/10^9/10^12, Ki/Mi/Gi/Ti = 2^10/2^20/2^30/2^40, an optional trailing B,
and the integer syntax of `spiralpir security --modulus` (estimator/integers.py: 2^20, 3*2^18,
2^20-1).
"""

from __future__ import annotations

import re

from spiralpir.estimator.integers import parse_integer
from spiralpir.optimizer.errors import SpiralpirError

_SUFFIX = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
           "KI": 2**10, "MI": 2**20, "GI": 2**30, "TI": 2**40}


def parse_count(text: str, what: str = "value") -> int:
    """'2^20', '1M', '100KB', '4KiB', '1048576' -> int (>= 1)."""
    s = str(text).strip().replace(",", "")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KkMmGgTt][Ii]?)?\s*[Bb]?", s.replace("_", ""))
    if m:
        mult = _SUFFIX[(m.group(2) or "").upper()]
        v = float(m.group(1)) * mult
        if v != int(v):
            raise SpiralpirError(f"{what}: {text!r} is not a whole number")
        value = int(v)
    else:
        try:  # the integer syntax of `security --modulus`: 2^20, 2**20, 3*2^18, 2^20-1
            value = parse_integer(s, what)
        except SpiralpirError:
            raise SpiralpirError(f"{what}: cannot read {text!r} (examples: 1048576, 2^20, 1M, "
                                 "100KB, 4KiB)") from None
    if value < 1:
        raise SpiralpirError(f"{what}: must be at least 1, got {text!r}")
    return value
