"""Time from `pip install` of the wheel to the first verified private lookup (a benchmark to run
by hand, not a test).

    python tests/service/bench_first_lookup.py [--wheel WHEEL] [--cold-zig] [--no-pip-cache]

Server machine: a fresh venv, `pip install WHEEL`, then in an empty directory the sample
database, `generate --from-db`, `serve` (which compiles the runtime and the build with CMake,
without ccache) until it prints `listening on`, then `query --index 7` checked against the
database's bytes. Client machine: another fresh venv, `pip install WHEEL`, and
`query --server URL --index 7` from an empty directory with a PATH that has python and
nothing else (no c++, g++, clang, cmake), an empty client cache, so the client builds itself
with the ziglang package; checked the same way, then a second lookup (cached client).
--cold-zig also empties zig's own cache (a new venv already misses most of it: zig keys its
libc++ by its install path). pip's download cache is used unless --no-pip-cache.
Prints each step's seconds and the totals; exits 1 if a record differs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INDEX = 7
RECORD = 32


def build_wheel(out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out),
                    str(REPO)], check=True)
    return next(out.glob("spiralpir-*.whl"))


class Clock:
    def __init__(self, title: str) -> None:
        self.title = title
        self.t0 = time.perf_counter()
        self.last = self.t0
        self.rows: list[tuple[str, float]] = []

    def step(self, what: str) -> None:
        now = time.perf_counter()
        self.rows.append((what, now - self.last))
        self.last = now
        print(f"  {self.title}: {what}: {self.rows[-1][1]:.1f} s", flush=True)

    def total(self) -> float:
        return self.last - self.t0


def install(venv: Path, wheel: Path, pip_cache: bool) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    *([] if pip_cache else ["--no-cache-dir"]), str(wheel)], check=True)
    return py


def check_record(path: Path, db: Path) -> None:
    with open(db, "rb") as fh:
        fh.seek(INDEX * RECORD)
        want = fh.read(RECORD)
    got = path.read_bytes()
    if got != want:
        sys.exit(f"record {INDEX}: got {got.hex()}, the database holds {want.hex()}")


def server_side(work: Path, wheel: Path, env: dict[str, str], pip_cache: bool,
                ) -> tuple[subprocess.Popen[str], str, Clock]:
    clock = Clock("server")
    py = install(work / "server-venv", wheel, pip_cache)
    clock.step("venv + pip install")
    run = work / "server"
    run.mkdir()
    cli = [str(py), "-m", "spiralpir.optimizer.cli"]
    subprocess.run([*cli, "sample-db", "--out", "records.bin"], cwd=run, env=env, check=True,
                   capture_output=True)
    subprocess.run([*cli, "generate", "--from-db", "records.bin", "--record-size", str(RECORD),
                    "--name", "first"], cwd=run, env=env, check=True, capture_output=True)
    clock.step("sample-db + generate --from-db (plan)")
    proc = subprocess.Popen([*cli, "serve", "--build", "generated/first", "--db", "records.bin",
                             "--port", "0", "--quiet"], cwd=run, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=open(work / "serve.log", "w"))
    assert proc.stdout is not None
    url = ""
    for line in proc.stdout:
        if line.startswith("listening on "):
            url = line.split()[-1]
            break
    if not url:
        sys.exit(f"serve did not start:\n{(work / 'serve.log').read_text()[-2000:]}")
    clock.step("serve: compile runtime + build (CMake), preprocess, listening")
    subprocess.run([*cli, "query", "--server", url, "--index", str(INDEX), "--out", "r.bin"],
                   cwd=run, env=env, check=True, capture_output=True)
    check_record(run / "r.bin", run / "records.bin")
    clock.step("first verified lookup (local build)")
    return proc, url, clock


def client_side(work: Path, wheel: Path, url: str, pip_cache: bool, cold_zig: bool) -> Clock:
    clock = Clock("client")
    py = install(work / "client-venv", wheel, pip_cache)
    clock.step("venv + pip install")
    bare = work / "bare-bin"
    bare.mkdir()
    (bare / "python").symlink_to(py)
    env = {k: v for k, v in os.environ.items()
           if k not in ("CXX", "CC", "CMAKE_CXX_COMPILER_LAUNCHER", "SPIRALPIR_BUILD_DIR",
                        "SPIRALPIR_CACHE_DIR", "VIRTUAL_ENV", "PYTHONPATH")}
    env.update(PATH=str(bare), XDG_CACHE_HOME=str(work / "client-cache"),
               XDG_STATE_HOME=str(work / "client-state"))
    if cold_zig:
        env["ZIG_GLOBAL_CACHE_DIR"] = str(work / "zig-cache")
    run = work / "client"
    run.mkdir()
    cli = [str(py), "-m", "spiralpir.optimizer.cli"]
    db = work / "server" / "records.bin"
    for what in ("first verified lookup (builds the client with zig)",
                 "second verified lookup (cached client)"):
        r = subprocess.run([*cli, "query", "--server", url, "--index", str(INDEX), "--out",
                            "r.bin"], cwd=run, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"client query failed:\n{r.stderr[-3000:]}")
        check_record(run / "r.bin", db)
        clock.step(what)
        for line in r.stderr.splitlines():
            if line.startswith("spiralpir: built"):
                print(f"    {line}")
    return clock


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wheel", type=Path, help="the wheel to install (default: build one)")
    ap.add_argument("--cold-zig", action="store_true", help="an empty zig cache too")
    ap.add_argument("--no-pip-cache", action="store_true", help="pip install --no-cache-dir")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="spiralpir-first-lookup."))
    try:
        wheel = args.wheel or build_wheel(work / "wheels")
        env = {k: v for k, v in os.environ.items()
               if k not in ("CMAKE_CXX_COMPILER_LAUNCHER", "SPIRALPIR_BUILD_DIR",
                            "VIRTUAL_ENV", "PYTHONPATH")}
        env["XDG_STATE_HOME"] = str(work / "server-state")
        print(f"load average before: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
        proc, url, server = server_side(work, wheel, env, not args.no_pip_cache)
        try:
            client = client_side(work, wheel, url, not args.no_pip_cache, args.cold_zig)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        first_client = sum(s for _, s in client.rows[:2])
        print(f"server machine: pip install -> first verified lookup {server.total():.1f} s")
        print(f"client machine (no compiler/cmake on PATH): pip install -> first verified "
              f"lookup {first_client:.1f} s; a later lookup {client.rows[2][1]:.1f} s")
        print(f"load average after: {os.getloadavg()[0]:.1f}")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
