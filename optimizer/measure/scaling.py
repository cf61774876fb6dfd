"""Thread scaling and the first dimension's read bandwidth from benchmark runs -> a Profile's
`threads` and `read_bytes_per_second` (models/profile.py, models/parallel.py).

* The first dimension's single-thread read bandwidth: preprocessed database bytes over the
  first-dimension seconds of the 1-thread runs whose database is far larger than the last-level
  cache (the kernel's own streaming rate, not a microbenchmark's), the fastest such run.
* slowdown(T): each run measured at 1 and at T threads (the minimum of repeats stage by stage;
  1 thread: process CPU seconds, single_stages; T threads: wall seconds scaled to the answer's
  uncontended estimate when the bench reports it, wall_stages):
  Σ wall_T / Σ secs_1 × parallel_fraction(stage, T) over the stages bound by compute
  (the first dimension too when its database stays cache resident), pooled over the runs,
  within [1, T]. With stages mostly in the scalar 128-bit ops among them (three primes:
  cost.scalar_fraction s ≥ 1/2), slowdown and scalar_slowdown together instead: least squares
  (relative errors) of wall_T = secs_1 × parallel_fraction × [(1 − s)·slowdown +
  s·scalar_slowdown] over the stages of at least MIN_STAGE_SECONDS, each within [1, T].
* read_bytes_per_second at T: preprocessed bytes over the T-thread first-dimension seconds of
  the runs whose database is far larger than the cache, the fastest such run (at least the
  single-thread figure).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from spiralpir.optimizer.measure.calibrate import stage_times
from spiralpir.optimizer.models.cost import STAGES, Profile, params_db_bytes, scalar_fraction
from spiralpir.optimizer.models.parallel import parallel_fraction, stage_jobs
from spiralpir.optimizer.models.profile import ThreadScaling
from spiralpir.optimizer.params.parameters import Parameters

# a database this many times the last-level cache is read from memory: its first dimension
# measures the read bandwidth
MEMORY_BOUND_FACTOR = 4.0
# stages shorter than this (single thread) are left out of the two-slowdown fit: noisy
MIN_STAGE_SECONDS = 1e-3


def wall_stages(rep: dict[str, Any]) -> dict[str, float]:
    """Wall seconds per stage of a bench report (pack variants: packing inside modswitch); at
    several threads scaled to the answer's uncontended wall estimate when the report has it
    (`server_uncontended_seconds`: on a shared machine the measured wall time also holds the
    time the threads waited for a core, which no model of this machine predicts)."""
    st = {k: float(v) for k, v in rep["stages"].items()}
    unc, wall = uncontended_seconds(rep), sum(st.values())
    if unc and wall > 0:
        st = {k: v * min(1.0, unc / wall) for k, v in st.items()}
    return st


def single_stages(rep: dict[str, Any]) -> dict[str, float]:
    """Seconds per stage of a 1-thread report: process CPU time where measured (a shared
    machine's load stretches wall time, not CPU time), packing inside modswitch as in
    wall_stages."""
    st = stage_times(rep)
    if "packing" not in rep["stages"] and "packing" in st:
        st["modswitch"] = st.get("modswitch", 0.0) + st.pop("packing")
    return st


def uncontended_seconds(rep: dict[str, Any]) -> float:
    """A several-thread report's uncontended wall estimate of the answer; 0 if absent."""
    if rep.get("threads", 1) == 1:
        return 0.0
    return float(rep.get("server_uncontended_seconds") or 0.0)


def memory_bound(p: Parameters, profile: Profile) -> bool:
    return (profile.cache_bytes > 0
            and params_db_bytes(p) > MEMORY_BOUND_FACTOR * profile.cache_bytes)


def kernel_read_bandwidth(runs: Sequence[tuple[Parameters, dict[str, Any]]], cache_bytes: float,
                          fd_seconds: Any) -> float:
    """The fastest first-dimension read rate (bytes/s) over the single-thread runs whose
    database is far larger than the cache; 0 if none. fd_seconds(report) -> seconds."""
    rates = [params_db_bytes(p) / secs for p, rep in runs
             if cache_bytes > 0 and params_db_bytes(p) > MEMORY_BOUND_FACTOR * cache_bytes
             and not rep.get("implicit_db") and (secs := fd_seconds(rep)) > 0]
    return max(rates, default=0.0)


def fit_threads(profile: Profile,
                runs: Sequence[tuple[Parameters, dict[str, Any], dict[str, Any]]]) -> Profile:
    """The profile with `threads` fitted from (params, 1-thread report, T-thread report)
    triples (module docstring); T is each T-thread report's `threads`."""
    by_t: dict[int, list[tuple[Parameters, dict[str, Any], dict[str, Any]]]] = {}
    for p, one, many in runs:
        if int(many["threads"]) >= 2:
            by_t.setdefault(int(many["threads"]), []).append((p, one, many))
    out = dict(profile.threads)
    for t, group in sorted(by_t.items()):
        rows: list[tuple[float, float, float]] = []  # (vector seconds, scalar seconds, wall_T)
        rates = []
        for p, one, many in group:
            w1, wt = single_stages(one), wall_stages(many)
            jobs = stage_jobs(p, profile)
            share = scalar_fraction(p, profile)
            mem = memory_bound(p, profile)
            if mem and wt.get("first_dimension", 0) > 0:
                rates.append(params_db_bytes(p) / wt["first_dimension"])
            for s in STAGES:
                if s not in w1 or s not in wt or (mem and s == "first_dimension"):
                    continue
                frac = parallel_fraction(jobs[s] + (jobs["packing"] if s == "modswitch" else []), t)
                x = w1[s] * frac
                rows.append((x * (1.0 - share[s]), x * share[s], wt[s]))
        # on an idle machine a thread is not faster beside others than alone, nor T threads
        # slower than one, and T threads read at least as fast as one: outside these bounds
        # the runs were disturbed (a shared machine)
        slowdown, scalar = _slowdowns(rows, t)
        bw = max(rates, default=0.0)
        out[t] = ThreadScaling(slowdown, max(bw, profile.read_bytes_per_second) if bw else 0.0,
                               scalar)
    return replace(profile, threads=out)


def _slowdowns(rows: Sequence[tuple[float, float, float]], t: int) -> tuple[float, float | None]:
    """(slowdown, scalar_slowdown or None) from (vector seconds, scalar seconds, wall) rows
    (module docstring), each within [1, t]."""
    def bound(x: float) -> float:
        return min(float(t), max(1.0, x))

    den = sum(u + v for u, v, _ in rows)
    pooled = bound(sum(w for _, _, w in rows) / den) if den > 0 else 1.0
    long = [(u, v, w) for u, v, w in rows if u + v >= MIN_STAGE_SECONDS and w > 0]
    if not any(v >= u for u, v, _ in long) or not any(v < u for u, v, _ in long):
        return pooled, None  # not both kinds of stage: one slowdown for all
    a = np.array([[u / w, v / w] for u, v, w in long])
    sol, *_ = np.linalg.lstsq(a, np.ones(len(long)), rcond=None)
    return bound(float(sol[0])), bound(float(sol[1]))
