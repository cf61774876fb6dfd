"""SpiralStream, SpiralPack and SpiralStreamPack in the optimization model (issue 8).

The scalar formulas live beside vanilla's in sizes.py, noise.py and cost.py (they branch on the
variant); this module holds the variant flags and the vectorized evaluation and lower bound the
search uses for a non-vanilla variant (model.evaluate and search._lower_bounds dispatch here).

What changes per variant (runtime/include/spiralpir/spiral/variants.hpp, runtime/FORMATS.md §7):

* stream (stream, stream_pack): no query expansion. The client uploads the 2^ν1 first-dimension
  and the ν2·t_gsw GSW-digit scalar Regev ciphertexts (fresh: noise σ²), so
  v_left = v_right = σ²; no expansion time; public params = conversion keys (+ packing keys);
  query = 2^ν1 + ν2·t_gsw polynomials. t_exp_left/t_exp_right are unused (fixed to the
  shortest length, 1). With a 1×1 computation matrix (stream_pack, stream with n = 1:
  noise.direct_first) the first-dimension cts are encrypted under the computation secret and
  skip ScalToMat: t_conv then only enters through RegevToGSW (folding) and packing, so its
  admissible lengths are filtered on those terms (`_direct_conv_lengths`).
* pack (pack, stream_pack): the server computes with n_comp = 1 over n² sub-databases
  (instances·n² computation instances), then packs the n² scalar responses of each instance
  into one (n+1)×n matrix Regev ciphertext: n key switches of t_conv digits per packed entry
  add n·v_ks(t_conv) to the final variance; packing costs, per instance,
  ntt n²(t_conv+1)L, decomp n²·t_conv·d, mac (n+1)·n²·t_conv·L·d (booked in the runtime's
  `modswitch` stage); public params add n²·t_conv polynomials. The response is vanilla's for n.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from spiralpir.optimizer import noise
from spiralpir.optimizer.noise import db_coeff_sq

VARIANTS = ("spiral", "stream", "pack", "stream_pack")


def is_stream(variant: str) -> bool:
    return variant in ("stream", "stream_pack")


def is_pack(variant: str) -> bool:
    return variant in ("pack", "stream_pack")


def n_comp(variant: str, n: int) -> int:
    """The matrix dimension the server computes with."""
    return 1 if is_pack(variant) else n


def _direct_conv_lengths(d: int, q: int, sigma2: float, nc: int, n: int, nu2: int, pack: bool,
                         qq: float, vmax: float) -> tuple[int, ...]:
    """The t_conv lengths whose OWN noise terms stay below the budget when the first dimension
    has no ScalToMat (noise.direct_first): RegevToGSW's key switches reach the final variance
    through folding (each fold ≥ d·min_t E[g_t²]·(nc + 2)·v_ks(t_conv)), packing adds
    n·v_ks(t_conv). Every other term is non-negative, so dropping a longer-failing length is
    exact (as model._allowed)."""
    m = _imports()
    ts = m.gadget_lengths(q.bit_length())
    fold_min = min(d * noise.digit_moments(t, q)[0] for t in ts)

    def own(t: int) -> float:
        ks = float(noise.keyswitch_variance(t, q, d, sigma2))
        return qq * max(nu2 * fold_min * (nc + 2) * ks, n * ks if pack else 0.0)

    return tuple(t for t in ts if own(t) < vmax) or ts[-1:]


def _imports() -> Any:
    # model.py imports this module lazily; import its helpers here to avoid a cycle
    from spiralpir.optimizer import model

    return model


def evaluate_variant(s: Any, records: int, record_size: int, options: Any, profile: Any) -> Any:
    """Exact metrics of all gadget combinations of structure `s` for options.variant
    (vectorized; the same formulas as noise.py/cost.py/sizes.py for that variant)."""
    m = _imports()
    variant = options.variant
    stream, pack = is_stream(variant), is_pack(variant)
    ring = s.ring
    d, qb, q = ring.poly_len, ring.q_bits, float(ring.modulus.q)
    n, pb, nu1, nu2, inst = s.n, s.pb, s.nu_1, s.nu_2, s.instances
    nc = 1 if pack else n
    p = float(1 << pb)
    q1 = 4.0 * p
    sigma2 = options.noise_width**2 / (2 * math.pi)
    vs = m.secret_var(options, d)
    a = float(1 << nu1)
    e_d = db_coeff_sq(1 << pb)
    coeffs = inst * n * n * d
    vmax = m._vmax(coeffs, options.correctness_log2)
    qi = ring.modulus.q
    allowed = m._allowed(d, qi, sigma2, nc, nu1, nu2, (q1 / q) ** 2, e_d, vmax)
    if stream:
        tc = allowed[2]
        if noise.direct_first(variant, n):  # t_conv no longer enters the first dimension
            tc = _direct_conv_lengths(d, qi, sigma2, nc, n, nu2, pack, (q1 / q) ** 2, vmax)
        # expansion gadgets unused; with ν2 = 0 there are no GSW digits, so t_gsw changes
        # nothing: keep one (the shortest) instead of exact ties the search breaks arbitrarily
        allowed = ((1,), (1,), tc, allowed[3][:1] if nu2 == 0 else allowed[3])
    g = m._grid(d, qi, sigma2, allowed)

    # --- noise (noise.py) ---
    digits = nu2 * g.tg
    big_r = 1 + m._ceil_log2_arr(digits)
    rounds = np.maximum(nu1 + 1, big_r)
    v_fold = noise.chain(variant, d, qi, sigma2, vs, n, nu1, nu2, p, g.tl, g.tr, g.tc,
                         g.tg).v_fail  # pack: after packing; FAILURE_MARGIN included
    big_a = (q1 / q) ** 2 * v_fold
    slack = vmax - big_a
    bits_tab, q2_tab = m._q2_table(d)
    ok_tab = (q2_tab > q1) & (q2_tab < q) & (q2_tab > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(slack > 0, q1 * np.sqrt(d * vs / 12.0 / np.maximum(slack, 1e-300)),
                        np.inf)
    q2b = np.full(need.shape, 0, dtype=np.int64)
    for b, v, ok in zip(bits_tab[::-1], q2_tab[::-1], ok_tab[::-1], strict=True):
        if ok:
            q2b = np.where(v >= need, b, q2b)
    log2d = m.ceil_log2(d)
    # the runtime keeps vanilla's layout limits for every variant (FORMATS.md §7)
    feasible = (q2b > 0) & (rounds <= log2d) & (2 * digits <= d)

    # --- sizes (sizes.py) ---
    exp_polys = (rounds - 1) * g.tl + big_r * g.tr
    pp_polys = (0 if stream else exp_polys) + (nc * nc + 2 * nc) * g.tc + \
        (n * n * g.tc if pack else 0)
    params_bytes = 64 + -(-(pp_polys * d * qb) // 8)
    response = 32 + -(-(inst * d * (n * q2b + n * n * (pb + 2))) // 8)
    if stream:
        query = 64 + -(-((int(a) + digits) * d * qb) // 8)
    else:
        query = 64 + -(-(d * qb) // 8)

    return m.finish_evaluation(s, g, feasible, q2b, params_bytes, response, query, options,
                               profile)


def lower_bounds_variant(s: Any, options: Any, profile: Any) -> tuple[float, bool]:
    """(objective lower bound, possibly-correct) of a structure for a non-vanilla variant,
    valid for every gadget choice (each term at its smallest value)."""
    m = _imports()
    from spiralpir.optimizer.search import _ring_minima

    variant = options.variant
    stream, pack = is_stream(variant), is_pack(variant)
    ring = s.ring
    d, qb, q = ring.poly_len, ring.q_bits, float(ring.modulus.q)
    n, pb, nu1, nu2, inst = s.n, s.pb, s.nu_1, s.nu_2, s.instances
    nc = 1 if pack else n
    p = float(1 << pb)
    q1 = 4.0 * p
    sigma2 = options.noise_width**2 / (2 * math.pi)
    ks_min, fold_min, t_min = _ring_minima(d, ring.modulus.q, sigma2)
    a = float(1 << nu1)
    v_left = sigma2 if stream else 2.0 * a * sigma2 + a * ks_min + (a - 1.0) * ks_min
    e_d = db_coeff_sq(1 << pb)
    ks_first = 0.0 if noise.direct_first(variant, n) else nc * ks_min  # ScalToMat (or none)
    v_fd = a * d * e_d * (v_left + ks_first)
    v_fold_min = v_fd + nu2 * fold_min * (sigma2 + nc * ks_min)
    if pack:
        v_fold_min += n * ks_min
    vmax = m._vmax(inst * n * n * d, options.correctness_log2)
    possible = (q1 / q) ** 2 * v_fold_min < vmax
    one_time, per_db = m.time_lower_bound(variant, s, t_min, profile)  # gadgets at t_min
    bits_tab, q2_tab = m._q2_table(d)
    ok = [int(b) for b, v in zip(bits_tab, q2_tab, strict=True) if q1 < v < q]
    if not ok:
        return math.inf, False
    resp = 32 + -(-(inst * d * (n * ok[0] + n * n * (pb + 2))) // 8)
    query = 64 + ((int(a) + nu2 * int(t_min)) if stream else 1) * d * qb // 8  # d·qb % 8 == 0
    if resp > options.max_response_bytes or query > options.max_query_bytes:
        return math.inf, False
    return float(m.objective_value(options, one_time, per_db, resp, query)), possible
