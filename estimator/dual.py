"""Dual attack [MicReg09] with the sample-optimal lattice dimension [EspJouKha20].

BKZ-β on the dual lattice of ``m' + n`` columns yields short vectors v with
‖v‖ = ρ·δ^d·(σ_s·q/σ_e)^{n/d}·σ_s… (the reference's normal form); each gives a sample whose
noise has standard deviation σ' = ρ·σ_s·δ^d / c^{m'/d}·q, c = σ_s·q/σ_e.  Distinguishing
needs ≈ 1/ε² such samples, ε = exp(−π·(√(2π)·σ'/q)²) (majority vote amplified to 99 %);
they come from the cost model's short-vector sampler (for MATZOV a sieve on the first
block after BKZ [GJ21]).  β is optimised; the attack is the ζ = 0 case of the classical
dual hybrid.
"""

from __future__ import annotations

import math
from functools import lru_cache

from .cost import AttackCost
from .distributions import Distribution
from .logmath import INF, LN2, log2_add, log2_amplify
from .lwe_parameters import LWEParameters
from .prob import log2_drop
from .reduction import MAX_BETA, CostModel, delta
from .search import refine_min

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
