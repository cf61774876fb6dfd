"""Load test: more clients than the server keeps (--max-clients), each a thread with its own
PirClient querying random records for a fixed time against a real `spiralpir serve` of a
random database. Every answer is checked against the database bytes at index x record_size.
Prints clients, queries/s, p50/p99 latency, failed queries by status, the client's resends
(503s and re-uploads of evicted parameters) and the server's resident memory before, right
after and a few seconds after the load.

    python3 tests/service/bench_load.py [--clients 24] [--max-clients 8] [--seconds 25]
        [--workers 2] [--threads 1] [--json]

Goal: 0 failed queries, 0 wrong answers, 0 5xx (resent 503s are fine).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from service_helpers import DEMO, ServerProcess  # noqa: E402
from spiralpir.optimizer.build import builder  # noqa: E402
from spiralpir.optimizer.errors import SpiralpirError  # noqa: E402
from spiralpir.optimizer.service.binding import Build  # noqa: E402
from spiralpir.optimizer.service.pir_client import PirClient  # noqa: E402
from spiralpir.optimizer.service.pir_server import resident_bytes  # noqa: E402

IDLE_SECONDS = 7.0  # after the load, before the last memory reading
STATUS = re.compile(r"server answered ([0-9]{3})")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def drive(url: str, build: Build, db: bytes, clients: int, seconds: float,
          state_dir: Path) -> dict[str, Any]:
    """`clients` threads querying for `seconds`; the figures (see the module docstring)."""
    rs = build.record_size
    n = len(db) // rs
    lock = threading.Lock()
    latencies: list[float] = []
    failed: Counter[str] = Counter()
    resent = Counter[str]()
    wrong = [0]
    deadline = time.monotonic() + seconds
    start = threading.Barrier(clients)

    def one(k: int) -> None:
        client = PirClient(url, build=build, state_path=state_dir / f"client{k}.json",
                           timeout=120)
        rng = random.Random()
        start.wait()
        try:
            while time.monotonic() < deadline:
                index = rng.randrange(n)
                t0 = time.perf_counter()
                try:
                    record = client.query(index).record
                except SpiralpirError as exc:
                    m = STATUS.search(str(exc))
                    with lock:
                        failed[m.group(1) if m else str(exc)[:80]] += 1
                    continue
                took = time.perf_counter() - t0
                with lock:
                    latencies.append(took)
                    if record != db[index * rs:(index + 1) * rs]:
                        wrong[0] += 1
        finally:
            with lock:
                resent.update(client.retries)
            client.close()

    threads = [threading.Thread(target=one, args=(k,)) for k in range(clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    return {
        "clients": clients, "seconds": wall, "queries": len(latencies),
        "queries_per_second": len(latencies) / wall,
        "p50_seconds": percentile(latencies, 0.50), "p99_seconds": percentile(latencies, 0.99),
        "mean_seconds": statistics.fmean(latencies) if latencies else float("nan"),
        "failed": dict(failed), "wrong": wrong[0],
        "resent_busy": resent["busy"], "resent_setup": resent["setup"],
    }


def run(clients: int, max_clients: int, seconds: float, workers: int, threads: int,
        work: Path, extra: list[str] | None = None) -> dict[str, Any]:
    """Serve a random database of the demo build and drive it; the figures plus the server's
    resident memory before and after and its /v1/health counters."""
    build = Build(builder.build(DEMO, show_progress=False, targets=["library"]))
    db = os.urandom(build.num_records * build.record_size)
    (work / "load.db").write_bytes(db)
    srv = ServerProcess(["--build", str(DEMO), "--db", str(work / "load.db"), "--no-cache",
                         "--threads", str(threads), "--workers", str(workers),
                         "--max-clients", str(max_clients), *(extra or [])], work / "server.log")
    try:
        rss_before = resident_bytes(srv.proc.pid)
        out = drive(srv.url, build, db, clients, seconds, work)
        out["server_rss_before"] = rss_before
        out["server_rss_after"] = resident_bytes(srv.proc.pid)
        time.sleep(IDLE_SECONDS)  # the server returns freed memory once idle
        out["server_rss_idle"] = resident_bytes(srv.proc.pid)
        health = requests.get(srv.url + "/v1/health", timeout=30).json()
        out["server"] = {k: health[k] for k in ("clients", "max_clients", "setups", "queries",
                                                "errors", "busy", "timeouts")}
        out["max_clients"] = max_clients
        out["server_log_5xx"] = len(re.findall(r"error answering|internal server error",
                                               srv.log.read_text()))
    finally:
        srv.stop()
    return out


def report(r: dict[str, Any]) -> str:
    mib = 1 << 20
    return (f"{r['clients']} clients against --max-clients {r['max_clients']}, "
            f"{r['seconds']:.1f} s: {r['queries']} queries, {r['queries_per_second']:.2f} "
            f"queries/s, p50 {r['p50_seconds'] * 1e3:.0f} ms, p99 {r['p99_seconds'] * 1e3:.0f} "
            f"ms; failed {r['failed'] or 0}, wrong {r['wrong']}, 5xx logged "
            f"{r['server_log_5xx']}; resent: {r['resent_busy']} after 503, "
            f"{r['resent_setup']} re-uploads; server: {r['server']}; server RSS "
            f"{r['server_rss_before'] / mib:.0f} -> {r['server_rss_after'] / mib:.0f} MiB, "
            f"{r['server_rss_idle'] / mib:.0f} MiB after {IDLE_SECONDS:g} s idle")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=24)
    ap.add_argument("--max-clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=25.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="runtime threads per answer")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="spiralpir-load-") as d:
        r = run(a.clients, a.max_clients, a.seconds, a.workers, a.threads, Path(d))
    print(json.dumps(r, sort_keys=True) if a.json else report(r))


if __name__ == "__main__":
    main()
