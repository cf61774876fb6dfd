"""Secret and error distributions of an LWE instance, with their units made explicit.

A discrete Gaussian is described by its **standard deviation** ``stddev`` (written σ in the
lattice-estimator and in most papers).  SPIRAL and many FHE libraries describe the same
distribution by its **width** ``s = σ·√(2π)``; use :func:`gaussian_from_width` for those.
Mixing the two up changes the security level by about 7 bits at SPIRAL's parameters.

Each distribution knows the statistics the attacks need: standard deviation, mean,
coefficient bounds (``±inf`` when unbounded), density of non-zero entries (hence its
Hamming weight), and whether it is "sparse" (guessing-friendly).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

SQRT_2PI = math.sqrt(2.0 * math.pi)


def width_to_stddev(width: float) -> float:
    """Gaussian width s (as in SPIRAL: ρ_s(x) = exp(-π x²/s²)) → standard deviation σ = s/√(2π)."""
    return width / SQRT_2PI


def stddev_to_width(stddev: float) -> float:
    """Standard deviation σ → Gaussian width s = σ·√(2π)."""
    return stddev * SQRT_2PI


@dataclass(frozen=True)
class Distribution:
    """One coefficient distribution, optionally sized to ``n`` coefficients.

    ``kind`` is one of ``gaussian``, ``uniform`` (integers in ``[lo, hi]``), ``sparse_ternary``.
    For ``sparse_ternary``, ``plus``/``minus`` are the exact numbers of +1 and −1 entries.
    """

    kind: str
    stddev: float
    mean: float = 0.0
    lo: float = -math.inf
    hi: float = math.inf
    density: float = 1.0
    n: int = 0
    plus: int = 0
    minus: int = 0

    # -- shape ---------------------------------------------------------------------------
    def resize(self, n: int) -> Distribution:
        """The same distribution over ``n`` coefficients (sparse ternary keeps its weights)."""
        if self.kind == "sparse_ternary":
            return sparse_ternary(self.plus, self.minus, n)
        return replace(self, n=n)

    @property
    def hamming_weight(self) -> int:
        """Expected number of non-zero coefficients among ``n``."""
        if self.kind == "sparse_ternary":
            return self.plus + self.minus
        return round(self.n * self.density)

    @property
    def is_sparse(self) -> bool:
        """Guessing-friendly: density below 1/2, or a fixed-weight (sparse ternary) vector."""
        return self.kind == "sparse_ternary" or self.density < 0.5

    @property
    def is_bounded(self) -> bool:
        return math.isfinite(self.hi - self.lo)

    @property
    def nonzero_values(self) -> float:
        """Number of possible non-zero values of a coefficient (``inf`` if unbounded)."""
        return self.hi - self.lo

    def split_balanced(self, k: int, weight: int) -> tuple[Distribution, Distribution]:
        """Split a sparse ternary vector into ``k`` coordinates of Hamming weight ``weight``
        (its ±1 split proportionally, rounded down) and the remaining ``n-k`` coordinates."""
        h = self.hamming_weight
        p1 = (weight * self.plus) // h if h else 0
        m1 = weight - p1
        return (
            sparse_ternary(p1, m1, k),
            sparse_ternary(self.plus - p1, self.minus - m1, self.n - k),
        )

    def log2_support_size(self, fraction: float = 1.0) -> float:
        """log2 of the number of vectors covering probability ``fraction`` of the mass
        (``inf`` if no finite set is modelled)."""
        n = self.n
        if self.kind == "sparse_ternary":
            return (
                log2_binomial(n, self.plus)
                + log2_binomial(n - self.plus, self.minus)
                + math.log2(fraction)
            )
        if self.kind == "uniform":
            return n * math.log2(self.hi - self.lo + 1) + math.log2(fraction)
        # Gaussian: treat as bounded by 2·width per side, failing with prob 2·exp(-4π) each.
        p_in = 1.0 - 2.0 * math.exp(-4.0 * math.pi)
        if n * math.log(p_in) < math.log(fraction):
            return math.inf
        b = 2 * 2 * stddev_to_width(self.stddev) + 1
        return n * math.log2(2.0 * b + 1)

    def describe(self) -> str:
        if self.kind == "gaussian":
            return f"gaussian(stddev={self.stddev:.6g}, width={stddev_to_width(self.stddev):.6g})"
        if self.kind == "sparse_ternary":
            return f"sparse-ternary(+1×{self.plus}, -1×{self.minus})"
        if self.lo == -1 and self.hi == 1:
            return "ternary"
        return f"uniform[{int(self.lo)}, {int(self.hi)}]"


def log2_binomial(n: int, k: int) -> float:
    """log2 of the binomial coefficient C(n, k) (``-inf`` outside 0 ≤ k ≤ n)."""
    if k < 0 or k > n:
        return -math.inf
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)) / math.log(2)


def gaussian(stddev: float, n: int = 0) -> Distribution:
    """Discrete Gaussian by its STANDARD DEVIATION σ (unbounded support)."""
    if not stddev > 0:
        raise ValueError(f"Gaussian standard deviation must be > 0, got {stddev}")
    density = max(0.0, 1.0 - 1.0 / stddev_to_width(stddev))
    return Distribution("gaussian", float(stddev), density=density, n=n)


def gaussian_from_width(width: float, n: int = 0) -> Distribution:
    """Discrete Gaussian by its WIDTH s = σ·√(2π) (SPIRAL's ``noise_width``)."""
    return gaussian(width_to_stddev(width), n)


def uniform(lo: int, hi: int, n: int = 0) -> Distribution:
    """Uniform on the integers ``lo..hi`` inclusive."""
    if hi < lo:
        raise ValueError(f"uniform: upper limit {hi} < lower limit {lo}")
    k = hi - lo + 1
    density = 1.0 - 1.0 / k if lo <= 0 <= hi else 1.0
    return Distribution(
        "uniform",
        math.sqrt((k * k - 1) / 12.0),
        mean=(lo + hi) / 2.0,
        lo=lo,
        hi=hi,
        density=density,
        n=n,
    )


def ternary(n: int = 0) -> Distribution:
    """Uniform ternary: each coefficient uniform in {−1, 0, 1}."""
    return uniform(-1, 1, n)


def uniform_mod(q: int, n: int = 0) -> Distribution:
    """Uniform mod q, balanced representative in [−q/2, q/2)."""
    lo = -(q // 2)
    return uniform(lo, lo + q - 1, n)


def sparse_ternary(plus: int, minus: int, n: int = 0) -> Distribution:
    """Exactly ``plus`` entries +1 and ``minus`` entries −1 among ``n``, the rest 0."""
    if plus < 0 or minus < 0:
        raise ValueError("sparse ternary weights must be ≥ 0")
    if n:
        mean = (plus - minus) / n
        density = (plus + minus) / n
    else:
        mean = density = 0.0
    stddev = math.sqrt(max(density - mean * mean, 0.0))
    return Distribution(
        "sparse_ternary",
        stddev,
        mean=mean,
        lo=-1 if minus else 0,
        hi=1 if plus else 0,
        density=density,
        n=n,
        plus=plus,
        minus=minus,
    )
