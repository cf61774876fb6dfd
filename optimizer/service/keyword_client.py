"""The client side of a keyword lookup: one blocked query for the key's h candidate bins, the
h responses decoded, every slot of every bin compared with the key's tag.

The request is always one query of the build's exact size (a fresh encryption selecting the
key's row in every row block and its column), whether the key is present, absent or in any
bin, so the server learns neither the key nor whether it exists; the client's work after the
reply does not depend on where (or whether) the key was found either.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.cuckoo_layout import CuckooLayout
from spiralpir.optimizer.service import batch_wire, keyword_table
from spiralpir.optimizer.service import http_api as api
from spiralpir.optimizer.service.client_wire import reported_seconds, reported_stages


@dataclass(frozen=True)
class KeywordShape:
    """What a client needs of the server's table: the layout and the slot size."""

    layout: CuckooLayout
    slot_size: int


def shape_of(info: dict[str, Any], params: dict[str, Any], record_size: int) -> KeywordShape:
    """The keyword table a server reports in GET /v1/params, checked against the local build
    (``params``: its library's parameters): the table must be the build's database."""
    doc = info.get("keyword")
    if doc is None:
        raise SpiralpirError("the server holds no keyword table: look records up by --index "
                             "(or serve a build made with `generate --keys ...`)")
    lay = CuckooLayout.from_json(doc, "the server's keyword table")
    slot = doc.get("slot_size")
    geometry = (1 << int(params["nu_1"]), 1 << int(params["nu_2"]),
                int(params["items_per_plaintext"]))
    if not isinstance(slot, int) or isinstance(slot, bool) or \
            not lay.tag_bytes < slot <= record_size or \
            (lay.rows, lay.columns, lay.slots) != geometry:
        raise SpiralpirError(f"the server's keyword table does not fit its build ({lay.rows} x "
                             f"{lay.columns} bins of {lay.slots} slots of {slot!r} bytes; the "
                             f"build has {geometry[0]} x {geometry[1]} plaintexts of "
                             f"{geometry[2]} records of {record_size} bytes)")
    return KeywordShape(lay, slot)


@dataclass
class KeywordResult:
    """One lookup: the value (None: absent), with sizes and seconds."""

    key: str
    value: bytes | None
    bins: int
    request_bytes: int
    response_bytes: int
    public_params_bytes_uploaded: int
    seconds: dict[str, float] = field(default_factory=dict)
    server_stages: dict[str, float] = field(default_factory=dict)
    version: int | None = None  # the table's version the answer came from

    @property
    def found(self) -> bool:
        return self.value is not None

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "found": self.found,
                "value_hex": None if self.value is None else self.value.hex(),
                "bins": self.bins, "request_bytes": self.request_bytes,
                "response_bytes": self.response_bytes,
                "public_params_bytes_uploaded": self.public_params_bytes_uploaded,
                "seconds": self.seconds, "server_stages": self.server_stages,
                "version": self.version}


def lookup_query(keys: Any, layout: CuckooLayout, key: bytes) -> bytes:
    """The blocked query of ``key`` (keys: a ClientKeys)."""
    column, rows, _ = layout.locate(key)
    return keys.query_blocked(rows, column)


def decode_bins(keys: Any, responses: list[bytes]) -> list[bytes]:
    """Each response's plaintext: its bin's records, the build's record size each, in slot
    order (keys: a ClientKeys)."""
    return [keys.decode_plaintexts(r) for r in responses]


def lookup(client: Any, key: str | bytes, shape: KeywordShape) -> KeywordResult:
    """Look ``key`` up on ``client``'s keyword server (client: a PirClient)."""
    raw = key.encode("utf-8") if isinstance(key, str) else bytes(key)
    lay = shape.layout
    uploaded = client.setup()
    t0 = time.perf_counter()
    query = lookup_query(client.keys, lay, raw)
    t1 = time.perf_counter()
    response_bytes = int(client.build.lib.params["response_bytes"])
    r, again = client._post_query(api.KEYWORD, query,
                                  batch_wire.framed_bytes(lay.h, response_bytes))
    if r.status_code != 200:
        client._json(r)
    responses = batch_wire.unpack(r.content, lay.h, response_bytes, batch_wire.REPLY_MAGIC,
                                  "keyword reply")
    t2 = time.perf_counter()
    record_size = client.build.record_size
    value = keyword_table.find(lay, raw, decode_bins(client.keys, responses),
                               shape.slot_size, record_size)
    t3 = time.perf_counter()
    return KeywordResult(
        key=raw.decode("utf-8", errors="replace"), value=value, bins=lay.h,
        request_bytes=len(query), response_bytes=len(r.content),
        public_params_bytes_uploaded=uploaded + again,
        seconds={"query_gen": t1 - t0, "round_trip": t2 - t1, "decode": t3 - t2,
                 "server": reported_seconds(r.headers.get(api.SECONDS_HEADER))},
        server_stages=reported_stages(r.headers.get(api.STAGES_HEADER)),
        version=api.parse_decimal(r.headers.get(api.VERSION_HEADER, "")))
