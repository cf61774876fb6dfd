"""The batch server: B bucket databases of one build, all answered in one request.

A ``BatchServer`` is a ``PirServer`` whose databases are the buckets of a batch layout
(models/bucket_layout.py): each bucket's records are gathered from the database, preprocessed,
saved as its own store (store.py: tied to the bucket's records and the parameters) and served
memory-mapped, exactly like one database today. One set of public parameters per client serves
every bucket. ``answer_batch`` takes the B queries of a batch (batch_wire.py framing), answers
the buckets in parallel on a thread pool (the runtime releases the GIL; each bucket's answer
runs on one runtime thread, so the pool's width is the parallelism) and returns the B
responses in bucket order.

The mechanism (B sub-databases answered in one request) only needs the bucket databases;
which records a bucket holds is the layout's business, so another layout's buckets could be
served the same way.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.bucket_layout import BucketLayout, BucketTable
from spiralpir.optimizer.service import batch_wire, store
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service.binding import Build, PackedExpansion, PublicParams
from spiralpir.optimizer.service.pir_server import BadBlock, PirServer

BATCH_FILE = "batch.json"  # a batch build's layout, next to its params.json


def read_layout(path: Path) -> BucketLayout:
    """The layout of a batch build (``generated/NAME/batch.json``) or a layout file."""
    import json

    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SpiralpirError(f"unreadable batch layout {path}: {exc}") from None
    return BucketLayout.from_json(doc.get("batch", doc) if isinstance(doc, dict) else doc,
                                  str(path))


def bucket_records(records: database.Records, table: BucketTable, bucket: int) -> database.Records:
    """Bucket ``bucket``'s database: its members' records in index order, zero-padded to the
    layout's capacity (indices beyond the database's records read as zeros)."""
    layout = table.layout
    size = records.record_size
    src = np.frombuffer(memoryview(records.data).cast("B"), dtype=np.uint8,
                        count=records.num_records * size).reshape(records.num_records, size)
    members = table.members(bucket)  # ascending: the ones the database holds come first
    members = members[members < records.num_records]
    out = np.zeros((layout.capacity, size), dtype=np.uint8)
    out[: members.size] = src[members]
    return database.Records(bytearray(out.tobytes()), layout.capacity, size,
                            f"bucket {bucket} of {records.source}", "binary")


def bucket_store_paths(base: Path, buckets: int) -> list[Path]:
    """One store per bucket inside the directory ``base`` (created)."""
    base.mkdir(parents=True, exist_ok=True)
    return [base / f"bucket-{b:05d}.spiralpir-db" for b in range(buckets)]


class BatchServer(PirServer):
    """The buckets of ``layout`` over ``records``, served by ``build`` (the bucket build)."""

    def __init__(self, build: Build, layout: BucketLayout, records: database.Records,
                 preprocessed_dir: Path | str | None = None, threads: int = 0,
                 **kwargs: Any) -> None:
        if layout.capacity > build.num_records:
            raise SpiralpirError(f"batch layout: buckets of {layout.capacity} records exceed the "
                                 f"build '{build.label}' capacity of {build.num_records}")
        if records.num_records > layout.records:
            raise SpiralpirError(f"the database holds {records.num_records} records, the batch "
                                 f"layout places {layout.records}")
        if records.record_size > build.record_size:
            raise SpiralpirError(f"records of {records.record_size} bytes exceed the build's "
                                 f"{build.record_size}")
        self.layout = layout
        self.table = layout.table()
        if self.table.max_load > layout.capacity:
            raise SpiralpirError(f"batch layout: a bucket holds {self.table.max_load} records, "
                                 f"more than its capacity {layout.capacity}")
        self._serve_buckets(build, [bucket_records(records, self.table, b)
                                    for b in range(layout.buckets)],
                            preprocessed_dir, threads, **kwargs)
        self.num_records = records.num_records
        self.source = records.source

    def _serve_buckets(self, build: Build, buckets: list[database.Records],
                       preprocessed_dir: Path | str | None, threads: int,
                       **kwargs: Any) -> None:
        """Serve ``buckets`` (equal-shaped databases of ``build``), one store each: the
        mechanism, whatever layout chose the buckets' records."""
        self.bucket_count = len(buckets)
        paths: list[Path | None] = [None] * self.bucket_count
        if preprocessed_dir is not None:
            paths = list(bucket_store_paths(Path(preprocessed_dir), self.bucket_count))
        blocks = list(zip(buckets, paths, strict=True))
        self.pool_threads = threads if threads > 0 else (os.cpu_count() or 1)
        self._pool = ThreadPoolExecutor(max_workers=self.pool_threads,
                                        thread_name_prefix="spiralpir-bucket")
        # bucket 0 through PirServer (sizes, clients), the others preprocessed or mapped in
        # parallel, one runtime thread each, like their answers (each logs a line when done;
        # no progress bars, which would interleave)
        super().__init__(build, blocks=blocks[:1], threads=1, **kwargs)
        self._announce_memory(self.bucket_count * self._object_bytes)
        self.blocks += list(self._pool.map(
            lambda b: self._load_block(b, blocks[b][0], blocks[b][1], False),
            range(1, self.bucket_count)))
        self.response_bytes = int(build.lib.params["response_bytes"])
        self.query_buckets = int(build.lib.params.get("query_buckets", 1))
        self.groups = batch_wire.query_groups(self.bucket_count, self.query_buckets)

    @property
    def batch_request_bytes(self) -> int:
        return batch_wire.framed_bytes(len(self.groups), self.query_bytes)

    def answer_versioned(self, client_id: str, query: bytes, pinned: PublicParams | None = None,
                         min_version: int = 0) -> tuple[bytes, dict[str, float], float, int]:
        raise BadBlock(f"this server answers batches of {self.bucket_count} bucket queries: "
                       "POST /v1/batch (spiralpir query --index I,J,...)")

    def open_stream(self, client_id: str, query: bytes, pinned: PublicParams | None = None
                    ) -> tuple[str, dict[str, float]]:
        raise BadBlock("this server answers batches (POST /v1/batch), not streams")

    def answer_batch(self, client_id: str, body: bytes, pinned: PublicParams | None = None
                     ) -> tuple[bytes, dict[str, float], float]:
        """The framed responses of every bucket to a framed batch of bucket queries; the
        per-stage seconds summed over the buckets, and the wall seconds."""
        queries = batch_wire.unpack(body, len(self.groups), self.query_bytes,
                                    what=f"batch request ({self.query_buckets} buckets a query)")
        pp = pinned if pinned is not None else self.pin(client_id)
        start = time.perf_counter()
        cpu = time.process_time()
        if self.query_buckets == 1:
            answers = list(self._pool.map(lambda b: self.blocks[b].db.answer(pp, queries[b]),
                                          range(self.bucket_count)))
        else:
            answers = self._answer_packed(pp, queries)
        secs = time.perf_counter() - start
        stages: dict[str, float] = {}
        for _, st in answers:
            for name, v in st.items():
                stages[name] = stages.get(name, 0.0) + v
        stages["process_cpu"] = time.process_time() - cpu
        reply = batch_wire.pack([r for r, _ in answers], batch_wire.REPLY_MAGIC)
        return reply, stages, secs

    def _answer_packed(self, pp: PublicParams, queries: list[bytes]
                       ) -> list[tuple[bytes, dict[str, float]]]:
        """Each packed query expanded once (in parallel), then every bucket converted from its
        slice and answered at once (in parallel: one prepared query per task alive, as with
        plain queries); per bucket (response, stage seconds), the shared expansion counted in
        its query's first bucket."""
        def expand(j: int) -> PackedExpansion:
            grp = self.groups[j]
            return self.blocks[grp[0]].db.expand_packed(pp, queries[j], len(grp))

        expansions = list(self._pool.map(expand, range(len(self.groups))))
        try:
            def answer(b: int) -> tuple[bytes, dict[str, float]]:
                j, g = divmod(b, self.query_buckets)
                db = self.blocks[b].db
                prepared = db.prepare_bucket(pp, expansions[j], g)
                try:
                    resp, st = db.answer_prepared(prepared)
                finally:
                    prepared.close()
                shared = expansions[j].seconds if g == 0 else 0.0
                return resp, {**prepared.seconds, "expansion": shared, **st}

            return list(self._pool.map(answer, range(self.bucket_count)))
        finally:
            for ex in expansions:
                ex.close()

    def bucket_info(self) -> dict[str, Any]:
        """The sizes of a batch of this server's buckets (for GET /v1/params)."""
        return {"request_bytes": self.batch_request_bytes,
                "query_buckets": self.query_buckets, "queries": len(self.groups),
                "reply_bytes": batch_wire.framed_bytes(self.bucket_count, self.response_bytes),
                "response_bytes": self.response_bytes,
                "parallel_buckets": self.pool_threads}

    def info(self) -> dict[str, Any]:
        out = super().info()
        out.pop("stream", None)
        out["num_records"] = self.num_records
        out["batch"] = {**self.layout.to_json(), **self.bucket_info()}
        return out

    def close(self) -> None:
        """Stop the pool and free the bucket databases (the server answers no more)."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        for blk in self.blocks:
            blk.db.close()


def default_store_dir(db_path: Path, tag: str) -> Path:
    """Where a database's bucket stores live by default: a directory next to it."""
    return store.default_path(db_path, tag).with_suffix(".batch")
