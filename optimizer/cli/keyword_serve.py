"""`spiralpir serve` of a keyword build: read the key/value file, fill the cuckoo table, serve
it as one database answered in row blocks (POST /v1/keyword)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from spiralpir.optimizer.service.binding import Build
from spiralpir.optimizer.service.keyword_input import KeywordOptions, read_keyword_db
from spiralpir.optimizer.service.keyword_server import KeywordServer, check_fits, read_shape
from spiralpir.optimizer.service.keyword_table import make_table, value_capacity


def keyword_server(build: Build, table_path: Path, db_path: Path, opts: KeywordOptions,
                   store_path: Path | None, common: dict[str, Any]) -> KeywordServer:
    shape = read_shape(table_path)
    check_fits(build, shape.rows, shape.columns, shape.slots, shape.slot_size, str(table_path))
    data = read_keyword_db(db_path, opts, value_capacity(shape.slot_size, shape.tag_bytes))
    kt = make_table(data, shape)
    srv = KeywordServer(build, kt, preprocessed_dir=store_path, **common)
    lay = kt.table.layout
    click.echo(f"serving {kt.keys:,} keys as a cuckoo table of {lay.rows:,} x {lay.columns:,} "
               f"bins of {lay.slots} slots of {kt.slot_size} bytes in {lay.h} row blocks (load "
               f"{kt.keys / lay.capacity:.3f}, seed {lay.seed}"
               + (f", after {kt.table.attempts} seeds" if kt.table.attempts > 1 else "")
               + f") with build {build.label}; POST /v1/keyword answers a lookup", err=True)
    return srv
