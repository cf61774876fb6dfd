"""The noise model's closed forms against computations that share none of its code.

* The decoding failure law (noise.log2_coeff_failure, max_gaussian_variance) and the decoded
  error's second moment (modswitch_error_sq) against numerical integration (scipy) of the
  rounding itself, and against a Monte Carlo run of it where the probability is large enough to
  count: the client's integer error is e = round(U + g) − round(U), U uniform on [0, 1) (the
  rounding phase), g ~ N(0, σ²), round(x) = ⌊x + 1/2⌋; a coefficient decodes wrongly iff
  e ≥ 2 or e ≤ −3, and the Δ = ⌊q/p⌋ offset moves g by up to ε either way (the worst case is
  taken on each side). Probabilities from 10^-3 to 10^-6, and the far tail the planner works in
  (2^-40 and below) against scipy's log-space normal tail.
* The gadget digits' moments (noise.digit_moments, digit_abs_mean_sum) against enumerating
  every residue of small moduli and decomposing it as the runtime does
  (arith/gadget.hpp: balanced digits in [−z/2, z/2), the top digit the rest).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special, stats
from spiralpir.optimizer.models import noise


def _interval(lo: float, hi: float) -> float:
    return max(0.0, hi - lo)


def fail_high(x: float) -> float:
    """P_U(e ≥ 2) for g = x: U < 1/2 rounds to 0 and needs ⌊U + x + 1/2⌋ ≥ 2; U ≥ 1/2 rounds
    to 1 and needs ⌊U + x + 1/2⌋ ≥ 3."""
    return _interval(max(0.0, 1.5 - x), 0.5) + _interval(max(0.5, 2.5 - x), 1.0)


def fail_low(x: float) -> float:
    """P_U(e ≤ −3) for g = x (the mirror image: U < 1/2 needs ⌊U + x + 1/2⌋ ≤ −3, ...)."""
    return _interval(0.0, min(0.5, -2.5 - x)) + _interval(0.5, min(1.0, -1.5 - x))


def error_sq_given(x: float) -> float:
    """E_U[e²] for g = x, by splitting U at every point where a rounding changes."""
    cuts = sorted({0.0, 0.5, 1.0, *(c for k in range(-8, 9)
                                    if 0.0 < (c := k + 0.5 - x - math.floor(k + 0.5 - x))
                                    < 1.0)})
    total = 0.0
    for a, b in zip(cuts, cuts[1:], strict=False):
        u = (a + b) / 2
        e = math.floor(u + x + 0.5) - math.floor(u + 0.5)
        total += (b - a) * e * e
    return total


def oracle_failure(sigma: float, eps: float) -> float:
    """P(one coefficient decodes wrongly) by integrating the rounding against the Gaussian; the
    offset ε pushes g up on the high side and down on the low side (worst case)."""
    pdf = stats.norm(scale=sigma).pdf
    high = integrate.quad(lambda g: pdf(g) * fail_high(g + eps), 1.0 - eps, 2.0 - eps,
                          epsabs=0, epsrel=1e-10)[0] + stats.norm.sf((2.0 - eps) / sigma)
    low = integrate.quad(lambda g: pdf(g) * fail_low(g - eps), -3.0 + eps, -2.0 + eps,
                         epsabs=0, epsrel=1e-10)[0] + stats.norm.cdf((-3.0 + eps) / sigma)
    return high + low


def sigma_for(p_target: float, eps: float) -> float:
    """The σ at which the oracle's failure probability is p_target (root finding)."""
    from scipy.optimize import brentq

    return float(brentq(lambda s: math.log(oracle_failure(s, eps)) - math.log(p_target),
                        0.05, 2.0, xtol=1e-12))


@pytest.mark.parametrize("p_target", [1e-3, 1e-4, 1e-5, 1e-6])
@pytest.mark.parametrize("eps", [2.0**-8, 0.05])
def test_failure_law_equals_integration(p_target: float, eps: float) -> None:
    sigma = sigma_for(p_target, eps)
    got = noise.log2_coeff_failure(sigma, eps)
    assert got == pytest.approx(math.log2(p_target), abs=1e-6), (sigma, got)


def test_failure_law_equals_monte_carlo(np_rng: np.random.Generator) -> None:
    """4·10^6 coefficients at P ≈ 10^-3 (≈ 4000 failures): the model within 5 binomial
    standard deviations of the count."""
    sigma, n = 0.41, 4_000_000
    g = np_rng.normal(0.0, sigma, n)
    u = np_rng.random(n)
    e = np.floor(u + g + 0.5) - np.floor(u + 0.5)
    failures = int(np.count_nonzero((e >= 2) | (e <= -3)))
    p = 2.0 ** noise.log2_coeff_failure(sigma, 0.0)
    assert 1e-4 < p < 1e-2
    assert abs(failures - n * p) <= 5 * math.sqrt(n * p * (1 - p)), (failures, n * p)
    second = float(np.mean(e * e))
    assert second == pytest.approx(noise.modswitch_error_sq(sigma), rel=0.01)


@pytest.mark.parametrize("log2_p", [-20, -40, -52, -64, -128, -300])
def test_failure_law_in_the_far_tail(log2_p: float) -> None:
    """Where the planner works (2^-40 per response and below) the law is ∫ Q(x/σ) over
    [1−ε, 3−ε]: computed here in log space (scipy's log_ndtr), relative to the lower end."""
    eps = 2.0**-8

    def log2_law(sigma: float) -> float:
        a, b = (1.0 - eps) / sigma, (3.0 - eps) / sigma
        ref = special.log_ndtr(-a)
        rel = integrate.quad(lambda u: math.exp(special.log_ndtr(-u) - ref), a, b,
                             epsabs=0, epsrel=1e-11, limit=200)[0]
        return (math.log(sigma) + ref + math.log(rel)) / math.log(2.0)

    from scipy.optimize import brentq

    sigma = brentq(lambda s: log2_law(s) - log2_p, 0.01, 3.0, xtol=1e-14)
    assert noise.log2_coeff_failure(sigma, eps) == pytest.approx(log2_p, abs=1e-3)


def test_noiseless_coefficients_never_fail() -> None:
    assert noise.log2_coeff_failure(0.0) == -math.inf
    assert noise.modswitch_error_sq(0.0) == 0.0
    # the default offset is the model's floor 2^-8 (stage_variances and the planner's)
    assert noise.max_gaussian_variance(2048) == noise.max_gaussian_variance(2048, -40.0, 2**-8)
    assert noise.log2_coeff_failure(0.4) == noise.log2_coeff_failure(0.4, 2**-8)


def test_union_budget_inverts_the_law() -> None:
    """max_gaussian_variance: the largest σ² whose coeffs·P stays within 2^target."""
    eps = 2.0**-8
    for coeffs, target in ((2048, -40.0), (4 * 4096, -40.0), (1024, -20.0)):
        v = noise.max_gaussian_variance(coeffs, target, eps)
        s = math.sqrt(v)
        assert math.log2(coeffs * oracle_failure(s, eps)) <= target + 1e-6
        assert math.log2(coeffs * oracle_failure(s * 1.001, eps)) > target


@pytest.mark.parametrize("sigma", [0.05, 0.3, 0.7, 1.5, 4.0])
def test_decoded_error_second_moment(sigma: float) -> None:
    """E[e²] = ∫ φ_σ(g)·E_U[e² | g] dg (the modswitch stage's prediction)."""
    pdf = stats.norm(scale=sigma).pdf
    lim = 12 * sigma + 2
    points = [k / 2 for k in range(-int(2 * lim), int(2 * lim) + 1)]
    want = integrate.quad(lambda g: pdf(g) * error_sq_given(g), -lim, lim, points=points,
                          limit=500)[0]
    assert noise.modswitch_error_sq(sigma) == pytest.approx(want, rel=1e-3)


def brute_digits(q: int, t: int) -> list[np.ndarray]:
    """The runtime's balanced decomposition of every centred residue v ∈ (−q/2, q/2] (q odd):
    t digits, base 2^⌈log2 q / t⌉."""
    b = -(-q.bit_length() // t)
    z = 1 << b
    rest = np.arange(-(q // 2), q // 2 + 1, dtype=np.int64)
    whole = rest.copy()
    digits = []
    for _ in range(t - 1):
        d = rest & (z - 1)
        d = np.where(d >= z // 2, d - z, d)
        rest = (rest - d) >> b
        digits.append(d)
    digits.append(rest)
    recomposed = sum(d * (1 << (b * j)) for j, d in enumerate(digits))
    assert np.array_equal(recomposed, whole)  # a decomposition, not just some digits
    assert all(np.all((d >= -z // 2) & (d < z // 2)) for d in digits[:-1])
    return digits


# odd, 14 to 20 bits; 40961 and 81921 (1.25·2^15, 1.25·2^16) sit just above a power of the
# digit base, where the highest lower digit is far from uniform
SMALL_MODULI = [12289, 40961, 81921, 65537 * 3, 786433]
# the uniform-lower-digit model's largest relative error in Σ E[g_j²] over the shortest gadget
# lengths of every odd q in [2^14, 2^15) (step 1999) and the moduli above: −6.1% (q = 81921,
# t = 5) to +5.2% (q = 81921, t = 4); in Σ E[g_j]² −30% to +14%, in Σ |E[g_j]| −13.5% to +7.3%
# (the lower digits' means are not exactly −1/2 either). Tighter once the model takes the
# lower digits' exact law.
DIGIT_SQ_TOLERANCE = 0.065
DIGIT_MEAN_SQ_TOLERANCE = 0.31
DIGIT_ABS_MEAN_TOLERANCE = 0.14


@pytest.mark.parametrize("q", SMALL_MODULI)
def test_digit_moments_equal_enumeration(q: int) -> None:
    """Every gadget length t ≤ ⌈log2 q⌉: the top digit's moments exactly; the sums over the
    digits within DIGIT_SQ_TOLERANCE (the model takes the lower digits as uniform on
    [−z/2, z/2)) for the lengths the planner emits (the shortest of each base); longer lengths
    of the same base (accepted in a parameters file) have high digits that are always small,
    and the model must not under-state them."""
    bits = q.bit_length()
    shortest = {-(-bits // b) for b in range(1, bits + 1)}
    for t in range(1, bits + 1):
        digits = brute_digits(q, t)
        moments = [(float(np.mean(d)), float(np.mean(d.astype(np.float64) ** 2)))
                   for d in digits]
        sq = sum(m2 for _, m2 in moments)
        mean_sq = sum(m * m for m, _ in moments)
        abs_mean = sum(abs(m) for m, _ in moments)
        b = -(-bits // t)
        top = noise._top_digit_moments(q, b, t)
        assert top == pytest.approx(moments[-1], rel=1e-12, abs=1e-12), t
        model_sq, model_mean_sq = noise.digit_moments(t, q)
        model_abs = noise.digit_abs_mean_sum(t, q)
        if t in shortest:
            assert model_sq == pytest.approx(sq, rel=DIGIT_SQ_TOLERANCE), t
            assert model_mean_sq == pytest.approx(mean_sq, rel=DIGIT_MEAN_SQ_TOLERANCE,
                                                  abs=0.01), t
            assert model_abs == pytest.approx(abs_mean, rel=DIGIT_ABS_MEAN_TOLERANCE,
                                              abs=0.01), t
        else:
            assert model_sq >= sq * (1 - 1e-9), t
        # the vectorised lookup (the search's) equals the scalar one
        arr_sq, arr_mean = noise.digit_moments(np.array([t]), q)
        assert (arr_sq[0], arr_mean[0]) == (model_sq, model_mean_sq)
