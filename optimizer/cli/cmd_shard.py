"""`spiralpir shard`: split a database into 2^S stored shards for a sharded deployment
(`spiralpir serve --ray ADDRESS --shards DIR`; runtime/FORMATS.md §12)."""

from __future__ import annotations

from pathlib import Path

import click
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service import shards as shard_set
from spiralpir.optimizer.service.builds import open_build


@click.command(name="shard")
@click.option("--build", "source_dir", required=True,
              type=click.Path(file_okay=False, path_type=Path), help="generated/NAME")
@click.option("--db", "db_path", required=True, type=click.Path(path_type=Path),
              help="Records: binary file, directory, or .jsonl file.")
@click.option("--shards", type=int, required=True,
              help="Number of shards, a power of two 2^S (S <= min(3, nu_2), or up to the "
              "build's `generate --max-shards`).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory for the shards' files and their manifest.json.")
@click.option("--record-size", type=int, default=None,
              help="Record size of a binary file (default: the build's record size).")
@click.option("--format", "fmt", type=click.Choice(database.FORMATS), default=None,
              help="Input format (default: from the path).")
@click.option("--threads", type=int, default=0, help="Preprocessing threads (0: all cores).")
@click.option("--ci", is_flag=True, help="Use the build's CI-sized twin.")
@click.option("--build-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
def shard(source_dir: Path, db_path: Path, shards: int, out_dir: Path, record_size: int | None,
          fmt: str | None, threads: int, ci: bool, build_dir: Path | None) -> None:
    """Write DB's 2^S shards (each a stored, checksummed database) and a manifest to OUT."""
    build = open_build(source_dir, build_dir, ci=ci)
    shard_set.build_shard_bits(build, shards)  # before reading DB
    records = database.read_records(db_path, build.record_size, record_size, fmt)
    manifest = shard_set.write_shards(build, records, shards, out_dir, threads,
                                      log=lambda m: click.echo(m, err=True))
    total = sum(e.bytes for e in manifest.entries)
    click.echo(f"wrote {manifest.shards} shards of {manifest.num_records} records x "
               f"{manifest.record_size} bytes ({total / 1e6:.1f} MB in all) and "
               f"{out_dir / shard_set.MANIFEST}")
