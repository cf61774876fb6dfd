"""The keyword server: a keyword table's h sub-tables served as the buckets of one batch.

Each sub-table is a bucket database of the build (its own store), answered together in one
``POST /v1/batch`` of h queries by the batch mechanism (batch_server.py); ``GET /v1/params``
carries the table's public metadata under ``keyword`` (seed, h, slots, tag and slot sizes,
key count, batch sizes), all a client needs to know where its key may sit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service.batch_server import BatchServer
from spiralpir.optimizer.service.binding import Build
from spiralpir.optimizer.service.keyword_table import KeywordTable, value_capacity
from spiralpir.optimizer.service.pir_server import PirServer

KEYWORD_FILE = "keyword.json"  # a keyword build's table shape, next to its params.json


class KeywordServer(BatchServer):
    """The sub-tables of ``kt`` served by ``build`` (the sub-table build)."""

    def __init__(self, build: Build, kt: KeywordTable, preprocessed_dir: Path | str | None = None,
                 threads: int = 0, **kwargs: Any) -> None:
        lay = kt.table.layout
        if lay.slots > build.num_records:
            raise SpiralpirError(f"keyword table: sub-tables of {lay.slots} slots exceed the "
                                 f"build '{build.label}' capacity of {build.num_records}")
        if kt.slot_size > build.record_size:
            raise SpiralpirError(f"keyword table: slots of {kt.slot_size} bytes exceed the "
                                 f"build's record size {build.record_size}")
        self.keyword = kt
        self._serve_buckets(build, kt.subtables, preprocessed_dir, threads, **kwargs)
        self.num_records = lay.total_slots
        self.source = kt.subtables[0].source.removeprefix("sub-table 0 of ")

    def info(self) -> dict[str, Any]:
        out = PirServer.info(self)
        out.pop("stream", None)
        kt = self.keyword
        out["keyword"] = {**kt.table.layout.to_json(), "slot_size": kt.slot_size,
                          "max_value_size": value_capacity(kt.slot_size,
                                                           kt.table.layout.tag_bytes),
                          "keys": kt.keys, **self.bucket_info()}
        return out
