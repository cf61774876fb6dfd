"""The batch benchmark: a batch build's buckets over random records, answered in process
(no HTTP) for random k-subsets; per-batch and per-record figures, every record checked
against the database's bytes at index x record size.

Server CPU is the process's CPU time (all threads) across ``answer_batch``; with one thread it
equals the single-core time the plan estimates.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.bucket_layout import BucketLayout
from spiralpir.optimizer.service import batch_wire
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service.batch_client import bucket_queries
from spiralpir.optimizer.service.batch_server import BatchServer
from spiralpir.optimizer.service.binding import Build, ClientKeys


def fit_layout(layout: BucketLayout, capacity: int) -> BucketLayout:
    """The layout itself if its buckets fit ``capacity`` (a CI twin's smaller one), else the
    same w, buckets and seed over proportionally fewer records, checked to fit."""
    if layout.capacity <= capacity:
        return layout
    records = max(layout.buckets, layout.records * capacity // layout.capacity * 9 // 10)
    small = BucketLayout(records, layout.w, layout.buckets, layout.seed, 0).sized()
    if small.capacity > capacity:
        raise SpiralpirError(f"batch layout: buckets of {small.capacity} exceed the build's "
                             f"capacity {capacity}")
    return small


def run_batch_bench(build: Build, layout: BucketLayout, k: int, trials: int = 3,
                    threads: int = 1, seed: int | None = None) -> dict[str, Any]:
    layout = fit_layout(layout, build.num_records)
    rng = random.Random(seed)
    rs = build.record_size
    data = os.urandom(layout.records * rs)
    recs = database.Records(bytearray(data), layout.records, rs, "random", "binary")
    t0 = time.perf_counter()
    srv = BatchServer(build, layout, recs, threads=threads, progress=False, log=lambda _m: None)
    preprocess = time.perf_counter() - t0
    keys = ClientKeys.new(build.lib)
    try:
        cid = srv.setup(keys.public_params())
        table = srv.table
        k = min(k, layout.records)
        cpu: list[float] = []
        wall: list[float] = []
        client: list[float] = []
        stage_runs: list[dict[str, float]] = []
        correct = True
        request = reply = 0
        for _ in range(trials):
            idx = rng.sample(range(layout.records), k)
            c0 = time.perf_counter()
            queries, slots = bucket_queries(keys, table, idx)
            body = batch_wire.pack(queries)
            c1 = time.perf_counter()
            reply_body, stages, secs = srv.answer_batch(cid, body)
            c2 = time.perf_counter()
            resp = batch_wire.unpack(reply_body, layout.buckets, srv.response_bytes,
                                     batch_wire.REPLY_MAGIC, "batch reply")
            for i, (b, slot) in slots.items():
                correct &= keys.decode(slot, resp[b], rs) == data[i * rs:(i + 1) * rs]
            client.append((c1 - c0) + (time.perf_counter() - c2))
            cpu.append(stages.pop("process_cpu"))
            wall.append(secs)
            stage_runs.append(stages)
            request, reply = len(body), len(reply_body)
        med_cpu = statistics.median(cpu)
        return {
            "correct": correct, "k": k, "trials": trials, "threads": srv.pool_threads,
            "records": layout.records, "record_size": rs, "w": layout.w,
            "buckets": layout.buckets, "bucket_capacity": layout.capacity,
            "query_buckets": srv.query_buckets, "batch_queries": len(srv.groups),
            "batch_cpu_seconds": med_cpu, "batch_wall_seconds": statistics.median(wall),
            "batch_stage_seconds": {s: statistics.median(r[s] for r in stage_runs)
                                    for s in stage_runs[0]},
            "batch_request_bytes": request, "batch_response_bytes": reply,
            "public_params_bytes": srv.public_params_bytes,
            "per_record_cpu_seconds": med_cpu / k,
            "per_record_bytes": (request + reply) / k,
            "records_per_cpu_second": k / med_cpu if med_cpu > 0 else float("inf"),
            "client_seconds_per_batch": statistics.median(client),
            "preprocess_seconds": preprocess,
        }
    finally:
        keys.close()
        srv.close()
