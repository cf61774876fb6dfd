"""The LWE problem instance: dimension, modulus, secret and error distributions, samples."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from .distributions import Distribution


@dataclass(frozen=True)
class LWEParameters:
    """An LWE instance ``(A, A·s + e mod q)``.

    ``n`` is the secret dimension, ``q`` the modulus (exact integer, any size), ``Xs``/``Xe``
    the secret/error coefficient distributions and ``m`` the number of samples
    (``math.inf``: as many as the attack wants).  For ring-LWE of ring dimension N treat the
    ring as LWE with ``n = N`` and ``m = N`` per ring element published (or ``inf``).
    """

    n: int
    q: int
    Xs: Distribution
    Xe: Distribution
    m: float = math.inf
    tag: str = ""
    log2_q: float = field(init=False, compare=False, hash=False)
    ln_q: float = field(init=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"LWE dimension n must be ≥ 1, got {self.n}")
        if self.q < 2:
            raise ValueError(f"modulus q must be ≥ 2, got {self.q}")
        object.__setattr__(self, "Xs", self.Xs.resize(self.n))
        object.__setattr__(self, "log2_q", _log2_int(self.q))
        object.__setattr__(self, "ln_q", self.log2_q * math.log(2))

    def updated(self, **kw: object) -> LWEParameters:
        """A copy with some fields replaced (e.g. ``params.updated(n=params.n - zeta)``)."""
        return replace(self, **kw)  # type: ignore[arg-type]

    def normalize(self) -> LWEParameters:
        """Normal form: if the error is narrower than the secret and samples allow it, swap
        their roles (as the reference does: secret ← error distribution)."""
        if self.m < 1:
            raise ValueError(f"number of samples m={self.m} < 1")
        if self.Xe.stddev < self.Xs.stddev and self.m >= 2 * self.n:
            return replace(self, Xs=self.Xe, m=self.m - self.n)
        if self.Xe.stddev < self.Xs.stddev and self.m == self.n:
            return replace(self, Xs=self.Xe, Xe=self.Xs)
        return self


def _log2_int(q: int) -> float:
    """log2 of a possibly huge integer without float overflow."""
    b = q.bit_length()
    if b <= 1000:
        return math.log2(q)
    shift = b - 60
    return math.log2(q >> shift) + shift
