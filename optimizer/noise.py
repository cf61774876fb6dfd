"""Noise model of vanilla SPIRAL: per-stage error variances and the response failure probability.

Owns the variance of every server stage (as the runtime implements it, runtime/FORMATS.md and
the protocol headers) and the log2 probability that a whole response decodes wrongly.

Model (central-limit heuristic: error coefficients are treated as independent, zero-mean, and
a sum of many products as Gaussian; variances are per coefficient, averaged over the
coefficients of a ciphertext's error):

* fresh error: σ² = s²/2π for width s; secret variance Var(s) = σ² (gaussian), 2/3 (ternary),
  (PLUS+MINUS)/d (sparse ternary).
* gadget digit (signed, base z = 2^b, uniform input): E[x²] = (z² + 2)/12.
* key switching with gadget length t: v_ks(t) = t · d · E[x²] · σ²  (Σ_k digit_k · e_k).
* coefficient expansion (runtime: ServerStages::expand): every round maps each ciphertext to
  ct ± τ(ct) (τ an automorphism followed by a key switch), so the mean variance doubles and
  gains one v_ks. Round 0 uses the right key (t_exp_right); first-dimension (even) nodes then
  run ALL remaining rounds 1..rounds−1 with t_exp_left (rounds = max(nu_1+1, rounds_right));
  GSW-digit (odd) nodes stop after rounds_right rounds, all with t_exp_right:
      v_left  = 2^rounds σ² + 2^(rounds−1) v_ks(t_exp_right) + (2^(rounds−1) − 1) v_ks(t_exp_left)
      v_right = 2^R σ² + (2^R − 1) v_ks(t_exp_right),   R = rounds_right.
* ScalToMat (t_conv): diagonal entries v_left + v_ks(t_conv), off-diagonal v_ks(t_conv); per
  row of the n×n error: v_left + n·v_ks(t_conv); mean per entry (v_left + n·v_ks(t_conv))/n.
* RegevToGSW: the I_n blocks as ScalToMat of the right-branch ciphertexts; the −s·g block from
  the conversion key (2·t_conv digits of a and b): v_top = 2·t_conv·d·E[x²]·σ² + d·Var(s)·v_right;
  mean per entry of the n × (n+1)t_gsw error: (v_top + v_right + n·v_ks(t_conv))/(n+1).
* first dimension: Σ_i C_i · D_i over 2^nu_1 plaintexts with coefficients uniform in [0, p):
      v_fd = 2^nu_1 · d · E_D · (v_left + n·v_ks(t_conv)) + K·d·2^nu_1·E[D]²·v_shared,
  v_shared = 2^(rounds−1)·(2σ² + v_ks(t_exp_right)) is the error every first-dimension ct
  inherits from before the split; it adds up coherently (K = COHERENT_K, measured);
  E_D = Var(D) + E[D]²/10
  (see db_coeff_sq: the E[D]² part mostly cancels, measured).
* folding: each of the nu_2 external products adds
      d · E[x_gsw²] · t_gsw · (v_top + v_right + n·v_ks(t_conv)).
* modulus switching: row 0 to q2, rows 1..n to q1 = 4p. The client's integer error e is
  round(Y + g) − round(Y) with Y's fractional part uniform and g Gaussian with variance
  (q1/q)²·v_fold + (q1/q2)²·d·Var(s)/12, so P(e = k | g) = max(0, 1 − |g − k|); decoding
  fails iff e ≥ 2 or e ≤ −3: P(fail) = ∫_{1−ε}^{3−ε} Q(x/σ_g) dx (ε: the Δ offset). The
  measured `modswitch` stage is e: E[e²] = E[g² + {g}(1−{g})].
* a response fails if any of its instances·n²·d coefficients does: union bound.

`stage_variances(params)` returns the per-stage variances (keys `STAGES`);
`log2_failure(params)` the log2 failure probability of one response. The same formulas are
used in vectorized form by the search (`NoiseTerms`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from spiralpir.optimizer.params import Parameters

CORRECTNESS_LOG2 = -40.0  # default: failure probability ≤ 2^-40 per query
# Empirical: the shared (pre-split) expansion error can enter the first dimension coherently
# through the mean of the plaintext coefficients (and of the gadget digits). Measured (runtime
# noise hook, d = 2048): excess = K·d·2^ν1·E[D]²·v_shared with K = 227 and 132 on two sets
# (ν1 = 5 and 8), about 0 on a third (n 3, t_exp 27/27, current runtime); K = 256 (scaled with
# d/2048 above 2048, untested) is an upper allowance, so predictions may be conservative there.
COHERENT_K = 256.0


def coherent_k(d: int) -> float:
    return COHERENT_K * max(1.0, d / 2048.0)

STAGES = (  # the runtime noise hook's stage names (runtime/include/spiralpir/noise.hpp)
    "expansion",
    "expansion_right",
    "conversion",
    "conversion_gsw",
    "first_dimension",
    "folding",
    "modswitch",
)


def digit_sq(base_bits: int) -> float:
    """E[x²] of a signed gadget digit in [−z/2, z/2), z = 2^base_bits."""
    z = float(1 << base_bits)
    return (z * z + 2.0) / 12.0


def secret_variance(kind: str, plus: int, minus: int, sigma2: float, d: int) -> float:
    if kind == "gaussian":
        return sigma2
    if kind == "ternary":
        return 2.0 / 3.0
    return (plus + minus) / d


def db_coeff_sq(p: int) -> float:
    """Effective E[D²] of plaintext coefficients uniform in [0, p): Var(D) + E[D]²/10.

    Measured (runtime noise hook): the first-dimension noise is well below 2^ν1·d·E[D²]·v — the
    E[D]² part (D = E[D] + centered) mostly cancels across the expanded ciphertexts (measured
    residual 0–0.072·E[D]² on five sets). Var(D) + E[D]²/10 stays above those measurements and
    within a factor 2 of them (tests/optimizer/test_measured.py)."""
    return (p * p - 1) / 12.0 + ((p - 1) / 2.0) ** 2 / 10.0


def v_ks(t: int, base_bits: int, d: int, sigma2: float) -> float:
    return t * d * digit_sq(base_bits) * sigma2


@dataclass(frozen=True)
class StageNoise:
    """Per-stage mean variances: mod q, except `modswitch` (the decoded integer error in units
    of q1, Gaussian part + the two roundings). `fold_r` is after fold round r; `folding` the
    last one (= the input of modulus switching)."""

    variances: dict[str, float]
    sigma_final: float
    log2_failure: float
    coherent_fraction: float = 0.0  # share of the first-dimension variance that is the
    # (empirical, conservative) coherent pre-split term


def _log2_q_tail(x: float) -> float:
    """log2 of Q(x) = P(N(0,1) ≥ x), accurate far in the tail."""
    if x < 20.0:
        return math.log2(max(0.5 * math.erfc(x / math.sqrt(2.0)), 1e-300))
    # asymptotic: Q(x) ≈ φ(x)/x · (1 − 1/x² + 3/x⁴)
    ln = -x * x / 2.0 - math.log(x) - 0.5 * math.log(2 * math.pi)
    ln += math.log1p(-1.0 / (x * x) + 3.0 / x**4)
    return ln / math.log(2.0)


def _log2_int_q(x: float) -> float:
    """log2 ∫_x^∞ Q(t) dt = log2(φ(x) − x·Q(x)) (x > 0)."""
    if x < 8.0:
        phi = math.exp(-x * x / 2.0) / math.sqrt(2 * math.pi)
        return math.log2(max(phi - x * 0.5 * math.erfc(x / math.sqrt(2.0)), 1e-300))
    # asymptotic: φ(x)/x² · (1 − 3/x² + 15/x⁴)
    ln = -x * x / 2.0 - 2.0 * math.log(x) - 0.5 * math.log(2 * math.pi)
    ln += math.log1p(-3.0 / (x * x) + 15.0 / x**4)
    return ln / math.log(2.0)


def log2_coeff_failure(sigma_g: float, eps: float = 2.0**-8) -> float:
    """log2 P(one coefficient decodes wrongly), exact for Gaussian g and a uniform rounding
    phase: the integer error e satisfies P(e = k | g) = max(0, 1 − |g − k|), decoding fails iff
    e ≥ 2 or e ≤ −3, so P = ∫_{1−ε}^{3−ε} Q(x/σ) dx = σ·[J((1−ε)/σ) − J((3−ε)/σ)],
    J(a) = ∫_a^∞ Q. ε covers the Δ = floor(q/p) offset."""
    if sigma_g <= 0:
        return -math.inf
    a, b = (1.0 - eps) / sigma_g, (3.0 - eps) / sigma_g
    la, lb = _log2_int_q(a), _log2_int_q(b)
    diff = la + math.log2(max(1.0 - 2.0 ** (lb - la), 1e-300)) if lb < la else la
    return math.log2(sigma_g) + diff


def modswitch_error_sq(sigma_g: float) -> float:
    """E[e²] of the decoded integer error: E_g[g² + {g}(1 − {g})] (triangular rounding)."""
    if sigma_g <= 0:
        return 0.0
    acc, wsum = 0.0, 0.0
    for i in range(-400, 401):
        z = i / 50.0  # ±8σ
        w = math.exp(-z * z / 2.0)
        g = z * sigma_g
        f = g - math.floor(g)
        acc += w * (g * g + f * (1.0 - f))
        wsum += w
    return acc / wsum


def stage_variances(params: Parameters) -> StageNoise:
    """Per-stage error variances of a response and its failure probability. Variants
    (optimizer/variants.py): stream — fresh uploaded cts (v_left = v_right = σ²); pack —
    computation with n = 1, plus n·v_ks(t_conv) from packing before modulus switching."""
    p = params
    stream = p.variant in ("stream", "stream_pack")
    pack = p.variant in ("pack", "stream_pack")
    nc = 1 if pack else p.n
    d = p.poly_len
    s2 = p.sigma**2
    vs = secret_variance(p.secret_kind, p.secret_plus, p.secret_minus, s2, d)
    ks_l = v_ks(p.t_exp_left, p.bits_exp_left, d, s2)
    ks_r = v_ks(p.t_exp_right, p.bits_exp_right, d, s2)
    ks_c = v_ks(p.t_conv, p.bits_conv, d, s2)
    a = 2.0**p.nu_1
    h = 2.0 ** (p.rounds - 1)
    v_left = 2.0 * h * s2 + h * ks_r + (h - 1.0) * ks_l
    big_r = 2.0**p.rounds_right
    v_right = big_r * s2 + (big_r - 1.0) * ks_r
    if stream:  # no expansion: the uploaded cts are fresh
        v_left = v_right = s2
    v_conv = (v_left + nc * ks_c) / nc  # mean per entry of the n×n error
    v_top = 2.0 * p.t_conv * d * digit_sq(p.bits_conv) * s2 + d * vs * v_right
    v_r2g = (v_top + v_right + nc * ks_c) / (nc + 1)  # mean per entry of a GSW error
    # errors injected before the left branch splits (fresh + round-0 key switch) are shared by
    # every first-dimension ct; with plaintext coefficients of mean E[D] they add up coherently
    v_shared = 0.0 if stream else h * (2.0 * s2 + ks_r)
    v_coh = coherent_k(d) * d * a * ((p.p - 1) / 2.0) ** 2 * v_shared
    v_fd = a * d * db_coeff_sq(p.p) * (v_left + nc * ks_c) + v_coh
    per_fold = d * digit_sq(p.bits_gsw) * p.t_gsw * (v_top + v_right + nc * ks_c)
    v_fold = v_fd + p.nu_2 * per_fold
    v_pack = v_fold + (p.n * ks_c if pack else 0.0)
    q1, q2, q = p.q1, p.q2, p.q
    v_g = (q1 / q) ** 2 * v_pack + (q1 / q2) ** 2 * d * vs / 12.0
    sigma_g = math.sqrt(v_g)
    coeffs = p.instances * p.n * p.n * d
    eps = max(2.0**-8, 4.0 * p.p * p.p / q)  # the Δ = floor(q/p) offset, at least 2^-8
    lf = log2_coeff_failure(sigma_g, eps) + math.log2(coeffs)
    folds = {f"fold_{r}": v_fd + (r + 1) * per_fold for r in range(p.nu_2)}
    return StageNoise(
        variances={
            "expansion": v_left,
            "expansion_right": v_right,
            "conversion": v_conv,
            "conversion_gsw": v_r2g,
            "first_dimension": v_fd,
            **folds,
            "folding": v_fold,
            **({"packing": v_pack} if pack else {}),
            "modswitch": modswitch_error_sq(sigma_g),
        },
        sigma_final=sigma_g,
        log2_failure=min(lf, 0.0),
        coherent_fraction=v_coh / v_fd if v_fd > 0 else 0.0,
    )


def log2_failure(params: Parameters) -> float:
    return stage_variances(params).log2_failure


def max_gaussian_variance(coeffs: int, target_log2: float = CORRECTNESS_LOG2,
                          eps: float = 2.0**-8) -> float:
    """Largest σ_g² such that coeffs · P(coefficient error) ≤ 2^target (bisection on σ_g)."""
    lo, hi = 1e-6, 4.0
    for _ in range(80):
        mid = math.sqrt(lo * hi)
        if log2_coeff_failure(mid, eps) + math.log2(coeffs) <= target_log2:
            lo = mid
        else:
            hi = mid
    return lo * lo
