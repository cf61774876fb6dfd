"""Helpers of the CLI tests: run the installed `spiralpir` console script, check its errors."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "generated" / "demo"


def console_script() -> Path:
    """The `spiralpir` console script pip installed for this interpreter (next to it in a venv,
    in the scheme's scripts directory for a system Python, else on PATH)."""
    for where in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        if (where / "spiralpir").is_file():
            return where / "spiralpir"
    found = shutil.which("spiralpir")
    return Path(found) if found else Path(sys.executable).with_name("spiralpir")


SPIRALPIR = console_script()


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
