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

from .distributions import log2_binomial
from .logmath import LN2

SQRT_PI = math.sqrt(math.pi)


def log2_babai(
    rank: int, d: int, log2_vol: float, log2_delta: float, log2_norm: float
) -> float:
    """log2 P[Babai succeeds] on the first ``rank`` GSA vectors of a rank-``d`` basis, for an
    error of Euclidean norm 2^log2_norm."""
    if rank <= 0:
        return 0.0
    a = (rank - 1) / 2.0
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
    ln_total = 0.0
    # exact terms where x_i < 30 (the tail of the basis)
    cut = 30.0
    i0 = d  # first index with x_i < cut
    if 2 * ln_delta > 0:
        i0 = max(0, min(d, math.floor((a_const - math.log(cut)) / (2 * ln_delta)) + 1))
    for i in range(i0, d):
        x = math.exp(a_const - 2 * ln_delta * i)
        term = math.erf(x) - (1.0 - math.exp(-x * x)) / (x * SQRT_PI)
        if term <= 0.0:
            return -math.inf
        ln_total += math.log(term)
    # large x_i: ln(term) ≈ −1/(x√π); sum the geometric series in closed form
    if i0 > 0:
        r = math.exp(2 * ln_delta)
        s = math.exp(-a_const) * (r**i0 - 1.0) / (r - 1.0) if r != 1.0 else i0 * math.exp(-a_const)
        ln_total -= s / SQRT_PI
    return ln_total / LN2


def log2_drop(n: int, h: int, zeta: int, fail: int) -> float:
    """log2 P[ζ uniformly chosen coordinates of a weight-h, length-n vector hold exactly
    ``fail`` non-zero entries]."""
    return (
        log2_binomial(n - h, zeta - fail) + log2_binomial(h, fail) - log2_binomial(n, zeta)
    )
