"""`spiralpir sample-db --out FILE`: write the built-in default database (2^16 x 32-byte hashes);
with ``--blocks K``, a directory of K such databases for ``serve --stream``."""

from __future__ import annotations

from pathlib import Path

import click
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import sample_db as sampledb


@click.command(name="sample-db")
@click.option("--out", required=True, type=click.Path(path_type=Path),
              help="File to write (binary, fixed-size records); with --blocks, a directory.")
@click.option("--records", type=click.IntRange(min=1, max=(1 << 32) - 1),
              default=sampledb.SAMPLE_RECORDS, show_default=True,
              help="Number of records (record i = SHA-256 of i as 8 bytes big-endian).")
@click.option("--blocks", type=click.IntRange(min=1), default=None,
              help="Write this many databases (block k's record i = SHA-256 of k*2^32 + i) "
              "into the directory OUT, for `spiralpir serve --stream OUT`.")
def sample_db(out: Path, records: int, blocks: int | None) -> None:
    """Write the deterministic sample database: records of 32-byte SHA-256 hashes."""
    try:
        if blocks is not None:
            sampledb.write_sample_blocks(out, blocks, records)
        else:
            sampledb.write_sample_db(out, records)
    except OSError as exc:
        raise SpiralpirError(f"cannot write {out}: {exc.strerror or exc}") from exc
    if blocks is not None:
        click.echo(f"wrote {blocks} blocks of {records} records x {sampledb.SAMPLE_RECORD_SIZE} "
                   f"bytes to {out}/ (stream them with: spiralpir serve --build generated/demo "
                   f"--stream {out})")
        return
    click.echo(f"wrote {out}: {records} records x {sampledb.SAMPLE_RECORD_SIZE} bytes "
               f"(serve it with: spiralpir serve --build generated/demo --db {out})")
