"""Benchmark of live updates (printed, not a test): a server of a random database answers queries
continuously (one client thread, every answer checked against the raw bytes of the version its
response names) while batches of 1, 1,000 and 100,000 random records are applied by the same
Updater `serve --admin-token-file` runs (in process, without HTTP). Phases alternate: idle
queries, then updates of each size, so machine noise hits both; each round does that once per
pace of the re-encoding (``--paces``: by default flat out, as before pacing existed, and the
server's default), so the paces are compared under the same noise.

Prints per batch size: record updates per second (whole apply: journal, double buffer, records
file), time until visible (apply start to the switch of the answering buffer), the steps'
seconds, query latency p50/p99 while updates run against idle, and the seconds of the store
checkpoint after each phase (serve makes one every 10 s, whatever the number of batches).

    python3 tests/service/bench_updates.py [--build generated/spiral_2e20x256b] [--rounds 2]
        [--threads 1] [--update-threads 1] [--paces 0,15000] [--json]

Goals: >= 10^4 record updates/s on one core, a 1,000-record batch visible within 1 s, query p99
during updates within 1.2x of idle.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from spiralpir.optimizer.build import builder
from spiralpir.optimizer.service import changes, db_updates, encode_pace
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service.binding import Build, ClientKeys
from spiralpir.optimizer.service.pir_server import PirServer

REPO = Path(__file__).resolve().parents[2]
SIZES = (1, 1000, 100_000)


def phase_name(pace: float, size: int) -> str:
    return f"updating {size} at pace {pace:g}"


def slowest(spans: list[tuple[float, float]], windows: list[tuple[str, float, float]],
            count: int = 3) -> list[dict[str, Any]]:
    """The ``count`` slowest answers and the share of each one's time that each update step
    (parse, journal commit, publish = wait + encoding, records file) ran in."""
    out = []
    for a, b in sorted(spans, key=lambda ab: ab[0] - ab[1])[:count]:
        overlap: dict[str, float] = {}
        for step, lo, hi in windows:
            cut = min(b, hi) - max(a, lo)
            if cut > 0:
                overlap[step] = overlap.get(step, 0.0) + cut / (b - a)
        out.append({"seconds": b - a, "overlap": overlap})
    return out


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


class Querier:
    """One client querying random records in a loop; latencies by phase, answers checked."""

    def __init__(self, srv: PirServer, build: Build, oracle: Versions, seed: int) -> None:
        self.srv, self.build, self.oracle = srv, build, oracle
        self.rng = random.Random(seed)
        self.phase = "warmup"
        self.latency: dict[str, list[float]] = {}
        self.spans: dict[str, list[tuple[float, float]]] = {}  # (start, end) of each answer
        self.wrong = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop)

    def loop(self) -> None:
        keys = ClientKeys.new(self.build.lib)
        cid = self.srv.setup(keys.public_params())
        rs, n = self.build.record_size, self.build.num_records
        while not self.stop.is_set():
            i = self.rng.randrange(n)
            q = keys.query(i)
            phase = self.phase
            t0 = time.perf_counter()
            resp, _, _, v = self.srv.answer_versioned(cid, q)
            dt = time.perf_counter() - t0
            if keys.decode(i, resp, rs) != self.oracle.record(v, i):
                self.wrong += 1
            if phase == self.phase:  # whole query inside one phase
                self.latency.setdefault(phase, []).append(dt)
                self.spans.setdefault(phase, []).append((t0, t0 + dt))
        keys.close()


class Versions:
    """The records at every version: the first in full, then each batch's changes only, so
    keeping the oracle neither copies the database per batch nor holds the GIL for it (the
    querying thread's latency is what is measured)."""

    def __init__(self, base: bytes, record_size: int) -> None:
        self.base, self.rs = base, record_size
        self.changes: dict[int, dict[int, bytes]] = {}  # version -> the batch that made it

    def add(self, version: int, values: dict[int, bytes]) -> None:
        self.changes[version] = dict(values)

    def record(self, version: int, i: int) -> bytes:
        for v in range(version, 0, -1):
            got = self.changes.get(v, {}).get(i)
            if got is not None:
                return got
        return self.base[i * self.rs : (i + 1) * self.rs]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", type=Path, default=REPO / "generated" / "spiral_2e20x256b")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="runtime threads per answer")
    ap.add_argument("--update-threads", type=int, default=1, help="encoding threads of updates")
    ap.add_argument("--idle-seconds", type=float, default=8.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--paces", type=lambda t: [float(x) for x in t.split(",")],
                    default=[0.0, encode_pace.DEFAULT_RATE],
                    help="record updates/s the re-encoding is paced to while answers run, "
                         "comma-separated, alternated each round (0: flat out)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    build = Build(builder.build(args.build, show_progress=False, targets=["library"]))
    rs, n = build.record_size, build.num_records
    with tempfile.TemporaryDirectory(prefix="bench-updates-") as tmp:
        db, pre = Path(tmp) / "db.bin", Path(tmp) / "db.pre"
        data = bytearray(os.urandom(n * rs))
        db.write_bytes(data)
        oracle = Versions(bytes(data), rs)
        t0 = time.perf_counter()
        recs = database.read_records(db, rs)
        files, fitted, version = db_updates.open_files(build, db, recs, pre, print)
        srv = PirServer(build, fitted, preprocessed=pre, threads=args.threads, progress=False,
                        version=version, updatable=True, log=lambda m: None)
        updater = db_updates.Updater(files, version, srv.live, threads=args.update_threads,
                                     sync_store=False, store_every=1e9)
        print(f"{n} x {rs} B, build {build.name}: ready in {time.perf_counter() - t0:.1f} s "
              "(preprocess, save the store, two in-memory buffers)", flush=True)
        q = Querier(srv, build, oracle, rng.randrange(1 << 30))
        q.thread.start()
        phases = [(pace, size) for pace in args.paces for size in SIZES]
        results: dict[str, list[dict[str, Any]]] = {phase_name(*ph): [] for ph in phases}
        checkpoints: dict[str, list[float]] = {phase_name(*ph): [] for ph in phases}
        windows: dict[str, list[tuple[str, float, float]]] = {phase_name(*ph): []
                                                              for ph in phases}
        try:
            time.sleep(3.0)  # warm-up: the first answers fault pages in
            for _ in range(args.rounds):
                for pace in args.paces:  # alternated, so machine noise hits every pace
                    q.phase = "idle"
                    time.sleep(args.idle_seconds)
                    updater.pace = pace
                    for size in SIZES:
                        name = phase_name(pace, size)
                        repeats = {1: 20, 1000: 5, 100_000: 1}[size]
                        texts = ["\n".join(f'{{"index": {i}, "value_hex": '
                                           f'"{rng.randbytes(rs).hex()}"}}'
                                           for i in rng.sample(range(n), size))
                                 for _ in range(repeats)]  # made before the phase: not measured
                        q.phase = name
                        for text in texts:
                            start = time.perf_counter()
                            batch = changes.parse(text, "bench", n, rs)  # as the server does
                            oracle.add(updater.version + 1, batch.values)
                            applied = time.perf_counter()
                            rep = updater.apply(batch)
                            total = time.perf_counter() - start
                            s = rep.seconds
                            windows[name].append(("parse", start, applied))
                            at = applied
                            for step in ("commit", "publish", "records_file"):
                                windows[name].append((step, at, at + s[step]))
                                at += s[step]
                            results[name].append({
                                "records": size, "plaintexts": rep.plaintexts,
                                "seconds": total, "visible": s["commit"] + s["switch"],
                                "steps": s})
                        # the store checkpoint serve runs every 10 s, here once per phase
                        q.phase = f"checkpoint {name}"
                        start = time.perf_counter()
                        updater.checkpoint()
                        checkpoints[name].append(time.perf_counter() - start)
                        q.phase = "between"
                        time.sleep(1.0)
        finally:
            q.stop.set()
            q.thread.join()
    out: dict[str, Any] = {"records": n, "record_size": rs, "wrong_answers": q.wrong,
                           "queries": {k: {"count": len(v), "p50": percentile(v, 0.5),
                                           "p99": percentile(v, 0.99)}
                                       for k, v in q.latency.items()},
                           "updates": {}}
    for name, runs in results.items():
        secs = [r["seconds"] for r in runs]
        steps = {k: statistics.median(r["steps"].get(k, 0.0) for r in runs)
                 for k in runs[0]["steps"]}
        out["updates"][name] = {
            "batches": len(runs), "plaintexts_median": statistics.median(r["plaintexts"]
                                                                        for r in runs),
            "updates_per_second": sum(r["records"] for r in runs) / sum(secs),
            "seconds_median": statistics.median(secs),
            "visible_seconds_median": statistics.median(r["visible"] for r in runs),
            "visible_seconds_max": max(r["visible"] for r in runs),
            "steps_median": steps,
            "checkpoint_seconds": checkpoints[name],
            "slowest_answers": slowest(q.spans.get(name, []), windows[name])}
    if args.json:
        print(json.dumps(out, indent=1, sort_keys=True))
        return
    idle = out["queries"].get("idle", {})
    print(f"queries idle: {idle.get('count')} answers, p50 {idle.get('p50', 0):.3f} s, "
          f"p99 {idle.get('p99', 0):.3f} s; wrong answers: {q.wrong}")
    for name, u in out["updates"].items():
        lat = out["queries"].get(name, {})
        ratio = lat.get("p99", 0) / idle.get("p99", float("nan"))
        print(f"{name}: {u['updates_per_second']:,.0f} record updates/s, apply "
              f"{u['seconds_median']:.3f} s, visible after {u['visible_seconds_median']:.3f} s "
              f"(max {u['visible_seconds_max']:.3f}), {u['plaintexts_median']:.0f} plaintexts; "
              "steps " + ", ".join(f"{k} {v:.3f}" for k, v in u["steps_median"].items())
              + f"; queries meanwhile: {lat.get('count', 0)}, p50 {lat.get('p50', 0):.3f} s, "
              f"p99 {lat.get('p99', 0):.3f} s ({ratio:.2f}x idle); store checkpoint after the "
              "phase "
              + ", ".join(f"{c:.2f} s" for c in u["checkpoint_seconds"])
              + "; slowest answers overlapped " + "; ".join(
                  f"{a['seconds']:.3f} s: " + (", ".join(f"{k} {v:.0%}" for k, v in
                                                         a["overlap"].items()) or "nothing")
                  for a in u["slowest_answers"]))


if __name__ == "__main__":
    main()
