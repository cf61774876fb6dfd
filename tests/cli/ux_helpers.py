"""Helpers of the CLI tests: run the installed `spiralpir` console script, check its errors."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "generated" / "demo"
SPIRALPIR = Path(sys.executable).with_name("spiralpir")  # the console script pip installed


def run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SPIRALPIR), *map(str, args)], capture_output=True, text=True,
                          timeout=600, cwd=cwd, check=False)


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The error line; fails unless the command exited 2 with exactly one line on stderr."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert lines[0].startswith("spiralpir: error: ")
    return lines[0]


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
