"""`spiralpir serve` of a keyword build: read the key/value file, open its cuckoo table (the
stored one if updates made one, else filled from the file), serve it as one database answered
in row blocks (POST /v1/keyword); with an admin token, POST /v1/admin/update changes it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from spiralpir.optimizer.service.admin_http import Admin
from spiralpir.optimizer.service.binding import Build
from spiralpir.optimizer.service.keyword_input import KeywordOptions
from spiralpir.optimizer.service.keyword_server import KeywordServer, check_fits, read_shape
from spiralpir.optimizer.service.keyword_updates import open_table


def keyword_server(build: Build, table_path: Path, db_path: Path, opts: KeywordOptions,
                   store_path: Path | None, common: dict[str, Any], token: bytes | None = None,
                   store_every: float = 10.0) -> tuple[KeywordServer, Admin | None]:
    shape = read_shape(table_path)
    check_fits(build, shape.rows, shape.columns, shape.slots, shape.slot_size, str(table_path))

    def log(msg: str) -> None:
        click.echo(msg, err=True)

    # the lock on the key file is held until the process exits
    stored = open_table(build, shape, db_path, opts, store_path, log, writer=token is not None)
    kt = stored.kt
    srv = KeywordServer(build, kt, preprocessed_dir=store_path, **common,
                        version=stored.version, updatable=token is not None)
    admin = None
    if token is not None:
        ku = stored.updater(srv.live, log=log, sync_store=False, store_every=store_every)
        admin = Admin(token, ku.updater, srv.num_records, apply_text=ku.apply_text)
    lay = kt.table.layout
    click.echo(f"serving {kt.keys:,} keys as a cuckoo table of {lay.rows:,} x {lay.columns:,} "
               f"bins of {lay.slots} slots of {kt.slot_size} bytes in {lay.h} row blocks (load "
               f"{kt.keys / lay.capacity:.3f}, seed {lay.seed}"
               + (f", after {kt.table.attempts} seeds" if kt.table.attempts > 1 else "")
               + f") with build {build.label}"
               + (f", table version {stored.version}" if stored.files is not None else "")
               + "; POST /v1/keyword answers a lookup"
               + (", POST /v1/admin/update changes keys" if admin else ""), err=True)
    return srv, admin
