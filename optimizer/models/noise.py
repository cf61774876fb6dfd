"""Noise model of the SPIRAL family: per-stage error variances and the response failure probability.

Every term is derived from what the runtime computes (spiral/stages.hpp, public_params.hpp,
variant.hpp, rlwe/regev.hpp); nothing is fitted. Heuristic as in the SPIRAL paper: error
coefficients are independent and zero-mean unless a shared source is named below, and a sum of
many products is Gaussian. Variances are per coefficient, averaged over the coefficients of a
stage's cts. Checked against the runtime's noise hook
(runtime/testing/include/spiralpir/testing/noise.hpp) in tests/models/test_measured.py (every
stage within a factor 1.5 both ways, each stage unbiased over the references, on measurements
that tests/models/measure_noise.py re-takes; tests/models/noise_ratio_table.py prints the
ratios), the measured tails against the Gaussian law in tests/models/test_noise_tail.py; the
failure law and the digit moments against integration, Monte Carlo and enumeration in
tests/models/test_noise_oracles.py.

Sources:
* fresh error σ² = s²/2π (width s); secret variance Var(s) = σ² (gaussian), 2/3 (ternary),
  (PLUS+MINUS)/d (sparse ternary).
* gadget digits (`digit_moments`): the runtime decomposes the centred representative v of a
  uniform value mod q (|v| ≤ q/2) in balanced base z = 2^b, b = ⌈log2 q / t⌉: digits 0..t−2
  are uniform on [−z/2, z/2) (E[g²] = (z² + 2)/12, E[g] = −1/2); the top digit is what is
  left, floor((v + m)/z^(t−1)) with m the lower digits' offset, computed exactly — it is much
  smaller than z when t·b > log2 q (e.g. t = 3 on a 54-bit q: |top| ≤ 2^17, not 2^18).
* key switching with gadget length t: Σ_j g_j·e_j over t digit polys g_j and independent key
  errors e_j (negacyclic products: d terms each) → v_ks(t) = d·σ²·Σ_j E[g_j²].
* coefficient expansion (ServerStages::expand): each round maps ct → ct ± τ(ct) with one key
  switch on τ(ct); the phase's error is projected onto half of the coefficients and doubled,
  so the mean variance doubles per round and gains v_ks. Round 0 uses the right key; the
  first-dimension (even) cts run rounds 1..R−1 with the left key (R = rounds); the GSW-digit
  (odd) cts run R' = rounds_right rounds, all with the right key:
      v_left  = 2^R σ² + 2^(R−1) v_ks(t_exp_right) + (2^(R−1) − 1) v_ks(t_exp_left)
      v_right = 2^R' σ² + (2^R' − 1) v_ks(t_exp_right).
  SpiralStream uploads the cts instead: v_left = v_right = σ² (fresh encryptions).
* ScalToMat (t_conv): entry (i, i) gets v_left + v_ks(t_conv), entries (i, j ≠ i) v_ks(t_conv)
  (every row of the key has its own error): mean per entry (v_left + n·v_ks(t_conv))/n.
  Only for computation matrices with n > 1 (`scal_to_mat_keys`): at n = 1 (and in the pack
  variants) the matrix secret is the scalar secret, ScalToMat is the identity and adds nothing
  — to the first-dimension cts and to the GSW cts' blocks 1..n alike.
  The stream variants with a 1×1 computation matrix (n_comp = 1: stream_pack always, stream
  with n = 1) have none on the first-dimension cts: the client encrypts them under the
  computation secret s_c, so they enter the first dimension with the fresh error σ² and no
  key-switch error (and no shared ScalToMat key error: the coherent term below is 0);
  `direct_first` below (variant.hpp VariantOf::direct_first).
* RegevToGSW: block 0 = −s·(digit ct error) + 2·t_conv key digits (a's and b's digits):
  v_top = d·Var(s)·v_right + 2·v_ks(t_conv); blocks 1..n are ScalToMat of the digit ct:
  mean per entry of the n × (n+1)·t_gsw error (v_top + v_right + n·v_ks(t_conv))/(n+1).
* first dimension: Σ_i C_i·D_i over 2^ν1 cts; database coefficients are the centred
  representatives of uniform values, uniform on [−p/2, p/2): E[D²] = (p² + 2)/12, mean −1/2.
  Independent errors give 2^ν1·d·E[D²]·(v_left + n·v_ks(t_conv)) per entry. One shared
  source adds coherently: the ScalToMat key error e (one per key column and row, used by all
  2^ν1 cts) times the digits' mean −1/2 times the data's mean −1/2 — Σ_i g_i·D_i has a mean
  polynomial 2^ν1·μ_g·μ_D·Σ_j (2j + 2 − d)x^j (negacyclic product of two constant
  polynomials), so per entry n·σ²·(2^ν1·μ_D)²·(Σ_k E[g_k]²)·d(d² + 2)/3 (`v_fd_coherent`;
  negligible unless p and the conversion base are both small).
  One response's realization: the data-mean part μ_D·(1 + x + … + x^(d−1))·Σ_i e_i (a share
  μ_D²/E[D²] = 3/(p² + 2) of the variance: 1/2 at p = 2) is one polynomial shared by every
  column and coefficient of a response (the same query cts multiply every column). Its mean
  square over a response is that share times X = Σ_m w_m·Exp(1) (the evaluations of Σ_i e_i
  are independent; w_m ∝ |J(ω_m)|² = 1/sin²(πm/2d), m odd: one conjugate pair holds 8/π²),
  E[X] = 1, sd(X) ≈ 0.82. The mean is what `v_fd` is, and each coefficient's marginal law is
  still Gaussian with it, so the union-bound failure probability needs nothing more; but a
  measurement pooled over few responses at p ≤ 4 scatters (n_d2048_p2_texp9: X over 16 runs
  0.1 … 3.2, mean 1.2).
* folding: each external product adds the GSW error times t_gsw digits of the (uniform)
  ct entries over n+1 rows: per fold d·Σ_k E[g_k²]·(v_top + v_right + n·v_ks(t_conv)).
* SpiralPack: computation with n = 1 over n² sub-databases, then the packing key switch adds
  the errors of n key-switching matrices (n·t_conv digits per entry): + n·v_ks(t_conv).
* modulus switching: row 0 to q2, rows 1..n to q1 = 4p. The client's integer error e is
  round(Y + g) − round(Y) with Y's fractional part uniform and g Gaussian with variance
  (q1/q)²·v + (q1/q2)²·d·Var(s)/12 (the s·(row-0 rounding) term), so
  P(e = k | g) = max(0, 1 − |g − k|); decoding fails iff e ≥ 2 or e ≤ −3:
  P(fail) = ∫_{1−ε}^{3−ε} Q(x/σ_g) dx (ε: the Δ offset). The measured `modswitch` stage is e:
  E[e²] = E[g² + {g}(1−{g})].
* shared terms (bounded, used only for the failure probability — `Chain.v_shared`): a key
  switch's digits have mean μ_k (−1/2 for balanced digits), so its error has a part
  μ_k·(1 + x + … + x^(d−1))·e_k whose coefficients are partial sums of one key error, i.e.
  correlated along the whole polynomial ("structured"; variance d·σ²·Σ_k E[g_k]² per key
  switch, shared by every ct the key switches). Two places multiply errors by a constant
  polynomial again, where such correlations add up coherently instead of as d independent
  terms: the first dimension (data mean −1/2 × the structured part s_left of the 2^ν1 left
  cts' errors) and folding (the folding digits' means μ_k × the GSW error row). With no
  independence assumed (Cauchy–Schwarz over cts, digits, blocks and coefficients):
      first dimension: (2^ν1·μ_D)²·d²·s_left
      per fold: d·(Σ_k |μ_k|)²·(V − s_gsw + (n+1)·d·s_gsw)
  (V the GSW error row's variance, s_gsw its structured part; the unstructured part has
  uncorrelated coefficients). These are upper bounds, loose where they dominate: in
  n_plan_2e15x16b_p2 (1-bit expansion and 2-bit GSW digits, p = 2) the runs' final variance
  ranged 2^51.0–2^56.2 around a pooled 2^54.2 that the mean model put at 2^51.1 (3 of 24
  responses decoded wrongly); the bound is 2^64.2, 2^8 above the worst run. They are
  negligible for digit bases of ≥ 2^6:
  the paper shapes' plans are unchanged (2^20 × 256 B: 2^-65.4 → 2^-64.6). The failure
  probability is computed for FAILURE_MARGIN·(√v_rest + Σ √bound)² (v_rest: the mean
  model without the folding digits' μ_k² part; the standard deviations add because the
  terms may be correlated), a Gaussian of that variance per coefficient.
* a response fails if any of its instances·n²·d coefficients does: union bound (valid for
  correlated coefficients: it needs each coefficient's marginal law only).
* margin: FAILURE_MARGIN multiplies that variance (the stage variances themselves are the
  unbiased mean model). Across the reference measurements the largest measured/predicted
  ratio of any stage not dominated by the shared bounds is 1.47 (the folds of
  pack_2e14x100kb_ci, whose 1-bit right expansion digits measure 1.3× the model) and of the
  decoded modulus-switching error 1.10, so 1.5 keeps the predicted failure probability above
  what every measurement implies; it costs 0.3 bits of p.

`stage_variances(params)` returns the per-stage variances (keys `STAGES`, `fold_r`, `packing`);
`log2_failure(params)` the log2 failure probability of one response. `chain(...)` is the same
computation over numpy arrays of gadget lengths (the search's vectorized model calls it), so
the two cannot drift.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from spiralpir.optimizer.params.parameters import Parameters

CORRECTNESS_LOG2 = -40.0  # default: failure probability ≤ 2^-40 per query
FAILURE_MARGIN = 1.5  # variance factor of the failure probability (module docstring)

# the runtime noise hook's stage names (runtime/testing/include/spiralpir/testing/noise.hpp)
STAGES = (
    "expansion",
    "expansion_right",
    "conversion",
    "conversion_gsw",
    "first_dimension",
    "folding",
    "modswitch",
)


def digit_sq(base_bits: int) -> float:
    """E[x²] of a digit uniform on [−z/2, z/2), z = 2^base_bits (every digit but the top)."""
    z = float(1 << base_bits)
    return (z * z + 2.0) / 12.0


@cache
def _top_digit_moments(q: int, base_bits: int, t: int) -> tuple[float, float]:
    """(E[T], E[T²]) of the top digit T = floor((v + m) / Z), Z = 2^(b·(t−1)), for v uniform
    on the centred integers (−q/2, q/2] (q odd) and m = (z/2)·(Z−1)/(z−1), the offset that
    makes the t−1 balanced lower digits (each in [−z/2, z/2)) cover [−m, Z − 1 − m]."""
    z = 1 << base_bits
    big_z = z ** (t - 1)
    m = (z // 2) * (big_z - 1) // (z - 1) if t > 1 else 0
    lo, hi = -(q // 2) + m, q // 2 + m  # v + m ranges over [lo, hi]
    shift = (-lo // big_z + 1) * big_z if lo < 0 else 0  # make it non-negative

    def sums(n: int) -> tuple[int, int]:  # Σ_{x<n} floor(x/Z), Σ_{x<n} floor(x/Z)²
        k, r = divmod(n, big_z)
        s1 = big_z * k * (k - 1) // 2 + r * k
        s2 = big_z * (k - 1) * k * (2 * k - 1) // 6 + r * k * k
        return s1, s2

    a1, a2 = sums(lo + shift)
    b1, b2 = sums(hi + shift + 1)
    c = shift // big_z  # floor((x + shift)/Z) = floor(x/Z) + c
    cnt = hi - lo + 1
    s1, s2 = b1 - a1, b2 - a2
    e1 = s1 - c * cnt  # Σ floor(x/Z)
    e2 = s2 - 2 * c * s1 + c * c * cnt  # Σ (floor − c)²
    return e1 / cnt, e2 / cnt


@cache
def _digit_table(q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per gadget length t (index), (Σ_j E[g_j²], Σ_j E[g_j]², Σ_j |E[g_j]|) of the runtime's
    decomposition of a uniform value mod q (arith/gadget.hpp gadget_decompose_ntt_into)."""
    q_bits = q.bit_length()
    s_sq = np.full(q_bits + 1, np.inf)
    s_mean = np.full(q_bits + 1, np.inf)
    s_abs = np.full(q_bits + 1, np.inf)
    for t in range(1, q_bits + 1):
        b = -(-q_bits // t)
        mean_top, sq_top = _top_digit_moments(q, b, t)
        s_sq[t] = (t - 1) * digit_sq(b) + sq_top
        s_mean[t] = (t - 1) * 0.25 + mean_top * mean_top
        s_abs[t] = (t - 1) * 0.5 + abs(mean_top)
    return s_sq, s_mean, s_abs


def digit_moments(t: Any, q: int) -> tuple[Any, Any]:
    """(Σ_j E[g_j²], Σ_j E[g_j]²) over the t digits of a uniform value mod q; t an int or an
    integer numpy array (then arrays)."""
    s_sq, s_mean, _ = _digit_table(q)
    if isinstance(t, np.ndarray):
        return s_sq[t], s_mean[t]
    return float(s_sq[int(t)]), float(s_mean[int(t)])


def digit_abs_mean_sum(t: Any, q: int) -> Any:
    """Σ_j |E[g_j]| over the t digits of a uniform value mod q (int or integer array t)."""
    s_abs = _digit_table(q)[2]
    if isinstance(t, np.ndarray):
        return s_abs[t]
    return float(s_abs[int(t)])


def keyswitch_variance(t: Any, q: int, d: int, sigma2: float) -> Any:
    """v_ks(t) = d·σ²·Σ_j E[g_j²]: the error a key switch with gadget length t adds."""
    return d * sigma2 * digit_moments(t, q)[0]


def secret_variance(kind: str, plus: int, minus: int, sigma2: float, d: int) -> float:
    if kind == "gaussian":
        return sigma2
    if kind == "ternary":
        return 2.0 / 3.0
    return (plus + minus) / d


def db_coeff_sq(p: Any) -> Any:
    """E[D²] of a database coefficient: the centred representative of a uniform value mod p,
    uniform on [−p/2, p/2) (database.hpp plaintext_polys): (p² + 2)/12 (float or array)."""
    return (p * p + 2.0) / 12.0


DB_COEFF_MEAN = -0.5  # mean of a coefficient uniform on [−p/2, p/2)


@dataclass(frozen=True)
class Chain:
    """Variances along the server pipeline (floats, or arrays over gadget choices)."""

    v_left: Any  # first-dimension scalar cts after expansion
    v_right: Any  # GSW-digit scalar cts after expansion
    v_conv: Any  # ScalToMat output, mean per entry
    v_r2g: Any  # RegevToGSW output, mean per entry
    v_fd: Any  # after the first dimension (incoherent + coherent)
    v_fd_coherent: Any  # the coherent (shared ScalToMat key error) part of v_fd
    per_fold: Any  # added by each external product
    v_fold: Any  # after the last fold
    v_final: Any  # input of modulus switching (pack: after the packing key switch)
    v_fail: Any  # what the failure probability is computed for (module docstring, margin)
    v_shared: Any = 0.0  # bound on the shared (data/digit mean × correlated error) part


def scal_to_mat_keys(variant: str, n: int) -> bool:
    """Whether ScalToMat is a key switch: only when the computation's matrices are n × n with
    n > 1. At n = 1 (and in the pack variants, which compute with n = 1) the matrix secret is
    the scalar secret itself (keys.hpp), so ScalToMat is the identity: no key, no error."""
    return variant not in ("pack", "stream_pack") and n > 1


def direct_first(variant: str, n: int) -> bool:
    """The client encrypts the first-dimension cts under the computation secret (no ScalToMat on
    them): the stream variants whose computation matrices are 1×1 (stream_pack, or stream with
    n = 1)."""
    return variant == "stream_pack" or (variant == "stream" and n == 1)


def chain(variant: str, d: int, q: int, sigma2: float, var_s: float, n: int, nu_1: int,
          nu_2: int, p: Any, t_exp_left: Any, t_exp_right: Any, t_conv: Any,
          t_gsw: Any, query_buckets: int = 1, rows: int | None = None) -> Chain:
    """The per-stage variances of one response (module docstring); gadget lengths and p may
    be numpy arrays (broadcast together). query_buckets G: the query packs G buckets, so the
    expansion runs the rounds of G·2^ν1 selectors and G·ν2·t_gsw digits. rows: the stored
    first-dimension rows, the summands of Σ_i C_i·D_i (default 2^ν1)."""
    stream = variant in ("stream", "stream_pack")
    pack = variant in ("pack", "stream_pack")
    nc = 1 if pack else n  # the computation's n (pack: n = 1 over n² sub-databases)
    ks_l = keyswitch_variance(t_exp_left, q, d, sigma2)
    ks_r = keyswitch_variance(t_exp_right, q, d, sigma2)
    sq_c, mean_c = digit_moments(t_conv, q)
    ks_c = d * sigma2 * sq_c
    # the digit-mean parts of the key switches, μ_k·(1 + x + … + x^(d−1))·e_k: coefficients
    # correlated along the whole polynomial (a random walk over e_k), "structured" below
    ksm_l = d * sigma2 * digit_moments(t_exp_left, q)[1]
    ksm_r = d * sigma2 * digit_moments(t_exp_right, q)[1]
    ksm_c = d * sigma2 * mean_c
    sq_g, mean_g = digit_moments(t_gsw, q)
    abs_g = digit_abs_mean_sum(t_gsw, q)
    digits = query_buckets * nu_2 * np.asarray(t_gsw)
    # rounds_right = 1 + ceil(log2(G·ν2·t_gsw)) (1 if ≤ 1 digit); rounds = max(ν1 + log2 G + 1,
    # that)
    r_right = 1 + np.where(digits > 1, np.ceil(np.log2(np.maximum(digits, 1))), 0.0)
    rounds = np.maximum(nu_1 + math.log2(query_buckets) + 1.0, r_right)
    if stream:  # uploaded fresh encryptions, no expansion
        v_left = sigma2 + 0.0 * ks_l
        v_right = sigma2 + 0.0 * ks_r
        s_left = 0.0 * ks_l
        s_right = 0.0 * ks_r
    else:
        h = np.exp2(rounds - 1.0)
        # each round doubles the mean variance: the query's fresh error R times, round 0's
        # right-key switch R − 1 times, the left-key switch of round r R − 1 − r times
        v_left = 2.0 * h * sigma2 + h * ks_r + (h - 1.0) * ks_l
        big_r = np.exp2(r_right)
        v_right = big_r * sigma2 + (big_r - 1.0) * ks_r  # R' rounds, all with the right key
        s_left = h * ksm_r + (h - 1.0) * ksm_l  # their structured parts
        s_right = (big_r - 1.0) * ksm_r
    # ScalToMat: entry (i, i) v_left + ks_c, the n − 1 others ks_c (one key error per row);
    # none at n = 1 (the identity; direct first-dimension cts: the fresh error only)
    keyed = 1.0 if scal_to_mat_keys(variant, n) else 0.0
    s2m = keyed * ks_c  # one ScalToMat key switch's error (0: the identity)
    v_conv = (v_left + nc * s2m) / nc
    # RegevToGSW block 0: −s·(digit ct error) + 2·t_conv digits (of a and of b) × key errors
    v_top = d * var_s * v_right + 2.0 * ks_c
    v_r2g = (v_top + v_right + nc * s2m) / (nc + 1)  # block 0 and n ScalToMat blocks
    a = 2.0**nu_1 if rows is None else float(rows)
    # Σ_i C_i·D_i: one ct per stored row (2^ν1 at most) × d coefficient products × the n
    # entries of a row (one diagonal)
    v_inc = a * d * db_coeff_sq(p) * (v_left + nc * s2m)
    # the ScalToMat key errors are shared by all 2^ν1 cts: with digit mean μ_k and data mean
    # μ_D, Σ_i g_i·D_i has the mean polynomial 2^ν1·μ_k·μ_D·Σ_j (2j + 2 − d)x^j
    coh_c = keyed * mean_c
    v_coh = nc * sigma2 * (a * DB_COEFF_MEAN) ** 2 * coh_c * d * (d * d + 2.0) / 3.0
    v_fd = v_inc + v_coh
    # external product: GSW error × (n+1)·t_gsw digit polys of the uniform ct entries
    v_gsw_row = v_top + v_right + nc * s2m  # Σ over the n+1 blocks of a GSW error row
    per_fold = d * sq_g * v_gsw_row
    v_fold = v_fd + nu_2 * per_fold
    # packing: n·t_conv digits × the n packing keys' errors (each row its own), per entry
    extra = n * ks_c if pack else 0.0
    v_final = v_fold + extra
    # shared terms, bounded (Cauchy–Schwarz) for the failure probability (module docstring):
    # first dimension: data mean × the structured part of the 2^ν1 left cts' errors
    sfd = (a * DB_COEFF_MEAN) ** 2 * d * d * s_left
    # folding: digit means × the GSW error row (structured part: correlated coefficients)
    s_gsw = d * var_s * s_right + 2.0 * ksm_c + s_right + nc * keyed * ksm_c
    coh_fold = d * abs_g * abs_g * (v_gsw_row - s_gsw + (nc + 1.0) * d * s_gsw)
    v_rest = v_fd + nu_2 * d * (sq_g - mean_g) * v_gsw_row + extra  # the μ_k² part is in coh
    sd_shared = np.sqrt(sfd) + nu_2 * np.sqrt(coh_fold)
    v_fail = FAILURE_MARGIN * (np.sqrt(v_rest) + sd_shared) ** 2
    return Chain(v_left, v_right, v_conv, v_r2g, v_fd, v_coh, per_fold, v_fold, v_final,
                 v_fail, sd_shared**2)


def modswitch_gaussian_variance(v_final: Any, q1: Any, q2: Any, q: int, d: int,
                                var_s: float) -> Any:
    """Variance of g (units of q1): the scaled ciphertext error plus s·(row-0 rounding)."""
    return (q1 / q) ** 2 * v_final + (q1 / q2) ** 2 * d * var_s / 12.0


@dataclass(frozen=True)
class StageNoise:
    """Per-stage mean variances: mod q, except `modswitch` (the decoded integer error in units
    of q1, Gaussian part + the two roundings). `fold_r` is after fold round r; `folding` the
    last one (= the input of modulus switching, or of packing). `sigma_final` is the standard
    deviation of g (no margin); `log2_failure` includes FAILURE_MARGIN."""

    variances: dict[str, float]
    sigma_final: float
    log2_failure: float
    coherent_fraction: float = 0.0  # share of the first-dimension variance that is the
    # coherent (shared ScalToMat key error × digit mean × data mean) term
    shared_variance: float = 0.0  # Chain.v_shared: bound on the shared terms (failure only)


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
    """Per-stage error variances of a response and its failure probability (any variant)."""
    p = params
    d = p.poly_len
    s2 = p.sigma**2
    vs = secret_variance(p.secret_kind, p.secret_plus, p.secret_minus, s2, d)
    c = chain(p.variant, d, p.q, s2, vs, p.n, p.nu_1, p.nu_2, float(p.p), p.t_exp_left,
              p.t_exp_right, p.t_conv, p.t_gsw, p.query_buckets, p.rows_stored)
    f = {k: float(v) for k, v in vars(c).items()}
    sigma_g = math.sqrt(float(modswitch_gaussian_variance(f["v_final"], p.q1, p.q2, p.q, d, vs)))
    sigma_fail = math.sqrt(float(modswitch_gaussian_variance(f["v_fail"], p.q1, p.q2, p.q, d, vs)))
    coeffs = p.instances * p.n * p.n * d
    eps = max(2.0**-8, 4.0 * p.p * p.p / p.q)  # the Δ = floor(q/p) offset, at least 2^-8
    lf = log2_coeff_failure(sigma_fail, eps) + math.log2(coeffs)
    folds = {f"fold_{r}": f["v_fd"] + (r + 1) * f["per_fold"] for r in range(p.nu_2)}
    pack = p.variant in ("pack", "stream_pack")
    return StageNoise(
        variances={
            "expansion": f["v_left"],
            "expansion_right": f["v_right"],
            "conversion": f["v_conv"],
            "conversion_gsw": f["v_r2g"],
            "first_dimension": f["v_fd"],
            **folds,
            "folding": f["v_fold"],
            **({"packing": f["v_final"]} if pack else {}),
            "modswitch": modswitch_error_sq(sigma_g),
        },
        sigma_final=sigma_g,
        log2_failure=min(lf, 0.0),
        coherent_fraction=f["v_fd_coherent"] / f["v_fd"] if f["v_fd"] > 0 else 0.0,
        shared_variance=f["v_shared"],
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
