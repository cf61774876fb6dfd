"""`spiralpir calibrate`: measure this machine, write a profile for the cost model, validate it.

    spiralpir calibrate [--arith-bench PATH | --arith-json FILE]
                        [--suite] [--twins] [--records DIR] [--instance generated/NAME ...]
                        [--run PARAMS.json REPORT.json ...]
                        [--out profile.json]
                        [--validate [--profile FILE] [--store DIR | --compare DIR]]
                        [--shapes 2e14x32b,...] [--variants spiral,...] [--work-dir DIR]
                        [--trials 3] [--repeat 2] [--max-db-gib 1.5]

Kernel costs come from the runtime's microbenchmarks (spiral_runtime_bench; built with the
runtime, found under build/ if not given). Stage costs come from generated benchmarks:
`--suite` plans, generates and builds the calibration shapes (measure/validation.py: small
databases, disjoint from the validation suite) under --work-dir and runs them at full size,
single-threaded (`--twins` adds the validation suite's CI twins); each
`--instance` is built if needed and its bench is run single-threaded; `--run` reuses a saved
`bench --json` report with its params; `--records DIR` re-fits from suite runs saved earlier
(every run is kept under WORK-DIR/runs/{ci,cal,full}/; repeat --records for several).
See measure/calibrate.py for the fit.

`--validate` (a benchmark, not a test) runs the suite's FULL-SIZE benchmarks and prints the
predicted vs measured seconds of every stage and the total, with ratios, for the profile just
written (or --profile, default the shipped one); `--store DIR` saves each measurement (params,
report, command, commit, CPU, load average, date) for tests/models/test_timing.py.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import click
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.cli.out_paths import check_out_file
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.measure.calibrate import (
    fit,
    kernel_costs,
    load_run,
    prediction_errors,
    run_arith_bench,
)
from spiralpir.optimizer.measure.validation import (
    CALIBRATION,
    SUITE,
    compare,
    format_comparison,
    load_records,
    loadavg,
    run_suite,
    shapes_named,
)
from spiralpir.optimizer.measure.validation import store as validation_store
from spiralpir.optimizer.models.cost import Profile
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.params.variants import VARIANTS
from spiralpir.optimizer.resources import BUILD_ROOT


def _find_arith_bench() -> Path:
    hits = sorted(BUILD_ROOT.glob("**/spiral_runtime_bench"),
                  key=lambda p: p.stat().st_mtime, reverse=True)
    hits = [h for h in hits if h.is_file()]
    if not hits:
        raise SpiralpirError("spiral_runtime_bench not found under build/; build the runtime with "
                             "-DSPIRALPIR_BUILD_BENCH=ON or pass --arith-bench/--arith-json")
    return hits[0]


def _instance_run(source: Path, trials: int) -> tuple[Parameters, dict[str, Any]]:
    inst = builder.build(source)
    proc = subprocess.run([str(inst.bench), "--json", "--threads", "1", "--trials", str(trials)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SpiralpirError(f"{inst.bench} failed: {proc.stderr.strip()[:400]}")
    doc = json.loads((source / "params.json").read_text())
    return Parameters.from_literal(doc["params"]), json.loads(proc.stdout)


@click.command(name="calibrate")
@click.option("--arith-bench", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="spiral_runtime_bench executable (default: newest under build/).")
@click.option("--arith-json", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="A saved spiral_runtime_bench --benchmark_format=json report.")
@click.option("--arith-out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Save the microbenchmark report (JSON) here (re-fit later with --arith-json).")
@click.option("--suite", is_flag=True,
              help="Calibrate on the calibration shapes at full size (built under --work-dir).")
@click.option("--twins", is_flag=True,
              help="Also calibrate on the CI twins of the validation suite (short, noisy).")
@click.option("--instance", "instances", multiple=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="A generated instance to build and benchmark (repeatable).")
@click.option("--run", "runs", multiple=True, nargs=2,
              type=click.Path(dir_okay=False, path_type=Path),
              help="PARAMS.json REPORT.json of a saved bench --json run (repeatable).")
@click.option("--records", "records_dirs", multiple=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="Re-fit from saved runs (e.g. build/calibrate/runs/ci; repeatable).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("spiralpir-profile.json"), show_default=True)
@click.option("--validate", is_flag=True,
              help="Run the suite full size and print predicted vs measured seconds.")
@click.option("--profile", "profile_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Profile to validate when not calibrating (default: shipped).")
@click.option("--compare", "compare_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="With --validate: compare saved full-size runs (e.g. "
              "build/calibrate/runs/full or tests/models/data/timing), benchmark nothing.")
@click.option("--store", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Save the validation measurements here (one JSON per suite member).")
@click.option("--shapes", default=",".join(s.name for s in SUITE), show_default=True)
@click.option("--variants", default=",".join(VARIANTS), show_default=True)
@click.option("--work-dir", type=click.Path(file_okay=False, path_type=Path),
              default=BUILD_ROOT / "calibrate", show_default="build/calibrate")
@click.option("--replan", is_flag=True,
              help="Re-plan suite members generated earlier under --work-dir (else reused).")
@click.option("--trials", type=int, default=3, show_default=True)
@click.option("--repeat", type=int, default=2, show_default=True,
              help="Bench processes per member; the minimum total is kept.")
@click.option("--max-db-gib", type=float, default=1.5, show_default=True,
              help="Larger databases are benchmarked implicitly (>= 1 GiB distinct, cyclic).")
def calibrate(arith_bench: Path | None, arith_json: Path | None, arith_out: Path | None,
              suite: bool, twins: bool,
              instances: tuple[Path, ...], runs: tuple[tuple[Path, Path], ...],
              records_dirs: tuple[Path, ...], out: Path,
              validate: bool, profile_path: Path | None, compare_dir: Path | None,
              store: Path | None, shapes: str,
              variants: str, work_dir: Path, replan: bool, trials: int, repeat: int,
              max_db_gib: float) -> None:
    """Measure per-operation costs on this machine and write a machine profile (JSON)."""
    if trials < 1 or repeat < 1:
        raise SpiralpirError("--trials and --repeat must be >= 1")
    check_out_file(out, "--out")
    check_out_file(arith_out, "--arith-out")
    members = shapes_named([x for x in shapes.split(",") if x])
    vs = [{"streampack": "stream_pack"}.get(v, v) for v in variants.split(",") if v]
    if any(v not in VARIANTS for v in vs):
        raise SpiralpirError(f"--variants: each of {', '.join(VARIANTS)}")
    suite_args = {"trials": trials, "repeat": repeat, "max_db_gib": max_db_gib,
                  "log": lambda m: click.echo(m, err=True), "replan": replan}
    calibrating = suite or twins or bool(instances) or bool(runs) or bool(records_dirs)
    if calibrating:
        recs = []
        if twins:
            recs += run_suite(members, vs, work_dir, ci=True, **suite_args)
        if suite:
            for shape, cvs in CALIBRATION:
                recs += run_suite([shape], cvs, work_dir, ci=False, label="cal", **suite_args)
        for directory in records_dirs:
            recs += load_records(directory)
        prof = _calibrate(arith_bench, arith_json, arith_out, instances, runs, trials, recs)
        out.write_text(json.dumps(prof.to_dict(), indent=2, sort_keys=True) + "\n")
        click.echo(f"wrote {out} ({prof.cpu_model}, {prof.date})")
    elif not validate:
        raise SpiralpirError("give --suite, --instance or --run to calibrate, or --validate")
    else:
        prof = Profile.load(profile_path)
    if validate:
        recs = (load_records(compare_dir) if compare_dir is not None
                else run_suite(members, vs, work_dir, ci=False, **suite_args))
        within = 0
        for name, lit, rec in recs:
            p = Parameters.from_literal(lit)
            cmp = compare(p, rec["bench"], prof)
            within += abs(cmp["ratio"] - 1) <= 0.25
            click.echo(format_comparison(name, p, cmp))
        click.echo(f"{within}/{len(recs)} within ±25% of the measured total "
                   f"(profile {prof.path or out}; load average now {loadavg()})")
        if store is not None and compare_dir is None:
            validation_store(recs, store)
            click.echo(f"stored {len(recs)} measurements in {store}")


def _calibrate(arith_bench: Path | None, arith_json: Path | None, arith_out: Path | None,
               instances: tuple[Path, ...],
               runs: tuple[tuple[Path, Path], ...], trials: int,
               suite_recs: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> Profile:
    if arith_json is not None:
        try:
            report = json.loads(arith_json.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise SpiralpirError(f"cannot read {arith_json}: {exc}") from exc
        if not isinstance(report, dict) or not isinstance(report.get("benchmarks"), list):
            raise SpiralpirError(f"{arith_json}: not a spiral_runtime_bench "
                                 "--benchmark_format=json report (no 'benchmarks' list)")
        src = f"kernels: {arith_json}"
    else:
        exe = arith_bench or _find_arith_bench()
        click.echo(f"running {exe} ...", err=True)
        report = run_arith_bench(exe)
        src = f"kernels: {exe.name}"
        if arith_out is not None:
            arith_out.write_text(json.dumps(report, indent=1) + "\n")
    kernel = kernel_costs(report)
    pairs = [load_run(p, r) for p, r in runs]
    for inst in instances:
        click.echo(f"benchmarking {inst} ...", err=True)
        pairs.append(_instance_run(inst, trials))
    pairs += [(Parameters.from_literal(lit), rec["bench"]) for _, lit, rec in suite_recs]
    if not pairs:
        raise SpiralpirError("give at least one --instance or --run (or --suite) for the stage "
                             "costs")
    prof = fit(kernel, pairs, source=f"{src}; stages: {len(pairs)} single-thread bench runs"
               + (f" ({len(suite_recs)} of them saved suite/calibration-shape runs)"
                  if suite_recs else "")
               + f"; load average {loadavg()}")
    for h, pred, meas in prediction_errors(prof, pairs):
        click.echo(f"  calibration run {h}: predicted {pred:.4f} s, measured {meas:.4f} s "
                   f"({100 * (pred / meas - 1):+.1f}%)", err=True)
    return prof
