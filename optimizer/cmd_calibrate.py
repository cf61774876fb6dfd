"""`spiralpir calibrate`: measure this machine and write a profile for the cost model.

    spiralpir calibrate [--arith-bench PATH | --arith-json FILE]
                        [--instance generated/NAME ...] [--run PARAMS.json REPORT.json ...]
                        [--out profile.json]

Kernel costs come from the runtime's microbenchmarks (spiral_runtime_bench; built with the
runtime, found under build/ if not given). Stage costs come from generated benchmarks: each
`--instance` is built if needed and its bench is run single-threaded; `--run` reuses a saved
`bench --json` report with its params. See calibrate.py for the fit.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import click
from spiralpir.optimizer.calibrate import (
    fit,
    kernel_costs,
    load_run,
    prediction_errors,
    run_arith_bench,
)
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.params import Parameters

REPO_ROOT = Path(__file__).resolve().parents[1]


def _find_arith_bench() -> Path:
    hits = sorted(REPO_ROOT.glob("build/**/spiral_runtime_bench"),
                  key=lambda p: p.stat().st_mtime, reverse=True)
    hits = [h for h in hits if h.is_file()]
    if not hits:
        raise SpiralpirError("spiral_runtime_bench not found under build/; build the runtime with "
                             "-DSPIRALPIR_BUILD_BENCH=ON or pass --arith-bench/--arith-json")
    return hits[0]


def _instance_run(source: Path, trials: int) -> tuple[Parameters, dict[str, Any]]:
    from spiralpir.optimizer import builder

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
@click.option("--instance", "instances", multiple=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="A generated instance to build and benchmark (repeatable).")
@click.option("--run", "runs", multiple=True, nargs=2,
              type=click.Path(dir_okay=False, path_type=Path),
              help="PARAMS.json REPORT.json of a saved bench --json run (repeatable).")
@click.option("--trials", type=int, default=3, show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("spiralpir-profile.json"), show_default=True)
def calibrate(arith_bench: Path | None, arith_json: Path | None, instances: tuple[Path, ...],
              runs: tuple[tuple[Path, Path], ...], trials: int, out: Path) -> None:
    """Measure per-operation costs on this machine and write a machine profile (JSON)."""
    if arith_json is not None:
        try:
            report = json.loads(arith_json.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise SpiralpirError(f"cannot read {arith_json}: {exc}") from exc
        src = f"kernels: {arith_json}"
    else:
        exe = arith_bench or _find_arith_bench()
        click.echo(f"running {exe} ...", err=True)
        report = run_arith_bench(exe)
        src = f"kernels: {exe.name}"
    kernel = kernel_costs(report)
    pairs = [load_run(p, r) for p, r in runs]
    for inst in instances:
        click.echo(f"benchmarking {inst} ...", err=True)
        pairs.append(_instance_run(inst, trials))
    if not pairs:
        raise SpiralpirError("give at least one --instance or --run for the stage costs")
    prof = fit(kernel, pairs, source=f"{src}; stages: {len(pairs)} bench runs")
    out.write_text(json.dumps(prof.to_dict(), indent=2, sort_keys=True) + "\n")
    click.echo(f"wrote {out} ({prof.cpu_model}, {prof.date})")
    for h, pred, meas in prediction_errors(prof, pairs):
        click.echo(f"  {h}: predicted {pred:.4f} s, measured {meas:.4f} s "
                   f"({100 * (pred / meas - 1):+.1f}%)")
