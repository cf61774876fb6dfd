"""Success probabilities used by the primal attacks, all in log2.

* Babai's nearest plane on a GSA-shaped basis [Wunderer19]: the error vector, uniformly
  spread on a sphere of radius ``norm``, lands in the fundamental box of coordinate i with
  probability I_{x_i}(1/2, (k−1)/2), x_i = ‖b*_i‖²/(4·norm²); for the large ranks here
  Beta(1/2, a) ≈ Gamma(1/2)/a, giving erf(√(a·x/(1−x))).
* The meet-in-the-middle "e-admissibility" of [SonChe19, Lemma 4.2]:
  Π erf(x_i) − (1 − e^{−x_i²})/(x_i·√π), x_i = ‖b*_i‖/(√2·σ).
* Guessing: the probability that ζ chosen coordinates of a weight-h secret carry exactly w
  non-zero entries (hypergeometric).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .distributions import log2_binomial
from .logmath import LN2

SQRT_PI = math.sqrt(math.pi)


class _SmoothSum:
    """Sums Σ_i g(u0 − s·i) of a smooth function g along an arithmetic progression by the
    midpoint rule on a tabulated antiderivative of g (exact to ~s²/24·g''; s ≈ 0.01 here).
    Below ``lo`` g is its asymptote ``slope·u + icpt``; above ``hi`` g is 0."""

    def __init__(
        self,
        g: Callable[[float], float],
        lo: float,
        hi: float,
        slope: float,
        icpt: float,
        h: float = 0.002,
    ):
        self.lo, self.hi, self.h = lo, hi, h
        self.slope, self.icpt = slope, icpt
        k = int(math.ceil((hi - lo) / h))
        self.hi = lo + k * h
        vals = [g(lo + j * h) for j in range(k + 1)]
        cum = [0.0]
        for j in range(k):
            cum.append(cum[-1] + 0.5 * h * (vals[j] + vals[j + 1]))
        self.cum = cum

    def antiderivative(self, u: float) -> float:
        if u <= self.lo:
            # ∫_lo^u (slope·t + icpt) dt
            return 0.5 * self.slope * (u * u - self.lo * self.lo) + self.icpt * (u - self.lo)
        if u >= self.hi:
            return self.cum[-1]
        x = (u - self.lo) / self.h
        j = int(x)
        f = x - j
        return self.cum[j] + f * (self.cum[j + 1] - self.cum[j])

    def sum(self, u0: float, s: float, i_a: int, i_b: int) -> float:
        """Σ_{i=i_a}^{i_b} g(u0 − s·i), s > 0."""
        if i_b < i_a:
            return 0.0
        top = u0 - s * i_a + s / 2
        bottom = u0 - s * i_b - s / 2
        return (self.antiderivative(top) - self.antiderivative(bottom)) / s


def _g_babai(v: float) -> float:
    return math.log(math.erf(math.exp(v / 2)))


def _g_mitm(u: float) -> float:
    x = math.exp(u)
    return math.log(math.erf(x) - (1.0 - math.exp(-x * x)) / (x * SQRT_PI))


# ln erf(√t) ≈ v/2 + ln(2/√π) for t = e^v → 0;  the MITM term ≈ x/√π: u − ln √π
_BABAI_SUM = _SmoothSum(_g_babai, -30.0, math.log(45.0), 0.5, math.log(2 / SQRT_PI))
_MITM_CUT = 30.0
_MITM_SUM = _SmoothSum(_g_mitm, -12.0, math.log(_MITM_CUT), 1.0, -math.log(SQRT_PI))


def log2_babai(
    rank: int, d: int, log2_vol: float, log2_delta: float, log2_norm: float
) -> float:
    """log2 P[Babai succeeds] on the first ``rank`` GSA vectors of a rank-``d`` basis, for an
    error of Euclidean norm 2^log2_norm."""
    if rank <= 0:
        return 0.0
    a = (rank - 1) / 2.0
    if a >= 500:
        # v_i = ln(a·x_i), x_i = r_i/(4·norm²), ln r_i = 2·ln‖b*_i‖ (linear in i under GSA)
        log2_r0 = 2.0 * ((d - 1) * log2_delta + log2_vol / d)
        u0 = math.log(a) + (log2_r0 - 2.0 - 2.0 * log2_norm) * LN2
        s = 4.0 * log2_delta * LN2
        return _BABAI_SUM.sum(u0, s, 0, rank - 1) / LN2
    total = 0.0
    for i in range(rank - 1, -1, -1):
        log2_bi = (d - 1 - 2 * i) * log2_delta + log2_vol / d
        lx = 2.0 * log2_bi - 2.0 - 2.0 * log2_norm  # log2 of r_i / (4 norm^2)
        if lx >= 0:
            break  # this and all earlier (longer) vectors always succeed
        x = 2.0**lx
        t = a * x / (1.0 - x)
        if t > 45.0:
            break
        p = math.erf(math.sqrt(t))
        if p <= 0.0:
            return -math.inf
        total += math.log2(p)
    return total


def log2_mitm_admissible(
    d: int, log2_vol: float, log2_delta: float, stddev: float
) -> float:
    """log2 of the [SonChe19] e-admissibility probability over a rank-``d`` GSA basis."""
    ln_delta = log2_delta * LN2
    # ln x_i = A − 2·ln δ·i
    a_const = 0.5 * math.log(0.5) + ((d - 1) * log2_delta + log2_vol / d) * LN2 - math.log(stddev)
    s = 2 * ln_delta
    # first index with x_i < cut
    i0 = max(0, min(d, math.floor((a_const - math.log(_MITM_CUT)) / s) + 1))
    ln_total = _MITM_SUM.sum(a_const, s, i0, d - 1)
    # large x_i: ln(term) ≈ −1/(x√π); sum the geometric series in closed form
    if i0 > 0:
        r = math.exp(s)
        ln_total -= math.exp(-a_const) * (r**i0 - 1.0) / (r - 1.0) / SQRT_PI
    return ln_total / LN2


def log2_drop(n: int, h: int, zeta: int, fail: int) -> float:
    """log2 P[ζ uniformly chosen coordinates of a weight-h, length-n vector hold exactly
    ``fail`` non-zero entries]."""
    return (
        log2_binomial(n - h, zeta - fail) + log2_binomial(h, fail) - log2_binomial(n, zeta)
    )
