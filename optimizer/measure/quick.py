"""The default calibration (`spiralpir calibrate` with no options): this machine in a few
minutes.

Steps, each reported to `step(done, total, message)`:
1. the kernel microbenchmarks (spiral_runtime_bench: NTT, multiply-add, read bandwidth and
   cache size; built under the build directory when not found, which needs Google Benchmark;
   without it the shipped profile's kernel costs stand in, and the profile's source says so);
2. QUICK_MEMBERS: small calibration shapes (measure/validation.py CALIBRATION, disjoint from
   the validation suite and from the checked-in builds), planned and generated under the work
   directory and built where `spiralpir build` builds (kept: a second run builds nothing),
   each benchmarked single-threaded (`repeat` bench processes, the minimum) and, for the
   thread members, at 2 threads and at every core when the machine has more; the REPEATS
   members once more single-threaded on an implicit database that repeats folding indices
   (the first dimension's words from cache: the largest shapes' implicit databases); the
   FIXED_MEMBERS (a three-prime parameter set with long gadgets, given, not planned) at 1 and
   several threads; the KERNEL_CALIBRATION members (the n = 3 and n = 4 first-dimension
   kernels, given) once single-threaded on implicit databases repeating folding indices;
3. the fit (measure/calibrate.py), the first dimension's own read bandwidth and the thread
   scaling (measure/scaling.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from spiralpir.optimizer.build import builder
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.measure.bench import run_bench
from spiralpir.optimizer.measure.calibrate import (
    Kernels,
    fastest_path,
    fit,
    kernel_costs,
    run_arith_bench,
    stage_times,
)
from spiralpir.optimizer.measure.scaling import fit_threads, kernel_read_bandwidth
from spiralpir.optimizer.measure.validation import (
    CALIBRATION,
    FIXED_CALIBRATION,
    KERNEL_CALIBRATION,
    Shape,
    fixed_instance_name,
    instance_name,
    loadavg,
    prepare,
    prepare_fixed,
)
from spiralpir.optimizer.models.profile import Profile
from spiralpir.optimizer.params.parameters import Parameters

Step = Callable[[int, int, str], None]

# (calibration shape name, variant, measured at several threads): d = 2048 and 4096, two and
# three CRT primes (what plans of >= 128 bits use), n = 1..3, the stream variants' parsing and
# direct first dimension, the packing, a database far larger than a last-level cache
# (2^18 x 128 B: its first dimension reads at memory speed)
QUICK_MEMBERS = (
    ("cal2e12x2kb", "spiral", True),
    ("cal2e18x128b", "spiral", True),
    ("cal2e12x2kb", "stream", False),
    ("cal2e10x16kb", "pack", False),
    ("cal2e10x100kb", "spiral", False),
)
# (quick member, variant, MiB of distinct data): its database again, implicit, with folding
# indices repeated cyclically over that much data (above the last-level cache, as the largest
# shapes' 1 GiB), so that 7/8 of its first dimension's words come from the core's cache
# (cal2e18x128b: 512 MiB over 256 folding indices, 32 of them stored): the kernel's compute
# rate, which no database read from memory shows
REPEATS = (("cal2e18x128b", "spiral", 64.0),)
REPEATS_SUFFIX = "_repeats"
# MiB of distinct data of validation.KERNEL_CALIBRATION's implicit databases (single-threaded)
KERNEL_REPEAT_MIB = 64.0
# validation.FIXED_CALIBRATION's members (three primes, long gadgets), at 1 and several
# threads: the wide decomposition's cost per coefficient apart from its cost per digit, and
# the scalar ops' thread slowdown
FIXED_MEMBERS = tuple(name for name, _ in FIXED_CALIBRATION)


def thread_counts(cores: int | None = None) -> list[int]:
    """The thread counts measured besides 1: 2, and every core when there are more."""
    n = cores if cores is not None else (os.cpu_count() or 1)
    return sorted({2, n}) if n >= 2 else []


def _shape(name: str) -> Shape:
    return next(s for s, _ in CALIBRATION if s.name == name)


def min_report(reps: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One report of repeated bench processes: every stage's minimum (wall and CPU), the
    minimum totals, the rest from the fastest run. On a shared machine the minimum is the
    run least disturbed."""
    if not reps:
        raise SpiralpirError("no benchmark runs to combine")
    best = dict(min(reps, key=lambda r: float(r["server_seconds"])))
    for key in ("stages", "stages_cpu"):
        if all(key in r for r in reps):
            best[key] = {s: min(float(r[key][s]) for r in reps) for s in reps[0][key]}
    for key in ("server_seconds", "server_cpu_seconds", "server_uncontended_seconds"):
        if all(key in r for r in reps):
            best[key] = min(float(r[key]) for r in reps)
    if all("streaming" in r for r in reps):
        st = dict(best["streaming"])
        for key in ("per_database_seconds", "per_database_cpu_seconds", "prepare_seconds"):
            if all(key in r["streaming"] for r in reps):
                st[key] = min(float(r["streaming"][key]) for r in reps)
        if all("stages" in r["streaming"] for r in reps):
            st["stages"] = {s: min(float(r["streaming"]["stages"][s]) for r in reps)
                            for s in reps[0]["streaming"]["stages"]}
        best["streaming"] = st
    return best


def measure(inst: builder.Instance, threads: int, trials: int, repeat: int,
            repeat_folding_mib: float | None = None) -> dict[str, Any]:
    reps = [run_bench(inst, threads=threads, trials=trials,
                      repeat_folding_mib=repeat_folding_mib) for _ in range(repeat)]
    if not all(r["correct"] for r in reps):
        raise SpiralpirError(f"{inst.name}: the benchmark decoded wrong records")
    return min_report(reps)


def kernels_of(arith_bench: Path | None, build_dir: Path | None, step: Step, done: int,
               total: int) -> tuple[Kernels, str, dict[str, Any] | None]:
    """(kernel costs, where they came from, the microbenchmark report or None)."""
    try:
        exe = arith_bench or builder.build_arith_bench(build_dir, show_progress=False)
    except SpiralpirError as exc:
        shipped = Profile.shipped_for_this_cpu()
        step(done, total, "no microbenchmarks (" + str(exc).splitlines()[0][:120]
             + "): the shipped kernel costs stand in")
        return (Kernels(shipped.ntt_seconds, shipped.op_seconds["mac"], "shipped",
                        shipped.read_bytes_per_second, shipped.cache_bytes),
                "kernels: the shipped profile's (no microbenchmarks)", None)
    report = run_arith_bench(exe, min_time="0.05", repetitions=2, path=fastest_path(exe))
    return kernel_costs(report), f"kernels: {exe.name}", report


def quick_calibrate(work: Path, step: Step, *, arith_bench: Path | None = None,
                    build_dir: Path | None = None, trials: int = 3, repeat: int = 2,
                    cores: int | None = None) -> tuple[Profile, list[dict[str, Any]]]:
    """The profile of this machine and the runs it was fitted on (name, params, threads,
    report), in the order measured."""
    counts = thread_counts(cores)
    total = 2 + sum(1 + (len(counts) if many else 0) for _, _, many in QUICK_MEMBERS) \
        + len(REPEATS) + len(FIXED_MEMBERS) * (1 + len(counts)) + len(KERNEL_CALIBRATION)
    done = 0
    step(done, total, "kernel microbenchmarks")
    kern, src, report = kernels_of(arith_bench, build_dir, step, done, total)
    if report is not None:  # kept for re-fits (--suite arith-json=)
        (work / "runs").mkdir(parents=True, exist_ok=True)
        (work / "runs" / "quick-arith.json").write_text(json.dumps(report, indent=1) + "\n")
    done += 1
    runs: list[dict[str, Any]] = []
    built: dict[tuple[str, str], tuple[builder.Instance, dict[str, Any]]] = {}

    def bench(label: str, inst: builder.Instance, lit: dict[str, Any], threads: list[int],
              repeat_folding_mib: float | None = None) -> None:
        nonlocal done
        for t in threads:
            step(done, total, f"{label}: benchmark, {t} thread(s) (load {loadavg()})")
            runs.append({"name": label, "params": lit, "threads": t,
                         "report": measure(inst, t, trials, repeat, repeat_folding_mib)})
            done += 1

    for name, variant, many in QUICK_MEMBERS:
        shape = _shape(name)
        label = instance_name(shape, variant)
        step(done, total, f"{label}: plan, generate, build")
        inst, lit = prepare(shape, variant, work, build_dir=builder.build_root(build_dir))
        built[(name, variant)] = inst, lit
        bench(label, inst, lit, [1, *(counts if many else [])])
    for name, lit in FIXED_CALIBRATION:
        label = fixed_instance_name(name, lit)
        step(done, total, f"{label}: generate, build")
        inst, lit = prepare_fixed(name, lit, work, build_dir=builder.build_root(build_dir))
        bench(label, inst, lit, [1, *counts])
    for name, variant, mib in REPEATS:
        inst, lit = built[(name, variant)]
        bench(instance_name(_shape(name), variant) + REPEATS_SUFFIX, inst, lit, [1], mib)
    for name, lit in KERNEL_CALIBRATION:
        label = fixed_instance_name(name, lit) + REPEATS_SUFFIX
        step(done, total, f"{label}: generate, build")
        inst, lit = prepare_fixed(name, lit, work, build_dir=builder.build_root(build_dir))
        bench(label, inst, lit, [1], KERNEL_REPEAT_MIB)
    step(done, total, "fit")
    prof = fit_runs(kern, [(Parameters.from_literal(r["params"]), r["report"]) for r in runs],
                    f"{src}; stages: the quick calibration shapes at threads 1, {counts}; "
                    f"load average {loadavg()}")
    step(total, total, "done")
    return prof, runs


def fit_runs(kern: Kernels, runs: Sequence[tuple[Parameters, dict[str, Any]]],
             source: str) -> Profile:
    """The profile of (params, bench report) runs: the op costs from the
    single-thread ones (measure/calibrate.py fit; the first dimension's read bandwidth from
    its own runs on a database far larger than the cache), the thread scaling from the runs
    at several threads paired with the same parameters' single-thread run."""
    ones = [(p, rep) for p, rep in runs if int(rep.get("threads", 1)) == 1]
    bw = kernel_read_bandwidth(ones, kern.cache_bytes,
                               lambda rep: stage_times(rep).get("first_dimension", 0.0))
    if bw > 0:
        kern = Kernels(kern.ntt_seconds, kern.mac, kern.path, bw, kern.cache_bytes)
    prof = fit(kern, ones, source=source)
    # paired by parameters and database kind (a REPEATS run shares its member's parameters)
    single = {(p.params_hash(), bool(rep.get("implicit_db"))): rep for p, rep in ones}
    pairs = []
    for p, rep in runs:
        key = (p.params_hash(), bool(rep.get("implicit_db")))
        if int(rep.get("threads", 1)) > 1 and key in single:
            pairs.append((p, single[key], rep))
    return fit_threads(prof, pairs)


def save_runs(runs: Sequence[dict[str, Any]], directory: Path) -> None:
    """The runs a quick calibration measured, one JSON each in the validation suite's record
    form (`spiralpir calibrate --suite records=DIR` re-fits from them)."""
    directory.mkdir(parents=True, exist_ok=True)
    for r in runs:
        path = directory / f"{r['name']}_t{r['threads']}.json"
        doc = {"params": r["params"], "bench": r["report"], "threads": r["threads"]}
        path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")

