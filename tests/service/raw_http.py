"""Raw HTTP over sockets for the service tests: requests a well-behaved library would never
send (malformed heads, bodies held back half-way, trickles)."""

from __future__ import annotations

import json
import socket
import time
from typing import Any
from urllib.parse import urlsplit

import requests


def address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def head(method: str, path: str, headers: dict[str, str] | None = None,
         body_bytes: int | None = None) -> bytes:
    """A request head (Connection: close, so a reply ends at EOF)."""
    lines = [f"{method} {path} HTTP/1.1", "Host: test", "Connection: close"]
    if body_bytes is not None:
        lines.append(f"Content-Length: {body_bytes}")
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


class Reply:
    """A parsed HTTP reply: status, headers (lower-case names), body."""

    def __init__(self, raw: bytes) -> None:
        top, _, self.body = raw.partition(b"\r\n\r\n")
        lines = top.decode("latin-1").split("\r\n")
        assert lines[0].startswith("HTTP/1."), raw[:200]
        self.status = int(lines[0].split()[1])
        self.headers = {k.strip().lower(): v.strip()
                        for k, _, v in (line.partition(":") for line in lines[1:])}

    def json(self) -> Any:
        assert self.headers.get("content-type", "").startswith("application/json"), self.headers
        return json.loads(self.body)


def read_all(sock: socket.socket, timeout: float = 60.0) -> bytes:
    sock.settimeout(timeout)
    out = bytearray()
    try:
        while chunk := sock.recv(1 << 16):
            out += chunk
    except ConnectionResetError:
        pass
    return bytes(out)


def send(url: str, data: bytes, timeout: float = 60.0) -> Reply:
    """Send `data` on a new connection; the reply read until the server closes."""
    with socket.create_connection(address(url), timeout=timeout) as sock:
        sock.sendall(data)
        return Reply(read_all(sock, timeout))


class HeldRequest:
    """A request whose head (and the first `sent` bytes of its body) went out; ``finish()``
    sends the rest and returns the reply."""

    def __init__(self, url: str, method: str, path: str, body: bytes,
                 headers: dict[str, str] | None = None, sent: int = 0) -> None:
        self.body = body
        self.sent = sent
        self.sock = socket.create_connection(address(url), timeout=60)
        self.sock.sendall(head(method, path, headers, len(body)) + body[:sent])

    def finish(self) -> Reply:
        try:
            self.sock.sendall(self.body[self.sent:])
            return Reply(read_all(self.sock))
        finally:
            self.sock.close()

    def close(self) -> None:
        self.sock.close()


def health(url: str) -> dict[str, Any]:
    r = requests.get(url + "/v1/health", timeout=30)
    assert r.status_code == 200, r.text
    return dict(r.json())


def wait_health(url: str, key: str, value: int, timeout: float = 60.0) -> dict[str, Any]:
    """/v1/health once its `key` reads `value`."""
    deadline = time.monotonic() + timeout
    while True:
        h = health(url)
        if h[key] == value:
            return h
        assert time.monotonic() < deadline, f"/v1/health {key} stayed {h[key]}, not {value}"
        time.sleep(0.05)
