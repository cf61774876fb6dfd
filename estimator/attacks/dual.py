"""Dual attacks: distinguish LWE samples from uniform with short vectors of the dual lattice.

Owns ``dual`` and ``dual_hybrid``.

* ``dual`` [MicReg09] with the sample-optimal lattice dimension [EspJouKha20].
  BKZ-β on the dual lattice of ``m' + n`` columns yields short vectors v with
  ‖v‖ = ρ·δ^d·(σ_s·q/σ_e)^{n/d}·σ_s… (the reference's normal form); each gives a sample whose
  noise has standard deviation σ' = ρ·σ_s·δ^d / c^{m'/d}·q, c = σ_s·q/σ_e.  Distinguishing
  needs ≈ 1/ε² such samples, ε = exp(−π·(√(2π)·σ'/q)²) (majority vote amplified to 99 %);
  they come from the cost model's short-vector sampler (for MATZOV a sieve on the first
  block after BKZ [GJ21]).  β is optimised; the attack is the ζ = 0 case of the classical
  dual hybrid.
* ``dual_hybrid`` — the dual hybrid of [GuoJoh21, MATZOV22]: BKZ-β and a sieve produce N
  short dual vectors on n − k_enum − k_fft coordinates, k_enum coordinates are enumerated
  and k_fft are recovered mod p with an FFT distinguisher (MATZOV's Theorem 7.6 costs:
  C_mul = 32², C_add = 5·32).  β, p, k_enum, k_fft are optimised.
"""

from __future__ import annotations

import math
from functools import lru_cache

from ..cost import AttackCost
from ..distributions import Distribution
from ..logmath import INF, LN2, log2_add, log2_amplify
from ..lwe_parameters import LWEParameters
from ..prob import log2_drop
from ..reduction import MAX_BETA, CostModel, delta
from ..search import descend, refine_min

TARGET = 0.99


def log2_distinguish_samples(log2_ratio_stddev: float) -> float:
    """log2 of the samples needed to tell LWE noise of standard deviation σ' = 2^x·q from
    uniform with advantage 0.99 (majority vote)."""
    ratio_width = 2.0 ** log2_ratio_stddev * math.sqrt(2 * math.pi)
    if ratio_width > 16:
        return INF
    adv2 = math.exp(-2 * math.pi * ratio_width**2)  # ε² with ε = exp(−π·(s/q)²)
    if math.sqrt(adv2) > TARGET:
        return 0.0
    num = 2 * math.log(2 - 2 * TARGET)
    if adv2 < 1e-12:
        log2_adv2 = -2 * math.pi * ratio_width**2 / LN2
        return math.log2(-num) - log2_adv2
    trials = math.ceil(num / math.log1p(-adv2))
    return math.log2(trials)


def _reduced_secret(params: LWEParameters, zeta: int, h1: int) -> Distribution:
    xs = params.Xs
    if xs.is_sparse and xs.kind == "sparse_ternary":
        _, red = xs.split_balanced(zeta, h1)
        return red
    return xs.resize(params.n - zeta)


def dual_cost(params: LWEParameters, model: CostModel, beta: int) -> AttackCost:
    """Dual attack cost at fixed β."""
    ld = math.log(delta(beta))
    rho = model.short_vectors(beta, 2 * beta)[0]
    red = _reduced_secret(params, 0, 0)
    n = red.n
    ln_c = math.log(red.stddev) + params.ln_q - math.log(params.Xe.stddev)
    m_ = max(1, math.ceil(math.sqrt(n * ln_c / ld)) - n)
    m_ = int(min(params.m, m_))
    d = m_ + n
    # σ'/q = ρ·σ_s·δ^d / c^(m'/d) / q · q   (the reduced instance's error, relative to q)
    ln_sigma_rel = math.log(rho) + math.log(red.stddev) + d * ld - ln_c * m_ / d
    log2_m = log2_distinguish_samples(ln_sigma_rel / LN2)
    if log2_m == INF:
        return AttackCost("dual")
    _, log2_red, _, _ = model.short_vectors(beta, d, log2_m)
    rop = log2_add(log2_m, log2_red)
    rep = 0.0
    if params.Xs.is_sparse:
        rep = log2_amplify(TARGET, log2_drop(params.n, params.Xs.hamming_weight, 0, 0))
    return AttackCost(
        "dual",
        rop + rep,
        beta,
        d,
        {"m": m_, "log2_samples": log2_m, "log2_red": log2_red, "log2_repetitions": rep},
    )


@lru_cache(maxsize=1024)
def dual(params: LWEParameters, model: CostModel) -> AttackCost:
    """Dual attack, minimised over β."""
    params = params.normalize()
    max_beta = int(max(min(params.m, MAX_BETA), 48))
    # the reference's step-8 search (plus ±8 neighbourhood) reaches at most this β
    max_beta = min(max_beta - 1, 8 * (max_beta // 8 - 1) + 7)
    found = refine_min(
        lambda b: dual_cost(params, model, b), 40, max_beta, key=lambda c: c.log2_rop,
        steps=(16, 1),
    )
    assert found is not None
    return found[1]


# ----------------------------------------------------------------------------------------
# dual hybrid (MATZOV FFT distinguisher)

C_MUL = 32**2
# costs above 2^BEYOND_REACH are reported but not refined further (see dual_hybrid)
BEYOND_REACH = 1000.0
C_ADD = 5 * 32


def _entropy_bits(stddev: float) -> float:
    """MATZOV's H(χ_s) estimate in bits."""
    a = math.pi**2 * stddev**2
    coth = 1.0 / math.tanh(a)
    return (0.5 + math.log(math.sqrt(2 * math.pi) * stddev) + math.log(coth)) / LN2


def matzov_cost(
    params: LWEParameters, model: CostModel, beta: int, p: int, k_enum: int, k_fft: int
) -> AttackCost:
    """MATZOV dual hybrid cost (Theorem 7.6) at fixed β, p, k_enum, k_fft; m = n samples."""
    n = params.n
    m = n
    k_lat = n - k_fft - k_enum
    ss = params.Xs.stddev
    se = params.Xe.stddev
    ld = math.log(delta(beta))
    ln_ls = (
        (m / (m + k_lat)) * math.log(se)
        + (k_lat / (m + k_lat)) * (math.log(ss) + params.ln_q)
        + 0.5 * math.log(4.0 / 3.0)
        + 0.5 * math.log(beta / (2 * math.pi * math.e))
        + (m + k_lat - beta) * ld
    )
    h_bits = _entropy_bits(ss)
    e1 = 2 * (ln_ls + math.log(math.pi) - params.ln_q)
    if e1 > 700:
        return AttackCost("dual_hybrid")
    ln_n = (
        4 * math.exp(e1)
        + k_fft / 3.0 * (ss * math.pi / p) ** 2
        + math.log(k_enum * h_bits + k_fft * math.log(p) + math.log(2.0))
    )
    log2_n = ln_n / LN2
    _, log2_sample, _, sieve_dim = model.short_vectors(beta, k_lat + m, log2_n)
    if log2_sample == INF:
        return AttackCost("dual_hybrid")
    coeff = -1.0 / math.expm1(-1.0 / (2 * ss**2))
    alpha = math.pi**2 * ss**2
    tmp_a = math.exp(8 * alpha * math.exp(-2 * alpha) * math.tanh(alpha))
    log2_fft = (
        math.log2(C_MUL * k_fft) + (k_fft + 1) * math.log2(p) if k_fft > 0 else -INF
    )
    log2_table = math.log2(4 * C_ADD) + log2_n
    log2_guess = (
        math.log2(coeff)
        + k_enum * math.log2(2 * tmp_a / math.sqrt(math.e))
        + k_enum * h_bits
        + log2_add(log2_fft, log2_table)
    )
    rop = log2_add(log2_sample, log2_guess)
    return AttackCost(
        "dual_hybrid",
        rop,
        beta,
        None,
        {
            "log2_red": log2_sample,
            "log2_guess": log2_guess,
            "p": p,
            "zeta": k_enum,
            "t": k_fft,
            "beta_sieve": sieve_dim,
            "log2_N": log2_n,
            "lattice_dim": k_lat + m,
        },
    )


@lru_cache(maxsize=1024)
def dual_hybrid(params: LWEParameters, model: CostModel) -> AttackCost:
    """MATZOV dual hybrid, optimised over p, k_enum, k_fft (steps of 10, stopping when the
    cost stops decreasing) and β."""
    params = params.normalize()
    n = params.n

    warm: list[int] = []  # the optimal β drifts slowly between neighbouring (p, k_enum, k_fft)

    def best_beta(p: int, k_enum: int, k_fft: int) -> AttackCost:
        # (upper end exclusive, as in the reference's search)
        max_beta = int(max(min(params.m - k_enum - k_fft, MAX_BETA), 41)) - 1
        cache: dict[int, AttackCost] = {}

        def f(b: int) -> AttackCost:
            if b not in cache:
                cache[b] = matzov_cost(params, model, b, p, k_enum, k_fft)
            return cache[b]

        if warm and f(warm[-1]).feasible:
            b, _ = descend(lambda x: f(x).log2_rop, warm[-1], 40, max_beta, steps=(16, 4, 1))
            found: tuple[int, AttackCost] | None = (b, f(b))
        else:
            found = refine_min(f, 40, max_beta, key=lambda c: c.log2_rop, steps=(32, 4, 1))
        assert found is not None
        if found[1].feasible:
            warm.append(found[0])
        return found[1]

    best_p: AttackCost | None = None
    p = 2
    while p < params.q:
        best_e: AttackCost | None = None
        for k_enum in range(0, n, 10):
            best_f: AttackCost | None = None
            for k_fft in range(0, n - k_enum, 10):
                c = best_beta(p, k_enum, k_fft)
                if best_f is None or c.log2_rop <= best_f.log2_rop:
                    best_f = c
                else:
                    break
                if c.log2_rop > BEYOND_REACH:
                    break
            assert best_f is not None
            if best_e is None or best_f.log2_rop <= best_e.log2_rop:
                best_e = best_f
            else:
                break
            if best_e.log2_rop > BEYOND_REACH:
                break
        assert best_e is not None
        if best_e.log2_rop > BEYOND_REACH:
            # far beyond any security level (the reference caps β at 2^512 cost): the
            # exhaustive k_enum/k_fft walk would only refine an irrelevant number
            best_p = best_e if best_p is None or best_e.log2_rop < best_p.log2_rop else best_p
            break
        if best_p is None or best_e.log2_rop <= best_p.log2_rop:
            best_p = best_e
        else:
            break
        if best_p.details.get("t") == 0 and p > 2:
            break
        p += 1
    assert best_p is not None
    return best_p
