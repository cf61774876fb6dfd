"""Machine calibration: per-operation costs from the runtime's own benchmarks -> a Profile.

Owns the fitting of the cost model (cost.py) to this machine:

1. Kernel costs from the runtime's microbenchmarks (`spiral_runtime_bench
   --benchmark_format=json`, Google Benchmark, CPU time, minimum over repetitions):
   `ntt_forward|ntt_inverse/<path>/<d>/<bits>` -> seconds per residue NTT for each poly_len
   (mean of both directions, the fastest available path, the prime size closest to 28 bits);
   `mul_add/<path>/2048/<bits>` / 2048 -> seconds per `mac`; `stream_read/<MiB>` -> the
   single-thread streaming read bandwidth (1 GiB buffer) and the cache size (the largest
   buffer read at least 1.5x faster than 1 GiB).
2. Stage timings of generated benchmarks (`bench --json --threads 1`; `stages_cpu` (process CPU
   seconds) when the driver reports it, else `stages` (wall) scaled to the answer's CPU time;
   the variant drivers' streaming `packing` timing is split out of `modswitch`) for several
   parameter sets (by default the full-size calibration shapes of validation.py):
   * `fd`, `fdout` = non-negative least squares (relative errors) of the first-dimension
     seconds under the cost model's max(f·words + outputs, memory) + (1 − f)·words
     (_fit_first_dim: each run on the branch the fit puts it, until none moves): the runs
     bound by the read bandwidth give nothing but their repeats from cache, which the quick
     calibration's implicit member with repeated folding indices provides (f = 1/8); from the
     runs of the n <= 2 kernels (all runs when there are none),
   * `fd_n3`, `fd_n4` = median over the runs of computation matrices n = 3 / n >= 4 of the extra
     cost per multiply-add that makes the model's first dimension their seconds
     (_kernel_extra; the quick calibration's kernel members, with repeated folding indices),
   * `ms`, `ms_wide` = median of (modswitch seconds − its NTT time) / its count, over the runs
     with fewer / with three or more CRT primes,
   * `parse` = median over the stream variants' runs of (expansion − its NTT time) / parse count,
   * `decomp` (two CRT primes or fewer) = median over the two-prime folding and packing
     stages of their seconds left after NTT and mac time per gadget digit; `auto` = median
     over the two-prime expansions of what is left after their digits per automorphism
     coefficient, `tile` the same over their conversions per query coefficient tiled;
     `compose` = 0 (the two-prime CRT composition is inside the digit cost),
   * the three-prime (scalar 128-bit) decomposition: `compose_wide` (per coefficient
     composed), `decomp_wide` (per digit) and `redecomp_wide` (per digit the expansion's
     per-residue tasks extract again) = non-negative least squares (relative errors) of the
     rests of every three-prime expansion, conversion, folding and packing stage
     (_fit_wide; compose_wide only from two or more three-prime parameter sets, whose gadget
     lengths set the per-coefficient and per-digit parts apart),
   * `stage_scale[s]` = median over sets of measured / predicted seconds of stage s (over the
     runs where stage s took at least MIN_SCALE_SECONDS, if any), but the first dimension's
     (1: fd and fdout are fitted to its seconds directly).
The result is a `Profile` (CPU model, date, sources) written as JSON.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import platform
import re
import statistics
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.cost import (
    FD_WORD_OPS,
    STAGES,
    Profile,
    db_reads,
    first_dim_memory,
    params_db_bytes,
    params_query_bytes,
    server_seconds,
    stage_op_counts,
    stage_seconds,
)
from spiralpir.optimizer.params.parameters import Parameters

_PATH_ORDER = ("avx512", "avx2", "native")
MIN_SCALE_SECONDS = 0.002
_NAME = re.compile(r"^(ntt_forward|ntt_inverse|mul_add|mul_add_lazy)/(\w+)/(\d+)/(\d+)$")
_READ = re.compile(r"^stream_read/(\d+)$")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def fastest_path(exe: str | Path) -> str:
    """The fastest kernel path spiral_runtime_bench has benchmarks for on this CPU (its
    benchmark names list only the paths the CPU allows)."""
    try:
        proc = subprocess.run([str(exe), "--benchmark_list_tests=true"], capture_output=True,
                              text=True, check=False, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SpiralpirError(f"cannot run {exe}: {exc}") from exc
    paths = {m.group(2) for line in proc.stdout.split() if (m := _NAME.match(line))}
    if not paths:
        raise SpiralpirError(f"{exe} lists no ntt/mul_add benchmarks")
    return next((p for p in _PATH_ORDER if p in paths), sorted(paths)[0])


def run_arith_bench(exe: str | Path, min_time: str = "0.1", repetitions: int = 3,
                    path: str | None = None) -> dict[str, Any]:
    """Run spiral_runtime_bench with JSON output; returns the parsed Google Benchmark report.
    path: only that kernel path's NTT and multiply-add benchmarks (what kernel_costs uses)."""
    kernels = "(ntt_forward|ntt_inverse|mul_add)/" + (f"{path}/" if path else "")
    cmd = [str(exe), "--benchmark_format=json", f"--benchmark_min_time={min_time}",
           f"--benchmark_repetitions={repetitions}",
           f"--benchmark_filter=^({kernels}|stream_read/)"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SpiralpirError(f"cannot run {exe}: {exc}") from exc
    if proc.returncode != 0:
        raise SpiralpirError(f"{exe} failed (exit {proc.returncode}): {proc.stderr.strip()[:400]}")
    try:
        return dict(json.loads(proc.stdout))
    except json.JSONDecodeError as exc:
        raise SpiralpirError(f"{exe} did not print JSON: {exc}") from exc


def _seconds(entry: dict[str, Any]) -> float:
    unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[entry.get("time_unit", "ns")]
    return float(entry.get("cpu_time", entry["real_time"])) * unit


@dataclass(frozen=True)
class Kernels:
    """What the microbenchmarks give the profile."""

    ntt_seconds: dict[int, float]
    mac: float
    path: str
    read_bytes_per_second: float = 0.0
    cache_bytes: float = 0.0


def kernel_costs(report: dict[str, Any]) -> Kernels:
    """Kernel costs from a microbenchmark report (CPU time: robust on a shared machine)."""
    rows: dict[tuple[str, str, int, int], float] = {}
    reads: dict[int, float] = {}
    for e in report.get("benchmarks", []):
        if e.get("run_type", "iteration") != "iteration":
            continue
        name = str(e.get("name", ""))
        m = _NAME.match(name)
        if m:
            key = (m.group(1), m.group(2), int(m.group(3)), int(m.group(4)))
            rows[key] = min(rows.get(key, math.inf), _seconds(e))
        r = _READ.match(name)
        if r and e.get("bytes_per_second"):
            mib = int(r.group(1))
            reads[mib] = max(reads.get(mib, 0.0), float(e["bytes_per_second"]))
    if not rows:
        raise SpiralpirError("the microbenchmark report has no ntt_forward/ntt_inverse/mul_add "
                             "rows")
    paths = {k[1] for k in rows}
    path = next((p for p in _PATH_ORDER if p in paths), sorted(paths)[0])
    ntt: dict[int, float] = {}
    for d in sorted({k[2] for k in rows if k[1] == path and k[0].startswith("ntt")}):
        bits = sorted({k[3] for k in rows if k[1] == path and k[2] == d}, key=lambda b: abs(b - 28))
        b = bits[0]
        vals = [rows[(kind, path, d, b)] for kind in ("ntt_forward", "ntt_inverse")
                if (kind, path, d, b) in rows]
        ntt[d] = sum(vals) / len(vals)
    macs = sorted(((abs(k[3] - 28), v / k[2]) for k, v in rows.items()
                   if k[0] == "mul_add" and k[1] == path))
    if not ntt or not macs:
        raise SpiralpirError(f"the microbenchmark report lacks NTT or mul_add rows for {path}")
    bw = reads.get(max(reads), 0.0) if reads else 0.0
    cache = max((mib for mib, v in reads.items() if v >= 1.5 * bw), default=0) * float(1 << 20)
    return Kernels(ntt, macs[0][1], path, bw, cache)


def fit(kernel: Kernels, runs: Sequence[tuple[Parameters, dict[str, Any]]],
        source: str = "") -> Profile:
    """Fit the remaining op costs and the stage scales to measured stage timings."""
    if not runs:
        raise SpiralpirError("calibration needs at least one benchmark run with stage timings")
    today = _dt.date.today().isoformat()

    def profile(ops: dict[str, float], scale: dict[str, float] | None = None) -> Profile:
        return Profile(cpu_model=cpu_model(), date=today, ntt_seconds=kernel.ntt_seconds,
                       op_seconds=ops, stage_scale=scale or {},
                       read_bytes_per_second=kernel.read_bytes_per_second,
                       cache_bytes=kernel.cache_bytes, source=source)

    base = profile({"mac": kernel.mac, "decomp": 0.0, "auto": 0.0, "parse": 0.0, "fd": 0.0,
                    "fdout": 0.0, "ms": 0.0})
    every = [(p, stage_op_counts(p), stage_times(rep), report_layout(p, rep))
             for p, rep in runs]
    # a run that repeats folding indices times its shape's other stages again: only its first
    # dimension is fitted on
    counts = [x for x in every if not x[3][1]] or every
    fd_runs = []
    for p, c, st, layout in every:
        if st.get("first_dimension", 0) <= 0:
            continue
        distinct, memory = db_reads(p, *layout)
        fraction = memory / params_db_bytes(p)
        distinct, memory = first_dim_memory(memory, distinct, params_query_bytes(p),
                                            kernel.cache_bytes)
        mem_s = (memory / kernel.read_bytes_per_second if kernel.read_bytes_per_second > 0
                 and distinct > kernel.cache_bytes else 0.0)
        fd_runs.append((_kernel_op(c["first_dimension"]),
                        FirstDimRun(c["first_dimension"]["fd"], c["first_dimension"]["fdout"],
                                    fraction, mem_s, st["first_dimension"])))
    fd, fdout = _fit_first_dim([r for op, r in fd_runs if op == "fd"]
                               or [r for _, r in fd_runs])
    # the n = 3 and n >= 4 kernels: their extra cost per multiply-add, from their own runs
    kernel_extra = {op: statistics.median(extras) for op in FD_WORD_OPS[1:]
                    if (extras := [_kernel_extra(r, fd, fdout) for o, r in fd_runs if o == op])}
    def ms_fit(kind: str) -> float:
        vals = [max(0.0, st["modswitch"] - c["modswitch"]["ntt"] * base.ntt(p.poly_len))
                / c["modswitch"][kind] for p, c, st, _ in counts if c["modswitch"][kind] > 0]
        return statistics.median(vals) if vals else 0.0

    ms = ms_fit("ms")
    ms_wide = ms_fit("ms_wide") or ms  # no run with three primes: the narrow cost
    # query parsing: the stream variants' expansion stage is nothing else
    parsing = [max(0.0, st["expansion"] - c["expansion"]["ntt"] * base.ntt(p.poly_len))
               / c["expansion"]["parse"] for p, c, st, _ in counts
               if c["expansion"]["auto"] == 0 and st.get("expansion", 0) > 0]
    parse = statistics.median(parsing) if parsing else 0.0
    def rest(p: Parameters, cc: dict[str, float], m: float) -> float:
        """a stage's seconds left after its NTTs, multiply-adds and query parsing"""
        return (m - cc.get("ntt", 0) * base.ntt(p.poly_len) - cc.get("mac", 0) * kernel.mac
                - cc.get("parse", 0) * parse)

    # the two-prime (vector) digits: median over the folding and packing stages of their rest
    # per digit (robust to a disturbed run); then from the two-prime expansions the
    # automorphisms and from their conversions the tiling, each rest after the digits
    narrow = [(p, c, st) for p, c, st, _ in counts if len(p.moduli) < 3]
    digits = [max(0.0, rest(p, c[stage], m)) / c[stage]["decomp"]
              for p, c, st in narrow for stage in ("folding", "packing")
              if (m := float(st.get(stage, 0.0))) > 0 and c[stage].get("decomp", 0) > 0]
    dec = statistics.median(digits) if digits else 0.0

    def per_unit(stage: str, op: str, runs: Sequence[tuple[Parameters, dict[str, Any],
                                                          dict[str, float]]]) -> list[float]:
        return [max(0.0, rest(p, c[stage], m) - c[stage].get("decomp", 0) * dec)
                / c[stage][op] for p, c, st in runs
                if (m := float(st.get(stage, 0.0))) > 0 and c[stage].get(op, 0) > 0]

    autos, tiles = per_unit("expansion", "auto", narrow), per_unit("conversion", "tile", narrow)
    aut = statistics.median(autos) if autos else 0.0
    tile = statistics.median(tiles) if tiles else 0.0
    wide = _fit_wide([(p, c, st) for p, c, st, _ in counts if len(p.moduli) >= 3], rest,
                     None if autos else "auto", None if tiles else "tile", aut, tile)
    aut, tile = wide.pop("auto", aut), wide.pop("tile", tile)
    if not digits:  # no two-prime run: the wide digit cost stands in
        dec = wide.get("decomp_wide", 0.0)
    if "decomp_wide" not in wide:  # no three-prime run: the narrow cost
        wide["decomp_wide"] = dec
    for op in ("redecomp_wide", "compose_wide"):
        wide.setdefault(op, 0.0)
    prof = profile({"mac": kernel.mac, "decomp": dec, "compose": 0.0, "auto": aut,
                    "parse": parse, "tile": tile, "fd": fd, "fdout": fdout, "ms": ms,
                    "ms_wide": ms_wide, **kernel_extra, **wide})
    scale: dict[str, float] = {"first_dimension": 1.0}
    for stage in (s for s in STAGES if s != "first_dimension"):
        ratios = [(st[stage] / pred, st[stage]) for p, _, st, layout in counts
                  if (pred := stage_seconds(p, prof, *layout)[stage]) > 0
                  and st.get(stage, 0) > 0]
        # stages timed at a few milliseconds or more carry the scale (short ones are noisy)
        long = [r for r, secs in ratios if secs >= MIN_SCALE_SECONDS]
        scale[stage] = statistics.median(long or [r for r, _ in ratios]) if ratios else 1.0
    return profile(prof.op_seconds, scale)


WIDE_STAGES = ("expansion", "conversion", "folding", "packing")


def _fit_wide(runs: Sequence[tuple[Parameters, dict[str, dict[str, float]], dict[str, float]]],
              rest: Any, auto_op: str | None, tile_op: str | None, aut: float, tile: float
              ) -> dict[str, float]:
    """The three-prime decomposition's costs (compose_wide, decomp_wide, redecomp_wide) by
    non-negative least squares (relative errors) over the wide stages of three-prime runs:
    each stage's rest after its NTTs, multiply-adds and parsing (`rest`), and its automorphisms
    and tiling at the two-prime costs aut, tile — or, auto_op / tile_op given (no two-prime
    run to take them from), those fitted with them. The composition per coefficient, apart
    from the digits, only with two or more parameter sets (their gadget lengths tell the two
    apart); else 0 as before it was modelled. {} without three-prime runs."""
    ops = ["decomp_wide", "redecomp_wide"] + [o for o in (auto_op, tile_op) if o]
    if len({p.params_hash() for p, _, _ in runs}) >= 2:
        ops.insert(0, "compose_wide")
    rows, rhs = [], []
    for p, c, st in runs:
        for stage in WIDE_STAGES:
            m, cc = float(st.get(stage, 0.0)), c[stage]
            if m <= 0 or cc.get("decomp_wide", 0) <= 0:
                continue
            left = rest(p, cc, m) - (0.0 if auto_op else cc.get("auto", 0) * aut) \
                - (0.0 if tile_op else cc.get("tile", 0) * tile)
            rows.append([cc.get(op, 0.0) / m for op in ops])
            rhs.append(left / m)
    if not rows:
        return {}
    return dict(zip(ops, _nnls(np.array(rows), np.array(rhs)), strict=True))


def report_layout(p: Parameters, rep: dict[str, Any]) -> tuple[bool, bool, int]:
    """(implicit_db, repeated_folding, phys_j) of a bench report's database (cost.db_reads):
    the layout it reports (`implicit_layout`), else, from drivers that do not report it, the
    default layout's, repeating folding indices when one computation instance is larger than
    the process ever held (its peak memory)."""
    if not rep.get("implicit_db"):
        return False, False, 0
    layout = rep.get("implicit_layout")
    if isinstance(layout, dict) and int(layout.get("folding", 0)) > 0:
        phys_j = int(layout["folding"])
        return True, phys_j < (1 << p.nu_2), phys_j
    if not rep.get("peak_memory_bytes"):
        return True, False, 0
    comp_instances = p.instances * (p.n * p.n if p.variant in ("pack", "stream_pack") else 1)
    per_instance = float(rep["preprocessed_db_bytes"]) / comp_instances
    return True, per_instance > float(rep["peak_memory_bytes"]), 0


@dataclass(frozen=True)
class FirstDimRun:
    """One run's first dimension for the fd/fdout fit: its op counts, the fraction f of its
    words read from memory, its memory seconds (0: cache resident) and its measured seconds."""

    words: float
    outputs: float
    read_fraction: float
    memory_seconds: float
    seconds: float


def _fit_first_dim(runs: Sequence[FirstDimRun], rounds: int = 20) -> tuple[float, float]:
    """(fd, fdout) minimising the relative errors of max(f·words·fd + outputs·fdout, memory)
    + (1 − f)·words·fd over the runs (non-negative): each run on its branch of the max under
    the current solution (compute at the start), solved linearly, until no run changes branch.
    A run on the memory branch with nothing repeated from cache says nothing about them."""
    compute = [True] * len(runs)
    sol = (0.0, 0.0)
    for _ in range(rounds):
        rows, rhs = [], []
        for r, on_compute in zip(runs, compute, strict=True):
            if on_compute:
                rows.append([r.words / r.seconds, r.outputs / r.seconds])
                rhs.append(1.0)
            elif r.read_fraction < 1.0:
                rows.append([(1.0 - r.read_fraction) * r.words / r.seconds, 0.0])
                rhs.append(1.0 - r.memory_seconds / r.seconds)
        if not rows:
            break
        sol = _nnls(np.array(rows), np.array(rhs))
        fd, fdout = sol
        now = [r.read_fraction * r.words * fd + r.outputs * fdout >= r.memory_seconds
               for r in runs]
        if now == compute:
            break
        compute = now
    return sol


def _kernel_op(counts: dict[str, float]) -> str:
    """which kernel a first dimension's op counts run: fd (n <= 2), fd_n3 or fd_n4"""
    return next((op for op in FD_WORD_OPS[1:] if counts.get(op, 0.0) > 0), "fd")


def _kernel_extra(run: FirstDimRun, fd: float, fdout: float) -> float:
    """The extra cost per multiply-add c (>= 0) that makes max(f·words·(fd + c) + outputs·fdout,
    memory) + (1 − f)·words·(fd + c) the run's seconds: on the compute branch when that holds
    there, else on the memory branch (its words repeated from cache; none: nothing to say, 0)."""
    per_word = (run.seconds - run.outputs * fdout) / run.words
    if run.read_fraction * run.words * per_word + run.outputs * fdout >= run.memory_seconds:
        return max(0.0, per_word - fd)
    if run.read_fraction >= 1.0:
        return 0.0
    return max(0.0, (run.seconds - run.memory_seconds)
               / ((1.0 - run.read_fraction) * run.words) - fd)


def stage_times(rep: dict[str, Any]) -> dict[str, float]:
    """Per-stage seconds of a bench report: process CPU time (`stages_cpu`, robust on a shared
    machine) when the driver reports it; the variant drivers' single-thread CPU figures split
    by stage (_variant_cpu_stages); else wall time (`stages`) scaled to the answer's process
    CPU time (single thread). The variant drivers book packing inside `modswitch`; their
    streaming timings give it apart."""
    cpu_split = _variant_cpu_stages(rep)
    if cpu_split is not None:
        return cpu_split
    st = {k: float(v) for k, v in (rep.get("stages_cpu") or rep["stages"]).items()}
    wall = sum(st.values())
    if not rep.get("stages_cpu") and rep.get("threads") == 1 and rep.get("server_cpu_seconds") \
            and wall > 0:
        # wall-clock stages only (the variant drivers): on a shared machine they include time
        # waiting for a core; scale them to the answer's measured process CPU time
        k = float(rep["server_cpu_seconds"]) / wall
        st = {name: v * k for name, v in st.items()}
    stream = rep.get("streaming", {})
    pk = stream.get("stages", {}).get("packing")
    if pk is not None and "packing" not in st:
        if stream.get("per_database_cpu_seconds") and stream.get("per_database_seconds"):
            pk = float(pk) * stream["per_database_cpu_seconds"] / stream["per_database_seconds"]
        st["packing"] = min(float(pk), st.get("modswitch", 0.0))
        st["modswitch"] = st.get("modswitch", 0.0) - st["packing"]
    return st


def _variant_cpu_stages(rep: dict[str, Any]) -> dict[str, float] | None:
    """The variant drivers' stages in process CPU seconds (single thread), from what they do
    measure in CPU time: the whole answer, the prepared query's answer and its first dimension
    (streaming); the one-time part (the answer less the prepared answer) and the rest of the
    prepared answer are split by their wall times. None without those figures."""
    stream = rep.get("streaming") or {}
    keys = ("first_dimension_cpu_seconds", "per_database_cpu_seconds")
    if (rep.get("stages_cpu") or rep.get("threads") != 1 or not rep.get("server_cpu_seconds")
            or not all(stream.get(k) for k in keys) or not stream.get("stages")):
        return None
    wall, tail_wall = rep["stages"], stream["stages"]
    per_db = float(stream["per_database_cpu_seconds"])
    fd = min(float(stream["first_dimension_cpu_seconds"]), per_db)
    one_time = max(0.0, float(rep["server_cpu_seconds"]) - per_db)

    def split(total: float, parts: dict[str, float]) -> dict[str, float]:
        w = sum(parts.values())
        return {k: total * v / w if w > 0 else 0.0 for k, v in parts.items()}

    return {**split(one_time, {s: float(wall[s]) for s in ("expansion", "conversion")}),
            "first_dimension": fd,
            **split(per_db - fd, {s: float(tail_wall.get(s, 0.0))
                                  for s in ("folding", "packing", "modswitch")})}


def measured_seconds(rep: dict[str, Any]) -> float:
    return sum(stage_times(rep).values())


def _nnls(a: np.ndarray, b: np.ndarray) -> tuple[float, ...]:
    """Non-negative least squares for a few unknowns: the best unconstrained least-squares
    solution over every subset of the columns whose solution is non-negative."""
    k = a.shape[1] if a.ndim == 2 else 0
    if a.size == 0:
        return (0.0,) * k
    best: tuple[float, tuple[float, ...]] = (math.inf, (0.0,) * k)
    for mask in range(1, 1 << k):
        cols = [j for j in range(k) if mask >> j & 1]
        sol, *_ = np.linalg.lstsq(a[:, cols], b, rcond=None)
        if sol.min() < 0:
            continue
        x = np.zeros(k)
        x[cols] = sol
        err = float(np.sum((a @ x - b) ** 2))
        if err < best[0]:
            best = (err, tuple(float(v) for v in x))
    return best[1]


def prediction_errors(profile: Profile, runs: Sequence[tuple[Parameters, dict[str, Any]]]
                      ) -> list[tuple[str, float, float]]:
    """(params hash, predicted, measured) total server seconds for each run."""
    out = []
    for p, rep in runs:
        pred = server_seconds(p, profile, *report_layout(p, rep))
        out.append((p.params_hash().hex(), pred, measured_seconds(rep)))
    return out


def load_run(params_json: str | Path, report_json: str | Path) -> tuple[Parameters, dict[str, Any]]:
    """A (params, bench report) pair from files; params may be a plan document."""
    try:
        doc = json.loads(Path(params_json).read_text())
        rep = json.loads(Path(report_json).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SpiralpirError(f"cannot read calibration run: {exc}") from exc
    p = Parameters.from_literal(doc["params"] if "params" in doc else doc)
    if "stages" not in rep or "server_seconds" not in rep:
        raise SpiralpirError(f"{report_json}: not a bench --json report (no 'stages')")
    if rep.get("params_hash") and rep["params_hash"] != p.params_hash().hex():
        raise SpiralpirError(f"{report_json} was measured with other parameters "
                             f"(hash {rep['params_hash']} != {p.params_hash().hex()})")
    return p, rep
