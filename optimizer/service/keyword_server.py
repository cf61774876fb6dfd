"""The keyword server: a keyword table served as one database, answered in row blocks.

``POST /v1/keyword`` takes one query (the size of any query of the build) selecting the key's
row in each of the table's h row blocks and its column; ``answer_keyword`` answers it with the
runtime's blocked answer (one expansion, one conversion, one pass of the first dimension,
then folding and modulus switching per block) and returns the h responses, framed like a batch
reply (batch_wire.py). ``GET /v1/params`` carries the table's public metadata under
``keyword`` (seed, h, rows, columns, slots, tag and slot sizes, key count, message sizes), all a
client needs to know where its key may sit.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import batch_wire
from spiralpir.optimizer.service.binding import Build, PublicParams
from spiralpir.optimizer.service.keyword_table import KeywordTable, TableShape, value_capacity
from spiralpir.optimizer.service.pir_server import BadBlock, PirServer

KEYWORD_FILE = "keyword.json"  # a keyword build's table shape, next to its params.json


def check_fits(build: Build, rows: int, columns: int, slots: int, slot_size: int,
               where: str) -> None:
    """A table of this shape must be exactly the build's database geometry."""
    p = build.params
    m = int(build.lib.params["items_per_plaintext"])
    geometry = (1 << int(p["nu_1"]), 1 << int(p["nu_2"]))
    if (rows, columns) != geometry or slot_size > build.record_size or m != slots or \
            build.variant != "spiral":
        raise SpiralpirError(f"{where}: a table of {rows} x {columns} bins of {slots} slots of "
                             f"{slot_size} bytes does not fit the build '{build.label}' "
                             f"({build.variant}, {geometry[0]} x {geometry[1]} plaintexts, "
                             f"records of {build.record_size} bytes)")


class KeywordServer(PirServer):
    """The table ``kt`` served by ``build`` (the table's build)."""

    def __init__(self, build: Build, kt: KeywordTable, preprocessed_dir: Path | str | None = None,
                 **kwargs: Any) -> None:
        lay = kt.table.layout
        check_fits(build, lay.rows, lay.columns, lay.slots, kt.slot_size, "keyword table")
        if lay.capacity > build.num_records:
            raise SpiralpirError(f"keyword table: {lay.capacity} slots exceed the build "
                                 f"'{build.label}' capacity of {build.num_records}")
        self.keyword = kt
        super().__init__(build, records=kt.records, preprocessed=preprocessed_dir, **kwargs)
        self.response_bytes = int(build.lib.params["response_bytes"])
        self.source = kt.records.source

    @property
    def reply_bytes(self) -> int:
        return batch_wire.framed_bytes(self.keyword.table.layout.h, self.response_bytes)

    def answer_versioned(self, client_id: str, query: bytes, pinned: PublicParams | None = None,
                         min_version: int = 0) -> tuple[bytes, dict[str, float], float, int]:
        raise BadBlock("this server answers keyword lookups: one blocked query in POST "
                       "/v1/keyword (spiralpir query --key KEY)")

    def open_stream(self, client_id: str, query: bytes, pinned: PublicParams | None = None
                    ) -> tuple[str, dict[str, float]]:
        raise BadBlock("this server answers keyword lookups (POST /v1/keyword), not streams")

    def answer_keyword(self, client_id: str, query: bytes, pinned: PublicParams | None = None
                       ) -> tuple[bytes, dict[str, float], float, int]:
        """The h framed responses to one blocked query, per-stage seconds (folding and
        modswitch summed over the blocks, plus ``process_cpu``), the wall seconds and the
        table's version they were answered from."""
        if len(query) != self.query_bytes:
            raise BadBlock(f"a keyword query is {self.query_bytes} bytes, not {len(query)}")
        assert self.live is not None
        pp = pinned if pinned is not None else self.pin(client_id)
        start = time.perf_counter()
        cpu = time.process_time()
        with self.live.reading() as (db, version):
            responses, stages = db.answer_blocked(pp, query, self.keyword.table.layout.h)
        stages["process_cpu"] = time.process_time() - cpu
        return (batch_wire.pack(responses, batch_wire.REPLY_MAGIC), stages,
                time.perf_counter() - start, version)

    def close(self) -> None:
        """Free the table's database (the server answers no more)."""
        if self.live is not None:
            self.live.close()

    def info(self) -> dict[str, Any]:
        out = super().info()
        kt = self.keyword
        out["keyword"] = {**kt.table.layout.to_json(), "slot_size": kt.slot_size,
                          "max_value_size": value_capacity(kt.slot_size,
                                                           kt.table.layout.tag_bytes),
                          "keys": kt.keys, "request_bytes": self.query_bytes,
                          "reply_bytes": self.reply_bytes,
                          "response_bytes": self.response_bytes}
        return out


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
    for key in ("h", "rows", "columns", "slots", "tag_bytes", "slot_size"):
        value = body.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise SpiralpirError(f"{path}: keyword field '{key}' missing or not a positive "
                                 "integer (a table planned before row blocks? generate the "
                                 "build again)")
        fields[key] = value
    return TableShape(**fields)
