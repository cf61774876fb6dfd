"""`spiralpir demo`: the main job, end to end, on the built-in default database.

plan (2^16 records x 32 bytes) -> generate (the checked-in generated/demo when the plan
matches it) -> build -> write the sample database -> start `spiralpir serve` on a free
loopback port -> private queries over HTTP -> check each record against the plaintext ->
print sizes and times.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click
from spiralpir.optimizer import codegen
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.profile import Profile
from spiralpir.optimizer.plan.planner import plan_json
from spiralpir.optimizer.service import sample_db as sampledb
from spiralpir.optimizer.service.pir_client import PirClient

DEMO_NAME = "demo"


def _step(msg: str) -> None:
    click.echo(click.style("==> ", fg="cyan", bold=True) + msg, err=True)


def plan_demo() -> dict[str, Any] | None:
    """The optimizer's plan for the demo shape (None if the planner is not available)."""
    try:
        return plan_json(sampledb.SAMPLE_RECORDS, sampledb.SAMPLE_RECORD_SIZE)
    except ImportError:
        return None


def choose_build(work: Path) -> Path:
    """generated/demo when it matches the plan; otherwise a fresh generation under work/."""
    checked_in = codegen.DEFAULT_OUT / DEMO_NAME
    _step(f"plan: {sampledb.SAMPLE_RECORDS} records x {sampledb.SAMPLE_RECORD_SIZE} bytes "
          f"(cost profile {Profile.load().describe()})")
    start = time.perf_counter()
    doc = plan_demo()
    if doc is None:
        if not (checked_in / "params.json").is_file():
            raise SpiralpirError("no planner available and no checked-in generated/demo")
        click.echo("    planner unavailable; using the checked-in generated/demo", err=True)
        return checked_in
    params, estimate = codegen.parse_plan_document(doc)
    click.echo(f"    planned in {time.perf_counter() - start:.1f} s: "
               + ", ".join(f"{k}={params[k]}" for k in ("poly_len", "n", "nu_1", "nu_2", "p",
                                                        "t_gsw", "t_conv"))
               + f", moduli={params['moduli']}", err=True)
    if (checked_in / "params.json").is_file():
        current = json.loads((checked_in / "params.json").read_text())
        if current.get("params") == params:
            click.echo("    the checked-in generated/demo matches the plan", err=True)
            return checked_in
        click.echo("    the plan differs from the checked-in generated/demo "
                   "(machine-specific costs); generating a fresh build", err=True)
    _step("generate")
    return codegen.generate(DEMO_NAME, params, estimate, work / "generated")


def start_server(source: Path, db: Path, build_dir: Path | None, threads: int,
                 log_path: Path) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-m", "spiralpir.optimizer.cli", "serve", "--build", str(source),
           "--db", str(db), "--port", "0", "--threads", str(threads)]
    if build_dir is not None:
        cmd += ["--build-dir", str(build_dir)]
    log = open(log_path, "w")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
    assert proc.stdout is not None
    deadline = time.time() + 600
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith("listening on "):
            return proc, line.split()[-1]
    proc.kill()
    proc.wait()
    raise SpiralpirError(f"server did not start; its log:\n{log_path.read_text()[-2000:]}")


@click.command(name="demo")
@click.option("--queries", type=click.IntRange(min=1), default=5, show_default=True,
              help="Records to retrieve.")
@click.option("--threads", type=click.IntRange(min=0), default=0,
              help="Server threads (0: all cores).")
@click.option("--build-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option("--seed", type=int, default=None, help="Seed for choosing the indices.")
def demo(queries: int, threads: int, build_dir: Path | None, seed: int | None) -> None:
    """Plan, generate, build, serve the sample database and retrieve records privately."""
    t_all = time.perf_counter()
    root = builder.build_root(build_dir)
    work = root / "demo"
    work.mkdir(parents=True, exist_ok=True)
    source = choose_build(work)

    _step(f"build {source}")
    start = time.perf_counter()
    inst = builder.build(source, build_dir, targets=["library"])
    click.echo(f"    built in {time.perf_counter() - start:.1f} s: {inst.library}", err=True)

    _step("sample database")
    db = sampledb.write_sample_db(work / "sample.db")
    click.echo(f"    {db}: {sampledb.SAMPLE_RECORDS} records x {sampledb.SAMPLE_RECORD_SIZE} "
               "bytes (record i = SHA-256 of i)", err=True)

    _step("start server")
    start = time.perf_counter()
    proc, url = start_server(source, db, build_dir, threads, work / "server.log")
    try:
        click.echo(f"    {url} ready in {time.perf_counter() - start:.1f} s "
                   f"(log: {work / 'server.log'})", err=True)
        rng = random.Random(seed)
        indices = [0, sampledb.SAMPLE_RECORDS - 1] + [
            rng.randrange(sampledb.SAMPLE_RECORDS) for _ in range(max(0, queries - 2))
        ]
        indices = indices[:queries]
        _step(f"{len(indices)} private queries over HTTP")
        with tempfile.TemporaryDirectory() as tmp:
            client = PirClient(url, source_dir=source, build_dir=build_dir,
                               state_path=Path(tmp) / "client.json")
            results = []
            for i in indices:
                r = client.query(i)
                ok = r.record == sampledb.sample_record(i)
                results.append(r)
                click.echo(
                    f"    record {i:>6}: {r.record.hex()[:16]}... "
                    f"{'OK' if ok else 'MISMATCH'}  server {r.seconds['server'] * 1e3:7.1f} ms, "
                    f"round trip {r.seconds['round_trip'] * 1e3:7.1f} ms", err=True)
                if not ok:
                    raise SpiralpirError(f"record {i} does not match the plaintext database")
            client.close()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    first = results[0]
    server_ms = sorted(r.seconds["server"] for r in results)[len(results) // 2] * 1e3
    rtt_ms = sorted(r.seconds["round_trip"] for r in results)[len(results) // 2] * 1e3
    db_bytes = sampledb.SAMPLE_RECORDS * sampledb.SAMPLE_RECORD_SIZE
    click.echo("")
    click.echo(f"spiralpir demo: {len(results)}/{len(results)} records retrieved privately "
               "and verified")
    click.echo(f"  database            {sampledb.SAMPLE_RECORDS} x "
               f"{sampledb.SAMPLE_RECORD_SIZE} B = {db_bytes:,} B")
    click.echo(f"  public parameters   {first.public_params_bytes_uploaded:,} B (uploaded once)")
    click.echo(f"  query               {first.query_bytes:,} B")
    click.echo(f"  response            {first.response_bytes:,} B "
               f"(rate {sampledb.SAMPLE_RECORD_SIZE / first.response_bytes:.4f})")
    click.echo(f"  server time         {server_ms:.1f} ms (median), "
               f"throughput {db_bytes / (server_ms / 1e3) / 1e6:.1f} MB/s")
    click.echo(f"  HTTP round trip     {rtt_ms:.1f} ms (median)")
    click.echo(f"  total demo time     {time.perf_counter() - t_all:.1f} s")
    sys.stdout.flush()
