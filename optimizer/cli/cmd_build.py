"""`spiralpir build generated/NAME`: compile a generated instance against the shared runtime
(`--target wasm`: its client for browsers, build/wasm_client.py)."""

from __future__ import annotations

import time
from pathlib import Path

import click
from spiralpir.optimizer.build import builder, wasm_client


@click.command(name="build")
@click.argument("source_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--build-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Build root (default build/spiralpir); the runtime build there is reused.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
              help="Parallel compile jobs.")
@click.option("--avx512", is_flag=True,
              help="Compile the instance's protocol code for AVX-512 (the CPU must have it).")
@click.option("--target", type=click.Choice(["native", "wasm"]), default="native",
              show_default=True, help="wasm: the client alone, for browsers, compiled with em++ "
              "into generated/NAME/wasm/ (a .wasm, its loader and the ES module client.mjs).")
@click.option("--ci", is_flag=True, help="With --target wasm: the CI-sized twin's client.")
@click.option("--simd", is_flag=True,
              help="With --target wasm: let the compiler use WebAssembly SIMD128.")
def build(source_dir: Path, build_dir: Path | None, jobs: int | None, avx512: bool,
          target: str, ci: bool, simd: bool) -> None:
    """Configure and compile generated/NAME (runtime built once and reused)."""
    start = time.perf_counter()
    if target == "wasm":
        client = wasm_client.build_wasm_client(
            source_dir, builder.build_root(build_dir) / "wasm-objects", ci=ci, jobs=jobs,
            simd=simd, log=lambda line: click.echo(f"spiralpir: {line}", err=True))
        click.echo(f"built the WebAssembly client of {source_dir.name} in "
                   f"{time.perf_counter() - start:.1f} s")
        for path in client.files().values():
            click.echo(f"  {path}")
        return
    inst = builder.build(source_dir, build_dir, jobs=jobs, avx512=avx512)
    click.echo(f"built {inst.name} in {time.perf_counter() - start:.1f} s")
    click.echo(f"  library: {inst.library}")
    click.echo(f"  bench:   {inst.bench} (CI-sized twin: {inst.ci_bench.name})")
