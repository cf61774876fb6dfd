"""`spiralpir bench generated/NAME`: build if needed, run the generated benchmark, report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.measure.bench import BENCH_KEYS, run_bench
from spiralpir.optimizer.measure.validation import compare
from spiralpir.optimizer.models.profile import Profile
from spiralpir.optimizer.params.ci_twin import ci_literal
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.service.batch_bench import run_batch_bench
from spiralpir.optimizer.service.batch_server import BATCH_FILE, read_layout
from spiralpir.optimizer.service.binding import Build


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def prediction(source_dir: Path, report: dict[str, Any], ci: bool,
               profile: Profile) -> dict[str, Any]:
    """The active profile's prediction of a bench report (validation.compare): per stage and in
    total, at the report's thread count."""
    lit = json.loads((source_dir / "params.json").read_text(encoding="utf-8"))["params"]
    p = Parameters.from_literal(ci_literal(lit) if ci else lit)
    return compare(p, report, profile)


def format_prediction(cmp: dict[str, Any], profile: Profile) -> str:
    what = "process CPU" if cmp["threads"] == 1 else "wall"
    lines = [f"  predicted vs measured ({what} seconds, {cmp['threads']} thread(s); profile "
             f"{profile.describe()})"]
    # packing: the pack variants' (the others have none)
    rows = [(s, v) for s, v in cmp["stages"].items() if s != "packing" or v[0] > 0]
    rows.append(("TOTAL", cmp["total"]))
    if "uncontended" in cmp:  # several threads: the wall time without other processes' load
        rows.append(("TOTAL, uncontended", cmp["uncontended"]))
    # the prepared-query path (bench's streaming figures: wall seconds)
    rows += [(label, cmp[key]) for key, label in (("prepare", "prepare, wall"),
                                                  ("per_database", "per database"))
             if key in cmp]
    for stage, (a, b) in rows:
        ratio = f"{a / b:5.2f}" if b > 0 else "    -"
        lines.append(f"    {stage:<20}{a:9.4f} s  {b:9.4f} s  ratio {ratio}")
    return "\n".join(lines)


# a whole-query estimate off by more than this factor either way describes another machine (a CPU
# without the profile's vector kernels ran 6-10x slower), not this one's noise
PROFILE_MISFIT = 2.0


def profile_misfit(cmp: dict[str, Any], profile: Profile) -> str | None:
    """What to tell the user when this machine's measured total is more than PROFILE_MISFIT
    times off the profile's estimate (else None): the plans' time estimates are off as much."""
    predicted, measured = cmp["total"]
    if predicted <= 0 or measured <= 0:
        return None
    ratio = measured / predicted
    if 1 / PROFILE_MISFIT <= ratio <= PROFILE_MISFIT:
        return None
    return (f"note: this machine took {ratio:.2f}x the server time that profile "
            f"{profile.describe()} estimates, and plans' time estimates are off as much: "
            f"`spiralpir calibrate` measures this machine for plan, generate, bench and serve")


def format_report(name: str, r: dict[str, Any]) -> str:
    lines = [
        f"{name}: {'correct' if r['correct'] else 'WRONG RESULTS'}"
        + (" (implicit database, addressed cyclically)" if r["implicit_db"] else ""),
        f"  {'server time':<30}{r['server_seconds']:.4f} s (median, {r['threads']} thread(s))",
    ]
    for stage, secs in r["stages"].items():
        lines.append(f"    {stage:<28}{secs:.4f} s")
    for key in ("query_bytes", "response_bytes", "public_params_bytes", "db_bytes",
                "preprocessed_db_bytes"):
        lines.append(f"  {key:<30}{r[key]:>14,d}  ({_human(r[key])})")
    lines.append(f"  {'throughput':<30}{_human(r['throughput_bytes_per_second'])}/s")
    for name, secs in r.get("client_seconds", {}).items():
        lines.append(f"  {'client ' + name:<30}{secs:.4f} s")
    for key, value in sorted(r.items()):
        if key not in BENCH_KEYS and not isinstance(value, dict | list):
            lines.append(f"  {key:<30}{value}")
    return "\n".join(lines)


@click.command(name="bench")
@click.argument("source_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--build-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Server threads (default: all cores).")
@click.option("--trials", type=click.IntRange(min=1), default=3, show_default=True,
              help="Queries to answer.")
@click.option("--ci", is_flag=True, help="Use the CI-sized twin (smaller database, same params).")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report.")
def bench(source_dir: Path, build_dir: Path | None, threads: int | None, trials: int, ci: bool,
          as_json: bool) -> None:
    """Answer TRIALS random queries on a random database of the build's shape; check them
    (a batch build: TRIALS batches of its K random records, in process)."""
    if (source_dir / BATCH_FILE).is_file():
        bench_batch(source_dir, build_dir, threads, trials, ci, as_json)
        return
    inst = builder.build(source_dir, build_dir, show_progress=not as_json,
                         targets=["ci_bench" if ci else "bench"])
    report = run_bench(inst, threads=threads, trials=trials, ci=ci)
    profile = Profile.load()
    cmp = prediction(source_dir, report, ci, profile)
    if as_json:
        report["predicted_server_seconds"] = cmp["total"][0]
        report["predicted_stages"] = {s: a for s, (a, _) in cmp["stages"].items()}
        report["profile"] = profile.describe()
        click.echo(json.dumps(report, sort_keys=True))
    else:
        click.echo(format_report(inst.name + (" (CI twin)" if ci else ""), report))
        click.echo(format_prediction(cmp, profile))
    if note := profile_misfit(cmp, profile):
        click.echo(note, err=True)
    if not report["correct"]:
        raise SpiralpirError("the benchmark decoded wrong records")


def bench_batch(source_dir: Path, build_dir: Path | None, threads: int | None, trials: int,
                ci: bool, as_json: bool) -> None:
    """The batch build's figures: per batch and per record (service/batch_bench.py)."""
    doc = json.loads((source_dir / BATCH_FILE).read_text(encoding="utf-8"))
    layout = read_layout(source_dir / BATCH_FILE)
    k = int(doc["batch"].get("k", layout.buckets))
    inst = builder.build(source_dir, build_dir, show_progress=not as_json, targets=["library"])
    r = run_batch_bench(Build(inst, ci=ci), layout, k, trials, threads or 1)
    if as_json:
        click.echo(json.dumps(r, sort_keys=True))
    else:
        lines = [f"{inst.name}{' (CI twin)' if ci else ''}: batch of {r['k']} records from "
                 f"{r['records']:,} in {r['buckets']} buckets (w = {r['w']}, "
                 f"{r['bucket_capacity']:,} per bucket): "
                 + ("correct" if r["correct"] else "WRONG RESULTS"),
                 f"  {'server CPU per batch':<30}{r['batch_cpu_seconds']:.4f} s "
                 f"(median, {r['threads']} thread(s); wall {r['batch_wall_seconds']:.4f} s)"]
        lines += [f"    {s:<28}{v:.4f} s" for s, v in r["batch_stage_seconds"].items()]
        lines += [f"  {'request / responses':<30}{_human(r['batch_request_bytes'])} / "
                  f"{_human(r['batch_response_bytes'])} ({r['batch_queries']} query cts of "
                  f"{r['query_buckets']} bucket(s) each)",
                  f"  {'per record':<30}{r['per_record_cpu_seconds'] * 1e3:.2f} ms CPU, "
                  f"{_human(r['per_record_bytes'])}"]
        click.echo("\n".join(lines))
    if not r["correct"]:
        raise SpiralpirError("the benchmark decoded wrong records")
