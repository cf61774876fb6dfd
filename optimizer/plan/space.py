"""The search space: what the user asks for (`Options`), the rings and the structures.

Shared by the Z3 search (plan/search.py) and the exhaustive oracle (plan/oracle.py), so both
optimize the SAME model. A candidate is

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
(query, public params, response bytes, preprocessed database bytes per record byte; the
stream variants' query, which grows with 2^ν1, is capped at the SPIRAL paper's 33 MB unless the
user gives --max-query-bytes). Objectives:
dollars | time | response | traffic | stream.

`stream` is the streaming setting's (one query prepared once, then answered against a sequence
of databases; the runtime does this for every variant): it minimises the per-database server
seconds (cost.PER_DATABASE_STAGES: first dimension as max(compute, preprocessed bytes / read
bandwidth), folding, packing, modulus switching) plus the one-time part (cost.ONE_TIME_STAGES:
query parse/expansion, conversion) divided by options.blocks, the databases answered per
prepared query. With blocks unbounded (the default) the one-time part only breaks ties
(weight STREAM_TIE_WEIGHT: among plans of equal per-database time, the cheaper preparation).

plan/evaluate.py evaluates candidates of this space exactly; plan/bounds.py bounds them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.cost import Prices, Profile
from spiralpir.optimizer.models.noise import CORRECTNESS_LOG2
from spiralpir.optimizer.models.security import SecurityFn, estimator_security
from spiralpir.optimizer.params.parameters import (
    MAX_LOG2_P,
    MAX_NU_2,
    Q2_BITS_RANGE,
    ceil_log2,
    layout,
    rows_stored,
)
from spiralpir.optimizer.params.primes import Modulus, find_q2, lazy_terms, modulus_table
from spiralpir.optimizer.params.sizes import HEADER_BYTES, preprocessed_bytes
from spiralpir.optimizer.params.variants import VARIANTS, is_stream

OBJECTIVES = ("dollars", "time", "response", "traffic", "stream")
# objective `stream` with unbounded --blocks: the one-time seconds' weight (a tie-break only:
# one-time parts are below 2^10 s, so this moves the objective by less than 2^-30 s)
STREAM_TIE_WEIGHT = 2.0**-40
STREAM_MAX_QUERY_BYTES = 33e6  # SpiralStream's query cap in the SPIRAL paper (33 MB)
EPS = 2.0**-8  # Δ-offset allowance in the decoding threshold (model requires 4p²/q ≤ EPS)


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
    max_db_ratio: float = math.inf  # preprocessed database bytes per record byte (no header)
    max_db_bytes: float = math.inf  # preprocessed database bytes (its file, header included)
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
    query_buckets: int = 1  # buckets one query packs (batch builds): expansion shared by them

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
        for cap, unit in (("max_db_ratio", "preprocessed database bytes per record byte"),
                          ("max_db_bytes", "preprocessed database bytes")):
            if not getattr(self, cap) > 0:  # also rejects NaN
                raise SpiralpirError(f"{cap} must be > 0 ({unit}), got {getattr(self, cap)!r}")
        if self.variant not in VARIANTS:
            raise SpiralpirError(f"variant must be spiral, stream, pack or stream_pack, "
                                 f"got {self.variant!r}")
        if is_stream(self.variant) and math.isinf(self.max_query_bytes):
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
    rows: int  # stored first-dimension rows (params.rows_stored)


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
            inst, per, _ = layout(record_size, n, p, d)
            pts = -(-records // per)
            total = max(1, ceil_log2(pts))
            log2d = ceil_log2(d)
            for nu1 in range(1, min(total, log2d - 1) + 1):
                nu2 = total - nu1
                if nu2 > MAX_NU_2 or nu1 + 1 > log2d or 2 * (1 << nu1) > d:
                    continue
                rows = rows_stored(records, per, nu1, nu2)
                db_bytes = preprocessed_bytes(inst, rows << nu2, n, d, len(ring.modulus.moduli))
                if db_bytes - HEADER_BYTES > options.max_db_ratio * records * record_size:
                    continue  # the user's density cap (the file's fixed header aside)
                if db_bytes > options.max_db_bytes:
                    continue  # the memory the server may keep it in
                out.append(Structure(ring, n, pb, nu1, nu2, inst, per, rows))
    return out


def default_profile(options: Options) -> Profile:
    return options.profile if options.profile is not None else Profile.load()
