"""Lower bounds of a structure over every gadget choice, for the branch-and-bound search.

A structure's bounds — on noise (every gadget-dependent term at its minimum) and on the
objective (every stage's time with each gadget length at its smallest, the response with the
smallest admissible q2) — hold for every gadget combination, so a structure whose bound cannot
beat the best found so far is provably worse. One formula for every variant
(params/variants.py).
"""

from __future__ import annotations

import math
from functools import cache

from spiralpir.optimizer.models import noise
from spiralpir.optimizer.models.cost import Profile
from spiralpir.optimizer.plan.evaluate import (
    _allowed,
    _grid,
    _q2_table,
    _vmax,
    objective_value,
    shape_scalars,
    time_lower_bound,
)
from spiralpir.optimizer.plan.space import Options, Structure


@cache
def ring_minima(d: int, q: int, sigma2: float) -> tuple[float, float, float]:
    """(min key-switch variance, min d·E[x²]·t over gadget lengths, min gadget length)."""
    g = _grid(d, q, sigma2)
    return float(g.ks_l.min()), float((d * g.eg * g.tg).min()), float(g.tl.min())


def lower_bounds(s: Structure, options: Options, profile: Profile) -> tuple[float, bool]:
    """(objective lower bound, possibly-correct) of a structure, valid for every gadget
    choice (each term at its smallest value)."""
    stream, pack, d, qb, q, n, pb, nu1, nu2, inst, nc, p, q1, sigma2 = shape_scalars(s, options)
    ring, variant = s.ring, options.variant
    ks_min, fold_min, t_min = ring_minima(d, ring.modulus.q, sigma2)
    a = float(1 << nu1)
    v_left = sigma2 if stream else 2.0 * a * sigma2 + a * ks_min + (a - 1.0) * ks_min
    e_d = noise.db_coeff_sq(p)
    ks_first = nc * ks_min if noise.scal_to_mat_keys(variant, n) else 0.0  # ScalToMat (n > 1)
    v_fd = s.rows * d * e_d * (v_left + ks_first)  # one summand per stored row
    # v_right ≥ σ² (R ≥ 1 round of fresh noise doubling; fresh for the stream variants)
    v_fold_min = v_fd + nu2 * fold_min * (sigma2 + nc * ks_min)
    if pack:
        v_fold_min += n * ks_min
    vmax = _vmax(inst * n * n * d, options.correctness_log2)
    possible = (q1 / q) ** 2 * v_fold_min < vmax
    # objective lower bound: every gadget length at its smallest (time grows with each)
    # (vanilla expansion: each gadget at the smallest length whose own noise term fits, as the
    # exact evaluation's table; a larger p needs longer gadgets, so its bound grows with it)
    mins = None
    if not stream:
        allowed = _allowed(d, ring.modulus.q, sigma2, nc, nu1, nu2, (q1 / q) ** 2, e_d, vmax,
                           s.rows, n if pack else 0)
        mins = (min(allowed[0]), min(allowed[1]), min(allowed[2]), min(allowed[3]))
    one_time, per_db = time_lower_bound(variant, s, t_min, profile, options.query_buckets,
                                        mins)
    bits_tab, q2_tab = _q2_table(d)
    ok = [int(b) for b, v in zip(bits_tab, q2_tab, strict=True) if q1 < v < q]
    if not ok:
        return math.inf, False
    resp = 32 + -(-(inst * d * (n * ok[0] + n * n * (pb + 2))) // 8)
    query = 64 + ((int(a) + nu2 * int(t_min)) if stream else 1) * d * qb // 8  # d·qb % 8 == 0
    if resp > options.max_response_bytes or query > options.max_query_bytes:
        return math.inf, False
    return float(objective_value(options, one_time, per_db, resp, query)), possible


def seconds_lower_bound(s: Structure, options: Options, profile: Profile) -> float:
    """Server seconds of the structure with every gadget length at its smallest: a lower bound
    over its gadget table (the tie key's first term, plan/ranking.py)."""
    sigma2 = options.noise_width**2 / (2 * math.pi)
    t_min = ring_minima(s.ring.poly_len, s.ring.modulus.q, sigma2)[2]
    return sum(time_lower_bound(options.variant, s, t_min, profile, options.query_buckets))
