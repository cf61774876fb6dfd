"""Cost model: operation counts per server stage × per-operation costs from a machine profile.

Owns the operation counts of one SPIRAL answer (per stage, every variant) and their conversion
to seconds with a `Profile` (models/profile.py), written by `spiralpir calibrate` from
the runtime's own microbenchmarks and bench stage timings), and the dollar cost of a query as
in the SPIRAL paper: CPU-seconds × CPU price + response bytes × egress price.

ONE formula serves every caller: `op_counts` works on numpy arrays (the vectorized model in
plan/evaluate.py and the search's lower bounds) and on scalars (`stage_op_counts(params)`).

Operations (units):
  ntt     one forward or inverse NTT of one residue polynomial (cost per poly_len)
  mac     one modular multiply-add of one coefficient residue (NTT domain)
  decomp  one gadget digit of one coefficient residue (extract, lift), q < 2^64
  decomp_wide  the same for three or more CRT primes (q > 2^64: 128-bit digits)
  redecomp_wide  one gadget digit of one coefficient that the expansion's per-residue tasks
          extract again, with its 128-bit CRT composition, for each further residue (three or
          more primes: each residue's task decomposes the whole coefficient for its own digits)
  compose one coefficient of a polynomial to decompose, per squared residue count (CRT
          composition: L² work per coefficient; nothing to compose for one prime but the
          centring)
  compose_wide  one coefficient composed to 128 bits and centred before its wide digits (three
          or more primes: the scalar path's fixed cost per coefficient, whatever the gadget
          length t; the expansion's per-residue tasks compose every coefficient once each)
  auto    one automorphism-permuted / added coefficient residue
  parse   one query coefficient residue read (bit unpacking) and one sampled from its seed
  fd      one first-dimension multiply-accumulate (a database word × a ciphertext row), compute
  fd_n3, fd_n4  what one multiply-accumulate of the n = 3 and the n >= 4 kernels costs beyond
          fd (their accumulators fill the registers: their rate, measured on databases read
          mostly from cache, is 1.5-2x lower than at n <= 2; 0 in profiles without them)
  fdout   one first-dimension output coefficient residue (the reduction and store of each
          accumulated output)
  tile    one first-dimension query coefficient residue laid out in the kernel's order
          (FirstDim::tile, when the query is prepared)
  ms      one modulus-switched coefficient (CRT compose + two roundings), q < 2^64
  ms_wide the same for three or more CRT primes (q > 2^64 with the planner's primes below
          2^30: the runtime's 128-bit path, an order of magnitude slower)

Stage op counts (L = number of CRT primes, d = poly_len, ks(t) = one key switch, gadget t),
following the runtime's loops (runtime/include/spiralpir/spiral/stages.hpp ServerStages,
first_dim.hpp, prepared.hpp, server.hpp), stage names as its timings:
  ks(t)          ntt (t+1)L (the digits forward, the new a back: b stays in the NTT domain),
                 mac (2t+1)Ld (the key columns, and b's half times the NTT of x^{-2^r}),
                 decomp tLd, compose L²d, auto 2Ld (automorph_keyswitch)
  expansion      parsing the query's Q polynomials (vanilla Q = 1, stream Q = 2^nu_1 +
                 nu_2·t_gsw: ServerStages::parse_query / parse_stream_query): ntt 2QL (a from
                 its seed back, b into the NTT domain; L less for each first-dimension ct a
                 direct_first stream variant uploads, whose a is used as sampled), parse QLd;
                 then (not for the stream variants, which upload the expanded cts)
                 Σ_{r=1}^{rounds−1} min(2^(r−1), 2^nu_1) · ks(t_exp_left)
                 + [1 + Σ_{r=1}^{R−1} min(2^(r−1), nu_2·t_gsw)] · ks(t_exp_right), R = rounds_right
                 (the live nodes of ServerStages::expand); with three or more primes each
                 key switch also redecomp_wide t(L−1)d (one task per residue, each composing
                 and splitting every coefficient itself; with two primes the rounds with two
                 or more cts per thread decompose each ct once for both residues), and
                 compose_wide L·d (each residue's task composes every coefficient)
  conversion     2^nu_1 · [ntt t_conv·L, decomp t_conv·L·d, compose L²d,
                 mac (n+1)n·t_conv·L·d] + nu_2·t_gsw · [ntt (2t_conv+1)L (b back for its
                 digits), decomp 2t_conv·L·d,
                 compose 2L²d, mac (n+1)(n+2)·t_conv·L·d] for n > 1. With a computation
                 n of 1 (noise.scal_to_mat_keys) ScalToMat is the identity: each
                 first-dimension ct costs ntt L (its a forward) and each digit ct ntt L more
                 and mac (n+1)·2·t_conv·L·d (RegevToGSW only); the 2^nu_1 term is absent for
                 the stream variants with n = 1 computation matrices (stream_pack, stream with
                 n = 1: noise.direct_first — the client encrypts the first-dimension cts under
                 the computation secret; parsing them costs the same NTTs);
                 then the tiling of the 2^nu_1 first-dimension query matrices: tile
                 2^nu_1·(n+1)·n·d·L, and d·L more for each identity-converted ct (its a
                 copied, to be transformed in place; its b is tiled where it lies)
  first_dimension max(f·words + outputs, memory) + (1 − f)·words: words = (fd, + fd_n3 at n = 3, +
                 fd_n4 at n >= 4) · inst·2^(nu_1+nu_2)·n²·d·L·(n+1) (the kernel's multiply-adds, its
                 database words in cache), outputs = fdout · inst·2^nu_2·(n+1)·n·d·L; memory = the
                 database bytes read from memory (4·inst·2^(nu_1+nu_2)·n²·d·L, or f of them) / the
                 profile's single-thread read bandwidth (calibration: the kernel's own rate on a
                 database far larger than the cache), when the distinct data is larger than the
                 last-level cache (else it stays cache resident between queries; the bench drivers'
                 implicit database: its distinct part, at least 1 GiB, decides; the tiled query,
                 4·2^nu_1·(n+1)·n·d·L bytes, adds to both and is read from memory once when it
                 exceeds the cache itself: at n = 4, nu_2 = 0 it is larger than the database). f = 1
                 but for an implicit database that repeats folding indices (db_reads): of every pass
                 over i the repeats of its phys_j distinct blocks come from cache, so only f =
                 phys_j / 2^nu_2 of the words wait on memory
  folding        inst·(2^nu_2 − 1) · [ntt (n+1)n(1+t_gsw)L, decomp (n+1)n·t_gsw·L·d,
                 compose (n+1)n·L²d, mac (n+1)²n·t_gsw·L·d]
  packing        (pack variants) per response instance: ntt n²(t_conv+1)L, decomp n²·t_conv·L·d,
                 compose n²L²d, mac (n+1)n²·t_conv·L·d
  modswitch      per response instance: ntt (n+1)nL, ms or ms_wide (n+1)nd
where n and inst are the computation's (pack: n = 1 over inst·n² sub-databases). With three
or more primes every decomposition of d coefficients also counts compose_wide d (its compose
L²d / L²; the expansion's L·d per key switch, above). Each stage's seconds =
stage_scale[stage] × Σ count·cost (stage_scale, default 1, is fitted by calibration
against measured stage timings; the runtime books packing inside its `modswitch` timing).
Predictions are single-thread CPU seconds; models/parallel.py turns them into wall seconds at
T threads (each stage's parallel jobs and the profile's measured thread scaling, apart for the
SCALAR_OPS: scalar_fraction).

Streaming (a query prepared once, then answered against a sequence of databases; the runtime's
server_prepare / server_answer_prepared, every variant): the ONE_TIME_STAGES (query parse and
expansion, conversion) run once per query, the PER_DATABASE_STAGES (first dimension, folding,
packing, modulus switching) once per database; `split_seconds` gives both parts and the
planner's `stream` objective minimises the per-database part.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from spiralpir.optimizer.models.noise import direct_first, scal_to_mat_keys
from spiralpir.optimizer.models.profile import (
    ONE_TIME_STAGES,
    PER_DATABASE_STAGES,
    STAGES,
    Profile,
)
from spiralpir.optimizer.params.parameters import Parameters

__all__ = ["ONE_TIME_STAGES", "PER_DATABASE_STAGES", "STAGES", "OPS", "FD_WORD_OPS", "Profile",
           "Prices"]

OPS = ("ntt", "mac", "decomp", "decomp_wide", "redecomp_wide", "compose", "compose_wide", "auto",
       "parse", "tile", "fd", "fd_n3", "fd_n4", "fdout", "ms", "ms_wide")
# the first dimension's multiply-adds: every one costs fd, and those of the n = 3 and n >= 4
# kernels (computation matrices of that n) fd_n3 / fd_n4 more
FD_WORD_OPS = ("fd", "fd_n3", "fd_n4")
# the scalar 128-bit ops of three or more primes (CRT composition, wide digits, wide modulus
# switching): integer code whose threads do not slow each other down as the vector kernels'
# do (models/parallel.py: the profile's scalar_slowdown)
SCALAR_OPS = ("decomp_wide", "redecomp_wide", "compose_wide", "ms_wide")

# Prices of the SPIRAL paper (AWS, 2022): $0.0195 per CPU-hour, $0.09 per GB egress.
CPU_DOLLARS_PER_HOUR = 0.0195
EGRESS_DOLLARS_PER_GB = 0.09
# the bench drivers' implicit database holds at least this much distinct data
# (runtime/testing/include/spiralpir/testing/bench_driver.hpp, bench_detail::implicit_db_layout)
IMPLICIT_DB_MIN_DISTINCT = float(1 << 30)


def _ceil_log2(x: Any) -> Any:
    """ceil(log2 x) for x ≥ 1 (0 for x ≤ 1), on scalars or integer arrays."""
    xf = np.maximum(np.asarray(x, dtype=np.float64), 1.0)
    return np.ceil(np.log2(xf) - 1e-12)


def op_counts(variant: str, d: int, L: int, n: int, nu1: int, nu2: int, inst: int,
              tl: Any, tr: Any, tc: Any, tg: Any, query_buckets: int = 1,
              rows: int | None = None) -> dict[str, dict[str, Any]]:
    """Operation counts of every server stage (module docstring). n and inst are the
    RESPONSE's (the pack variants compute with n = 1 over inst·n² sub-databases); the gadget
    lengths may be numpy arrays (the counts broadcast over them). query_buckets G: one query
    packs G buckets (runtime batch_query.hpp); its expansion (of G·2^nu_1 selectors and
    G·nu_2·t_gsw digits) is done once, so each bucket's answer carries 1/G of it. rows: the
    stored first-dimension rows (default 2^nu_1): only they are multiplied and converted, and
    a one-bucket expansion computes only their selectors."""
    stream = variant in ("stream", "stream_pack")
    pack = variant in ("pack", "stream_pack")
    nc, inst_c = (1, inst * n * n) if pack else (n, inst)
    a = float(1 << nu1)
    rs = a if rows is None else float(rows)
    a_conv = 0.0 if direct_first(variant, n) else rs  # first-dimension cts converted
    # ScalToMat a key switch (n > 1) on a_conv cts and every digit ct, else the identity: one
    # forward NTT of a per ct
    keyed = 1.0 if scal_to_mat_keys(variant, n) else 0.0
    a_keyed = keyed * a_conv
    tl, tr, tc, tg = (np.asarray(x, dtype=np.float64) for x in (tl, tr, tc, tg))
    digits = nu2 * tg
    g = float(query_buckets)
    big_r = 1.0 + _ceil_log2(g * digits)  # rounds_right
    rounds = np.maximum(nu1 + _ceil_log2(g) + 1.0, big_r)
    zero = np.zeros(np.broadcast(tl, tr, tc, tg).shape)
    n_left, n_right = zero.copy(), zero + (0.0 if stream else 1.0)
    if not stream:
        for r in range(1, int(np.max(rounds))):
            n_left = n_left + np.where(r < rounds, min(2.0 ** (r - 1), g * a if g > 1 else rs),
                                       0.0)
            n_right = n_right + np.where(r < big_r, np.minimum(2.0 ** (r - 1), g * digits), 0.0)
        n_left, n_right = n_left / g, n_right / g  # this bucket's share

    def ks(t: Any, k: Any) -> dict[str, Any]:
        return {"ntt": k * (t + 1) * L, "mac": k * (2 * t + 1) * L * d, "decomp": k * t * L * d,
                "compose": k * L * L * d, "auto": k * 2 * L * d}

    exp_l, exp_r = ks(tl, n_left), ks(tr, n_right)
    query_polys = (a + digits) if stream else 1.0 / g + zero
    # each query poly: a from its seed to coefficients, b to the NTT domain; a direct_first
    # stream variant's first-dimension cts keep their sampled a
    query_ntt = (2.0 * query_polys - (a if stream and a_conv == 0 else 0.0)) * L
    folds = inst_c * (2.0**nu2 - 1)
    fd_words = zero + inst_c * rs * 2.0**nu2 * nc * nc * d * L * (nc + 1)
    packing = ({"ntt": inst * n * n * (tc + 1) * L, "decomp": inst * n * n * tc * L * d,
                "compose": zero + inst * n * n * L * L * d,
                "mac": inst * (n + 1) * n * n * tc * L * d} if pack else
               {"ntt": zero, "decomp": zero, "compose": zero, "mac": zero})
    out = {
        "expansion": {"ntt": exp_l["ntt"] + exp_r["ntt"] + query_ntt,
                      "mac": exp_l["mac"] + exp_r["mac"],
                      "decomp": exp_l["decomp"] + exp_r["decomp"],
                      "compose": exp_l["compose"] + exp_r["compose"],
                      "auto": exp_l["auto"] + exp_r["auto"],
                      # the wide path's per-residue tasks repeat the composition and digits
                      "redecomp_wide": (exp_l["decomp"] + exp_r["decomp"]) * (L - 1) / L
                      if L >= 3 else zero,
                      "parse": query_polys * L * d},
        "conversion": {
            "ntt": (a_keyed * tc + (a_conv - a_keyed)) * L + digits * (2 * tc + 2 - keyed) * L,
            "decomp": (a_keyed * tc + digits * 2 * tc) * L * d,
            "compose": (a_keyed + 2 * digits) * L * L * d,
            "mac": (a_keyed * (nc + 1) * nc + digits * (nc + 1) * (nc * keyed + 2)) * tc * L * d,
            # the tiling's words, and the identity's copy of each converted ct's a (to be
            # transformed in place; its b is tiled where it lies)
            "tile": zero + a * (nc + 1) * nc * d * L + (a_conv - a_keyed) * d * L,
        },
        "first_dimension": {"fd": fd_words,
                            "fd_n3": fd_words if nc == 3 else zero,
                            "fd_n4": fd_words if nc >= 4 else zero,
                            "fdout": zero + inst_c * 2.0**nu2 * (nc + 1) * nc * d * L},
        "folding": {"ntt": folds * (nc + 1) * nc * (1 + tg) * L,
                    "decomp": folds * (nc + 1) * nc * tg * L * d,
                    "compose": zero + folds * (nc + 1) * nc * L * L * d,
                    "mac": folds * (nc + 1) ** 2 * nc * tg * L * d},
        "packing": packing,
        "modswitch": {"ntt": zero + inst * (n + 1) * n * L,
                      "ms": zero + (0 if L >= 3 else inst * (n + 1) * n * d),
                      "ms_wide": zero + (inst * (n + 1) * n * d if L >= 3 else 0)},
    }
    for stage, ops in out.items():  # three or more primes: the 128-bit digits
        if "decomp" in ops:
            ops["decomp_wide"] = ops["decomp"] if L >= 3 else zero
            ops["decomp"] = zero if L >= 3 else ops["decomp"]
            # coefficients composed: one per decomposed coefficient (compose counts L² each),
            # in the expansion once per residue task
            per = L if stage == "expansion" else 1
            ops["compose_wide"] = ops["compose"] * per / (L * L) if L >= 3 else zero
    return out


def db_bytes(d: int, L: int, n: int, nu1: int, nu2: int, inst: int, rows: int | None = None
             ) -> float:
    """Bytes of the preprocessed database the first dimension streams (no header): the
    stored rows (default all 2^nu_1)."""
    return 4.0 * inst * (2.0**nu1 if rows is None else rows) * 2.0**nu2 * n * n * d * L


def first_dim_parts(ops: dict[str, Any], d: int, profile: Profile, read_fraction: float = 1.0
                    ) -> tuple[Any, Any]:
    """The first dimension's compute seconds (single thread) as (the part that overlaps the
    memory reads: the words read from memory and the outputs, the part that does not: the
    words repeated from cache); read_fraction: the words read from memory (db_reads)."""
    words = sum(ops[op] * profile.op_cost(op, d) for op in FD_WORD_OPS)
    outputs = ops["fdout"] * profile.op_cost("fdout", d)
    s = profile.scale("first_dimension")
    return (read_fraction * words + outputs) * s, (1.0 - read_fraction) * words * s


def query_bytes(variant: str, d: int, L: int, n: int, nu1: int) -> float:
    """Bytes of the first dimension's tiled query (FirstDim::Query: u32 words, every row)."""
    nc = 1 if variant in ("pack", "stream_pack") else n
    return 4.0 * 2.0**nu1 * (nc + 1) * nc * d * L


def first_dim_memory(streamed_bytes: float, distinct_bytes: float, query: float,
                     cache_bytes: float) -> tuple[float, float]:
    """(distinct bytes, bytes read from memory) of a first dimension with its tiled query:
    the query is read from memory once when it does not fit the cache itself (every task
    reads its slice of it beside the database)."""
    return (distinct_bytes + query,
            streamed_bytes + (query if query > cache_bytes else 0.0))


def tiled_query_writes(query: Any, cache_bytes: float) -> Any:
    """Memory traffic of the conversion's writes of a tiled query of `query` bytes: none while
    it fits the cache; beyond, every line is read for ownership and written back (2 bytes per
    byte; at d = 1024, n = 4 the 42 MB query took ~3 ms more than the tiling's compute)."""
    q = np.asarray(query, dtype=np.float64)
    return np.where(q > cache_bytes, 2.0 * q, 0.0)


def seconds_of_counts(counts: dict[str, dict[str, Any]], d: int, profile: Profile,
                      streamed_bytes: float, distinct_bytes: float | None = None,
                      read_fraction: float = 1.0, query: float = 0.0) -> dict[str, Any]:
    """Per-stage single-thread seconds of op counts. The first dimension (module docstring):
    the larger of its compute on the words read from memory (read_fraction of them) and its
    memory time (streamed_bytes, the database bytes read from memory, and the query's bytes
    `query` when it exceeds the cache, / read bandwidth; only when the distinct data, default
    all of the database, and the query exceed the last-level cache), plus its compute on the
    words repeated from cache."""
    out: dict[str, Any] = {}
    for stage, ops in counts.items():
        t: Any = 0.0
        for op, c in ops.items():
            t = t + c * profile.op_cost(op, d)
        out[stage] = t * profile.scale(stage)
    streamed, cached = first_dim_parts(counts["first_dimension"], d, profile, read_fraction)
    distinct, memory = first_dim_memory(
        streamed_bytes, streamed_bytes if distinct_bytes is None else distinct_bytes, query,
        profile.cache_bytes)
    if profile.read_bytes_per_second > 0 and distinct > profile.cache_bytes:
        streamed = np.maximum(streamed, memory / profile.read_bytes_per_second)
    out["first_dimension"] = streamed + cached
    if profile.read_bytes_per_second > 0:  # the conversion writes the query out to memory
        out["conversion"] = out["conversion"] + tiled_query_writes(query, profile.cache_bytes) \
            / profile.read_bytes_per_second
    return out


def _counts_of(p: Parameters) -> dict[str, dict[str, Any]]:
    return op_counts(p.variant, p.poly_len, len(p.moduli), p.n, p.nu_1, p.nu_2, p.instances,
                     p.t_exp_left, p.t_exp_right, p.t_conv, p.t_gsw, p.query_buckets,
                     p.rows_stored)


def stage_op_counts(p: Parameters) -> dict[str, dict[str, float]]:
    """Operation counts of every server stage for one query (see the module docstring)."""
    return {st: {op: float(c) for op, c in ops.items()} for st, ops in _counts_of(p).items()}


def params_db_bytes(p: Parameters) -> float:
    return db_bytes(p.poly_len, len(p.moduli), p.n, p.nu_1, p.nu_2, p.instances, p.rows_stored)


def db_reads(p: Parameters, implicit_db: bool = False, repeated_folding: bool = False,
             phys_j: int = 0) -> tuple[float, float]:
    """(distinct bytes, bytes read from memory) of one first dimension. implicit_db: the bench
    drivers' implicit database (≥ 1 GiB of distinct data addressed cyclically); repeated_folding:
    one of its instances alone exceeds the drivers' memory budget, so it repeats folding
    indices (j mod phys_j; phys_j: as its report gives it, 0: the smallest power of two holding
    1 GiB): within an L1-sized pass over i the task reads only the phys_j distinct blocks from
    memory, the repeats (a pass's distinct pieces: a few hundred KiB) from its core's cache
    (bench_report.hpp implicit_db_layout, first_dim.hpp task_avx512)."""
    streamed = params_db_bytes(p)
    if not implicit_db:
        return streamed, streamed
    if not repeated_folding:
        return min(streamed, IMPLICIT_DB_MIN_DISTINCT), streamed
    pack = p.variant in ("pack", "stream_pack")
    folds = 1 << p.nu_2
    per_j = streamed / (p.instances * (p.n * p.n if pack else 1)) / folds
    if phys_j <= 0:
        phys_j = 1
        while phys_j < folds and per_j * phys_j < IMPLICIT_DB_MIN_DISTINCT:
            phys_j *= 2
    phys_j = min(phys_j, folds)
    return per_j * phys_j, streamed * phys_j / folds


def stage_seconds(p: Parameters, profile: Profile, implicit_db: bool = False,
                  repeated_folding: bool = False, phys_j: int = 0) -> dict[str, float]:
    """Predicted single-thread seconds of every server stage. implicit_db, repeated_folding,
    phys_j: the bench drivers' implicit database (db_reads)."""
    distinct, memory = db_reads(p, implicit_db, repeated_folding, phys_j)
    secs = seconds_of_counts(_counts_of(p), p.poly_len, profile, memory, distinct,
                             memory / params_db_bytes(p), params_query_bytes(p))
    return {k: float(v) for k, v in secs.items()}


def params_query_bytes(p: Parameters) -> float:
    return query_bytes(p.variant, p.poly_len, len(p.moduli), p.n, p.nu_1)


def first_dim_split(p: Parameters, profile: Profile, implicit_db: bool = False,
                    repeated_folding: bool = False, phys_j: int = 0
                    ) -> tuple[float, float, float, float]:
    """(distinct bytes, bytes read from memory, compute overlapping them, compute on the
    repeats from cache) of one first dimension with its query: first_dim_parts of db_reads'
    layout."""
    distinct, memory = db_reads(p, implicit_db, repeated_folding, phys_j)
    streamed, cached = first_dim_parts(stage_op_counts(p)["first_dimension"], p.poly_len,
                                       profile, memory / params_db_bytes(p))
    distinct, memory = first_dim_memory(memory, distinct, params_query_bytes(p),
                                        profile.cache_bytes)
    return distinct, memory, float(streamed), float(cached)


def server_seconds(p: Parameters, profile: Profile, implicit_db: bool = False,
                   repeated_folding: bool = False, phys_j: int = 0) -> float:
    return sum(stage_seconds(p, profile, implicit_db, repeated_folding, phys_j).values())


def scalar_fraction(p: Parameters, profile: Profile) -> dict[str, float]:
    """Per stage, the share of its single-thread seconds spent in SCALAR_OPS (0 for the first
    dimension, whose memory term is apart)."""
    out: dict[str, float] = {}
    for stage, ops in _counts_of(p).items():
        secs = {op: float(c) * profile.op_cost(op, p.poly_len) for op, c in ops.items()}
        total = sum(secs.values())
        scalar = sum(v for op, v in secs.items() if op in SCALAR_OPS)
        out[stage] = scalar / total if total > 0 and stage != "first_dimension" else 0.0
    return out


def split_seconds(secs: dict[str, Any]) -> tuple[Any, Any]:
    """(one-time, per-database) seconds of per-stage seconds (scalars or arrays): the streaming
    split (module docstring)."""
    one_time: Any = 0.0
    per_db: Any = 0.0
    for stage in ONE_TIME_STAGES:
        one_time = one_time + secs[stage]
    for stage in PER_DATABASE_STAGES:
        per_db = per_db + secs[stage]
    return one_time, per_db


@dataclass(frozen=True)
class Prices:
    cpu_dollars_per_hour: float = CPU_DOLLARS_PER_HOUR
    egress_dollars_per_gb: float = EGRESS_DOLLARS_PER_GB

    def dollars(self, cpu_seconds: float, response_bytes: float) -> float:
        return (cpu_seconds * self.cpu_dollars_per_hour / 3600.0
                + response_bytes * self.egress_dollars_per_gb / 1e9)
