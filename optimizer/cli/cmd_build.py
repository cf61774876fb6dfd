"""`spiralpir build generated/NAME`: compile a generated instance against the shared runtime."""

from __future__ import annotations

import time
from pathlib import Path

import click
from spiralpir.optimizer.build import builder


@click.command(name="build")
@click.argument("source_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--build-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Build root (default build/spiralpir); the runtime build there is reused.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
              help="Parallel compile jobs.")
@click.option("--avx512", is_flag=True,
              help="Compile the instance's protocol code for AVX-512 (the CPU must have it).")
def build(source_dir: Path, build_dir: Path | None, jobs: int | None, avx512: bool) -> None:
    """Configure and compile generated/NAME (runtime built once and reused)."""
    start = time.perf_counter()
    inst = builder.build(source_dir, build_dir, jobs=jobs, avx512=avx512)
    click.echo(f"built {inst.name} in {time.perf_counter() - start:.1f} s")
    click.echo(f"  library: {inst.library}")
    click.echo(f"  bench:   {inst.bench} (CI-sized twin: {inst.ci_bench.name})")
