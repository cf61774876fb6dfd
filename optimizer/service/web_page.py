"""The server's page at / (a private lookup from a browser) and the security headers of every
reply, page and API alike.

The page (service/web/: index.html, page.mjs, page.css) runs the build's WebAssembly client
(build/wasm_client.py), served under /wasm/. Every reply carries a Content-Security-Policy that
lets a page load only this server's scripts, styles and WebAssembly ('wasm-unsafe-eval': no
eval, no inline script) and talk only to this server, plus nosniff, no framing and no referrer.
Cross-origin requests are refused by browsers (no CORS headers) unless the operator names the
origins allowed to call the API (``serve --cors-origin ORIGIN``, or ``*``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from spiralpir.optimizer.service import http_api as api

PAGE_DIR = Path(__file__).with_name("web")
PAGE_FILES = {"/": "index.html", "/page.mjs": "page.mjs", "/page.css": "page.css"}
CONTENT_TYPES = {".html": "text/html", ".mjs": "text/javascript", ".js": "text/javascript",
                 ".css": "text/css", ".wasm": "application/wasm"}
CSP = ("default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self'; "
       "style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
CORS_ALLOW_HEADERS = ", ".join(("Content-Type", api.CLIENT_HEADER, api.MIN_VERSION_HEADER))
CORS_EXPOSE_HEADERS = ", ".join((*api.STREAM_HEADERS, api.VERSION_HEADER, "Retry-After"))


@dataclass(frozen=True)
class Page:
    """What a server serves besides the API: the page at / (if `enabled`), the built
    WebAssembly client's files by name (None: not built), the origins allowed by CORS."""

    enabled: bool = False
    wasm_files: Mapping[str, Path] | None = None
    cors_origins: tuple[str, ...] = ()


def check_origin(origin: str) -> str:
    """A --cors-origin value: '*' or scheme://host[:port] (no path); ValueError otherwise."""
    if origin == "*":
        return origin
    scheme, sep, rest = origin.partition("://")
    if scheme not in ("http", "https") or not sep or not rest or "/" in rest or " " in rest:
        raise ValueError(f"--cors-origin '{origin}': expected '*' or an origin such as "
                         "https://example.org (scheme, host and port, no path)")
    return origin


def security_middleware(cors_origins: Iterable[str] = ()) -> Any:
    """The middleware adding SECURITY_HEADERS to every reply, and CORS headers (with the
    answer to a preflight OPTIONS) for the API when the request's Origin is allowed."""
    allowed = frozenset(cors_origins)

    def cors_headers(request: Any) -> dict[str, str]:
        origin = request.headers.get("Origin")
        if not origin or not request.path.startswith("/v1/"):
            return {}
        if "*" in allowed:
            return {"Access-Control-Allow-Origin": "*",
                    "Access-Control-Expose-Headers": CORS_EXPOSE_HEADERS}
        if origin in allowed:
            return {"Access-Control-Allow-Origin": origin, "Vary": "Origin",
                    "Access-Control-Expose-Headers": CORS_EXPOSE_HEADERS}
        return {}

    @web.middleware
    async def security(request: Any, handler: Callable[[Any], Any]) -> Any:
        resp = await handler(request)
        resp.headers.update(SECURITY_HEADERS)
        cors = cors_headers(request)
        resp.headers.update(cors)
        if cors and request.method == "OPTIONS":  # a preflight (preflight_routes)
            resp.headers.update({"Access-Control-Allow-Methods": "GET, POST, DELETE",
                                 "Access-Control-Allow-Headers": CORS_ALLOW_HEADERS,
                                 "Access-Control-Max-Age": "600"})
        return resp

    return security


def preflight_routes(cors_origins: Iterable[str]) -> list[web.RouteDef]:
    """OPTIONS under /v1/ when some origin is allowed (the middleware adds the CORS headers
    for an allowed Origin only); without CORS an OPTIONS is a 405 like any other method."""
    async def preflight(_request: Any) -> web.Response:
        return web.Response(status=204)

    return [web.route("OPTIONS", "/v1/{path:.*}", preflight)] if tuple(cors_origins) else []


def page_routes(wasm_files: Mapping[str, Path] | None) -> list[web.RouteDef]:
    """GET routes of the page and, if built, of the WebAssembly client (name -> file) under
    /wasm/; without a client, the page says how to build one."""
    files = {route: PAGE_DIR / name for route, name in PAGE_FILES.items()}
    files.update({f"/wasm/{name}": path for name, path in (wasm_files or {}).items()})

    def serve(path: Path) -> Callable[[Any], Any]:
        async def handler(_request: Any) -> web.Response:
            # read per request: a rebuilt client is served without a restart
            return web.Response(body=path.read_bytes(), headers={
                "Content-Type": CONTENT_TYPES[path.suffix]
                + ("; charset=utf-8" if path.suffix != ".wasm" else ""),
                "Cache-Control": "no-cache"})
        return handler

    async def no_icon(_request: Any) -> web.Response:
        return web.Response(status=204)  # browsers ask for it; a 404 would be logged as an error

    return [*(web.get(route, serve(path)) for route, path in files.items()),
            web.get("/favicon.ico", no_icon)]
