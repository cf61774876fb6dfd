"""The PIR server over HTTP: an aiohttp application around a ``PirServer`` (service/http_api.py
lists the routes).

Answers run in a thread pool (the C++ runtime releases the GIL), so the event loop keeps
serving; malformed or foreign input gets a 4xx with the library's message, as JSON.

Bounds (``Limits``), so that load and hostile clients meet errors, never exhaustion: a request's
head must arrive within ``header_timeout`` (also the idle keep-alive time), its body within
``body_timeout`` in total (a trickle is cut, not reset by each byte), at most ``max_uploads``
bodies are read at once, and at most ``workers + max_queue`` requests are admitted; beyond
either a request gets 503 with Retry-After. A query's public parameters are pinned when it is
admitted, so evicting its client meanwhile cannot fail it; a setup that would evict a client
still waiting for its first query gets 503 too (pir_server.SETUP_GRACE).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import math
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from aiohttp import ClientPayloadError, web
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import http_api as api
from spiralpir.optimizer.service.admin_http import Admin
from spiralpir.optimizer.service.batch_server import BatchServer
from spiralpir.optimizer.service.binding import StorageError
from spiralpir.optimizer.service.keyword_server import KeywordServer
from spiralpir.optimizer.service.pir_server import (
    BadBlock,
    PirServer,
    ServerFull,
    StaleVersion,
    Unavailable,
    UnknownClient,
)
from spiralpir.optimizer.service.sessions import StreamSession, UnknownStream
from spiralpir.optimizer.service.web_page import (
    Page,
    page_routes,
    preflight_routes,
    security_middleware,
)

# seconds between returns of freed memory to the system while the server is idle
TRIM_PERIOD = 5.0
# seconds an unread body is still drained after an error reply (so the client reads the reply
# rather than a reset), before the connection is closed
LINGER_SECONDS = 2.0


@dataclass(frozen=True)
class Limits:
    """Per-connection timeouts and admission bounds (see the module docstring)."""

    header_timeout: float = 15.0
    body_timeout: float = 60.0
    max_uploads: int = 16
    max_queue: int = 64

    def __post_init__(self) -> None:
        for name in ("header_timeout", "body_timeout"):
            if not getattr(self, name) > 0:
                raise SpiralpirError(f"{name} must be > 0 seconds, not {getattr(self, name)}")
        if self.max_uploads < 1:
            raise SpiralpirError(f"max_uploads must be >= 1, not {self.max_uploads}")
        if self.max_queue < 0:
            raise SpiralpirError(f"max_queue must be >= 0, not {self.max_queue}")


def one_line(text: object, limit: int = 200) -> str:
    """`text` on one line, at most `limit` characters (for echoing client input)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _malloc_trim() -> Callable[[], object] | None:
    """glibc's malloc_trim(0), if this C library has it: freed public parameters and bodies
    otherwise stay in the allocator's arenas, and the resident size never comes back down."""
    try:
        fn = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_size_t]
    return lambda: fn(0)


def json_error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"error": message}, status=status, headers=headers)


class GuardedConnection(web.RequestHandler):
    """aiohttp's connection handler with a header timeout: a request's head must arrive within
    ``header_timeout`` of the connection opening or of the previous reply, however it trickles
    in (the app's middleware reports each head, see make_app). Requests that do not even parse
    (bad request line, oversized header...) get a JSON error too, without a traceback logged
    for what is the client's fault."""

    def __init__(self, manager: Any, *, loop: asyncio.AbstractEventLoop, header_timeout: float,
                 **kwargs: Any) -> None:
        super().__init__(manager, loop=loop, keepalive_timeout=header_timeout, **kwargs)
        self.header_timeout = header_timeout
        self.event_loop = loop
        self.head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.await_head()

    def connection_lost(self, exc: BaseException | None) -> None:
        self.head_arrived()
        super().connection_lost(exc)

    def await_head(self) -> None:
        """Start the clock for the next request's head."""
        self.head_arrived()
        self.head_timer = self.event_loop.call_later(self.header_timeout, self.force_close)

    def head_arrived(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def handle_error(self, request: Any, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        if request.writer.output_size > 0:
            raise ConnectionError("a reply was already being sent; cannot send an error")
        if status >= 500:
            self.log_exception("error handling a request", exc_info=exc)
            text = "internal server error"
        else:
            why = message or exc or HTTPStatus(status).phrase
            text = f"malformed HTTP request: {one_line(why)}"
        resp = json_error(status, text)
        resp.force_close()
        return resp


def access_line(request: Any, resp: Any, seconds: float) -> str:
    """One access log line: peer, method, path, status, response bytes, seconds."""
    size = resp.body_length if resp.prepared else (resp.content_length or 0)
    peer = request.remote or "-"
    return (f"{peer} {request.method} {one_line(request.path, 120)} {resp.status} {size} B "
            f"{seconds:.3f} s")


def make_app(server: PirServer, workers: int = 2, limits: Limits | None = None,
             access_log: Callable[[str], None] | None = None,
             admin: Admin | None = None, page: Page | None = None) -> web.Application:
    """The HTTP API over server; access_log receives one line per request answered; admin
    (admin_http.py): the update endpoint, absent without it; page: the page at / and the
    CORS origins (every reply carries web_page.py's security headers)."""
    page = page or Page()
    limits = limits or Limits()
    workers = max(1, workers)
    setup_limit = api.body_limit(server.public_params_bytes)
    query_limit = api.body_limit(server.query_bytes)
    body_limits = {(api.SETUP, "POST"): setup_limit, (api.QUERY, "POST"): query_limit,
                   (api.STREAM, "POST"): query_limit}
    batch_limit = (api.body_limit(server.batch_request_bytes)
                   if isinstance(server, BatchServer) else 0)
    if batch_limit:
        body_limits[(api.BATCH, "POST")] = batch_limit
    keyword = server if isinstance(server, KeywordServer) else None
    if keyword is not None:
        body_limits[(api.KEYWORD, "POST")] = query_limit
    if admin is not None:
        body_limits[(api.ADMIN_UPDATE, "POST")] = admin.max_body
    other_kind = {route for route in ((api.BATCH, "POST"), (api.KEYWORD, "POST"))
                  if route not in body_limits}
    max_admitted = workers + limits.max_queue
    executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="spiralpir")
    stats = {"queries": 0, "errors": 0, "setups": 0, "streams": 0, "blocks": 0, "busy": 0,
             "timeouts": 0, "batches": 0, "keywords": 0, "updates": 0}
    # requests admitted (reading a body, waiting for or holding a worker) and bodies being read;
    # only the event loop touches these
    load = {"admitted": 0, "uploads": 0}
    job_seconds = [0.1]  # moving average of a job's seconds: the Retry-After estimate
    started = time.time()

    def error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
        stats["errors"] += 1
        return json_error(status, message, headers)

    def busy(why: str) -> web.Response:
        """503 with the seconds after which the queue has likely drained enough."""
        stats["busy"] += 1
        wait = min(60, max(1, math.ceil(load["admitted"] / workers * job_seconds[0])))
        resp = json_error(503, f"server busy: {why}; retry after {wait} s",
                          {"Retry-After": str(wait)})
        resp.force_close()  # its body, if any, is not read
        return resp

    @contextlib.contextmanager
    def admitted() -> Iterator[None]:
        load["admitted"] += 1
        try:
            yield
        finally:
            load["admitted"] -= 1

    def queue_full() -> web.Response | None:
        if load["admitted"] < max_admitted:
            return None
        return busy(f"{load['admitted']} requests are queued or running (serve --workers "
                    f"{workers} + --max-queue {limits.max_queue})")

    async def read_body(request: Any, limit: int, what: str) -> bytes | web.Response:
        length = request.content_length
        if length is not None and length > limit:
            return error(413, f"{what} of {length} bytes exceeds the limit of {limit} bytes "
                              f"for build '{server.build.name}'")
        if load["uploads"] >= limits.max_uploads:
            return busy(f"{load['uploads']} request bodies are being received "
                        "(serve --max-uploads)")
        load["uploads"] += 1
        body = bytearray()
        try:
            async with asyncio.timeout(limits.body_timeout):
                async for chunk in request.content.iter_chunked(1 << 16):
                    body += chunk
                    if len(body) > limit:
                        return error(413, f"{what} exceeds the limit of {limit} bytes")
        except (ConnectionResetError, ClientPayloadError) as exc:
            resp = error(400, f"{what} ended before its end: {one_line(str(exc), 80)}")
            resp.force_close()  # the sender is gone or broke the framing: nothing more to read
            return resp
        except TimeoutError:
            stats["timeouts"] += 1
            resp = error(408, f"{what} not received within {limits.body_timeout:g} s (serve "
                              f"--body-timeout): {len(body)} of {length or 'unknown'} bytes")
            resp.force_close()
            return resp
        finally:
            load["uploads"] -= 1
        if not body:
            return error(400, f"empty {what}")
        return bytes(body)

    async def run_job(fn: Callable[..., Any], *args: Any, rejected: str = "rejected query",
                      pool: ThreadPoolExecutor | None = None) -> Any:
        """fn(*args) in the thread pool; SpiralpirErrors become the matching 4xx response."""
        start = time.perf_counter()
        try:
            return await asyncio.get_running_loop().run_in_executor(pool or executor, fn, *args)
        except (UnknownClient, UnknownStream) as exc:
            return error(404, str(exc))
        except ServerFull as exc:
            return busy(str(exc))
        except BadBlock as exc:
            return error(400, str(exc))
        except StaleVersion as exc:
            return error(412, str(exc), {api.VERSION_HEADER: str(server.live.version
                                                                 if server.live else 0)})
        except Unavailable as exc:
            stats["busy"] += 1
            return json_error(503, str(exc), {"Retry-After": str(exc.retry_after)})
        except StorageError as exc:  # the operator's to fix; said on the server's log too
            print(f"refusing to answer: {exc}", file=sys.stderr, flush=True)
            return error(503, f"the server's database is unusable: {exc}")
        except SpiralpirError as exc:
            return error(400, f"{rejected}: {exc}")
        finally:
            job_seconds[0] += 0.2 * (time.perf_counter() - start - job_seconds[0])

    async def client_query(request: Any, fn: Callable[..., Any], limit: int = query_limit,
                           what: str = "query") -> Any:
        """fn(client id, query, pinned public parameters) of a request carrying a query."""
        client_id = request.headers.get(api.CLIENT_HEADER)
        if not client_id:
            return error(400, f"missing {api.CLIENT_HEADER} header (get an id from POST "
                              f"{api.SETUP})")
        if not api.is_hex_id(client_id):
            return error(400, f"malformed {api.CLIENT_HEADER} header '{one_line(client_id, 80)}'"
                              " (32 lowercase hex digits, from POST " + api.SETUP + ")")
        full = queue_full()
        if full is not None:
            return full
        with admitted():
            try:
                pinned = server.pin(client_id)  # held until the answer is done
            except UnknownClient as exc:
                return error(404, str(exc))
            body = await read_body(request, limit, what)
            if not isinstance(body, bytes):
                return body
            return await run_job(fn, client_id, body, pinned)

    async def setup(request: Any) -> Any:
        full = queue_full()
        if full is not None:
            return full
        with admitted():
            body = await read_body(request, setup_limit, "public parameters")
            if not isinstance(body, bytes):
                return body
            client_id = await run_job(server.setup, body, rejected="rejected public parameters")
        if not isinstance(client_id, str):
            return client_id
        stats["setups"] += 1
        return web.json_response({"client_id": client_id})

    async def query(request: Any) -> Any:
        text = request.headers.get(api.MIN_VERSION_HEADER, "0")
        min_version = api.parse_decimal(text)
        if min_version is None:
            return error(400, f"malformed {api.MIN_VERSION_HEADER} header "
                              f"'{one_line(text, 40)}' (a non-negative integer)")
        out = await client_query(
            request, lambda cid, body, pp: server.answer_versioned(cid, body, pp, min_version))
        if not isinstance(out, tuple):
            return out
        resp, stages, secs, version = out
        stats["queries"] += 1
        return web.Response(
            body=resp, content_type="application/octet-stream",
            headers={**api.answer_headers(secs, stages), api.VERSION_HEADER: str(version)},
        )

    async def framed_answer(request: Any, fn: Callable[..., Any], limit: int, what: str,
                            stat: str) -> Any:
        """The framed responses of fn (answer_batch, answer_keyword) to a request's body."""
        out = await client_query(request, fn, limit, what)
        if not isinstance(out, tuple):
            return out
        resp, stages, secs = out[:3]
        stats[stat] += 1
        headers = api.answer_headers(secs, stages)
        if len(out) > 3:  # a keyword answer names the table's version
            headers[api.VERSION_HEADER] = str(out[3])
        return web.Response(body=resp, content_type="application/octet-stream",
                            headers=headers)

    def wrong_kind(message: str) -> web.Response:
        """A request for another kind of build: answered before its body, which is not read."""
        resp = error(400, message)
        resp.force_close()
        return resp

    async def batch(request: Any) -> Any:
        if not batch_limit:
            return wrong_kind(f"build '{server.build.name}' holds one database, not buckets: "
                              f"POST {api.QUERY}")
        return await framed_answer(request, server.answer_batch, batch_limit, "batch request",
                                   "batches")

    async def keyword_lookup(request: Any) -> Any:
        if keyword is None:
            return wrong_kind(f"build '{server.build.name}' holds no keyword table: POST "
                              f"{api.QUERY}")
        return await framed_answer(request, keyword.answer_keyword, query_limit,
                                   "keyword query", "keywords")

    async def admin_update(request: Any) -> Any:
        assert admin is not None
        if not admin.authorized(request.headers.get("Authorization")):
            resp = error(401, "missing or wrong admin token (Authorization: Bearer TOKEN, the "
                              "token of serve --admin-token-file)",
                         {"WWW-Authenticate": 'Bearer realm="spiralpir-admin"'})
            resp.force_close()  # its body is not read
            return resp
        body = await read_body(request, admin.max_body, "change batch")
        if not isinstance(body, bytes):
            return body
        out = await run_job(admin.apply, body, rejected="rejected changes", pool=admin.executor)
        if not isinstance(out, dict):
            return out
        stats["updates"] += 1
        return web.json_response(out)

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
        index = api.parse_decimal(text)
        if index is None:
            return error(400, f"block index '{one_line(text, 40)}' is not a non-negative "
                              "integer (ASCII digits)")
        full = queue_full()
        if full is not None:
            return full
        with admitted():
            out = await run_job(server.answer_block, sid, index)
        if not isinstance(out, tuple):
            return out
        resp, stages, secs = out
        stats["blocks"] += 1
        blk = server.blocks[index]
        return web.Response(
            body=resp, content_type="application/octet-stream",
            headers={api.BLOCK_HEADER: str(index), api.BLOCK_BYTES_HEADER: str(blk.db_bytes),
                     **api.answer_headers(secs, stages)},
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
        info["limits"] = {"setup_bytes": setup_limit, "query_bytes": query_limit,
                          "header_timeout_seconds": limits.header_timeout,
                          "body_timeout_seconds": limits.body_timeout}
        return web.json_response(info)

    async def health(_request: Any) -> Any:
        return web.json_response({
            "status": "ok", "build": server.build.name, "uptime_seconds": time.time() - started,
            "clients": server.client_count, "max_clients": server.max_clients,
            "client_bytes": server.client_bytes,
            "admitted": load["admitted"], "max_admitted": max_admitted,
            "uploads": load["uploads"], "max_uploads": limits.max_uploads,
            "open_streams": len(server.sessions), **stats,
            "version": server.live.version if server.live is not None else None,
        })

    @web.middleware
    async def guard(request: Any, handler: Callable[[Any], Any]) -> Any:
        """Stops the connection's header clock while the request is handled, and answers every
        error as JSON: the router's 404/405 (with Allow), a body where the route takes none, and
        any failure of a handler (500, logged)."""
        start = time.perf_counter()
        conn = request.protocol
        if not isinstance(conn, GuardedConnection):
            resp = await guarded(request, handler)
        else:
            conn.head_arrived()
            try:
                resp = await guarded(request, handler)
            finally:
                conn.await_head()
        if access_log is not None:
            access_log(access_line(request, resp, time.perf_counter() - start))
        return resp

    async def guarded(request: Any, handler: Callable[[Any], Any]) -> Any:
        route = (request.path, request.method)
        # an unknown route is a 404 whatever it carries (no admin endpoint: 404, not 413), and
        # a batch or keyword request to another kind of build gets its handler's 400
        if route not in body_limits and route not in other_kind and request.body_exists and \
                request.match_info.http_exception is None:
            resp = error(413, f"{request.method} {one_line(request.path, 80)} takes no body")
            resp.force_close()
            return resp
        try:
            return await handler(request)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            where = f"{request.method} {one_line(request.path, 120)}"
            if exc.status == 404:
                return error(404, f"no such route: {where} (the API is under /v1/, see "
                                  f"GET {api.PARAMS})")
            if exc.status == 405:
                allow = exc.headers.get("Allow", "")
                return error(405, f"method not allowed: {where}; allowed: {allow}",
                             {"Allow": allow})
            return error(exc.status, f"{exc.reason}: {where}")
        except Exception:
            print(f"error answering {request.method} {one_line(request.path, 120)}:\n"
                  + traceback.format_exc(), file=sys.stderr, flush=True)
            stats["errors"] += 1
            return json_error(500, "internal server error")

    async def sweeper(_app: Any) -> Any:
        """Return the memory of idle stream sessions without waiting for the next request, and
        freed memory to the system once the server is idle after some work."""
        period = min(max(server.sessions.ttl / 4, 0.5), 60.0)
        trim = _malloc_trim()

        async def sweep() -> None:
            while True:
                await asyncio.sleep(period)
                server.sessions.sweep()

        async def trim_idle() -> None:
            done = -1
            while trim is not None:
                await asyncio.sleep(TRIM_PERIOD)
                work = sum(stats.values())
                if work != done and not load["admitted"] and not load["uploads"]:
                    trim()
                    done = work

        tasks = [asyncio.get_running_loop().create_task(f()) for f in (sweep, trim_idle)]
        yield
        for task in tasks:
            task.cancel()
        server.sessions.clear()

    async def on_cleanup(_app: Any) -> None:
        executor.shutdown(wait=False, cancel_futures=True)
        if admin is not None:
            admin.executor.shutdown(wait=False, cancel_futures=True)

    app = web.Application(client_max_size=max(setup_limit, query_limit, batch_limit) + 1024,
                          middlewares=[security_middleware(page.cors_origins), guard])
    app.add_routes([
        web.post(api.SETUP, setup),
        web.post(api.QUERY, query),
        web.post(api.STREAM, open_stream),
        web.post(api.BATCH, batch),
        web.post(api.KEYWORD, keyword_lookup),
        web.get(api.block_path("{stream_id}", "{block}"), stream_block),
        web.delete(api.stream_path("{stream_id}"), close_stream),
        web.get(api.PARAMS, params),
        web.get(api.HEALTH, health),
    ])
    if admin is not None:
        app.add_routes([web.post(api.ADMIN_UPDATE, admin_update)])
    if page.enabled:
        app.add_routes(page_routes(page.wasm_files))
    app.add_routes(preflight_routes(page.cors_origins))
    app.cleanup_ctx.append(sweeper)
    app.on_cleanup.append(on_cleanup)
    return app


def run(server: PirServer, host: str, port: int, workers: int = 2,
        limits: Limits | None = None, sock: socket.socket | None = None,
        quiet: bool = False, admin: Admin | None = None, page: Page | None = None) -> None:
    """Serve until SIGINT/SIGTERM (when run in the main thread; in another thread it serves
    until the process ends); prints one 'listening on URL' line once bound. `sock`: a socket
    bound earlier (listener.bind_listener) to serve on instead of binding host:port. Each
    request answered is logged on stderr (access_line) unless quiet. page: see Page."""
    limits = limits or Limits()

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
        log = None if quiet else (lambda line: print(line, file=sys.stderr, flush=True))
        runner = web.AppRunner(make_app(server, workers, limits, log, admin, page), access_log=None,
                               shutdown_timeout=2.0)
        await runner.setup()
        manager = runner.server
        assert manager is not None

        def connection() -> GuardedConnection:
            return GuardedConnection(manager, loop=loop, header_timeout=limits.header_timeout,
                                     lingering_time=LINGER_SECONDS, access_log=None)

        if sock is not None:
            listener = await loop.create_server(connection, sock=sock)
        else:
            listener = await loop.create_server(connection, host, port, reuse_address=True)
        bound = listener.sockets[0].getsockname()[1] if listener.sockets else port
        shown = f"[{host}]" if ":" in host else host
        print(f"listening on http://{shown}:{bound}", flush=True)
        try:
            await stop.wait()
        finally:
            listener.close()
            await runner.cleanup()

    asyncio.run(main())
