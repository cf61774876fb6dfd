"""The client side of a batch: place the distinct indices in distinct buckets, send one query
per bucket (or per G buckets when the build's queries pack G: batch_wire.query_groups) in one
request, decode the buckets that hold wanted records.

Every bucket gets a query, a real one for a placed index and otherwise a query for a random
slot of that bucket (a dummy): all are fresh encryptions of the same size and format, so the
request's size, count and shape are the same whichever indices were asked (only whether they
could be placed at all depends on them, and a failed placement sends nothing). Duplicates in
the request are fetched once.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.bucket_layout import BucketLayout, BucketTable
from spiralpir.optimizer.service import batch_wire
from spiralpir.optimizer.service import http_api as api
from spiralpir.optimizer.service.batch_results import BatchResult
from spiralpir.optimizer.service.binding import ClientKeys
from spiralpir.optimizer.service.client_wire import reported_seconds, reported_stages
from spiralpir.optimizer.service.placement import place

MAX_BUCKETS = 1 << 16  # a layout the client will compute (O(w·N) memory, B queries)


def layout_of(info: dict[str, Any], bucket_records: int) -> BucketLayout:
    """The batch layout a server reports in GET /v1/params (checked against the local build's
    bucket size, so a server cannot make the client compute an unbounded table), or an error
    if the server has none."""
    batch = info.get("batch")
    if batch is None:
        raise SpiralpirError("the server holds one database, not a batch build: query one index "
                             "at a time (or serve a build made with `generate --batch K`)")
    lay = BucketLayout.from_json(batch, "the server's batch layout")
    if lay.buckets > MAX_BUCKETS or lay.capacity > bucket_records or \
            lay.w * lay.records > lay.buckets * lay.capacity:
        raise SpiralpirError(f"the server's batch layout does not fit its build ({lay.buckets} "
                             f"buckets of {lay.capacity} records, w = {lay.w}, "
                             f"{lay.records} records; the build holds {bucket_records} per "
                             f"bucket, at most {MAX_BUCKETS} buckets)")
    return lay


def bucket_queries(keys: ClientKeys, table: BucketTable, wanted: Sequence[int]
                   ) -> tuple[list[bytes], dict[int, tuple[int, int]]]:
    """One query per bucket (dummies for the buckets no index was placed in) and, per wanted
    index, (bucket, slot)."""
    layout = table.layout
    placed = place(list(wanted), table.cand[list(wanted)], layout.buckets)
    slots = {i: (b, table.position(i, b)) for i, b in placed.items()}
    by_bucket = {b: s for b, s in slots.values()}
    wanted_slot = [by_bucket[b] if b in by_bucket else secrets.randbelow(layout.capacity)
                   for b in range(layout.buckets)]
    per_query = int(keys.lib.params.get("query_buckets", 1))
    if per_query == 1:
        return [keys.query(s) for s in wanted_slot], slots
    return [keys.query_packed([wanted_slot[b] for b in grp])
            for grp in batch_wire.query_groups(layout.buckets, per_query)], slots


def get_many(client: Any, indices: Sequence[int], table: BucketTable) -> BatchResult:
    """Records ``indices`` (in that order, duplicates allowed) from ``client``'s batch server
    (client: a PirClient)."""
    if not indices:
        raise SpiralpirError("no indices to fetch")
    for i in indices:
        client._check_index(int(i), client.num_records)
    wanted = list(dict.fromkeys(int(i) for i in indices))
    layout = table.layout
    uploaded = client.setup()
    t0 = time.perf_counter()
    queries, slots = bucket_queries(client.keys, table, wanted)
    t1 = time.perf_counter()
    body, r, again, responses = send(client, queries, layout.buckets)
    t2 = time.perf_counter()
    got = {i: client._value(client.keys.decode(slot, responses[b], client.build.record_size), i)
           for i, (b, slot) in slots.items()}
    t3 = time.perf_counter()
    return BatchResult(
        indices=[int(i) for i in indices], records=[got[int(i)] for i in indices],
        buckets=layout.buckets, request_bytes=len(body), response_bytes=len(r.content),
        public_params_bytes_uploaded=uploaded + again,
        seconds={"query_gen": t1 - t0, "round_trip": t2 - t1, "decode": t3 - t2,
                 "server": reported_seconds(r.headers.get(api.SECONDS_HEADER))},
        server_stages=reported_stages(r.headers.get(api.STAGES_HEADER)),
    )


def send(client: Any, queries: list[bytes], buckets: int | None = None
         ) -> tuple[bytes, Any, int, list[bytes]]:
    """POST a batch's queries as one request: (request body, reply, public-parameter bytes
    uploaded again on the way, the ``buckets`` responses in bucket order; default one per
    query)."""
    buckets = len(queries) if buckets is None else buckets
    body = batch_wire.pack(queries)
    response_bytes = int(client.build.lib.params["response_bytes"])
    limit = batch_wire.framed_bytes(buckets, response_bytes)
    r, again = client._post_query(api.BATCH, body, limit)
    if r.status_code != 200:
        client._json(r)
    responses = batch_wire.unpack(r.content, buckets, response_bytes,
                                  batch_wire.REPLY_MAGIC, "batch reply")
    return body, r, again, responses
