"""Primal attacks: uSVP (Kannan embedding) and BDD, and the BKZ + final-step engine at a fixed
number ζ of guessed coordinates that the primal hybrids (``hybrid``) search over.

Owns ``usvp`` and ``bdd`` (the ζ = 0 case of the engine).

Assumptions (as in the reference estimator): the GSA describes the reduced basis; the
[ADPS16] success condition for uSVP, σ·√β ≤ δ^(2β−d)·Vol^(1/d) (with the embedding factor
τ = σ_e and secret rescaling ξ = σ_e/σ_s [BaiGal14]); for BDD [LiuNgu13] one BKZ-β
reduction followed by one SVP call in dimension η chosen so that the projected error is
the shortest vector of the projected embedding lattice (Gaussian heuristic), plus Babai
lifting, with the probability that lifting succeeds [Wunderer19].  With many samples
(m = ∞) the attack picks the lattice dimension.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from ..cost import AttackCost
from ..logmath import INF, LN2, log2_add, log2_amplify
from ..lwe_parameters import LWEParameters
from ..prob import log2_babai, log2_drop, log2_mitm_admissible
from ..reduction import MAX_BETA, CostModel, delta
from ..search import descend, first_true, grid_min, refine_min

LOG2_TARGET = math.log2(0.99)


def xi_factor(params: LWEParameters) -> float:
    """Rescaling of the secret part of the basis when the secret is narrower than the error."""
    if params.Xs.stddev < params.Xe.stddev:
        return params.Xe.stddev / params.Xs.stddev
    return 1.0


def embedding_samples(params: LWEParameters) -> float:
    """Rows available to the primal lattices: m, plus n when the secret can be embedded as
    extra short coordinates [BaiGal14]."""
    return params.m + params.n if params.Xs.stddev <= params.Xe.stddev else params.m


# ----------------------------------------------------------------------------------------
# uSVP


def _usvp_dim(params: LWEParameters, m: float, beta: int, tau: float, xi: float) -> float:
    """Smallest d in [n, m] meeting the uSVP condition at block size β (``inf`` if none)."""
    ld = math.log(delta(beta))
    lq = params.ln_q
    n = params.n
    a = -ld
    big_c = math.log(params.Xe.stddev**2 * (beta - 1) + tau**2) / 2.0
    c = math.log(tau) + n * math.log(xi) - (n + 1) * lq
    b = ld * (2 * beta - 1) + lq - big_c
    if a * n * n + b * n + c >= 0:
        return n
    disc = b * b - 4 * a * c
    if disc < 0:
        return INF
    d1 = (-b + math.sqrt(disc)) / (2 * a)
    if n <= d1:
        return min(m, math.ceil(d1))
    return INF


def usvp_cost(params: LWEParameters, beta: int, model: CostModel, m: float) -> AttackCost:
    """uSVP cost at a fixed β (dimension chosen as small as the condition allows)."""
    xi = xi_factor(params)
    tau = params.Xe.stddev
    d = _usvp_dim(params, m, beta, tau, xi)
    if d == INF:
        return AttackCost("usvp")
    d = max(int(d), beta)
    if d == beta and d < m:
        d += 1
    ld = math.log(delta(beta))
    lhs = 0.5 * math.log(params.Xe.stddev**2 * (beta - 1) + tau**2)
    rhs = ld * (2 * beta - d - 1) + (
        math.log(tau) + math.log(xi) * params.n + params.ln_q * (d - params.n - 1)
    ) / d
    if lhs > rhs:
        return AttackCost("usvp")
    return AttackCost("usvp", model.log2_bkz(beta, d), beta, d, {"delta": delta(beta)})


@lru_cache(maxsize=4096)
def usvp(params: LWEParameters, model: CostModel) -> AttackCost:
    """Primal uSVP attack, GSA, minimised over β (and d)."""
    params = params.normalize()
    m = embedding_samples(params)
    max_beta = int(max(min(MAX_BETA, m), 45))
    # the reference's step-5 search (plus ±5 neighbourhood) reaches at most this β
    max_beta = min(max_beta - 1, 5 * (max_beta // 5 - 1) + 4)
    best = grid_min(
        lambda b: usvp_cost(params, b, model, m), 40, max_beta, 5, key=lambda c: c.log2_rop
    )
    assert best is not None
    return best[1]


# ----------------------------------------------------------------------------------------
# BDD / hybrid engine


@dataclass(frozen=True)
class BetaParams:
    """What running BKZ-β on the (guess-reduced) embedding lattice buys."""

    d: int
    log2_bkz: float
    log2_svp: float
    eta: int
    log2_p_babai: float
    log2_p_mitm: float


def _log_ball(k: int) -> float:
    """ln of the volume of the unit k-ball."""
    return (k / 2.0) * math.log(math.pi) - math.lgamma(k / 2.0 + 1)


def svp_dimension_gsa(d: int, ln_vol: float, ln_delta: float, stddev: float) -> int:
    """Dimension of the final SVP call: the largest projection π_i whose embedding lattice
    (with τ = σ) has Gaussian-heuristic length below the projected error's length."""
    tau2 = stddev**2
    min_i = d - MAX_BETA if d > 4096 else 0

    def error_is_shorter(i: int) -> bool:
        k = d - i + 1
        lpv = (d - i) / d * ln_vol - i * (d - i) * ln_delta
        log_gh = (2 * lpv + math.log(tau2) - 2 * _log_ball(k)) / k
        return log_gh < math.log(tau2 * (d - i) + tau2)

    i = first_true(error_is_shorter, min_i, d - 1)
    if i is None:
        return 2
    return d - (i - 1) + 1


def beta_params(
    params: LWEParameters,
    model: CostModel,
    beta: int,
    zeta: int,
    babai: bool,
    mitm: bool,
    m: float,
    d: int | None,
) -> BetaParams | None:
    """Cost and success probability of BKZ-β + final step on the lattice with ζ secret
    coordinates removed (guessed). ``None`` if β cannot reveal the error."""
    if m - zeta < beta or (d is not None and d < beta):
        return None
    xi = xi_factor(params)
    nz = params.n - zeta
    ld = math.log(delta(beta))
    if d is None:
        d = max(beta, min(math.ceil(math.sqrt(nz * (params.ln_q - math.log(xi)) / ld)), m - zeta))
        d = int(d)
    log2_vol = (d - nz) * params.log2_q + nz * math.log2(xi)
    log2_delta = ld / LN2
    log2_bkz = model.log2_bkz(beta, d)
    sigma = params.Xe.stddev
    if babai:
        eta = 2
        log2_svp = 2 * math.log2(max(d, 1))
        log2_pb = log2_babai(d, d, log2_vol, log2_delta, math.log2(math.sqrt(d) * sigma))
    else:
        svp_dim = svp_dimension_gsa(d, log2_vol * LN2, ld, sigma)
        eta = svp_dim - 1
        if eta > d:
            return None
        log2_svp = log2_add(model.log2_bkz(svp_dim, svp_dim), 2 * math.log2(max(d - eta, 1)))
        rank = d - eta
        log2_pb = (
            log2_babai(rank, d, log2_vol, log2_delta, math.log2(math.sqrt(rank) * sigma))
            if rank > 0
            else 0.0
        )
    log2_pm = 0.0
    if mitm and zeta > 0 and babai:
        log2_pm = log2_mitm_admissible(d, log2_vol, log2_delta, sigma)
    return BetaParams(d, log2_bkz, log2_svp, eta, log2_pb, log2_pm)


def guess_levels(params: LWEParameters, zeta: int) -> Iterator[tuple[int, float, float]]:
    """For guessing ζ secret coordinates, lazily: (w, log2 |S_w|, log2 P_w), where S_w holds all
    guesses of Hamming weight ≤ w and P_w the probability that it contains the truth."""
    xs = params.Xs
    if zeta == 0:
        yield (0, 0.0, 0.0)
        return
    h = xs.hamming_weight
    n = params.n
    base = xs.nonzero_values
    lo = max(0, zeta - n + h)
    hi = min(zeta, h)
    ls = -INF
    lp = -INF
    for w in range(lo, hi + 1):
        if w == 0:
            size = 0.0
        elif math.isinf(base):
            return  # unbounded coefficients: only the all-zero guess is finite
        else:
            size = (
                (math.lgamma(zeta + 1) - math.lgamma(w + 1) - math.lgamma(zeta - w + 1)) / LN2
                + w * math.log2(base)
            )
        ls = log2_add(ls, size)
        lp = log2_add(lp, log2_drop(n, h, zeta, w))
        yield (w, ls, min(lp, 0.0))


def hybrid_cost(
    params: LWEParameters,
    model: CostModel,
    beta: int,
    zeta: int,
    babai: bool,
    mitm: bool,
    m: float,
    d: int | None = None,
    guess: tuple[int, float, float] | None = None,
) -> AttackCost:
    """Primal (hybrid) cost at fixed β, ζ (and guess set); without ``guess``, the best
    guessing weight is searched (stopping when the cost starts increasing)."""
    tag = "bdd" if zeta == 0 else "hybrid"
    if guess is None:
        best = AttackCost(tag)
        for level in guess_levels(params, zeta):
            c = hybrid_cost(params, model, beta, zeta, babai, mitm, m, d, level)
            if c.log2_rop > best.log2_rop:
                break
            best = c
        return best
    bp = beta_params(params, model, beta, zeta, babai, mitm, m, d)
    if bp is None:
        return AttackCost(tag)
    return _level_cost(beta, bp, guess, mitm, tag, zeta)


def _level_cost(
    beta: int, bp: BetaParams, level: tuple[int, float, float], mitm: bool, tag: str, zeta: int
) -> AttackCost:
    w, log2_ss, log2_hit = level
    svp = bp.log2_svp + (log2_ss / 2 if mitm else log2_ss)
    log2_p = log2_hit + bp.log2_p_babai + bp.log2_p_mitm
    rep = log2_amplify(0.99, log2_p)
    rop = log2_add(bp.log2_bkz, svp) + rep
    details = {
        "log2_red": bp.log2_bkz,
        "log2_svp": svp,
        "eta": bp.eta,
        "zeta": zeta,
        "guess_weight": w,
        "log2_search_space": log2_ss,
        "log2_prob": log2_p,
        "log2_repetitions": rep,
    }
    return AttackCost(tag, rop, beta, bp.d, details)


def hybrid_at_zeta(
    params: LWEParameters,
    model: CostModel,
    zeta: int,
    babai: bool,
    mitm: bool,
    m: float,
    optimize_d: bool,
    warm: list[int] | None = None,
) -> AttackCost:
    """Best primal (hybrid) cost for a fixed number ζ of guessed coordinates: β searched up
    to the uSVP block size, the guess weight increased while it helps, then optionally the
    lattice dimension d.  ``warm`` (optional, updated) holds β optima of neighbouring ζ to
    start the β search from."""
    tag = "bdd" if zeta == 0 else "hybrid"
    base = usvp(params, model)
    max_beta = base.beta if base.feasible and base.beta is not None else MAX_BETA
    # the reference scans β on a step-2 grid below max_beta + 2 and then the ±2
    # neighbourhood of the best point: the largest β it can reach is odd
    max_beta = 2 * ((max_beta + 2) // 2) - 1
    table: dict[int, BetaParams | None] = {}

    def params_at(beta: int) -> BetaParams | None:
        if beta not in table:
            table[beta] = beta_params(params, model, beta, zeta, babai, mitm, m, None)
        return table[beta]

    def level_rop(beta: int, ss_term: float, log2_hit: float) -> float:
        bp = params_at(beta)
        if bp is None:
            return INF
        lp = log2_hit + bp.log2_p_babai + bp.log2_p_mitm
        rop = log2_add(bp.log2_bkz, bp.log2_svp + ss_term)
        if lp < LOG2_TARGET:
            rop += log2_amplify(0.99, lp)
        return rop

    def level_rop_first_ok(beta: int) -> bool:
        return params_at(beta) is not None

    best = AttackCost(tag)
    start: int | None = None
    if warm:
        w0 = min(max(warm[-1], 40), max_beta)
        if level_rop_first_ok(w0):
            start = w0
    for level in guess_levels(params, zeta):
        w, log2_ss, log2_hit = level
        ss_term = log2_ss / 2 if mitm else log2_ss

        def rop_at(b: int, st: float = ss_term, lh: float = log2_hit) -> float:
            return level_rop(b, st, lh)

        if start is None:
            found = refine_min(rop_at, 40, max_beta, key=lambda r: r, steps=(16, 4, 1))
        else:  # the best β moves little from one guessing weight to the next
            found = descend(rop_at, start, 40, max_beta)
        if found is None or found[1] == INF:
            if best.feasible:
                break
            continue
        start = found[0]
        bp = params_at(found[0])
        assert bp is not None
        c = _level_cost(found[0], bp, level, mitm, tag, zeta)
        if c.log2_rop > best.log2_rop:
            break
        best = c
    if warm is not None and best.feasible and best.beta is not None:
        warm.append(best.beta)
    if optimize_d and best.feasible and best.beta is not None and best.dim is not None:
        beta = best.beta
        found = grid_min(
            lambda dd: hybrid_cost(params, model, beta, zeta, babai, mitm, m, dd),
            params.n - zeta,
            best.dim,
            16,
            key=lambda c: c.log2_rop,
        )
        if found is not None and found[1].log2_rop <= best.log2_rop:
            best = found[1]
    return best


@lru_cache(maxsize=1024)
def bdd(params: LWEParameters, model: CostModel) -> AttackCost:
    """Primal BDD attack [LiuNgu13]: BKZ-β, then one SVP call in dimension η and Babai."""
    params = params.normalize()
    m = embedding_samples(params)
    c = hybrid_at_zeta(params, model, 0, False, False, m, True)
    c.attack = "bdd"
    return c
