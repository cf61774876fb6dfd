"""The time model against the real server: calibration and validation suite (a benchmark).

Owns the suite of database shapes the cost model is calibrated and validated on, and the runs:
each (shape, variant) is planned now (`planning.plan_json`, the ring degree fixed per shape),
generated (`codegen.generate`) and built (`builder.build`, one shared runtime build) under a work
directory, then benchmarked single-threaded with the generated bench executable
(`cmd_bench.run_bench`):

* calibration runs the CALIBRATION shapes at full size (small databases, disjoint from the
  suite; optionally also the suite's CI twins), whose stage timings `calibrate.fit` turns
  into per-operation costs;
* validation runs the full-size benchmarks (databases above --max-db-gib use the drivers'
  implicit database: ≥ 1 GiB of distinct data addressed cyclically) and compares every stage
  and the total with the model's prediction.

Measurements are minima over `repeat` bench processes (each the median of `trials` answers):
the machine may be shared. A stored record (`record`) holds the parameters, the minimum
report, every repetition's total, the command, commit, CPU model, load averages and date, so
that tests/models/test_timing.py can re-check the model against it.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spiralpir.optimizer import codegen
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.measure.bench import run_bench
from spiralpir.optimizer.measure.calibrate import cpu_model, report_layout, stage_times
from spiralpir.optimizer.measure.scaling import uncontended_seconds
from spiralpir.optimizer.models.cost import STAGES, Profile, split_seconds
from spiralpir.optimizer.models.parallel import wall_stage_seconds
from spiralpir.optimizer.params.ci_twin import ci_literal
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.plan.planner import estimate, plan_json

_PREFIX = {"spiral": "spiral", "stream": "stream", "pack": "pack", "stream_pack": "streampack"}


@dataclass(frozen=True)
class Shape:
    name: str
    records: int
    record_size: int
    poly_len: int
    min_security: float = 128.0


# small to large databases, every ring degree. At d = 1024 no modulus leaves enough noise
# budget for a >= 128-bit plan of this shape (noise.py): it is planned at >= 100 bits, a
# timing reference only.
SUITE = (
    Shape("2e14x32b", 2**14, 32, 1024, min_security=100.0),
    Shape("2e16x1kb", 2**16, 1024, 2048),
    Shape("2e20x256b", 2**20, 256, 2048),
    Shape("2e14x100kb", 2**14, 100_000, 4096),
)


# full-size calibration runs: databases small enough to benchmark quickly, hypercubes of
# realistic shape (2^nu_1 and 2^nu_2 vary; the CI twins' nu_1 <= 4, nu_2 <= 2 take a few
# milliseconds, too short to time on a shared machine), disjoint from the validation shapes
CALIBRATION = (
    (Shape("cal2e12x2kb", 2**12, 2048, 2048), ("spiral", "stream", "pack")),
    (Shape("cal2e12x64b", 2**12, 64, 1024, min_security=100.0), ("spiral", "stream")),
    (Shape("cal2e18x128b", 2**18, 128, 2048), ("spiral",)),
    (Shape("cal2e10x16kb", 2**10, 16_384, 4096), ("spiral", "pack")),
    # three CRT primes (q > 2^64: the runtime's wide modulus-switching path); added after the
    # shipped profile's calibration run, so that profile has no ms_wide of its own
    (Shape("cal2e10x100kb", 2**10, 100_000, 4096), ("spiral",)),
)


# one parameter set given, not planned: three CRT primes with long gadgets (t_exp 30 and 45,
# t_conv 13: the three-prime 2^18 x 30 KB builds' gadgets and primes on a 2^9-record
# hypercube). Beside the planned three-prime member's short gadgets it tells the wide
# decomposition's cost per coefficient from its cost per digit (calibrate._fit_wide); planned,
# the primes and gadgets would follow the profile it is planned with.
FIXED_CALIBRATION = (
    ("cal2e9x15kb_wide", {
        "variant": "spiral", "poly_len": 4096, "moduli": [1073692673, 1073668097, 1073651713],
        "n": 1, "nu_1": 5, "nu_2": 4, "instances": 1, "p": 1 << 30, "q2_bits": 42,
        "t_conv": 13, "t_exp_left": 30, "t_exp_right": 45, "t_gsw": 4, "noise_width": 6.4,
        "secret_distribution": "gaussian", "records": 512, "record_size": 15000,
        "db_item_size": 15000}),
)

# given, not planned: the first-dimension kernels of computation matrices n = 3 and n = 4 (a
# prime pair, d = 2048, databases of 576 and 512 MiB), whose multiply-adds cost more than the
# n <= 2 kernels' (calibrate._kernel_extra: fd_n3, fd_n4). The quick calibration benchmarks them
# on an implicit database repeating folding indices over 64 MiB: their compute rate.
KERNEL_CALIBRATION = tuple(
    (f"cal_n{n}_kernel", {
        "variant": "spiral", "poly_len": 2048, "moduli": [1073692673, 1073668097], "n": n,
        "nu_1": nu_1, "nu_2": 4, "instances": 1, "p": 256, "q2_bits": 22, "t_conv": 5,
        "t_exp_left": 10, "t_exp_right": 20, "t_gsw": 5, "noise_width": 6.4,
        "secret_distribution": "gaussian", "records": 2 ** (nu_1 + 4),
        "record_size": n * n * 2048, "db_item_size": n * n * 2048})
    for n, nu_1 in ((3, 8), (4, 7)))


def shapes_named(names: Sequence[str]) -> list[Shape]:
    by = {s.name: s for s in SUITE}
    bad = [n for n in names if n not in by]
    if bad:
        raise SpiralpirError(f"unknown suite shape {bad[0]!r} (known: {', '.join(by)})")
    return [by[n] for n in names]


def instance_name(shape: Shape, variant: str) -> str:
    return f"val_{_PREFIX[variant]}_{shape.name}"


def prepare(shape: Shape, variant: str, work: Path, replan: bool = False,
            targets: Sequence[str] = ("bench",), build_dir: Path | None = None
            ) -> tuple[builder.Instance, dict[str, Any]]:
    """Plan, generate and build one suite member under `work` (built under build_dir, default
    work/build); returns (instance, literal). A member generated earlier keeps its parameters
    (no rebuild) unless replan."""
    return _generate_build(
        instance_name(shape, variant), work, lambda doc: not replan,
        lambda: plan_json(shape.records, shape.record_size, variant=variant,
                          poly_lens=(shape.poly_len,), min_security=shape.min_security),
        targets, build_dir)


def fixed_instance_name(name: str, literal: dict[str, Any]) -> str:
    return f"val_{_PREFIX[literal['variant']]}_{name}"


def prepare_fixed(name: str, literal: dict[str, Any], work: Path,
                  build_dir: Path | None = None) -> tuple[builder.Instance, dict[str, Any]]:
    """Generate and build a FIXED_CALIBRATION member under `work` as `prepare` does a planned
    one (its estimate from the active profile; generated earlier with the same parameters:
    kept, no new security report)."""
    p = Parameters.from_literal(literal)
    inst, _ = _generate_build(
        fixed_instance_name(name, literal), work,
        lambda doc: Parameters.from_literal(doc["params"]) == p,
        lambda: {"params": p.to_literal(), "estimate": estimate(p)}, ("bench",), build_dir)
    return inst, p.to_literal()


def _generate_build(name: str, work: Path, keep: Callable[[dict[str, Any]], bool],
                    fresh: Callable[[], dict[str, Any]], targets: Sequence[str],
                    build_dir: Path | None) -> tuple[builder.Instance, dict[str, Any]]:
    """Build `name` under work/generated: from its params.json there when `keep(doc)` (no new
    plan or security report), else from the plan document `fresh()`; returns (instance, its
    parameter literal)."""
    old = work / "generated" / name / "params.json"
    doc = codegen.load_document(old) if old.is_file() else None
    if doc is not None and keep(doc):
        src = codegen.generate_from_document(name, doc, out_dir=work / "generated")
    else:
        doc = fresh()
        src = codegen.generate(name, doc["params"], doc["estimate"], out_dir=work / "generated")
    inst = builder.build(src, build_dir or work / "build", show_progress=False,
                         targets=list(targets))
    return inst, dict(doc["params"])


def loadavg() -> list[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return []


def commit() -> str:
    try:
        here = str(Path(__file__).parent)  # a source checkout: its commit; installed: ""
        out = subprocess.run(["git", "-C", here, "describe", "--always", "--dirty"],
                             capture_output=True, text=True, check=False)
        return out.stdout.strip()
    except OSError:
        return ""


def measured_total(rep: dict[str, Any]) -> float:
    """Seconds of the whole answer: single-thread, the process CPU time when reported (robust
    on a shared machine); at several threads the wall time."""
    if rep.get("threads") == 1 and rep.get("server_cpu_seconds"):
        return float(rep["server_cpu_seconds"])
    if rep.get("threads", 1) != 1:
        return float(rep["server_seconds"])
    return sum(stage_times(rep).values())


def bench_min(inst: builder.Instance, ci: bool, trials: int, repeat: int,
              max_db_gib: float, threads: int = 1) -> tuple[dict[str, Any], list[float]]:
    """The report with the smallest total over `repeat` bench processes, and every total."""
    reps = [run_bench(inst, threads=threads, trials=trials, ci=ci, max_db_gib=max_db_gib)
            for _ in range(repeat)]
    bad = [r for r in reps if not r["correct"]]
    if bad:
        raise SpiralpirError(f"{inst.name}: the benchmark decoded wrong records")
    totals = [measured_total(r) for r in reps]
    return reps[totals.index(min(totals))], totals


def record(lit: dict[str, Any], rep: dict[str, Any], totals: list[float], command: str,
           load_before: list[float]) -> dict[str, Any]:
    return {
        "params": lit, "bench": rep, "totals": totals, "command": command, "commit": commit(),
        "cpu_model": cpu_model(), "loadavg_before": load_before, "loadavg_after": loadavg(),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def repeated_folding(p: Parameters, rep: dict[str, Any]) -> bool:
    """Whether a bench report's implicit database repeats folding indices (cost.db_reads)."""
    return report_layout(p, rep)[1]


def compare(p: Parameters, rep: dict[str, Any], profile: Profile) -> dict[str, Any]:
    """Predicted vs measured seconds per stage (the runtime books packing inside modswitch
    unless its report gives packing apart) and in total, at the report's thread count
    (single-thread: CPU seconds; several threads: wall seconds)."""
    implicit = bool(rep.get("implicit_db"))
    threads = int(rep.get("threads", 1))
    pred = wall_stage_seconds(p, profile, threads, *report_layout(p, rep))
    meas = stage_times(rep) if threads == 1 else {k: float(v) for k, v in rep["stages"].items()}
    if "packing" not in meas:
        pred = {**pred, "modswitch": pred["modswitch"] + pred["packing"], "packing": 0.0}
    stages = {s: (pred.get(s, 0.0), meas.get(s, 0.0)) for s in STAGES
              if pred.get(s, 0.0) > 0 or meas.get(s, 0.0) > 0}
    total_pred = sum(pred.values())
    total_meas = measured_total(rep)
    out = {"stages": stages, "total": (total_pred, total_meas), "ratio": total_pred / total_meas,
           "implicit_db": implicit, "threads": threads}
    unc = uncontended_seconds(rep)
    if unc > 0:  # several threads: the wall time this answer would have had on an idle machine
        out["uncontended"] = (total_pred, unc)
    # the prepared-query path: one prepare, then answers per database (bench's "streaming")
    stream = rep.get("streaming") or {}
    one_time, per_db = split_seconds(pred)
    per_db_meas = stream.get("per_database_cpu_seconds") if threads == 1 else None
    per_db_meas = per_db_meas or stream.get("per_database_seconds")
    if per_db_meas:
        out["per_database"] = (per_db, float(per_db_meas))
    if stream.get("prepare_seconds"):
        out["prepare"] = (one_time, float(stream["prepare_seconds"]))
    return out


def format_comparison(name: str, p: Parameters, cmp: dict[str, Any]) -> str:
    tp, tm = cmp["total"]
    lines = [f"{name}: d={p.poly_len} n={p.n} nu=({p.nu_1},{p.nu_2}) inst={p.instances} "
             f"records={p.records}x{p.record_size}B, {cmp.get('threads', 1)} thread(s)"
             + (" [implicit db]" if cmp["implicit_db"] else "")]
    for stage, (a, b) in cmp["stages"].items():
        ratio = f"{a / b:6.2f}" if b > 0 else "     -"
        lines.append(f"    {stage:<16} predicted {a:9.4f} s  measured {b:9.4f} s  ratio {ratio}")
    lines.append(f"    {'TOTAL':<16} predicted {tp:9.4f} s  measured {tm:9.4f} s  ratio "
                 f"{tp / tm:6.2f}")
    return "\n".join(lines)


def run_suite(shapes: Sequence[Shape], variants: Sequence[str], work: Path, *, ci: bool,
              trials: int, repeat: int, max_db_gib: float, log: Callable[[str], None],
              replan: bool = False, label: str = "", threads: int = 1
              ) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(name, literal, record) of every (shape, variant): the CI twins when ci, else full size.
    Members the planner cannot plan (e.g. no secure ring of that degree) are reported and
    skipped."""
    out = []
    for shape in shapes:
        for variant in variants:
            name = instance_name(shape, variant)
            try:
                inst, lit = prepare(shape, variant, work, replan,
                                    ("bench", "ci_bench") if ci else ("bench",))
            except SpiralpirError as exc:
                log(f"{name}: skipped ({str(exc).splitlines()[0]})")
                continue
            if ci:
                lit = ci_literal(lit)
            load = loadavg()
            log(f"{name}: benchmarking {'CI twin' if ci else 'full size'} (load {load}) ...")
            try:
                rep, totals = bench_min(inst, ci, trials, repeat, max_db_gib, threads)
            except SpiralpirError as exc:
                log(f"{name}: skipped ({str(exc).splitlines()[0]})")
                continue
            cmd = (f"{inst.ci_bench if ci else inst.bench} --json --threads {threads} "
                   f"--trials {trials} "
                   f"--max-db-gib {max_db_gib} (minimum of {repeat} runs)")
            out.append((name, lit, record(lit, rep, totals, cmd, load)))
            # kept for re-fits: runs/ci, runs/full (validation), runs/<label>
            kind = label or ("ci" if ci else "full") + (f"_t{threads}" if threads > 1 else "")
            store(out[-1:], work / "runs" / kind)
    return out


def store(records: Sequence[tuple[str, dict[str, Any], dict[str, Any]]], directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, _, rec in records:
        path = directory / f"{name}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, path)


def load_records(directory: Path) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """Saved suite runs (`store`) as (name, literal, record)."""
    out = []
    for path in sorted(Path(directory).glob("*.json")):
        try:
            rec = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise SpiralpirError(f"cannot read suite run {path}: {exc}") from exc
        if not isinstance(rec, dict) or "params" not in rec or "bench" not in rec:
            raise SpiralpirError(f"{path}: not a suite run (needs 'params' and 'bench')")
        out.append((path.stem, dict(rec["params"]), rec))
    if not out:
        raise SpiralpirError(f"no suite runs (*.json) in {directory}")
    return out
