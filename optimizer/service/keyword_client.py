"""The client side of a keyword lookup: fetch the key's candidate slot in every sub-table in
one batch request, and find the entry by its tag.

The request is always h queries, one per sub-table, each a fresh encryption of the key's
candidate slot there: the same count and sizes whether the key is present, absent, or in
any sub-table, so the server learns neither the key nor whether it exists.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.cuckoo_layout import CuckooLayout
from spiralpir.optimizer.service import batch_client, keyword_table
from spiralpir.optimizer.service.client_wire import reported_seconds, reported_stages
from spiralpir.optimizer.service.http_api import SECONDS_HEADER, STAGES_HEADER


@dataclass(frozen=True)
class KeywordShape:
    """What a client needs of the server's table: the layout and the slot size."""

    layout: CuckooLayout
    slot_size: int


def shape_of(info: dict[str, Any], record_size: int, bucket_records: int) -> KeywordShape:
    """The keyword table a server reports in GET /v1/params, checked against the local build
    (a server cannot make the client send more queries than sub-tables of the build)."""
    doc = info.get("keyword")
    if doc is None:
        raise SpiralpirError("the server holds no keyword table: look records up by --index "
                             "(or serve a build made with `generate --keys ...`)")
    lay = CuckooLayout.from_json(doc, "the server's keyword table")
    slot = doc.get("slot_size")
    if not isinstance(slot, int) or isinstance(slot, bool) or \
            not lay.tag_bytes < slot <= record_size or lay.slots > bucket_records:
        raise SpiralpirError(f"the server's keyword table does not fit its build ({lay.slots} "
                             f"slots of {slot!r} bytes; the build holds {bucket_records} "
                             f"records of {record_size} bytes)")
    return KeywordShape(lay, slot)


@dataclass
class KeywordResult:
    """One lookup: the value (None: absent), with sizes and seconds."""

    key: str
    value: bytes | None
    subtables: int
    request_bytes: int
    response_bytes: int
    public_params_bytes_uploaded: int
    seconds: dict[str, float] = field(default_factory=dict)
    server_stages: dict[str, float] = field(default_factory=dict)

    @property
    def found(self) -> bool:
        return self.value is not None

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "found": self.found,
                "value_hex": None if self.value is None else self.value.hex(),
                "subtables": self.subtables, "request_bytes": self.request_bytes,
                "response_bytes": self.response_bytes,
                "public_params_bytes_uploaded": self.public_params_bytes_uploaded,
                "seconds": self.seconds, "server_stages": self.server_stages}


def lookup(client: Any, key: str | bytes, shape: KeywordShape) -> KeywordResult:
    """Look ``key`` up on ``client``'s keyword server (client: a PirClient)."""
    raw = key.encode("utf-8") if isinstance(key, str) else bytes(key)
    lay = shape.layout
    uploaded = client.setup()
    t0 = time.perf_counter()
    slots, _ = lay.locate(raw)
    queries = [client.keys.query(s) for s in slots]
    t1 = time.perf_counter()
    body, r, again, responses = batch_client.send(client, queries)
    t2 = time.perf_counter()
    fetched = [client.keys.decode(s, resp, client.build.record_size)[: shape.slot_size]
               for s, resp in zip(slots, responses, strict=True)]
    value = keyword_table.find(lay, raw, fetched)
    t3 = time.perf_counter()
    return KeywordResult(
        key=raw.decode("utf-8", errors="replace"), value=value, subtables=lay.h,
        request_bytes=len(body), response_bytes=len(r.content),
        public_params_bytes_uploaded=uploaded + again,
        seconds={"query_gen": t1 - t0, "round_trip": t2 - t1, "decode": t3 - t2,
                 "server": reported_seconds(r.headers.get(SECONDS_HEADER))},
        server_stages=reported_stages(r.headers.get(STAGES_HEADER)))
