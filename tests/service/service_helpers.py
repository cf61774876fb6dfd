"""Helpers of the service tests (imported by conftest.py and the test modules)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "generated" / "demo"
CLI = [sys.executable, "-m", "spiralpir.optimizer.cli"]


class ServerProcess:
    """`spiralpir serve ARGS --port 0` as a child process; url once it listens."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        self.proc = subprocess.Popen([*CLI, "serve", *args, "--port", "0"],
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
