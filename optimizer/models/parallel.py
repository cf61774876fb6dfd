"""Wall time of an answer at T server threads: the runtime's parallel structure of each stage.

The cost model (cost.py) gives single-thread seconds per stage. The runtime splits every stage
into parallel_for jobs (runtime/include/spiralpir/core/parallel.hpp: a persistent pool, each
thread takes the next task index when free; a job ends when its last task does). This module
lists, per stage, those jobs as runs of tasks (`Job`: durations relative to each other, in the
order the pool hands them out), replays them on T greedy threads (what parallel.hpp's
CriticalPath::replay does with measured task times), and turns the single-thread stage seconds
into wall seconds:

  wall(stage, T) = seconds(stage, 1) × Σ_jobs makespan(job, T) / Σ_jobs work(job)
                   × [(1 − s)·slowdown(T) + s·scalar_slowdown(T)]

with the profile's measured `slowdown` (each thread's compute when T run at once) and
`scalar_slowdown` for the share s of the stage's seconds in the scalar 128-bit ops of three or
more primes (cost.scalar_fraction: their threads hardly slow each other down). The first
dimension, when its database does not stay cache resident, takes at least its bytes read from
memory over the bandwidth T threads reach together (the profile's
`threads[T].read_bytes_per_second`), plus its compute on the words repeated from cache (cost.py).

Jobs per stage (stages.hpp, prepared.hpp, first_dim.hpp, packing.hpp), with the op counts of
cost.py (ks(t) ∝ key switch with gadget t):
  expansion        stream: one task per uploaded polynomial; else round r of the expansion, one
                   task per (live ct, residue), the right-gadget cts first
  conversion       one task per ct, the nu_2·t_gsw digit cts (RegevToGSW + ScalToMat) first,
                   then the 2^nu_1 first-dimension cts (ScalToMat, the identity at n = 1; none
                   for direct_first)
  first_dimension  instances × prime groups × d/8 slot tiles, equal tasks
  folding          round r: instances · 2^(nu_2−r−1) external products
  packing          instances · n tasks
  modswitch        instances · (n+1)·n tasks
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from spiralpir.optimizer.models.cost import (
    STAGES,
    Profile,
    first_dim_split,
    scalar_fraction,
    stage_seconds,
)
from spiralpir.optimizer.models.noise import direct_first, scal_to_mat_keys
from spiralpir.optimizer.params.parameters import Parameters

Job = Sequence[tuple[float, int]]  # runs of (duration of one task, number of tasks), in order


def makespan(job: Job, threads: int) -> float:
    """The time `threads` greedy threads take for the job's tasks (each thread takes the next
    task when free), in the unit of the durations."""
    total = sum(w * k for w, k in job)
    if threads <= 1 or total <= 0:
        return total
    if len(job) == 1:  # equal tasks
        w, k = job[0]
        return w * math.ceil(k / threads)
    free = [0.0] * threads
    for w, k in job:
        for _ in range(k):
            heapq.heapreplace(free, free[0] + w)
    return max(free)


def stage_jobs(p: Parameters, profile: Profile) -> dict[str, list[Job]]:
    """The parallel jobs of every stage (module docstring), durations in relative units (the
    expansion's and conversion's task kinds weighed by the profile's op costs)."""
    L, d = len(p.moduli), p.poly_len

    def ks_residue(t: int) -> float:  # one residue of one key switch (cost.py's ks(t) / L)
        return ((t + 1) * profile.op_cost("ntt", d) + d * ((2 * t + 1) * profile.op_cost("mac", d)
                + t * profile.op_cost("decomp_wide" if L >= 3 else "decomp", d)
                + (t * (L - 1) / L * profile.op_cost("redecomp_wide", d)
                   + profile.op_cost("compose_wide", d) if L >= 3 else 0.0)
                + L * profile.op_cost("compose", d)
                + 2 * profile.op_cost("auto", d)))

    stream = p.variant in ("stream", "stream_pack")
    pack = p.variant in ("pack", "stream_pack")
    nc, inst_c = (1, p.instances * p.n * p.n) if pack else (p.n, p.instances)
    a, rows = 1 << p.nu_1, p.rows_stored  # only the stored rows are expanded and converted
    digits = p.nu_2 * p.t_gsw
    jobs: dict[str, list[Job]] = {s: [] for s in STAGES}
    if stream:
        jobs["expansion"].append([(1.0, a + digits)])
    else:
        # the query's one polynomial, parsed serially: in the unit of the rounds' tasks (seconds)
        # or, the rounds being cheap beside it, it would pass for the whole stage
        parse = L * (2 * profile.op_cost("ntt", d) + d * profile.op_cost("parse", d))
        jobs["expansion"].append([(parse, 1)])
        big_r = 1 + math.ceil(math.log2(digits)) if digits > 1 else 1
        rounds = max(p.nu_1 + 1, big_r)
        for r in range(rounds):
            right = 1 if r == 0 else (min(1 << (r - 1), digits) if r < big_r else 0)
            left = 0 if r == 0 else min(1 << (r - 1), rows)
            if L >= 3 or right + left == 1:  # one task per residue (ServerStages::expand)
                run = [(ks_residue(p.t_exp_right), right * L), (ks_residue(p.t_exp_left), left * L)]
            else:  # one task per ct, the right-gadget cts first
                run = [(L * ks_residue(p.t_exp_right), right), (L * ks_residue(p.t_exp_left), left)]
            jobs["expansion"].append([x for x in run if x[1] > 0])
    first = 0 if direct_first(p.variant, nc) else rows
    if scal_to_mat_keys(p.variant, p.n):
        conv = [((nc + 1) * (nc + 2) * p.t_conv, digits), ((nc + 1) * nc * p.t_conv, first)]
    else:  # ScalToMat the identity: a first-dimension task is one forward NTT (~2 key columns)
        conv = [((nc + 1) * 2 * p.t_conv + 2, digits), (2, first)]
    jobs["conversion"].append([x for x in conv if x[1] > 0] or [(1.0, 1)])
    groups = (L + 1) // 2
    jobs["first_dimension"].append([(1.0, inst_c * groups * max(1, p.poly_len // 8))])
    for r in range(p.nu_2):
        jobs["folding"].append([(1.0, inst_c << (p.nu_2 - r - 1))])
    if pack:
        jobs["packing"].append([(1.0, p.instances * p.n)])
    jobs["modswitch"].append([(1.0, p.instances * (p.n + 1) * p.n)])
    return jobs


def parallel_fraction(jobs: list[Job], threads: int) -> float:
    """Wall time at `threads` threads over the single-thread time of a stage's jobs."""
    work = sum(makespan(j, 1) for j in jobs)
    return sum(makespan(j, threads) for j in jobs) / work if work > 0 else 1.0


def wall_stage_seconds(p: Parameters, profile: Profile, threads: int = 1,
                       implicit_db: bool = False, repeated_folding: bool = False,
                       phys_j: int = 0) -> dict[str, float]:
    """Predicted wall seconds of every stage at `threads` server threads (1: the cost model's
    single-thread seconds; implicit_db, repeated_folding, phys_j: cost.db_reads)."""
    single = stage_seconds(p, profile, implicit_db, repeated_folding, phys_j)
    if threads <= 1:
        return single
    sc = profile.scaling(threads)
    jobs = stage_jobs(p, profile)
    scalar = scalar_fraction(p, profile)
    out = {s: secs * parallel_fraction(jobs[s], threads)
           * ((1.0 - scalar[s]) * sc.slowdown + scalar[s] * sc.scalar)
           for s, secs in single.items()}
    distinct, memory, streamed, cached = first_dim_split(p, profile, implicit_db,
                                                         repeated_folding, phys_j)
    k = parallel_fraction(jobs["first_dimension"], threads) * sc.slowdown
    if profile.read_bytes_per_second > 0 and distinct > profile.cache_bytes:
        bw = sc.read_bytes_per_second or profile.read_bytes_per_second * threads
        out["first_dimension"] = max(streamed * k, memory / bw) + cached * k
    return out


def wall_seconds(p: Parameters, profile: Profile, threads: int = 1,
                 implicit_db: bool = False, repeated_folding: bool = False) -> float:
    return sum(wall_stage_seconds(p, profile, threads, implicit_db, repeated_folding).values())

