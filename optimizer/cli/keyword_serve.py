"""`spiralpir serve` of a keyword build: read the key/value file, fill the cuckoo table,
serve its sub-tables as the buckets of one batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service.binding import Build
from spiralpir.optimizer.service.keyword_input import KeywordOptions, read_keyword_db
from spiralpir.optimizer.service.keyword_server import KeywordServer, read_shape
from spiralpir.optimizer.service.keyword_table import make_table, value_capacity


def keyword_server(build: Build, table_path: Path, db_path: Path, opts: KeywordOptions,
                   store_dir: Path | None, common: dict[str, Any]) -> KeywordServer:
    shape = read_shape(table_path)
    if shape.slot_size > build.record_size:
        raise SpiralpirError(f"{table_path}: slots of {shape.slot_size} bytes exceed the build "
                             f"'{build.label}' record size {build.record_size}")
    data = read_keyword_db(db_path, opts, value_capacity(shape.slot_size, shape.tag_bytes))
    kt = make_table(data, shape.h, shape.slots, shape.slot_size, shape.tag_bytes)
    srv = KeywordServer(build, kt, preprocessed_dir=store_dir, **common)
    lay = kt.table.layout
    click.echo(f"serving {kt.keys:,} keys as a cuckoo table of {lay.h} sub-tables x "
               f"{lay.slots:,} slots of {kt.slot_size} bytes (load "
               f"{kt.keys / lay.total_slots:.3f}, seed {lay.seed}"
               + (f", after {kt.table.attempts} seeds" if kt.table.attempts > 1 else "")
               + f") with build {build.label}; POST /v1/batch answers all sub-tables, "
               f"{srv.pool_threads} at a time", err=True)
    return srv
