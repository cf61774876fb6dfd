"""The PIR server as a Python object (``PirServer``) and as an aiohttp application.

``PirServer`` holds one preprocessed database of a build and the public parameters of its
clients (keyed by client id = a hash of the uploaded parameters, least recently used evicted
first). ``make_app`` exposes it over HTTP:

  POST /v1/setup   body: public parameters (octet-stream)  -> {"client_id": ...}
  POST /v1/query   header X-Spiralpir-Client-Id, body: query -> response (octet-stream)
  GET  /v1/params  the build's parameters, shapes, exact message sizes, limits
  GET  /v1/health  {"status": "ok", ...}

Answers run in a thread pool (the C++ runtime releases the GIL), so the event loop keeps
serving; malformed or foreign input gets a 4xx with the library's message.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from spiralpir.optimizer import database
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.instance import Build, ClientKeys, PublicParams, ServerDb

CLIENT_HEADER = "X-Spiralpir-Client-Id"
API_VERSION = 1


class UnknownClient(SpiralpirError):
    """The client id is not (or no longer) registered: the client should run setup again."""


class PirServer:
    """One build serving one database."""

    def __init__(self, build: Build, records: database.Records | None = None,
                 db_path: Path | str | None = None, threads: int = 0,
                 preprocessed: Path | str | None = None, max_clients: int = 32,
                 progress: bool = True, log: Callable[[str], None] | None = None) -> None:
        self.build = build
        self.lib = build.lib
        self.max_clients = max_clients
        self.threads = threads
        self._log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self._clients: OrderedDict[str, PublicParams] = OrderedDict()
        self._lock = threading.Lock()
        self.db = ServerDb(self.lib, threads)
        self.preprocess_seconds = 0.0
        self.loaded_from_cache = False
        if records is None:
            if db_path is None:
                raise SpiralpirError("PirServer needs records or a db_path")
            records = database.read_records(Path(db_path), build.record_size)
        preprocessed = Path(preprocessed) if preprocessed is not None else None
        records = database.fit_to_build(records, build.num_records, build.record_size,
                                        build.label)
        self.num_records = records.num_records
        self.record_size = build.record_size
        self._load(records, preprocessed, progress)
        self._measure_sizes()

    # -- loading ---------------------------------------------------------------------------
    def _load(self, records: database.Records, preprocessed: Path | None, progress: bool) -> None:
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
                self.db.map_db(preprocessed)
                self.loaded_from_cache = True
                self._log(f"mapped preprocessed database {preprocessed} "
                          f"({time.perf_counter() - start:.2f} s)")
                return
            except SpiralpirError as exc:
                self._log(f"cannot use {preprocessed} ({exc}); preprocessing again")
                self.db.close()
                self.db = ServerDb(self.lib, self.threads)
        start = time.perf_counter()
        bar: Any = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=None, desc="preprocessing database", unit="pt", file=sys.stderr,
                       leave=False, mininterval=0.5)

        def on_progress(done: int, total: int) -> None:
            if bar is not None:
                bar.total = total
                bar.update(done - bar.n)

        try:
            self.db.load_records(records.data, records.num_records, records.record_size,
                                 on_progress)
        finally:
            if bar is not None:
                bar.close()
        self.preprocess_seconds = time.perf_counter() - start
        self._log(f"preprocessed {records.num_records} records in "
                  f"{self.preprocess_seconds:.2f} s")
        if preprocessed is not None:
            tmp = Path(str(preprocessed) + f".tmp{os.getpid()}")
            self.db.save_db(tmp)
            os.replace(tmp, preprocessed)
            database.write_cache_meta(preprocessed, meta)
            self._log(f"saved preprocessed database to {preprocessed}")

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

    def answer(self, client_id: str, query: bytes) -> tuple[bytes, dict[str, float], float]:
        with self._lock:
            pp = self._clients.get(client_id)
            if pp is not None:
                self._clients.move_to_end(client_id)
        if pp is None:
            raise UnknownClient(f"unknown client id '{client_id[:64]}': upload public parameters "
                                "with POST /v1/setup first")
        start = time.perf_counter()
        resp, stages = self.db.answer(pp, query)
        return resp, stages, time.perf_counter() - start

    def info(self) -> dict[str, Any]:
        return {
            "api": API_VERSION,
            "build": self.build.name,
            "ci": self.build.ci,
            "params": self.lib.params,
            "num_records": self.num_records,
            "record_size": self.record_size,
            "sizes": {
                "public_params_bytes": self.public_params_bytes,
                "query_bytes": self.query_bytes,
            },
            "stages": self.lib.stage_names,
        }

    @property
    def client_count(self) -> int:
        with self._lock:
            return len(self._clients)


# ---------------------------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------------------------


def make_app(server: PirServer, workers: int = 2) -> Any:
    from aiohttp import web

    setup_limit = server.public_params_bytes + 4096
    query_limit = server.query_bytes + 4096
    executor = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="spiralpir")
    stats = {"queries": 0, "errors": 0, "setups": 0}
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
        client_id = request.headers.get(CLIENT_HEADER)
        if not client_id:
            return error(400, f"missing {CLIENT_HEADER} header (get an id from POST /v1/setup)")
        body = await read_body(request, query_limit, "query")
        if not isinstance(body, bytes):
            return body
        loop = asyncio.get_running_loop()
        try:
            resp, stages, secs = await loop.run_in_executor(executor, server.answer, client_id,
                                                            body)
        except UnknownClient as exc:
            return error(404, str(exc))
        except SpiralpirError as exc:
            return error(400, f"rejected query: {exc}")
        stats["queries"] += 1
        return web.Response(
            body=resp, content_type="application/octet-stream",
            headers={"X-Spiralpir-Server-Seconds": f"{secs:.6f}",
                     "X-Spiralpir-Stages": json.dumps(stages, sort_keys=True)},
        )

    async def params(_request: Any) -> Any:
        info = server.info()
        info["limits"] = {"setup_bytes": setup_limit, "query_bytes": query_limit}
        return web.json_response(info)

    async def health(_request: Any) -> Any:
        return web.json_response({
            "status": "ok", "build": server.build.name, "uptime_seconds": time.time() - started,
            "clients": server.client_count, **stats,
        })

    async def on_cleanup(_app: Any) -> None:
        executor.shutdown(wait=False, cancel_futures=True)

    app = web.Application(client_max_size=max(setup_limit, query_limit) + 1024)
    app.add_routes([
        web.post("/v1/setup", setup),
        web.post("/v1/query", query),
        web.get("/v1/params", params),
        web.get("/v1/health", health),
    ])
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
