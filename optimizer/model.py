"""The optimization model: variables, domains, constraints and objectives, evaluated in bulk.

Owns the search space and the exact (vectorized) evaluation of every candidate, shared by the
Z3 search (`search.py`) and the exhaustive oracle (`enumerate.py`), so both optimize the SAME
model. A candidate is

* a ring: poly_len d ∈ options.poly_lens, a modulus q from `primes.modulus_table(d)`: for
  each number of CRT primes (1..3), the `moduli_per_size` largest secure moduli (estimator
  table, ≥ min_security) at least `modulus_step` bits apart (or the user's moduli);
* a structure: n ∈ 1..n_max, p = 2^pb (pb ∈ 1..30, runtime bound), ν1 (ν2 = T − ν1 where
  T = max(1, ceil(log2(#plaintexts))) is the smallest hypercube that holds the records:
  a larger one only adds work and noise); the item layout (instances, items per plaintext)
  follows from (n, p, d) and the record size (params.layout);
* gadget lengths t_gsw, t_conv, t_exp_left, t_exp_right, each the shortest length of its base
  (t = ceil(q_bits/b)): a longer t with the same base only costs more;
* q2_bits: the smallest value in [14, 32] (q1 < q2 < q) meeting the correctness constraint
  given everything else (every objective and cap prefers a smaller q2).

Constraints: correctness (log2 failure ≤ options.correctness_log2, noise.py), security
(≥ min_security bits), runtime limits (params.Parameters' bounds: lazy_terms ≥ n for the
first-dimension kernel, rounds ≤ log2 d,
2·2^ν1 ≤ d, 2·ν2·t_gsw ≤ d, ν2 ≤ 20, modulus-switch offset 4p²/q ≤ 2^-8), user caps
(query, public params, response bytes; the stream variants' query, which grows with 2^ν1, is
capped at the SPIRAL paper's 33 MB unless the user gives --max-query-bytes). Objectives:
dollars | time | response | traffic | stream.

`stream` is the streaming setting's (one query prepared once, then answered against a sequence
of databases; the runtime does this for every variant): it minimises the per-database server
seconds (cost.PER_DATABASE_STAGES: first dimension as max(compute, preprocessed bytes / read
bandwidth), folding, packing, modulus switching) plus the one-time part (cost.ONE_TIME_STAGES:
query parse/expansion, conversion) divided by options.blocks, the databases answered per
prepared query. With blocks unbounded (the default) the one-time part only breaks ties
(weight STREAM_TIE_WEIGHT: among plans of equal per-database time, the cheaper preparation).

The noise and size formulas are those of noise.py and sizes.py written over numpy arrays (a
test checks them against the scalar modules on random candidates); the time is cost.py's own
(array-capable) formula.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

import numpy as np
from spiralpir.optimizer import noise
from spiralpir.optimizer.cost import (
    Prices,
    Profile,
    db_bytes,
    op_counts,
    seconds_of_counts,
    split_seconds,
)
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.noise import CORRECTNESS_LOG2, max_gaussian_variance
from spiralpir.optimizer.params import MAX_LOG2_P, MAX_NU_2, Q2_BITS_RANGE, ceil_log2
from spiralpir.optimizer.primes import Modulus, find_q2, lazy_terms, modulus_table

OBJECTIVES = ("dollars", "time", "response", "traffic", "stream")
# objective `stream` with unbounded --blocks: the one-time seconds' weight (a tie-break only:
# one-time parts are below 2^10 s, so this moves the objective by less than 2^-30 s)
STREAM_TIE_WEIGHT = 2.0**-40
STREAM_MAX_QUERY_BYTES = 33e6  # SpiralStream's query cap in the SPIRAL paper (33 MB)
EPS = 2.0**-8  # Δ-offset allowance in the decoding threshold (model requires 4p²/q ≤ EPS)

SecurityFn = Callable[[int, float, float, str], float]


def estimator_security(poly_len: int, log2_q: float, noise_width: float, secret: str) -> float:
    """Security bits from E's cached table (spiralpir.estimator.table.security_bits_fast)."""
    return _estimator_security(poly_len, round(log2_q, 6), noise_width, secret)


@lru_cache(maxsize=4096)
def _estimator_security(poly_len: int, log2_q: float, noise_width: float, secret: str) -> float:
    try:
        from spiralpir.estimator.table import security_bits_fast
    except ImportError as exc:  # pragma: no cover - the estimator ships with spiralpir
        raise SpiralpirError(f"the security estimator is not available: {exc}") from exc
    try:
        return float(security_bits_fast(poly_len, log2_q, noise_width, secret))
    except (ValueError, ArithmeticError) as exc:
        raise SpiralpirError(f"security estimate failed for d={poly_len}, log2 q={log2_q:.2f}: "
                             f"{exc}") from exc


def secret_for_estimator(secret_distribution: str) -> str:
    return secret_distribution


@dataclass(frozen=True)
class Options:
    """What the user asks for (plan's options)."""

    objective: str = "dollars"
    variant: str = "spiral"
    blocks: float = math.inf  # objective stream: databases answered per prepared query
    min_security: float = 128.0
    max_query_bytes: float = math.inf
    max_params_bytes: float = math.inf
    max_response_bytes: float = math.inf
    correctness_log2: float = CORRECTNESS_LOG2
    poly_lens: tuple[int, ...] = (1024, 2048, 4096)
    noise_width: float = 6.4
    secret_distribution: str = "gaussian"
    n_max: int = 4
    modulus_step: int = 4  # moduli considered: the largest secure ones, this many bits apart
    moduli_per_size: int = 3  # ... at most this many per number of CRT primes
    moduli: tuple[tuple[int, ...], ...] | None = None  # force these moduli (e.g. the paper's)
    prices: Prices = field(default_factory=Prices)
    profile: Profile | None = None
    security: SecurityFn | None = None  # default: estimator_security

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise SpiralpirError(f"--objective must be one of {', '.join(OBJECTIVES)}, "
                                 f"got {self.objective!r}")
        if not self.blocks >= 1:  # also rejects NaN
            raise SpiralpirError(f"--blocks must be at least 1, got {self.blocks!r}")
        if math.isfinite(self.blocks) and self.objective != "stream":
            raise SpiralpirError(f"--blocks applies to --objective stream only (the one-time "
                                 f"part it amortises is not separated under --objective "
                                 f"{self.objective})")
        if self.variant not in ("spiral", "stream", "pack", "stream_pack"):
            raise SpiralpirError(f"variant must be spiral, stream, pack or stream_pack, "
                                 f"got {self.variant!r}")
        if self.variant in ("stream", "stream_pack") and math.isinf(self.max_query_bytes):
            # the stream query grows with 2^nu_1: without a user cap, the SPIRAL paper's 33 MB
            object.__setattr__(self, "max_query_bytes", STREAM_MAX_QUERY_BYTES)


@dataclass(frozen=True)
class Ring:
    poly_len: int
    modulus: Modulus
    security_bits: float

    @property
    def q_bits(self) -> int:
        return self.modulus.q_bits


def gadget_lengths(q_bits: int) -> tuple[int, ...]:
    """The shortest gadget length of every base 2^b, b = 1..q_bits (ascending)."""
    return tuple(sorted({-(-q_bits // b) for b in range(1, q_bits + 1)}))


def rings(options: Options) -> list[Ring]:
    sec = options.security or estimator_security
    out: list[Ring] = []
    for d in options.poly_lens:
        if options.moduli is not None:
            mods = [Modulus(d, tuple(m)) for m in options.moduli
                    if all(x % (2 * d) == 1 for x in m)]
            for m in mods:
                bits = sec(d, m.log2_q, options.noise_width, options.secret_distribution)
                if bits >= options.min_security:
                    out.append(Ring(d, m, bits))
            continue
        # security falls as q grows: bisect the (sorted) table for the secure prefix
        table = sorted(modulus_table(d), key=lambda m: m.q)

        def secure(m: Modulus, d: int = d) -> float:
            return sec(d, m.log2_q, options.noise_width, options.secret_distribution)

        lo, hi = 0, len(table)  # table[:lo] secure, table[hi:] insecure
        while lo < hi:
            mid = (lo + hi) // 2
            if secure(table[mid]) >= options.min_security:
                lo = mid + 1
            else:
                hi = mid
        # per number of CRT primes: the largest secure moduli, `modulus_step` bits apart
        for count in (1, 2, 3):
            mine = sorted((m for m in table[:lo] if len(m.moduli) == count), key=lambda m: -m.q)
            last = math.inf
            taken = 0
            for m in mine:
                if m.log2_q <= last - options.modulus_step + 1e-9 and \
                        taken < options.moduli_per_size:
                    bits = secure(m)
                    if bits >= options.min_security:
                        out.append(Ring(d, m, bits))
                        last = m.log2_q
                        taken += 1
    return out


@cache
def _vmax(coeffs: int, target: float) -> float:
    return max_gaussian_variance(coeffs, target, EPS)


@cache
def _q2_table(d: int) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = Q2_BITS_RANGE
    bits = np.arange(lo, hi + 1)
    vals = np.array([find_q2(int(b), d) for b in bits], dtype=np.float64)
    return bits, vals


def secret_var(options: Options, d: int) -> float:
    s2 = options.noise_width**2 / (2 * math.pi)
    sd = options.secret_distribution
    if sd == "gaussian":
        return s2
    if sd == "ternary":
        return 2.0 / 3.0
    plus, minus = (int(x) for x in sd.split(":", 1)[1].split(","))
    return (plus + minus) / d


@dataclass(frozen=True)
class Structure:
    ring: Ring
    n: int
    pb: int
    nu_1: int
    nu_2: int
    instances: int
    items_per_pt: int


def structures(records: int, record_size: int, ring: Ring, options: Options) -> list[Structure]:
    d = ring.poly_len
    out: list[Structure] = []
    lazy = lazy_terms(ring.modulus.moduli)
    for n in range(1, min(options.n_max, lazy) + 1):
        for pb in range(1, MAX_LOG2_P + 1):
            p = 1 << pb
            if 4 * p * p > ring.modulus.q * 2.0**-8:
                continue  # modulus-switch offset bound
            if 4 * p >= find_q2(Q2_BITS_RANGE[1], d):
                continue  # q1 < q2 impossible
            if p // 2 >= min(ring.modulus.moduli):
                continue  # runtime: p/2 below every CRT prime (centred database residues)
            pt_bits = n * n * d * pb
            item_bits = 8 * record_size
            if item_bits <= pt_bits:
                inst, per = 1, pt_bits // item_bits
            else:
                inst, per = -(-item_bits // pt_bits), 1
            pts = -(-records // per)
            total = max(1, ceil_log2(pts))
            log2d = ceil_log2(d)
            for nu1 in range(1, min(total, log2d - 1) + 1):
                nu2 = total - nu1
                if nu2 > MAX_NU_2 or nu1 + 1 > log2d or 2 * (1 << nu1) > d:
                    continue
                out.append(Structure(ring, n, pb, nu1, nu2, inst, per))
    return out


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
             e_d: float, vmax: float) -> tuple[tuple[int, ...], ...]:
    """Per gadget dimension, the lengths whose OWN noise term stays below the budget.

    Every term of the final Gaussian variance is non-negative, so a length whose single term
    (its first-dimension share for t_exp_left/t_exp_right/t_conv, its folding share with every
    other factor at its minimum for t_gsw) already exceeds `vmax` can never be correct;
    dropping it is exact. qq = (q1/q)².
    """
    ts = gadget_lengths(q.bit_length())
    a = float(1 << nu1)
    c_fd = qq * a * d * e_d

    def ks(t: int) -> float:
        return float(noise.keyswitch_variance(t, q, d, sigma2))

    tl = tuple(t for t in ts if c_fd * (a - 1.0) * ks(t) < vmax) or ts[-1:]
    tr = tuple(t for t in ts if c_fd * a * ks(t) < vmax) or ts[-1:]
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


def evaluate(s: Structure, records: int, record_size: int, options: Options,
             profile: Profile) -> Evaluation:
    """Exact metrics of all gadget combinations of structure `s` (vectorized)."""
    if options.variant != "spiral":  # SpiralStream / SpiralPack / SpiralStreamPack
        from spiralpir.optimizer.variants import evaluate_variant

        return evaluate_variant(s, records, record_size, options, profile)
    ring = s.ring
    d, qb, q = ring.poly_len, ring.q_bits, float(ring.modulus.q)
    n, pb, nu1, nu2, inst = s.n, s.pb, s.nu_1, s.nu_2, s.instances
    p = float(1 << pb)
    q1 = 4.0 * p
    sigma2 = options.noise_width**2 / (2 * math.pi)
    vs = secret_var(options, d)
    e_d = noise.db_coeff_sq(p)
    coeffs = inst * n * n * d
    vmax = _vmax(coeffs, options.correctness_log2)
    qi = ring.modulus.q
    g = _grid(d, qi, sigma2, _allowed(d, qi, sigma2, n, nu1, nu2, (q1 / q) ** 2, e_d, vmax))

    # --- noise (noise.chain: the scalar model's own formulas) ---
    digits = nu2 * g.tg
    big_r = 1 + _ceil_log2_arr(digits)
    rounds = np.maximum(nu1 + 1, big_r)
    v_fold = noise.chain("spiral", d, qi, sigma2, vs, n, nu1, nu2, p, g.tl, g.tr, g.tc,
                         g.tg).v_fail  # FAILURE_MARGIN included (noise.py)
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
    # runtime limits
    log2d = ceil_log2(d)
    feasible = (q2b > 0) & (rounds <= log2d) & (2 * digits <= d)

    # --- sizes (sizes.py) ---
    pp_polys = (rounds - 1) * g.tl + big_r * g.tr + (n * n + 2 * n) * g.tc
    params_bytes = 64 + -(-(pp_polys * d * qb) // 8)
    response = 32 + -(-(inst * d * (n * q2b + n * n * (pb + 2))) // 8)
    query = 64 + -(-(d * qb) // 8)

    return finish_evaluation(s, g, feasible, q2b, params_bytes, response, query, options,
                             profile)


def finish_evaluation(s: Structure, g: Grid, feasible: np.ndarray, q2b: np.ndarray,
                      params_bytes: np.ndarray, response: Any, query: Any, options: Options,
                      profile: Profile) -> Evaluation:
    """The time (cost.py), the caps and the objective of an evaluated structure (every
    variant)."""
    one_time, per_db = time_split(options.variant, s, g, profile)
    feasible = feasible & (params_bytes <= options.max_params_bytes) & (
        response <= options.max_response_bytes) & (query <= options.max_query_bytes)
    obj = objective_value(options, one_time, per_db, response, query)
    return Evaluation(s, g, feasible, q2b, one_time + per_db, params_bytes, response, query,
                      obj, options.correctness_log2, per_db)


def time_split(variant: str, s: Structure, g: Grid, profile: Profile
               ) -> tuple[np.ndarray, np.ndarray]:
    """Predicted (one-time, per-database) server seconds of every gadget combination
    (cost.py's one formula; the whole answer is their sum)."""
    ring = s.ring
    d, L = ring.poly_len, len(ring.modulus.moduli)
    counts = op_counts(variant, d, L, s.n, s.nu_1, s.nu_2, s.instances, g.tl, g.tr, g.tc, g.tg)
    secs = seconds_of_counts(counts, d, profile, db_bytes(d, L, s.n, s.nu_1, s.nu_2, s.instances))
    one_time, per_db = split_seconds(secs)
    shape = np.broadcast(g.tl, g.tr, g.tc, g.tg).shape
    return (np.broadcast_to(np.asarray(one_time, dtype=np.float64), shape),
            np.broadcast_to(np.asarray(per_db, dtype=np.float64), shape))


_LB_CACHE: dict[tuple[Any, ...], tuple[Profile, tuple[float, float]]] = {}


def time_lower_bound(variant: str, s: Structure, t_min: int, profile: Profile
                     ) -> tuple[float, float]:
    """(one-time, per-database) server seconds with every gadget length at t_min: lower bounds
    over the grid (each stage's time is non-decreasing in every gadget length). Memoized: the
    search asks for many structures that differ only in p (the time does not depend on it)."""
    ring = s.ring
    key = (id(profile), variant, ring.poly_len, len(ring.modulus.moduli), s.n, s.nu_1, s.nu_2,
           s.instances, t_min)
    hit = _LB_CACHE.get(key)
    if hit is not None and hit[0] is profile:
        return hit[1]
    g = Grid(*(np.array([t_min]) for _ in range(4)), *(np.zeros(1) for _ in range(5)))
    one_time, per_db = time_split(variant, s, g, profile)
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
    }


def default_profile(options: Options) -> Profile:
    return options.profile if options.profile is not None else Profile.load()
