"""The PIR server as a Python object (``PirServer``) and as an aiohttp application.

``PirServer`` holds the preprocessed database(s) of a build and the public parameters of its
clients (keyed by client id = a hash of the uploaded parameters, least recently used evicted
first). Usually one database; in streaming mode (issue 8) a sequence of databases of the same
build ("blocks", e.g. the blocks of a media file), answered with one uploaded query: the
server does the query's one-time work (parse, expansion, conversion) once, keeps the prepared
query in a bounded session cache (``StreamSessions``) and answers each block from it.
``make_app`` exposes it over HTTP:

  POST /v1/setup   body: public parameters (octet-stream)  -> {"client_id": ...}
  POST /v1/query   header X-Spiralpir-Client-Id, body: query -> response (octet-stream)
                   (a server holding one database)
  POST /v1/stream  header X-Spiralpir-Client-Id, body: query -> {"stream_id": ..., ...}
  GET  /v1/stream/{stream_id}/blocks/{k}  -> block k's response (octet-stream); the headers
                   give this block's server seconds and stages, without the one-time part
  DELETE /v1/stream/{stream_id}           -> releases the session
  GET  /v1/params  the build's parameters, shapes, blocks, exact message sizes, limits
  GET  /v1/health  {"status": "ok", ...}

Answers run in a thread pool (the C++ runtime releases the GIL), so the event loop keeps
serving; malformed or foreign input gets a 4xx with the library's message.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import secrets
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spiralpir.optimizer import database
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.instance import (
    ANSWER_STAGES,
    PREPARE_STAGES,
    Build,
    ClientKeys,
    PreparedQuery,
    PublicParams,
    ServerDb,
    prepared_query_bytes,
)

CLIENT_HEADER = "X-Spiralpir-Client-Id"
API_VERSION = 1


class UnknownClient(SpiralpirError):
    """The client id is not (or no longer) registered: the client should run setup again."""


class UnknownStream(SpiralpirError):
    """The stream session is unknown, expired, evicted or closed: upload the query again."""


class BadBlock(SpiralpirError):
    """A block index outside the server's sequence of databases."""


@dataclass
class Block:
    """One database the server answers: block ``index`` of the stream (or the only one)."""

    index: int
    source: str
    db: ServerDb
    num_records: int
    db_bytes: int  # num_records x the build's record size: the throughput's numerator
    preprocess_seconds: float = 0.0
    loaded_from_cache: bool = False

    def info(self) -> dict[str, Any]:
        return {"index": self.index, "source": Path(self.source).name,
                "num_records": self.num_records, "db_bytes": self.db_bytes}


@dataclass
class StreamSession:
    """A prepared query and what it has cost so far (per-block figures exclude the one-time
    part, ``prepared.seconds``)."""

    prepared: PreparedQuery
    client_id: str
    created: float
    last_used: float
    blocks_answered: int = 0
    block_seconds: float = 0.0
    block_bytes: int = 0

    def summary(self) -> str:
        one_time = sum(self.prepared.seconds.values())
        if not self.blocks_answered:
            return f"no blocks answered (one-time {one_time * 1e3:.1f} ms)"
        per = self.block_seconds / self.blocks_answered
        rate = self.block_bytes / self.block_seconds if self.block_seconds > 0 else float("inf")
        return (f"{self.blocks_answered} block(s) answered, {per * 1e3:.1f} ms per block, "
                f"{rate / 1e6:.1f} MB/s without the one-time {one_time * 1e3:.1f} ms")


class StreamSessions:
    """Prepared queries by stream id: at most ``max_sessions`` (least recently used evicted
    first) and none idle for longer than ``ttl`` seconds. A dropped id is remembered (up to
    ``TOMBSTONES``) so that its next use names the bound that dropped it."""

    TOMBSTONES = 4096

    def __init__(self, max_sessions: int, ttl: float,
                 on_drop: Callable[[str, StreamSession, str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if max_sessions < 1:
            raise SpiralpirError(f"max_streams must be >= 1, not {max_sessions}")
        if not ttl > 0:
            raise SpiralpirError(f"stream_ttl must be > 0 seconds, not {ttl}")
        self.max_sessions = max_sessions
        self.ttl = float(ttl)
        self._clock = clock
        self._on_drop = on_drop
        self._sessions: OrderedDict[str, StreamSession] = OrderedDict()
        self._gone: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def _drop(self, sid: str, reason: str, dropped: list[tuple[str, StreamSession, str]]) -> None:
        sess = self._sessions.pop(sid)
        self._gone[sid] = reason
        while len(self._gone) > self.TOMBSTONES:
            self._gone.popitem(last=False)
        dropped.append((sid, sess, reason))

    def _expire(self, now: float, dropped: list[tuple[str, StreamSession, str]]) -> None:
        while self._sessions:
            sid, sess = next(iter(self._sessions.items()))
            if now - sess.last_used <= self.ttl:
                break
            self._drop(sid, f"expired: idle for more than stream_ttl = {self.ttl:g} s "
                            "(serve --stream-ttl)", dropped)

    def _release(self, dropped: list[tuple[str, StreamSession, str]]) -> None:
        for sid, sess, reason in dropped:
            sess.prepared.close()  # freed now, or by the last answer still running on it
            if self._on_drop is not None:
                self._on_drop(sid, sess, reason)

    def add(self, prepared: PreparedQuery, client_id: str) -> str:
        sid = secrets.token_hex(16)
        dropped: list[tuple[str, StreamSession, str]] = []
        with self._lock:
            now = self._clock()
            self._expire(now, dropped)
            self._sessions[sid] = StreamSession(prepared, client_id, now, now)
            while len(self._sessions) > self.max_sessions:
                oldest = next(iter(self._sessions))
                self._drop(oldest, f"evicted: the server keeps at most max_streams = "
                                   f"{self.max_sessions} sessions (serve --max-streams)", dropped)
        self._release(dropped)
        return sid

    def get(self, sid: str) -> StreamSession:
        """The live session (marked used now); UnknownStream naming why it is gone."""
        dropped: list[tuple[str, StreamSession, str]] = []
        with self._lock:
            now = self._clock()
            self._expire(now, dropped)
            sess = self._sessions.get(sid)
            if sess is not None:
                sess.last_used = now
                self._sessions.move_to_end(sid)
            reason = self._gone.get(sid)
        self._release(dropped)
        if sess is not None:
            return sess
        shown = sid[:64]
        if reason is not None:
            raise UnknownStream(f"stream session '{shown}' {reason}; upload the query again "
                                "with POST /v1/stream")
        raise UnknownStream(f"unknown stream session '{shown}': upload a query with "
                            "POST /v1/stream first")

    def close(self, sid: str) -> StreamSession:
        sess = self.get(sid)
        dropped: list[tuple[str, StreamSession, str]] = []
        with self._lock:
            if sid in self._sessions:
                self._drop(sid, "was closed by its client (DELETE)", dropped)
        self._release(dropped)
        return sess

    def sweep(self) -> None:
        """Drop expired sessions (called periodically so idle memory is returned)."""
        dropped: list[tuple[str, StreamSession, str]] = []
        with self._lock:
            self._expire(self._clock(), dropped)
        self._release(dropped)

    def clear(self) -> None:
        dropped: list[tuple[str, StreamSession, str]] = []
        with self._lock:
            for sid in list(self._sessions):
                self._drop(sid, "was dropped: the server stopped", dropped)
        self._release(dropped)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)


CACHE_SUFFIXES = (".spiralpir-db", ".spiralpir-db.json")


def _natural_key(path: Path) -> list[Any]:
    """block2 before block10."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t)
            for t in re.split(r"(\d+)", path.name) if t]


def stream_block_paths(paths: Sequence[Path]) -> list[Path]:
    """The blocks of a stream, in order: a file is one block; a directory expands to its
    entries sorted by name (numbers in names compare as numbers; a subdirectory entry is one
    block of values, database.py's directory format), skipping hidden entries and
    preprocessed-database files."""
    out: list[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise SpiralpirError(f"no such stream block or directory: {p}")
        if not p.is_dir():
            out.append(p)
            continue
        entries = sorted((e for e in p.iterdir()
                          if not e.name.startswith(".") and ".tmp" not in e.name
                          and not e.name.endswith(CACHE_SUFFIXES)), key=_natural_key)
        if not entries:
            raise SpiralpirError(f"stream directory {p} holds no blocks")
        out.extend(entries)
    return out


class PirServer:
    """One build serving one database, or (``blocks``) a sequence of databases of that build
    answered with one uploaded query each (streaming mode)."""

    def __init__(self, build: Build, records: database.Records | None = None,
                 db_path: Path | str | None = None, threads: int = 0,
                 preprocessed: Path | str | None = None, max_clients: int = 32,
                 progress: bool = True, log: Callable[[str], None] | None = None,
                 blocks: Sequence[tuple[database.Records, Path | str | None]] | None = None,
                 max_streams: int = 8, stream_ttl: float = 600.0) -> None:
        self.build = build
        self.lib = build.lib
        self.max_clients = max_clients
        self.threads = threads
        self._log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self._clients: OrderedDict[str, PublicParams] = OrderedDict()
        self._lock = threading.Lock()
        self.streaming = blocks is not None
        if blocks is None:
            if records is None:
                if db_path is None:
                    raise SpiralpirError("PirServer needs records, a db_path or blocks")
                records = database.read_records(Path(db_path), build.record_size)
            blocks = [(records, preprocessed)]
        elif records is not None or db_path is not None or preprocessed is not None:
            raise SpiralpirError("PirServer takes either records/db_path/preprocessed or blocks "
                                 "(with each block's preprocessed path), not both")
        if not blocks:
            raise SpiralpirError("streaming mode needs at least one block (database)")
        self.record_size = build.record_size
        self.blocks: list[Block] = [
            self._load_block(k, recs, Path(pre) if pre is not None else None, progress)
            for k, (recs, pre) in enumerate(blocks)
        ]
        self.num_records = max(b.num_records for b in self.blocks)
        self.sessions = StreamSessions(max_streams, stream_ttl, on_drop=self._log_drop)
        self._measure_sizes()

    # -- loading ---------------------------------------------------------------------------
    @property
    def db(self) -> ServerDb:
        """The (first) database."""
        return self.blocks[0].db

    @property
    def preprocess_seconds(self) -> float:
        return sum(b.preprocess_seconds for b in self.blocks)

    @property
    def loaded_from_cache(self) -> bool:
        return all(b.loaded_from_cache for b in self.blocks)

    def _load_block(self, index: int, records: database.Records, preprocessed: Path | None,
                    progress: bool) -> Block:
        records = database.fit_to_build(records, self.build.num_records, self.build.record_size,
                                        self.build.label)
        block = Block(index, records.source, ServerDb(self.lib, self.threads),
                      records.num_records, records.num_records * self.build.record_size)
        what = f"block {index} ({records.source})" if self.streaming else "database"
        meta = {
            "build": self.build.name,
            "ci": self.build.ci,
            "params": self.lib.params,
            "num_records": records.num_records,
            "record_size": records.record_size,
            "records_sha256": records.fingerprint(),
        }
        if preprocessed is not None and database.cache_matches(preprocessed, meta):
            start = time.perf_counter()
            try:
                block.db.map_db(preprocessed)
                block.loaded_from_cache = True
                self._log(f"mapped preprocessed {what} {preprocessed} "
                          f"({time.perf_counter() - start:.2f} s)")
                return block
            except SpiralpirError as exc:
                self._log(f"cannot use {preprocessed} ({exc}); preprocessing again")
                block.db.close()
                block.db = ServerDb(self.lib, self.threads)
        start = time.perf_counter()
        bar: Any = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=None, desc=f"preprocessing {what}", unit="pt", file=sys.stderr,
                       leave=False, mininterval=0.5, disable=None)

        def on_progress(done: int, total: int) -> None:
            if bar is not None:
                bar.total = total
                bar.update(done - bar.n)

        try:
            block.db.load_records(records.data, records.num_records, records.record_size,
                                  on_progress)
        finally:
            if bar is not None:
                bar.close()
        block.preprocess_seconds = time.perf_counter() - start
        self._log(f"preprocessed {what}: {records.num_records} records in "
                  f"{block.preprocess_seconds:.2f} s")
        if preprocessed is not None:
            tmp = Path(str(preprocessed) + f".tmp{os.getpid()}")
            block.db.save_db(tmp)
            os.replace(tmp, preprocessed)
            database.write_cache_meta(preprocessed, meta)
            self._log(f"saved preprocessed {what} to {preprocessed}")
            if self.streaming:
                # serve the saved file memory-mapped, as after a restart: the blocks of a long
                # stream then need not all fit in memory at once (the kernel pages them)
                mapped = ServerDb(self.lib, self.threads)
                mapped.map_db(preprocessed)
                block.db.close()
                block.db = mapped
        return block

    def _measure_sizes(self) -> None:
        """Exact sizes of the messages, from a throwaway client of the same library."""
        keys = ClientKeys.new(self.lib)
        try:
            self.public_params_bytes = len(keys.public_params())
            self.query_bytes = len(keys.query(0))
        finally:
            keys.close()

    # -- protocol --------------------------------------------------------------------------
    def setup(self, data: bytes) -> str:
        """Register public parameters; returns the client id (same parameters, same id)."""
        client_id = hashlib.sha256(data).hexdigest()[:32]
        with self._lock:
            if client_id in self._clients:
                self._clients.move_to_end(client_id)
                return client_id
        pp = PublicParams(self.lib, data)  # validates (header, params hash, length, ranges)
        with self._lock:
            self._clients[client_id] = pp
            self._clients.move_to_end(client_id)
            while len(self._clients) > self.max_clients:
                self._clients.popitem(last=False)
        return client_id

    def _public_params(self, client_id: str) -> PublicParams:
        with self._lock:
            pp = self._clients.get(client_id)
            if pp is not None:
                self._clients.move_to_end(client_id)
        if pp is None:
            raise UnknownClient(f"unknown client id '{client_id[:64]}': upload public parameters "
                                "with POST /v1/setup first")
        return pp

    def answer(self, client_id: str, query: bytes) -> tuple[bytes, dict[str, float], float]:
        """The response of the (only) database to one query."""
        if len(self.blocks) != 1:
            raise BadBlock(f"this server streams {len(self.blocks)} databases: upload the query "
                           "with POST /v1/stream and fetch each block")
        pp = self._public_params(client_id)
        start = time.perf_counter()
        resp, stages = self.db.answer(pp, query)
        return resp, stages, time.perf_counter() - start

    # -- streaming -------------------------------------------------------------------------
    def open_stream(self, client_id: str, query: bytes) -> tuple[str, dict[str, float]]:
        """The one-time part: prepare ``query`` once for every block; returns the stream id
        and its seconds per stage (PREPARE_STAGES, plus "total" wall time)."""
        pp = self._public_params(client_id)
        start = time.perf_counter()
        prepared = self.db.prepare(pp, query)
        seconds = {**prepared.seconds, "total": time.perf_counter() - start}
        sid = self.sessions.add(prepared, client_id)
        self._log(f"stream {sid[:8]}: prepared a {len(query):,} B query once for "
                  f"{len(self.blocks)} block(s) in {seconds['total'] * 1e3:.1f} ms ("
                  + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in prepared.seconds.items())
                  + ")")
        return sid, seconds

    def block(self, index: int) -> Block:
        if not 0 <= index < len(self.blocks):
            raise BadBlock(f"block {index} out of range: this server streams "
                           f"{len(self.blocks)} block(s), 0 .. {len(self.blocks) - 1}")
        return self.blocks[index]

    def answer_block(self, stream_id: str, index: int) -> tuple[bytes, dict[str, float], float]:
        """Block ``index``'s response to a prepared stream query: response, seconds per stage
        (ANSWER_STAGES) and the wall seconds of this block alone."""
        blk = self.block(index)
        sess = self.sessions.get(stream_id)
        start = time.perf_counter()
        try:
            resp, stages = blk.db.answer_prepared(sess.prepared)
        except SpiralpirError:
            if sess.prepared.closed:  # dropped between the lookup and the answer
                raise UnknownStream(f"stream session '{stream_id[:64]}' was dropped (at most "
                                    f"{self.sessions.max_sessions} sessions, idle expiry "
                                    f"{self.sessions.ttl:g} s); upload the query again "
                                    "with POST /v1/stream") from None
            raise
        secs = time.perf_counter() - start
        with self._lock:
            sess.blocks_answered += 1
            sess.block_seconds += secs
            sess.block_bytes += blk.db_bytes
        rate = blk.db_bytes / secs if secs > 0 else float("inf")
        self._log(f"stream {stream_id[:8]}: block {index} (of {len(self.blocks)}) in "
                  f"{secs * 1e3:.1f} ms, {rate / 1e6:.1f} MB/s ("
                  + ", ".join(f"{k} {v * 1e3:.1f}" for k, v in stages.items() if v) + " ms)")
        return resp, stages, secs

    def close_stream(self, stream_id: str) -> StreamSession:
        return self.sessions.close(stream_id)

    def _log_drop(self, sid: str, sess: StreamSession, reason: str) -> None:
        self._log(f"stream {sid[:8]} {reason.split(':')[0]}: {sess.summary()}")

    def info(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "api": API_VERSION,
            "build": self.build.name,
            "ci": self.build.ci,
            "variant": self.lib.variant,
            "params": self.lib.params,
            "num_records": self.num_records,
            "record_size": self.record_size,
            "sizes": {
                "public_params_bytes": self.public_params_bytes,
                "query_bytes": self.query_bytes,
            },
            "stages": self.lib.stage_names,
        }
        if self.streaming:
            out["stream"] = {
                "blocks": [b.info() for b in self.blocks],
                "prepared_query_bytes": prepared_query_bytes(self.build.params),
                "max_streams": self.sessions.max_sessions,
                "stream_ttl_seconds": self.sessions.ttl,
                "prepare_stages": list(PREPARE_STAGES),
                "block_stages": list(ANSWER_STAGES),
            }
        return out

    @property
    def client_count(self) -> int:
        with self._lock:
            return len(self._clients)


# ---------------------------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------------------------


STREAM_HEADERS = ("X-Spiralpir-Block", "X-Spiralpir-Block-Bytes", "X-Spiralpir-Server-Seconds",
                  "X-Spiralpir-Stages")


def make_app(server: PirServer, workers: int = 2) -> Any:
    from aiohttp import web

    setup_limit = server.public_params_bytes + 4096
    query_limit = server.query_bytes + 4096
    executor = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="spiralpir")
    stats = {"queries": 0, "errors": 0, "setups": 0, "streams": 0, "blocks": 0}
    started = time.time()

    def error(status: int, message: str) -> Any:
        stats["errors"] += 1
        return web.json_response({"error": message}, status=status)

    async def read_body(request: Any, limit: int, what: str) -> bytes | Any:
        length = request.content_length
        if length is not None and length > limit:
            return error(413, f"{what} of {length} bytes exceeds the limit of {limit} bytes "
                              f"for build '{server.build.name}'")
        body = bytearray()
        async for chunk in request.content.iter_chunked(1 << 16):
            body += chunk
            if len(body) > limit:
                return error(413, f"{what} exceeds the limit of {limit} bytes")
        if not body:
            return error(400, f"empty {what}")
        return bytes(body)

    async def run_job(fn: Callable[..., Any], *args: Any) -> Any:
        """fn(*args) in the thread pool; SpiralpirErrors become the matching 4xx response."""
        try:
            return await asyncio.get_running_loop().run_in_executor(executor, fn, *args)
        except (UnknownClient, UnknownStream) as exc:
            return error(404, str(exc))
        except BadBlock as exc:
            return error(400, str(exc))
        except SpiralpirError as exc:
            return error(400, f"rejected query: {exc}")

    async def client_query(request: Any, fn: Callable[[str, bytes], Any]) -> Any:
        """fn(client id, query) of a request carrying a query (run_job's result)."""
        client_id = request.headers.get(CLIENT_HEADER)
        if not client_id:
            return error(400, f"missing {CLIENT_HEADER} header (get an id from POST /v1/setup)")
        body = await read_body(request, query_limit, "query")
        if not isinstance(body, bytes):
            return body
        return await run_job(fn, client_id, body)

    async def setup(request: Any) -> Any:
        body = await read_body(request, setup_limit, "public parameters")
        if not isinstance(body, bytes):
            return body
        loop = asyncio.get_running_loop()
        try:
            client_id = await loop.run_in_executor(executor, server.setup, body)
        except SpiralpirError as exc:
            return error(400, f"rejected public parameters: {exc}")
        stats["setups"] += 1
        return web.json_response({"client_id": client_id})

    async def query(request: Any) -> Any:
        out = await client_query(request, server.answer)
        if not isinstance(out, tuple):
            return out
        resp, stages, secs = out
        stats["queries"] += 1
        return web.Response(
            body=resp, content_type="application/octet-stream",
            headers={"X-Spiralpir-Server-Seconds": f"{secs:.6f}",
                     "X-Spiralpir-Stages": json.dumps(stages, sort_keys=True)},
        )

    async def open_stream(request: Any) -> Any:
        out = await client_query(request, server.open_stream)
        if not isinstance(out, tuple):
            return out
        sid, seconds = out
        stats["streams"] += 1
        return web.json_response({
            "stream_id": sid,
            "blocks": [b.info() for b in server.blocks],
            "prepare_seconds": seconds,
            "max_streams": server.sessions.max_sessions,
            "stream_ttl_seconds": server.sessions.ttl,
        }, status=201)

    async def stream_block(request: Any) -> Any:
        sid = request.match_info["stream_id"]
        text = request.match_info["block"]
        if not text.isdigit() or len(text) > 18:
            return error(400, f"block index '{text[:40]}' is not a non-negative integer")
        index = int(text)
        out = await run_job(server.answer_block, sid, index)
        if not isinstance(out, tuple):
            return out
        resp, stages, secs = out
        stats["blocks"] += 1
        blk = server.blocks[index]
        return web.Response(
            body=resp, content_type="application/octet-stream",
            headers=dict(zip(STREAM_HEADERS, (str(index), str(blk.db_bytes), f"{secs:.6f}",
                                              json.dumps(stages, sort_keys=True)), strict=True)),
        )

    async def close_stream(request: Any) -> Any:
        out = await run_job(server.close_stream, request.match_info["stream_id"])
        if not isinstance(out, StreamSession):
            return out
        return web.json_response({"closed": True, "blocks_answered": out.blocks_answered,
                                  "block_seconds": out.block_seconds,
                                  "prepare_seconds": out.prepared.seconds})

    async def params(_request: Any) -> Any:
        info = server.info()
        info["limits"] = {"setup_bytes": setup_limit, "query_bytes": query_limit}
        return web.json_response(info)

    async def health(_request: Any) -> Any:
        return web.json_response({
            "status": "ok", "build": server.build.name, "uptime_seconds": time.time() - started,
            "clients": server.client_count, "open_streams": len(server.sessions), **stats,
        })

    async def sweeper(_app: Any) -> Any:
        """Return the memory of idle stream sessions without waiting for the next request."""
        period = min(max(server.sessions.ttl / 4, 0.5), 60.0)

        async def loop() -> None:
            while True:
                await asyncio.sleep(period)
                server.sessions.sweep()

        task = asyncio.get_running_loop().create_task(loop())
        yield
        task.cancel()
        server.sessions.clear()

    async def on_cleanup(_app: Any) -> None:
        executor.shutdown(wait=False, cancel_futures=True)

    app = web.Application(client_max_size=max(setup_limit, query_limit) + 1024)
    app.add_routes([
        web.post("/v1/setup", setup),
        web.post("/v1/query", query),
        web.post("/v1/stream", open_stream),
        web.get("/v1/stream/{stream_id}/blocks/{block}", stream_block),
        web.delete("/v1/stream/{stream_id}", close_stream),
        web.get("/v1/params", params),
        web.get("/v1/health", health),
    ])
    app.cleanup_ctx.append(sweeper)
    app.on_cleanup.append(on_cleanup)
    return app


def run(server: PirServer, host: str, port: int, workers: int = 2) -> None:
    """Serve until SIGINT/SIGTERM (when run in the main thread; in another thread it serves
    until the process ends); prints one 'listening on URL' line once bound."""
    import signal

    from aiohttp import web

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
        runner = web.AppRunner(make_app(server, workers), access_log=None, shutdown_timeout=2.0)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        sockets = site._server.sockets if site._server is not None else []  # noqa: SLF001
        bound = sockets[0].getsockname()[1] if sockets else port
        shown = f"[{host}]" if ":" in host else host
        print(f"listening on http://{shown}:{bound}", flush=True)
        try:
            await stop.wait()
        finally:
            await runner.cleanup()

    asyncio.run(main())
