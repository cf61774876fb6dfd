"""`spiralpir calibrate`: measure this machine and write the cost model's profile.

    spiralpir calibrate [--out FILE]
    spiralpir calibrate --suite SPEC [--out FILE]

With no options: the quick calibration (measure/quick.py: the kernel microbenchmarks and a few
small full runs at 1 and 2 threads, a few minutes; progress as a bar on a terminal, as lines
otherwise), written to this user's profile (models/profile.py: $XDG_CONFIG_HOME/spiralpir/
profile.json), which `plan`, `generate`, `demo`, `bench` and `serve` then use; the runs are kept
under build/calibrate/runs/quick/.

`--suite SPEC` (cli/suite_spec.py lists the items) reaches the calibration and validation
suite: `fit` plans, generates and builds the calibration shapes (measure/validation.py) and fits
on them at full size; `records=DIR`, `instance=DIR`, `run=PARAMS:REPORT` fit on saved or other
runs; `validate` runs the validation suite full size and prints predicted vs measured seconds
per stage (a benchmark, not a test), `store=DIR` keeps the measurements for
tests/models/test_timing.py, `compare=DIR` re-checks saved ones. See measure/calibrate.py for
the fit.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.cli.out_paths import check_out_file
from spiralpir.optimizer.cli.suite_spec import parse_suite
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.measure.calibrate import (
    kernel_costs,
    load_run,
    prediction_errors,
    run_arith_bench,
)
from spiralpir.optimizer.measure.quick import fit_runs, quick_calibrate, save_runs
from spiralpir.optimizer.measure.validation import (
    CALIBRATION,
    compare,
    format_comparison,
    load_records,
    loadavg,
    run_suite,
    shapes_named,
)
from spiralpir.optimizer.measure.validation import store as validation_store
from spiralpir.optimizer.models.profile import PROFILE_ENV, Profile, user_profile_path
from spiralpir.optimizer.params.parameters import Parameters
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
@click.option("--suite", "suite_text", default=None, metavar="SPEC",
              help="Advanced: the calibration/validation suite, a comma-separated list such as "
              "'fit', 'validate,compare=DIR', 'records=DIR,arith-json=FILE' (items: fit, twins, "
              "validate, compare=, store=, records=, instance=, run=PARAMS:REPORT, "
              "arith-bench=, arith-json=, arith-out=, profile=, shapes=A+B, variants=A+B, "
              "work-dir=, replan, trials=, repeat=, max-db-gib=, threads=).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the profile here (default: this user's profile, "
              "$XDG_CONFIG_HOME/spiralpir/profile.json).")
def calibrate(suite_text: str | None, out: Path | None) -> None:
    """Measure this machine (a few minutes) and write the profile plans and estimates use."""
    if suite_text is None:
        _quick(out)
        return
    spec = parse_suite(suite_text)
    members = shapes_named(spec.shapes)
    if spec.fitting:
        target = out if out is not None else user_profile_path()
        if out is None:
            target.parent.mkdir(parents=True, exist_ok=True)
        check_out_file(target, "--out")
    check_out_file(spec.arith_out, "--suite arith-out")
    suite_args = {"trials": spec.trials, "repeat": spec.repeat, "max_db_gib": spec.max_db_gib,
                  "log": lambda m: click.echo(m, err=True), "replan": spec.replan}
    if spec.fitting:
        recs = []
        if spec.twins:
            recs += run_suite(members, spec.variants, spec.work_dir, ci=True, **suite_args)
        if spec.fit:
            for shape, cvs in CALIBRATION:
                recs += run_suite([shape], cvs, spec.work_dir, ci=False, label="cal",
                                  **suite_args)
        for directory in spec.records:
            recs += load_records(directory)
        prof = _calibrate(spec.arith_bench, spec.arith_json, spec.arith_out, spec.instance,
                          spec.run, spec.trials, recs)
        _write(prof, target)
    else:
        prof = Profile.load(spec.profile)
    if spec.validate:
        recs = (load_records(spec.compare) if spec.compare is not None
                else run_suite(members, spec.variants, spec.work_dir, ci=False,
                               threads=spec.threads, **suite_args))
        within = 0
        for name, lit, rec in recs:
            p = Parameters.from_literal(lit)
            cmp = compare(p, rec["bench"], prof)
            within += abs(cmp["ratio"] - 1) <= 0.20
            click.echo(format_comparison(name, p, cmp))
        click.echo(f"{within}/{len(recs)} within ±20% of the measured total "
                   f"(profile {prof.describe()}; load average now {loadavg()})")
        if spec.store is not None and spec.compare is None:
            validation_store(recs, spec.store)
            click.echo(f"stored {len(recs)} measurements in {spec.store}")


def _write(prof: Profile, target: Path) -> None:
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(prof.to_dict(), indent=2, sort_keys=True) + "\n")
    os.replace(tmp, target)
    click.echo(f"wrote {target} ({prof.cpu_model}, {prof.date})")
    if target.resolve() == user_profile_path().resolve():
        click.echo("plan, generate, demo, bench and serve now use it "
                   f"({PROFILE_ENV}=default for the shipped profile, or a file)")


def _quick(out: Path | None) -> None:
    target = out if out is not None else user_profile_path()
    if out is None:
        target.parent.mkdir(parents=True, exist_ok=True)
    check_out_file(target, "--out")
    work = BUILD_ROOT / "calibrate"
    start = time.monotonic()
    bar: Any = None
    if sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=1, unit="step", file=sys.stderr, leave=False,
                   bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}]")

    def step(done: int, total: int, message: str) -> None:
        if bar is not None:
            bar.total = total
            bar.n = done
            bar.set_description_str(message[:60])
            bar.refresh()
        else:
            click.echo(f"[{done}/{total}, {time.monotonic() - start:.0f} s] {message}", err=True)

    try:
        prof, runs = quick_calibrate(work, step)
    finally:
        if bar is not None:
            bar.close()
    save_runs(runs, work / "runs" / "quick")
    for r in runs:
        p = Parameters.from_literal(r["params"])
        cmp = compare(p, r["report"], prof)
        unc = cmp.get("uncontended")  # several threads: without the other processes' load
        click.echo(f"  {r['name']} ({r['threads']} thread(s)): predicted "
                   f"{cmp['total'][0]:.4f} s, measured {cmp['total'][1]:.4f} s "
                   f"(ratio {cmp['ratio']:.2f})"
                   + (f", uncontended {unc[1]:.4f} s (ratio {unc[0] / unc[1]:.2f})"
                      if unc else ""), err=True)
    click.echo(f"measured in {time.monotonic() - start:.0f} s", err=True)
    _write(prof, target)


def _calibrate(arith_bench: Path | None, arith_json: Path | None, arith_out: Path | None,
               instances: list[Path], runs: list[tuple[Path, Path]], trials: int,
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
    prof = fit_runs(kernel, pairs, source=f"{src}; stages: {len(pairs)} bench runs"
               + (f" ({len(suite_recs)} of them saved suite/calibration-shape runs)"
                  if suite_recs else "")
               + f"; load average {loadavg()}")
    for h, pred, meas in prediction_errors(prof, [x for x in pairs if x[1].get("threads", 1) == 1]):
        click.echo(f"  calibration run {h}: predicted {pred:.4f} s, measured {meas:.4f} s "
                   f"({100 * (pred / meas - 1):+.1f}%)", err=True)
    return prof
