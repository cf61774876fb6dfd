"""One vectorised evaluator for every variant: the exact metrics of all gadget combinations of
a structure (plan/space.py), and the objective.

The noise and size formulas are those of models/noise.py and params/sizes.py written over
numpy arrays (a test checks them against the scalar modules on random candidates); the time is
models/cost.py's own (array-capable) formula. What changes per variant
(params/variants.py, runtime/FORMATS.md §7):

* stream (stream, stream_pack): no query expansion. The client uploads the 2^ν1 first-dimension
  and the ν2·t_gsw GSW-digit scalar Regev ciphertexts (fresh: noise σ²), so
  v_left = v_right = σ²; no expansion time; public params = conversion keys (+ packing keys);
  query = 2^ν1 + ν2·t_gsw polynomials. t_exp_left/t_exp_right are unused (fixed to the
  shortest length, 1). With a 1×1 computation matrix (stream_pack, stream with n = 1:
  noise.direct_first) the first-dimension cts are encrypted under the computation secret.
* every 1×1 computation (n = 1, and the pack variants): ScalToMat is the identity
  (noise.scal_to_mat_keys), so t_conv only enters through RegevToGSW (folding) and packing,
  and its admissible lengths are filtered on those terms (`_direct_conv_lengths`); the public
  params hold no ScalToMat key.
* pack (pack, stream_pack): the server computes with n_comp = 1 over n² sub-databases
  (instances·n² computation instances), then packs the n² scalar responses of each instance
  into one (n+1)×n matrix Regev ciphertext: n key switches of t_conv digits per packed entry
  add n·v_ks(t_conv) to the final variance; packing costs, per instance,
  ntt n²(t_conv+1)L, decomp n²·t_conv·d, mac (n+1)·n²·t_conv·L·d (booked in the runtime's
  `modswitch` stage); public params add n²·t_conv polynomials. The response is vanilla's for n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from spiralpir.optimizer.models import noise
from spiralpir.optimizer.models.cost import (
    Profile,
    db_bytes,
    op_counts,
    query_bytes,
    seconds_of_counts,
    split_seconds,
)
from spiralpir.optimizer.models.noise import max_gaussian_variance
from spiralpir.optimizer.params.parameters import Q2_BITS_RANGE, ceil_log2
from spiralpir.optimizer.params.primes import find_q2
from spiralpir.optimizer.params.variants import is_pack, is_stream
from spiralpir.optimizer.plan.ranking import tie_order
from spiralpir.optimizer.plan.space import (
    EPS,
    STREAM_TIE_WEIGHT,
    Options,
    Structure,
    gadget_lengths,
    secret_var,
)


@cache
def _vmax(coeffs: int, target: float) -> float:
    return max_gaussian_variance(coeffs, target, EPS)


@cache
def _q2_table(d: int) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = Q2_BITS_RANGE
    bits = np.arange(lo, hi + 1)
    vals = np.array([find_q2(int(b), d) for b in bits], dtype=np.float64)
    return bits, vals


@dataclass
class Grid:
    """All gadget combinations of one ring, as flat arrays (built once per ring)."""

    tl: np.ndarray
    tr: np.ndarray
    tc: np.ndarray
    tg: np.ndarray
    ks_l: np.ndarray
    ks_r: np.ndarray
    ks_c: np.ndarray
    conv_top: np.ndarray  # 2·t_conv·d·E[x_conv²]·σ²
    eg: np.ndarray  # E[x_gsw²]


@cache
def _grid(d: int, q: int, sigma2: float,
          allowed: tuple[tuple[int, ...], ...] | None = None) -> Grid:
    """The gadget table (t_exp_left × t_exp_right × t_conv × t_gsw) of the ring with modulus q;
    `allowed` restricts each dimension (default: every shortest-per-base length)."""
    ts = gadget_lengths(q.bit_length())
    dims = allowed if allowed is not None else (ts, ts, ts, ts)
    tl, tr, tc, tg = (a.ravel() for a in np.meshgrid(*(np.array(x) for x in dims),
                                                     indexing="ij"))

    def ks(t: np.ndarray) -> np.ndarray:
        return noise.keyswitch_variance(t, q, d, sigma2)

    return Grid(
        tl=tl, tr=tr, tc=tc, tg=tg, ks_l=ks(tl), ks_r=ks(tr), ks_c=ks(tc),
        conv_top=2.0 * ks(tc),
        eg=noise.digit_moments(tg, q)[0] / tg,  # mean E[x²] per GSW digit
    )


@cache
def _allowed(d: int, q: int, sigma2: float, n: int, nu1: int, nu2: int, qq: float,
             e_d: float, vmax: float, rows: int, pack_n: int = 0
             ) -> tuple[tuple[int, ...], ...]:
    """Per gadget dimension, the lengths whose OWN noise term stays below the budget.

    Every term of the final Gaussian variance is non-negative, so a length whose single term
    (its first-dimension share for t_exp_left/t_exp_right/t_conv — at n = 1 t_conv's own
    terms are RegevToGSW's and packing's instead, `_direct_conv_lengths` —, its folding share
    with every other factor at its minimum for t_gsw) already exceeds `vmax` can never be
    correct; dropping it is exact. n: the computation's; qq = (q1/q)²; rows: the stored rows
    (the first dimension's summands); pack_n: the pack variants' response n (else 0).
    """
    ts = gadget_lengths(q.bit_length())
    a = float(1 << nu1)
    c_fd = qq * rows * d * e_d

    def ks(t: int) -> float:
        return float(noise.keyswitch_variance(t, q, d, sigma2))

    tl = tuple(t for t in ts if c_fd * (a - 1.0) * ks(t) < vmax) or ts[-1:]
    tr = tuple(t for t in ts if c_fd * a * ks(t) < vmax) or ts[-1:]
    if n == 1:  # ScalToMat the identity: t_conv does not enter the first dimension
        tc = _direct_conv_lengths(d, q, sigma2, nu2, pack_n, qq, vmax)
    else:
        tc = tuple(t for t in ts if c_fd * n * ks(t) < vmax) or ts[-1:]
    rest_min = sigma2 + n * min(ks(t) for t in ts)  # v_top + v_right + n·ks_c ≥ this
    tg = tuple(t for t in ts if qq * nu2 * d * noise.digit_moments(t, q)[0] * rest_min < vmax) \
        or ts[-1:]
    return (tl, tr, tc, tg)


def _ceil_log2_arr(x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    m = x > 1
    out[m] = np.ceil(np.log2(x[m].astype(np.float64))).astype(x.dtype)
    return out


@dataclass
class Evaluation:
    """Metrics of every gadget combination of one structure (arrays aligned with the grid)."""

    structure: Structure
    grid: Grid
    feasible: np.ndarray
    q2_bits: np.ndarray
    seconds: np.ndarray  # whole answer
    params_bytes: np.ndarray
    response_bytes: np.ndarray
    query_bytes: int
    objective: np.ndarray
    log2_failure_bound: float
    per_db_seconds: np.ndarray  # the streaming per-database part of `seconds`


def shape_scalars(s: Structure, options: Options) -> tuple[
        bool, bool, int, int, float, int, int, int, int, int, int, float, float, float]:
    """The scalars every evaluation of `s` starts from: (stream, pack, d, q bits, q, n, log2 p,
    nu_1, nu_2, instances, ciphertext columns, p, q1 = 4p, error variance)."""
    ring, pack = s.ring, is_pack(options.variant)
    p = float(1 << s.pb)
    return (is_stream(options.variant), pack, ring.poly_len, ring.q_bits, float(ring.modulus.q),
            s.n, s.pb, s.nu_1, s.nu_2, s.instances, 1 if pack else s.n, p, 4.0 * p,
            options.noise_width**2 / (2 * math.pi))


def evaluate(s: Structure, records: int, record_size: int, options: Options,
             profile: Profile) -> Evaluation:
    """Exact metrics of all gadget combinations of structure `s` for options.variant
    (vectorized; the same formulas as models/noise.py, models/cost.py, params/sizes.py)."""
    stream, pack, d, qb, q, n, pb, nu1, nu2, inst, nc, p, q1, sigma2 = shape_scalars(s, options)
    ring, variant = s.ring, options.variant
    vs = secret_var(options, d)
    a = float(1 << nu1)
    e_d = noise.db_coeff_sq(p)
    coeffs = inst * n * n * d
    vmax = _vmax(coeffs, options.correctness_log2)
    qi = ring.modulus.q
    allowed = _allowed(d, qi, sigma2, nc, nu1, nu2, (q1 / q) ** 2, e_d, vmax, s.rows,
                       n if pack else 0)
    if stream:
        # expansion gadgets unused; with ν2 = 0 there are no GSW digits, so t_gsw changes
        # nothing: keep one (the shortest) instead of exact ties the search breaks arbitrarily
        allowed = ((1,), (1,), allowed[2], allowed[3][:1] if nu2 == 0 else allowed[3])
    g = _grid(d, qi, sigma2, allowed)

    # --- noise (noise.chain: the scalar model's own formulas) ---
    digits = nu2 * g.tg
    buckets = options.query_buckets  # a packed query: the expansion schedule of G buckets
    big_r = 1 + _ceil_log2_arr(buckets * digits)
    rounds = np.maximum(nu1 + ceil_log2(buckets) + 1, big_r)
    v_fold = noise.chain(variant, d, qi, sigma2, vs, n, nu1, nu2, p, g.tl, g.tr, g.tc,
                         g.tg, buckets, s.rows).v_fail  # pack: after packing; margin included
    big_a = (q1 / q) ** 2 * v_fold
    slack = vmax - big_a
    bits_tab, q2_tab = _q2_table(d)
    ok_tab = (q2_tab > q1) & (q2_tab < q) & (q2_tab > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(slack > 0, q1 * np.sqrt(d * vs / 12.0 / np.maximum(slack, 1e-300)),
                        np.inf)
    # smallest admissible q2_bits with q2 >= need (q2 grows with bits)
    q2b = np.full(need.shape, 0, dtype=np.int64)
    for b, v, ok in zip(bits_tab[::-1], q2_tab[::-1], ok_tab[::-1], strict=True):
        if ok:
            q2b = np.where(v >= need, b, q2b)
    # runtime limits; the runtime keeps vanilla's layout limits for every variant
    log2d = ceil_log2(d)
    feasible = (q2b > 0) & (rounds <= log2d) & (2 * buckets * digits <= d) & (2 * buckets * a <= d)

    # --- sizes (params/sizes.py) ---
    exp_polys = (rounds - 1) * g.tl + big_r * g.tr
    s2m_polys = nc * nc if nc > 1 else 0  # ScalToMat keys (none at n = 1: sizes.pp_polys)
    pp_polys = (0 if stream else exp_polys) + (s2m_polys + 2 * nc) * g.tc + \
        (n * n * g.tc if pack else 0)
    params_bytes = 64 + -(-(pp_polys * d * qb) // 8)
    response = 32 + -(-(inst * d * (n * q2b + n * n * (pb + 2))) // 8)
    if stream:
        query = 64 + -(-((int(a) + digits) * d * qb) // 8)
    else:
        query = 64 + -(-(d * qb) // 8)

    return finish_evaluation(s, g, feasible, q2b, params_bytes, response, query, options,
                             profile)


def _direct_conv_lengths(d: int, q: int, sigma2: float, nu2: int, pack_n: int, qq: float,
                         vmax: float) -> tuple[int, ...]:
    """The t_conv lengths whose OWN noise terms stay below the budget when the computation's
    n is 1 (no ScalToMat, noise.scal_to_mat_keys): RegevToGSW's key switches reach the final
    variance through folding (each fold ≥ d·min_t E[g_t²]·2·v_ks(t_conv)), packing adds
    pack_n·v_ks(t_conv). Every other term is non-negative, so dropping a longer-failing length
    is exact (as `_allowed`)."""
    ts = gadget_lengths(q.bit_length())
    fold_min = min(d * noise.digit_moments(t, q)[0] for t in ts)

    def own(t: int) -> float:
        ks = float(noise.keyswitch_variance(t, q, d, sigma2))
        return qq * max(nu2 * fold_min * 2 * ks, pack_n * ks)

    return tuple(t for t in ts if own(t) < vmax) or ts[-1:]


def finish_evaluation(s: Structure, g: Grid, feasible: np.ndarray, q2b: np.ndarray,
                      params_bytes: np.ndarray, response: Any, query: Any, options: Options,
                      profile: Profile) -> Evaluation:
    """The time (models/cost.py), the caps and the objective of an evaluated structure (every
    variant)."""
    one_time, per_db = time_split(options.variant, s, g, profile, options.query_buckets)
    feasible = feasible & (params_bytes <= options.max_params_bytes) & (
        response <= options.max_response_bytes) & (query <= options.max_query_bytes)
    obj = objective_value(options, one_time, per_db, response, query)
    return Evaluation(s, g, feasible, q2b, one_time + per_db, params_bytes, response, query,
                      obj, options.correctness_log2, per_db)


def time_split(variant: str, s: Structure, g: Grid, profile: Profile, query_buckets: int = 1
               ) -> tuple[np.ndarray, np.ndarray]:
    """Predicted (one-time, per-database) server seconds of every gadget combination
    (models/cost.py's one formula; the whole answer is their sum)."""
    ring = s.ring
    d, L = ring.poly_len, len(ring.modulus.moduli)
    counts = op_counts(variant, d, L, s.n, s.nu_1, s.nu_2, s.instances, g.tl, g.tr, g.tc, g.tg,
                       query_buckets, s.rows)
    secs = seconds_of_counts(counts, d, profile,
                             db_bytes(d, L, s.n, s.nu_1, s.nu_2, s.instances, s.rows),
                             query=query_bytes(variant, d, L, s.n, s.nu_1))
    one_time, per_db = split_seconds(secs)
    shape = np.broadcast(g.tl, g.tr, g.tc, g.tg).shape
    return (np.broadcast_to(np.asarray(one_time, dtype=np.float64), shape),
            np.broadcast_to(np.asarray(per_db, dtype=np.float64), shape))


_LB_CACHE: dict[tuple[Any, ...], tuple[Profile, tuple[float, float]]] = {}


def time_lower_bound(variant: str, s: Structure, t_min: int, profile: Profile,
                     query_buckets: int = 1, mins: tuple[int, int, int, int] | None = None
                     ) -> tuple[float, float]:
    """(one-time, per-database) server seconds with every gadget length at t_min: lower bounds
    over the grid (each stage's time is non-decreasing in every gadget length). Memoized: the
    search asks for many structures that differ only in p (the time depends on it only
    through the stored rows). mins: per gadget (t_exp_left, t_exp_right, t_conv, t_gsw) the
    smallest length the structure admits, when known (else t_min for each)."""
    ring = s.ring
    ts = mins if mins is not None else (t_min,) * 4
    key = (id(profile), variant, ring.poly_len, len(ring.modulus.moduli), s.n, s.nu_1, s.nu_2,
           s.instances, ts, query_buckets, s.rows)
    hit = _LB_CACHE.get(key)
    if hit is not None and hit[0] is profile:
        return hit[1]
    g = Grid(*(np.array([t]) for t in ts), *(np.zeros(1) for _ in range(5)))
    one_time, per_db = time_split(variant, s, g, profile, query_buckets)
    value = (float(one_time[0]), float(per_db[0]))
    if len(_LB_CACHE) > 100_000:
        _LB_CACHE.clear()
    _LB_CACHE[key] = (profile, value)  # holds the profile: its id is not reused meanwhile
    return value


def one_time_weight(options: Options) -> float:
    """Objective `stream`: the weight of the one-time seconds (1/blocks; a tie-break when the
    blocks are unbounded)."""
    return 1.0 / options.blocks if math.isfinite(options.blocks) else STREAM_TIE_WEIGHT


def objective_value(options: Options, one_time: Any, per_db: Any, response: Any,
                    query: Any) -> Any:
    """The objective of candidates (arrays or scalars) from their one-time and per-database
    server seconds and their response and query bytes."""
    if options.objective == "stream":
        return per_db + one_time * one_time_weight(options)
    seconds = one_time + per_db
    if options.objective == "dollars":
        return options.prices.dollars(seconds, response)
    if options.objective == "time":
        return seconds * 1.0
    if options.objective == "response":
        return response * 1.0
    return (response + query) * 1.0


def literal(s: Structure, ev: Evaluation, idx: int, records: int, record_size: int,
            options: Options) -> dict[str, Any]:
    """The parameter literal of gadget combination `idx` of an evaluated structure."""
    ring = s.ring
    return {
        "variant": options.variant,
        "poly_len": ring.poly_len,
        "moduli": list(ring.modulus.moduli),
        "noise_width": options.noise_width,
        "secret_distribution": options.secret_distribution,
        "n": s.n,
        "nu_1": s.nu_1,
        "nu_2": s.nu_2,
        "p": 1 << s.pb,
        "q2_bits": int(ev.q2_bits[idx]),
        "t_gsw": int(ev.grid.tg[idx]),
        "t_conv": int(ev.grid.tc[idx]),
        "t_exp_left": int(ev.grid.tl[idx]),
        "t_exp_right": int(ev.grid.tr[idx]),
        "instances": s.instances,
        "db_item_size": record_size,
        "records": records,
        "record_size": record_size,
        **({"query_buckets": options.query_buckets} if options.query_buckets != 1 else {}),
    }


@dataclass(frozen=True)
class Row:
    """One candidate: a structure with one gadget choice, its literal and its metrics."""

    objective: float
    literal: dict[str, Any]
    seconds: float
    params_bytes: int
    response_bytes: int
    query_bytes: int
    security_bits: float


def best_rows(s: Structure, ev: Evaluation, count: int, records: int, record_size: int,
              options: Options, limit: float | None = None) -> list[Row]:
    """The `count` best feasible gadget choices of an evaluated structure: by the objective
    (ascending), or with `limit`, those whose objective is at most `limit` by the tie key
    (plan/ranking.py). [] if none is feasible."""
    if limit is None:
        idx = np.flatnonzero(ev.feasible)
        order = idx[np.argsort(ev.objective[idx], kind="stable")[:count]]
    else:
        idx = np.flatnonzero(ev.feasible & (ev.objective <= limit))
        traffic = np.broadcast_to(ev.response_bytes + ev.query_bytes, ev.objective.shape)
        order = idx[tie_order(options.objective, ev.seconds[idx], traffic[idx],
                              ev.params_bytes[idx], ev.objective[idx])[:count]]
    return [Row(
        objective=float(ev.objective[i]),
        literal=literal(s, ev, int(i), records, record_size, options),
        seconds=float(ev.seconds[i]),
        params_bytes=int(ev.params_bytes[i]),
        response_bytes=int(ev.response_bytes[i]),
        query_bytes=int(np.ravel(ev.query_bytes)[i] if np.ndim(ev.query_bytes)
                        else ev.query_bytes),  # per row for the stream variants
        security_bits=s.ring.security_bits,
    ) for i in order]

