"""`spiralpir sample-db --out FILE`: write the built-in default database (2^16 x 32-byte hashes)."""

from __future__ import annotations

from pathlib import Path

import click
from spiralpir.optimizer import sampledb


@click.command(name="sample-db")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="File to write (binary, fixed-size records).")
@click.option("--records", type=int, default=sampledb.SAMPLE_RECORDS, show_default=True,
              help="Number of records (record i = SHA-256 of i as 8 bytes big-endian).")
def sample_db(out: Path, records: int) -> None:
    """Write the deterministic sample database: records of 32-byte SHA-256 hashes."""
    sampledb.write_sample_db(out, records)
    click.echo(f"wrote {out}: {records} records x {sampledb.SAMPLE_RECORD_SIZE} bytes "
               f"(serve it with: spiralpir serve --build generated/demo --db {out})")
