"""A real PirServer on the demo build's CI twin, served over HTTP from a thread of the test
process, with a raw-socket client (requests a library client would never send) and a record of
every exception the server logged."""

from __future__ import annotations

import logging
import random
import socket
import threading
import time
from dataclasses import dataclass, field

import requests
from aiohttp.http_exceptions import HttpProcessingError
from spiralpir.optimizer.service import http_server
from spiralpir.optimizer.service.binding import Build
from spiralpir.optimizer.service.pir_server import PirServer
from spiralpir.optimizer.service.records import Records


class ErrorLog(logging.Handler):
    """Every record at ERROR or above, or carrying a traceback. aiohttp logs a handler's
    unexpected exception as 'Error handling request' with its traceback (and answers 500); it
    logs a request its HTTP parser refuses (answered 400 before any route runs) the same way:
    those are kept apart, in `parser`."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[str] = []
        self.parser: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno < logging.ERROR and not record.exc_info:
            return
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError) and exc.code == 400:
            self.parser.append(self.format(record))
        else:
            self.records.append(self.format(record))

    def take(self) -> tuple[list[str], list[str]]:
        """(handler errors, parser errors) since the last call."""
        out = (self.records, self.parser)
        self.records, self.parser = [], []
        return out


@dataclass
class LiveServer:
    build: Build
    url: str
    host: str
    port: int
    records: list[bytes]
    errors: ErrorLog = field(default_factory=ErrorLog)

    def raw(self, request: bytes, half_close: bool = False, timeout: float = 20.0) -> bytes:
        """Send raw bytes, return everything the server sends until it closes or goes quiet
        for `timeout` seconds; half_close ends our side after the request (an early EOF)."""
        with socket.create_connection((self.host, self.port), timeout=timeout) as s:
            s.sendall(request)
            if half_close:
                s.shutdown(socket.SHUT_WR)
            out = bytearray()
            try:
                while chunk := s.recv(1 << 16):
                    out += chunk
            except (TimeoutError, ConnectionResetError):
                pass
            return bytes(out)


def start(build: Build, blocks: int = 0, num_records: int = 300, seed: int = 7) -> LiveServer:
    """A server over random records (one database, or `blocks` databases in streaming mode)."""
    rng = random.Random(seed)
    size = build.record_size

    def recs() -> tuple[Records, list[bytes]]:
        values = [rng.randbytes(size) for _ in range(num_records)]
        return Records(bytearray(b"".join(values)), num_records, size, "memory", "binary"), values

    if blocks:
        made = [recs() for _ in range(blocks)]
        srv = PirServer(build, blocks=[(r, None) for r, _ in made], threads=1, progress=False,
                        log=lambda _m: None)
        values = [v for _, vs in made for v in vs]
    else:
        db, values = recs()
        srv = PirServer(build, records=db, threads=1, progress=False, log=lambda _m: None)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    live = LiveServer(build, f"http://127.0.0.1:{port}", "127.0.0.1", port, values)
    logging.getLogger().addHandler(live.errors)
    threading.Thread(target=http_server.run, args=(srv, "127.0.0.1", port), daemon=True).start()
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if requests.get(live.url + "/v1/health", timeout=5).ok:
                return live
        except requests.ConnectionError:
            time.sleep(0.05)
    raise AssertionError("the in-process server did not start")


def status_of(reply: bytes) -> int | None:
    """The status code of a raw HTTP reply (None: the server closed without answering)."""
    if not reply:
        return None
    line = reply.split(b"\r\n", 1)[0].split()
    assert len(line) >= 2 and line[0].startswith(b"HTTP/1."), f"not an HTTP reply: {reply[:80]!r}"
    return int(line[1])


def body_of(reply: bytes) -> bytes:
    return reply.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in reply else b""
