"""The keyword server: a keyword table's h sub-tables served as the buckets of one batch.

Each sub-table is a bucket database of the build (its own store), answered together in one
``POST /v1/batch`` of h queries by the batch mechanism (batch_server.py); ``GET /v1/params``
carries the table's public metadata under ``keyword`` (seed, h, slots, tag and slot sizes,
key count, batch sizes), all a client needs to know where its key may sit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service.batch_server import BatchServer
from spiralpir.optimizer.service.binding import Build, PublicParams
from spiralpir.optimizer.service.keyword_table import KeywordTable, value_capacity
from spiralpir.optimizer.service.pir_server import BadBlock, PirServer

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

    def answer_versioned(self, client_id: str, query: bytes, pinned: PublicParams | None = None,
                         min_version: int = 0) -> tuple[bytes, dict[str, float], float, int]:
        raise BadBlock(f"this server answers keyword lookups, {self.bucket_count} sub-table "
                       "queries in one POST /v1/batch (spiralpir query --key KEY)")

    def info(self) -> dict[str, Any]:
        out = PirServer.info(self)
        out.pop("stream", None)
        kt = self.keyword
        out["keyword"] = {**kt.table.layout.to_json(), "slot_size": kt.slot_size,
                          "max_value_size": value_capacity(kt.slot_size,
                                                           kt.table.layout.tag_bytes),
                          "keys": kt.keys, **self.bucket_info()}
        return out


@dataclass(frozen=True)
class TableShape:
    """A keyword build's table shape (``NAME/keyword.json``): the seed is chosen when the
    table is filled (keyword_table.first_seed), the rest when it is planned."""

    h: int
    slots: int
    tag_bytes: int
    slot_size: int


def read_shape(path: Path) -> TableShape:
    """The table shape of a keyword build's keyword.json (or a file of the same form)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SpiralpirError(f"unreadable keyword table {path}: {exc}") from None
    body = doc.get("keyword", doc) if isinstance(doc, dict) else doc
    if not isinstance(body, dict):
        raise SpiralpirError(f"{path}: the keyword table is not a JSON object")
    fields = {}
    for key in ("h", "slots", "tag_bytes", "slot_size"):
        value = body.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise SpiralpirError(f"{path}: keyword field '{key}' missing or not a positive "
                                 "integer")
        fields[key] = value
    return TableShape(**fields)
