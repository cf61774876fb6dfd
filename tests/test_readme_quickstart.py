"""The README's Quickstart runs as written, top to bottom: its commands are taken from README.md
itself (the first ``sh`` block under "## Quickstart"), so the two cannot drift apart.

Two substitutions only: port 8080 becomes a free port (CI may have 8080 taken), and the
runtime's CMake build directory is the repository's (SPIRALPIR_BUILD_DIR), so that the
runtime is not compiled again; the generated instance is compiled as written. Cost: a plan,
one instance compile and a 2 MB database, about 1-2 minutes.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def quickstart_commands() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    m = re.search(r"^## Quickstart\n.*?^```sh\n(.*?)^```$", text, re.M | re.S)
    assert m, "README.md has no ```sh block under '## Quickstart'"
    return m.group(1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_quickstart_runs_as_written(tmp_path: Path) -> None:
    script = quickstart_commands()
    assert "8080" in script and "spiralpir query" in script
    port = free_port()
    script = script.replace("8080", str(port))
    env = dict(os.environ,
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
               SPIRALPIR_BUILD_DIR=str(REPO / "build" / "spiralpir"),
               XDG_STATE_HOME=str(tmp_path / "state"))
    # -e: any failing command fails the test; the trap stops a server a failure left running
    r = subprocess.run(["bash", "-e", "-c", "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n"
                        + script], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=1500)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    record = (tmp_path / "record.bin").read_bytes()
    with open(tmp_path / "records.bin", "rb") as fh:
        fh.seek(1234 * 32)
        assert record == fh.read(32)
    assert f"listening on http://127.0.0.1:{port}" in r.stdout
