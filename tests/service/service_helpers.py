"""Helpers of the service tests (imported by conftest.py and the test modules)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import requests
from spiralpir.optimizer.service.http_server import run

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "generated" / "demo"
CLI = [sys.executable, "-m", "spiralpir.optimizer.cli"]


class ServerProcess:
    """`spiralpir serve ARGS --port PORT` (0: a free one) as a child process; url once it
    listens. Without --page among ARGS it serves no page (--no-page): most tests need only the
    API, and a page would build the WebAssembly client of every build they serve."""

    def __init__(self, args: list[str], log: Path, port: int = 0) -> None:
        self.log = log
        page = [] if "--page" in args else ["--no-page"]
        self.proc = subprocess.Popen([*CLI, "serve", *args, *page, "--port", str(port)],
                                     stdout=subprocess.PIPE, stderr=open(log, "w"), text=True)
        assert self.proc.stdout is not None
        deadline = time.time() + 600
        self.url = ""
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            if line.startswith("listening on "):
                self.url = line.split()[-1]
                break
        assert self.url, f"server did not start:\n{log.read_text()[-3000:]}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def serve_in_thread(srv: Any) -> str:
    """Serve ``srv`` (a PirServer) over HTTP from a daemon thread; its URL once it answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    threading.Thread(target=run, args=(srv, "127.0.0.1", port), kwargs={"quiet": True},
                     daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if requests.get(url + "/v1/health", timeout=5).ok:
                return url
        except requests.ConnectionError:
            time.sleep(0.1)
    raise AssertionError("server did not start")


def pin_active(live: Any, stop: threading.Event) -> None:
    """Readers on ``live``'s active buffer (a LiveDb), one after another, until ``stop``: what
    running answers look like to the pacing of updates and checkpoints."""
    while not stop.is_set():
        with live.reading():
            time.sleep(0.005)
