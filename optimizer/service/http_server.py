"""The PIR server over HTTP: an aiohttp application around a ``PirServer`` (service/http_api.py
lists the routes).

Answers run in a thread pool (the C++ runtime releases the GIL), so the event loop keeps
serving; malformed or foreign input gets a 4xx with the library's message.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aiohttp import web
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import http_api as api
from spiralpir.optimizer.service.pir_server import BadBlock, PirServer, UnknownClient
from spiralpir.optimizer.service.sessions import StreamSession, UnknownStream


def make_app(server: PirServer, workers: int = 2) -> web.Application:
    setup_limit = api.body_limit(server.public_params_bytes)
    query_limit = api.body_limit(server.query_bytes)
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
        client_id = request.headers.get(api.CLIENT_HEADER)
        if not client_id:
            return error(400, f"missing {api.CLIENT_HEADER} header (get an id from POST "
                              f"{api.SETUP})")
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
            headers=api.answer_headers(secs, stages),
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
        web.post(api.SETUP, setup),
        web.post(api.QUERY, query),
        web.post(api.STREAM, open_stream),
        web.get(api.block_path("{stream_id}", "{block}"), stream_block),
        web.delete(api.stream_path("{stream_id}"), close_stream),
        web.get(api.PARAMS, params),
        web.get(api.HEALTH, health),
    ])
    app.cleanup_ctx.append(sweeper)
    app.on_cleanup.append(on_cleanup)
    return app


def run(server: PirServer, host: str, port: int, workers: int = 2) -> None:
    """Serve until SIGINT/SIGTERM (when run in the main thread; in another thread it serves
    until the process ends); prints one 'listening on URL' line once bound."""
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
