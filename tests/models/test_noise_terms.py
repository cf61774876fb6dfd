"""The noise model's terms, each against an independent derivation of the operation it models.

* The moments the model is built from (database coefficients, digits, secrets) by enumerating
  the distributions the runtime draws from; a key switch's error by a Monte Carlo run of
  Σ_j g_j·e_j over negacyclic products of real gadget digits; the modulus-switching rounding
  term by a Monte Carlo run of the rounding itself.
* The pipeline's stages (expansion, ScalToMat, RegevToGSW, folding, packing) by replaying the
  operations step by step on variances: a loop over expansion rounds (each ct ± τ(ct) doubles
  the mean variance, then one key switch), explicit per-entry variance matrices for the
  conversions, one external product per fold, and the failure variance from its shared-term
  bounds (each fold's isolated). These are the design's description of the
  runtime (spiral/stages.hpp), written as a different computation from noise.chain's closed
  forms. The first dimension is only checked through properties any model of it satisfies
  (it grows with p and 2^nu_1), so a better model of it passes unchanged.
* The Gaussian tails the failure law uses against scipy, in both the direct and asymptotic
  ranges; the union bound over a response's coefficients and the Δ offset by their
  definitions.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate, special
from spiralpir.optimizer.models import noise
from spiralpir.optimizer.params.paper import PAPER_EXAMPLE
from spiralpir.optimizer.params.parameters import Parameters
from test_noise_oracles import SMALL_MODULI, brute_digits, oracle_failure

Q = 268369921 * 249561089  # the paper's two-prime q (56 bits)
D = 2048
SIGMA2 = 6.4**2 / (2 * math.pi)
VARIANTS = ("spiral", "stream", "pack", "stream_pack")


def _chain(variant: str = "spiral", n: int = 2, nu_1: int = 9, nu_2: int = 6, p: float = 256.0,
           t_left: int = 8, t_right: int = 56, t_conv: int = 4, t_gsw: int = 8,
           var_s: float = SIGMA2) -> noise.Chain:
    return noise.chain(variant, D, Q, SIGMA2, var_s, n, nu_1, nu_2, p, t_left, t_right, t_conv,
                       t_gsw)


def _ks(t: int) -> float:
    return float(noise.keyswitch_variance(t, Q, D, SIGMA2))


def _lit(**changes: object) -> dict:
    lit = {**PAPER_EXAMPLE, **changes}
    for k in ("instances", "db_item_size"):
        if k not in changes:
            lit.pop(k)
    return lit


# ---------------------------------------------------------------- moments by enumeration


@pytest.mark.parametrize("p", [2, 4, 256, 1 << 16])
def test_database_coefficient_moments(p: int) -> None:
    """The centred representative of a uniform value mod p lies in [−p/2, p/2)."""
    c = np.arange(-(p // 2), p // 2, dtype=np.float64)
    assert noise.db_coeff_sq(p) == pytest.approx(float(np.mean(c * c)), rel=1e-12)
    assert noise.DB_COEFF_MEAN == pytest.approx(float(np.mean(c)), abs=1e-12)
    assert noise.db_coeff_sq(np.array([float(p)]))[0] == noise.db_coeff_sq(p)


@pytest.mark.parametrize("bits", [1, 2, 7, 14])
def test_lower_digit_second_moment(bits: int) -> None:
    """A lower gadget digit is uniform on [−z/2, z/2)."""
    z = 1 << bits
    g = np.arange(-(z // 2), z // 2, dtype=np.float64)
    assert noise.digit_sq(bits) == pytest.approx(float(np.mean(g * g)), rel=1e-12)


def test_secret_variances() -> None:
    """Gaussian: σ²; ternary: uniform on {−1, 0, 1}; sparse ternary: PLUS ones and MINUS minus
    ones among d coefficients (the mean square per coefficient)."""
    assert noise.secret_variance("gaussian", 0, 0, 3.7, 1024) == 3.7
    ternary = np.array([-1.0, 0.0, 1.0])
    assert noise.secret_variance("ternary", 0, 0, 3.7, 1024) == pytest.approx(
        float(np.mean(ternary**2)), rel=1e-15)
    for plus, minus, d in ((64, 0, 1024), (100, 28, 2048), (3, 5, 4096)):
        s = np.zeros(d)
        s[:plus], s[plus:plus + minus] = 1.0, -1.0
        assert noise.secret_variance("sparse_ternary", plus, minus, 3.7, d) == pytest.approx(
            float(np.mean(s * s)), rel=1e-15)


def _negacyclic(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = a.shape[-1]
    full = np.zeros(a.shape[:-1] + (2 * d,))
    for i in range(d):
        full[..., i:i + d] += a[..., i:i + 1] * b
    return full[..., :d] - full[..., d:]


@pytest.mark.parametrize("q", SMALL_MODULI[:3])  # the larger ones: test_noise_oracles.py
def test_digit_sums_are_uniform_lower_digits_and_the_exact_top(q: int) -> None:
    """What the model states it sums, per gadget length: t − 1 lower digits as uniform on
    [−z/2, z/2) (their moments enumerated here) and the top digit's exact moments (enumerated
    by decomposing every residue as the runtime does), exactly."""
    bits = q.bit_length()
    for t in range(1, bits + 1):
        b = -(-bits // t)
        lower = np.arange(-(1 << b) // 2, (1 << b) // 2, dtype=np.float64)
        top = brute_digits(q, t)[-1].astype(np.float64)
        sq = (t - 1) * float(np.mean(lower**2)) + float(np.mean(top**2))
        mean_sq = (t - 1) * float(np.mean(lower)) ** 2 + float(np.mean(top)) ** 2
        abs_mean = (t - 1) * abs(float(np.mean(lower))) + abs(float(np.mean(top)))
        assert noise.digit_moments(t, q) == pytest.approx((sq, mean_sq), rel=1e-12), t
        assert noise.digit_abs_mean_sum(t, q) == pytest.approx(abs_mean, rel=1e-12), t


@pytest.mark.parametrize("t", [1, 2, 3, 4, 8])
def test_keyswitch_variance_by_monte_carlo(np_rng: np.random.Generator, t: int) -> None:
    """Σ_j g_j·e_j: t digit polynomials of a uniform polynomial mod q times independent
    Gaussian key-error polynomials (negacyclic, d = 32), 6000 draws: the per-coefficient
    variance within 4% (the estimate's own standard error is ~1.3%; t = 1, 2, 3, 4, 8 are the
    shortest lengths of their digit bases on this 16-bit q, where the digit model is close)."""
    q, d, sigma2, draws = 40961, 32, 2.5, 6000
    every = brute_digits(q, t)  # the digits of each residue −(q//2) .. q//2, in order
    pick = np_rng.integers(0, q, size=(draws, d))
    digits = [g[pick] for g in every]
    e = np_rng.normal(0.0, math.sqrt(sigma2), size=(t, draws, d))
    err = sum(_negacyclic(g.astype(np.float64), e[j]) for j, g in enumerate(digits))
    measured = float(np.mean(err * err))
    model = float(noise.keyswitch_variance(t, q, d, sigma2))
    assert measured == pytest.approx(model, rel=0.04), (measured, model)
    arr = noise.keyswitch_variance(np.array([t]), q, d, sigma2)
    assert float(arr[0]) == model
    assert noise.digit_abs_mean_sum(np.array([t]), q)[0] == noise.digit_abs_mean_sum(t, q)


def test_modulus_switching_rounding_term_by_monte_carlo(np_rng: np.random.Generator) -> None:
    """Row 0 of the response is rounded from q to q2: the client's decoded value (units of q1)
    carries (q1/q2)·Σ r_i·s_i with r the rounding errors of uniform a and s the secret; plus
    the ciphertext error scaled by q1/q. Exact rounding (fractions) of 1000 × 64 uniform residues,
    the negacyclic product with a ternary secret over d = 64: within 5% (the estimate's
    standard error is ~0.6%)."""
    q, q2, q1, d = Q, 1032193, 1024, 64
    a = [int(x) for x in np_rng.integers(0, 1 << 62, size=1000 * d, dtype=np.int64) % Q]
    r = np.array([float(Fraction(x * q2, q) - round(Fraction(x * q2, q))) for x in a])
    r = r.reshape(1000, d)
    s = np_rng.integers(-1, 2, size=d).astype(np.float64)
    rounding = (q1 / q2) * _negacyclic(r, s[None, :])
    v_final = 3.0e16
    e = (q1 / q) * np_rng.normal(0.0, math.sqrt(v_final), size=r.shape)
    measured = float(np.mean((rounding + e) ** 2))
    var_s = float(np.mean(s * s))
    model = noise.modswitch_gaussian_variance(v_final, q1, q2, q, d, var_s)
    assert measured == pytest.approx(model, rel=0.05), (measured, model)


# ---------------------------------------------------------------- the pipeline, step by step


def _expand(rounds: int, first_key: float, later_key: float, fresh: float) -> float:
    """Mean error variance after `rounds` expansion rounds: each round ct ± τ(ct) doubles it,
    then one key switch adds its error (round 0 with first_key, the others later_key)."""
    v = fresh
    for r in range(rounds):
        v = 2.0 * v + (first_key if r == 0 else later_key)
    return v


def _rounds_right(digits: int) -> int:
    """Rounds that yield `digits` GSW-digit cts on the odd branch: 1, then doubling."""
    r, have = 1, 1
    while have < digits:
        r, have = r + 1, 2 * have
    return r


@pytest.mark.parametrize("nu_1,nu_2,t_gsw", [(1, 0, 1), (1, 1, 1), (2, 1, 2), (3, 3, 1),
                                             (4, 2, 3), (9, 6, 8), (1, 5, 4), (6, 1, 5)])
def test_expansion_replays_the_rounds(nu_1: int, nu_2: int, t_gsw: int) -> None:
    """Expanded first-dimension cts run R = max(nu_1 + 1, R') rounds, round 0 with the right
    key and the rest with the left; the GSW-digit cts run R' rounds with the right key only."""
    rr = _rounds_right(nu_2 * t_gsw)
    rounds = max(nu_1 + 1, rr)
    for variant in ("spiral", "pack"):
        c = _chain(variant, nu_1=nu_1, nu_2=nu_2, t_gsw=t_gsw)
        assert float(c.v_left) == pytest.approx(
            _expand(rounds, _ks(56), _ks(8), SIGMA2), rel=1e-12)
        assert float(c.v_right) == pytest.approx(_expand(rr, _ks(56), _ks(56), SIGMA2),
                                                 rel=1e-12)
    p = Parameters.from_literal(_lit(nu_1=nu_1, nu_2=nu_2, t_gsw=t_gsw, records=4))
    assert (p.rounds, p.rounds_right) == (rounds, rr)


def test_stream_uploads_fresh_cts() -> None:
    for variant in ("stream", "stream_pack"):
        for n in (1, 2):
            c = _chain(variant, n=n)
            assert (float(c.v_left), float(c.v_right)) == (SIGMA2, SIGMA2), (variant, n)


def _mean(matrix: list[list[float]]) -> float:
    return sum(map(sum, matrix)) / sum(map(len, matrix))


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("n", [1, 2, 3])
def test_conversions_by_their_entries(variant: str, n: int) -> None:
    """ScalToMat: an n×n matrix, the diagonal the scalar ct's error plus one key-switch row,
    the rest key-switch rows only; at n = 1 the identity, no key-switch error at all (the
    matrix secret is the scalar secret: noise.scal_to_mat_keys). RegevToGSW: each of n rows
    holds block 0 (−s·digit-ct error over d coefficients plus the 2·t_conv key digits of a
    and b) and a ScalToMat row of the digit ct. The pack variants compute with n = 1."""
    c = _chain(variant, n=n)
    nc = 1 if variant in ("pack", "stream_pack") else n
    ks_c = _ks(4)
    key = 0.0 if nc == 1 else ks_c
    scal = [[float(c.v_left) + key if i == j else key for j in range(nc)] for i in range(nc)]
    assert float(c.v_conv) == pytest.approx(_mean(scal), rel=1e-12)
    top = D * SIGMA2 * float(c.v_right) + 2 * ks_c
    gsw = [[top] + [float(c.v_right) + key if i == j else key for j in range(nc)]
           for i in range(nc)]
    assert float(c.v_r2g) == pytest.approx(_mean(gsw), rel=1e-12)
    # one external product: the GSW error's n+1 entries of a row times t_gsw digits each
    sq_g = noise.digit_moments(8, Q)[0]
    assert float(c.per_fold) == pytest.approx(D * sq_g * sum(gsw[0]), rel=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_folding_and_packing_stages(variant: str) -> None:
    """Each fold adds one external product's error to the first dimension's; packing then
    adds n key-switching matrices (n·t_conv digits per entry); the decoded stage is the
    rounding law at the final variance."""
    p = Parameters.from_literal(_lit(variant=variant, nu_1=8, nu_2=5, records=4096))
    sn = noise.stage_variances(p)
    v = sn.variances
    per = v["fold_0"] - v["first_dimension"]
    nc = 1 if variant in ("pack", "stream_pack") else p.n
    sq_g = noise.digit_moments(p.t_gsw, p.q)[0]
    assert per == pytest.approx((nc + 1) * p.poly_len * sq_g * v["conversion_gsw"], rel=1e-9)
    for r in range(1, p.nu_2):
        assert v[f"fold_{r}"] - v[f"fold_{r - 1}"] == pytest.approx(per, rel=1e-9)
    assert v["folding"] == v[f"fold_{p.nu_2 - 1}"]
    final = v["folding"]
    if variant in ("pack", "stream_pack"):
        ks_c = float(noise.keyswitch_variance(p.t_conv, p.q, p.poly_len, p.sigma**2))
        assert v["packing"] == pytest.approx(v["folding"] + p.n * ks_c, rel=1e-12)
        final = v["packing"]
    else:
        assert "packing" not in v
    vs = noise.secret_variance(p.secret_kind, p.secret_plus, p.secret_minus, p.sigma**2,
                               p.poly_len)
    sigma_g = math.sqrt((p.q1 / p.q) ** 2 * final
                        + (p.q1 / p.q2) ** 2 * p.poly_len * vs / 12.0)
    assert sn.sigma_final == pytest.approx(sigma_g, rel=1e-12)
    assert v["modswitch"] == noise.modswitch_error_sq(sn.sigma_final)
    assert set(v) == {*noise.STAGES, *(f"fold_{r}" for r in range(p.nu_2)),
                      *(["packing"] if variant in ("pack", "stream_pack") else [])}


def test_no_folding_leaves_the_first_dimension() -> None:
    p = Parameters.from_literal(_lit(nu_1=10, nu_2=0, records=1024))
    v = noise.stage_variances(p).variances
    assert v["folding"] == v["first_dimension"]
    assert not any(k.startswith("fold_") for k in v)


@pytest.mark.parametrize("variant", VARIANTS)
def test_first_dimension_grows_with_the_data(variant: str) -> None:
    """Any model of Σ_i C_i·D_i: more cts (2^nu_1) or wider data (p) give more noise, and the
    first dimension adds to what its inputs carry."""
    base = _chain(variant)
    assert float(_chain(variant, nu_1=10).v_fd) > float(base.v_fd)
    assert float(_chain(variant, p=1024.0).v_fd) > float(base.v_fd)
    assert float(base.v_fd) > float(base.v_conv)
    arr = _chain(variant, p=np.array([256.0, 1024.0]))
    assert float(arr.v_fd[0]) == pytest.approx(float(base.v_fd), rel=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_failure_variance_covers_the_mean_model(variant: str) -> None:
    """The failure probability is computed for at least FAILURE_MARGIN times the mean final
    variance (the shared-term bounds only add to it), and the coherent share is a share."""
    for t_gsw, t_conv in ((8, 4), (28, 28), (2, 56)):
        c = _chain(variant, t_gsw=t_gsw, t_conv=t_conv)
        assert float(c.v_fail) >= noise.FAILURE_MARGIN * float(c.v_final) * (1 - 1e-12)
        assert float(c.v_shared) >= 0.0
        assert 0.0 <= float(c.v_fd_coherent) <= float(c.v_fd)
    p = Parameters.from_literal(_lit(variant=variant, nu_1=8, nu_2=5, records=4096))
    sn = noise.stage_variances(p)
    assert 0.0 <= sn.coherent_fraction < 1.0
    if noise.direct_first(variant, p.n):
        assert sn.coherent_fraction == 0.0


@pytest.mark.parametrize("variant", VARIANTS)
def test_failure_variance_replays_the_shared_bounds(variant: str) -> None:
    """FAILURE_MARGIN·(√v_rest + Σ √bound)²: v_rest is the mean model without the folding
    digits' squared means; each fold's bound is d·(Σ_k |μ_k|)²·(V − s + (n+1)·d·s), V the GSW
    error row's variance and s its structured part — the digit-mean part of every key switch
    behind it, replayed here through the expansion rounds and the conversions. nu_2 = 3 and 4
    with two-digit GSW gadgets (6 and 8 digits) run the same rounds, so the bounds differ by
    exactly one fold's (the first dimension's shared term, under rework, cancels)."""
    nc = 1 if variant in ("pack", "stream_pack") else 2
    stream = variant in ("stream", "stream_pack")
    sq_g, mean_g = noise.digit_moments(2, Q)
    abs_g = noise.digit_abs_mean_sum(2, Q)
    assert abs_g > 0.25  # the lower digit's mean alone is −1/2
    ks_c = _ks(4)
    ksm_c, ksm_r = (D * SIGMA2 * noise.digit_moments(t, Q)[1] for t in (4, 56))
    chains = {nu_2: _chain(variant, nu_2=nu_2, t_gsw=2) for nu_2 in (3, 4)}
    for nu_2, c in chains.items():
        assert _rounds_right(2 * nu_2) == 4
        v_right = float(c.v_right)
        s_right = 0.0 if stream else _expand(4, ksm_r, ksm_r, 0.0)
        top, s_top = D * SIGMA2 * v_right + 2 * ks_c, D * SIGMA2 * s_right + 2 * ksm_c
        keyed = 0.0 if nc == 1 else 1.0  # ScalToMat the identity at n = 1
        row, s_row = top + v_right + keyed * nc * ks_c, s_top + s_right + keyed * nc * ksm_c
        fold_bound = D * abs_g**2 * (row - s_row + (nc + 1) * D * s_row)
        extra = 2 * ks_c if variant in ("pack", "stream_pack") else 0.0
        v_rest = float(c.v_fd) + nu_2 * D * (sq_g - mean_g) * row + extra
        assert float(c.v_fail) == pytest.approx(
            noise.FAILURE_MARGIN * (math.sqrt(v_rest) + math.sqrt(float(c.v_shared))) ** 2,
            rel=1e-9)
    step = math.sqrt(float(chains[4].v_shared)) - math.sqrt(float(chains[3].v_shared))
    assert step == pytest.approx(math.sqrt(fold_bound), rel=1e-6)


# ---------------------------------------------------------------- the failure probability


def _log2_int_tail_oracle(x: float) -> float:
    """log2 ∫_x^∞ Q(u) du by quadrature in log space (relative to Q(x))."""
    ref = special.log_ndtr(-x)
    rel = integrate.quad(lambda u: math.exp(special.log_ndtr(-u) - ref), x, math.inf,
                         epsabs=0, epsrel=1e-12, limit=200)[0]
    return (ref + math.log(rel)) / math.log(2.0)


def _omitted(x: float, coefficient: float, start: float) -> float:
    """The tolerance in log2 units: machine precision where the direct formula is used, else
    1.5× the asymptotic series' first omitted term (coefficient/x⁶)."""
    return 1e-9 if x < start else 1.5 * coefficient / x**6 / math.log(2.0)


@pytest.mark.parametrize("x", [0.5, 2.0, 5.0, 8.0, 11.0, 40.0])
def test_integrated_gaussian_tail(x: float) -> None:
    # below 8, φ(x) − x·Q(x) cancels: at 5 the difference keeps ~9 of 16 digits
    tol = 1e-7 if 4.0 < x < 8.0 else _omitted(x, 105.0, 8.0)
    assert noise._log2_int_q(x) == pytest.approx(_log2_int_tail_oracle(x), abs=tol)


@pytest.mark.parametrize("sigma", [0.8, 2.0, 5.0])
def test_failure_law_where_failing_is_likely(sigma: float) -> None:
    """Large σ (P from 0.1 to 0.8): the two ends of ∫_{1−ε}^{3−ε} Q(x/σ) dx are of the same
    order, so the law's difference of the two tail integrals matters in full."""
    eps = 2.0**-8
    assert noise.log2_coeff_failure(sigma, eps) == pytest.approx(
        math.log2(oracle_failure(sigma, eps)), abs=1e-6)


def _sigma_fail(p: Parameters) -> float:
    vs = noise.secret_variance(p.secret_kind, p.secret_plus, p.secret_minus, p.sigma**2,
                               p.poly_len)
    c = noise.chain(p.variant, p.poly_len, p.q, p.sigma**2, vs, p.n, p.nu_1, p.nu_2,
                    float(p.p), p.t_exp_left, p.t_exp_right, p.t_conv, p.t_gsw, 1,
                    p.rows_stored)
    return math.sqrt(float(noise.modswitch_gaussian_variance(c.v_fail, p.q1, p.q2, p.q,
                                                             p.poly_len, vs)))


# the last set: p = 2^24 on a 56-bit q puts the Δ offset 4p²/q at 2^-5.9, and a tiny noise
# width keeps the failure probability away from 1 (2^-40) so the offset shows
@pytest.mark.parametrize("changes", [{}, {"n": 3, "p": 64}, {"record_size": 9000},
                                     {"p": 1 << 24, "q2_bits": 48, "nu_1": 2, "nu_2": 1,
                                      "noise_width": 1e-6, "secret_distribution": "ternary",
                                      "records": 768}])  # 96 per plaintext: every row
def test_failure_is_a_union_over_the_response(changes: dict) -> None:
    """A response has instances × n × n polynomials of d coefficients, each failing with the
    per-coefficient law at the failure variance; the offset of decoding with Δ = ⌊q/p⌋
    instead of q/p is below (q/p − Δ)·p·(q1/q) < 4p²/q in units of q1 (at least 2^-8)."""
    p = Parameters.from_literal(_lit(**{"records": 8, **changes}))
    eps = max(2.0**-8, 4.0 * p.p**2 / p.q)
    coeffs = p.instances * p.n * p.n * p.poly_len
    want = noise.log2_coeff_failure(_sigma_fail(p), eps) + math.log2(coeffs)
    assert noise.log2_failure(p) == pytest.approx(min(want, 0.0), abs=1e-9)
    if changes.get("record_size"):
        assert p.instances > 1
    if changes.get("p") == 1 << 24:
        assert 4.0 * p.p**2 / p.q > 2.0**-8 and -60.0 < noise.log2_failure(p) < -20.0


def test_a_hopeless_set_fails_with_probability_one() -> None:
    p = Parameters.from_literal(_lit(p=1 << 24, q2_bits=30, t_gsw=2, t_conv=2, records=4096))
    assert noise.log2_failure(p) == 0.0
