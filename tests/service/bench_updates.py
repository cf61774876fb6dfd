"""Benchmark of live updates (printed, not a test): a server of a random database answers queries
continuously (one client thread, every answer checked against the raw bytes of the version its
response names) while batches of 1, 1,000 and 100,000 random records land back to back through
the same Updater `serve --admin-token-file` runs (in process, without HTTP), with serve's store
checkpoints (on the Updater's own thread once due, and one at the end of every update phase
that leaves one due, on a thread of the same priority, which runs while its answers are still
counted: a server makes it at its next look). Phases alternate: idle queries, then
``--phase-seconds`` of updates of each size, so machine noise hits all of them; each round does
that once per pace of the re-encoding (``--paces``; 0: flat out). Single records come from
``--submitters`` threads at once (as concurrent requests reach the admin endpoint's workers:
those arriving while a batch lands are applied together as one version); larger batches from
one.

Prints per phase: record updates per second (parse, journal, double buffer, records file and
the checkpoints' share), time until visible (from the batch's arrival: its parse and any wait
for the batch or checkpoint before it included, to the switch of the answering buffer), how
many batches each version held, the steps' median seconds, the checkpoints' seconds, and the
answers completed inside the phase: count, p50, p99 and max, p99 against idle (all rounds'
idle answers); then, per update step, the answers that overlapped it (count, p50, p99, max) and
the three slowest answers with the share of their time each step ran in. With one runtime
thread it also prints each phase's time the answers spent off the CPU (p99, max): the part of
their latency updates can cause through the interpreter lock or the cores, which a core slowed
by the machine's other tenants does not change.

    python3 tests/service/bench_updates.py [--build generated/spiral_2e20x256b] [--rounds 2]
        [--phase-seconds 40] [--submitters 4] [--threads 1] [--update-threads 1]
        [--paces 15000] [--json]

Goals: >= 10^4 record updates/s on one core, a 1,000-record batch visible within 1 s, query p99
during updates within 1.2x of idle.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spiralpir.optimizer.build import builder
from spiralpir.optimizer.cli.cmd_serve import STORE_EVERY
from spiralpir.optimizer.service import changes, db_updates, encode_pace, update_journal
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service.binding import Build, ClientKeys
from spiralpir.optimizer.service.pir_server import PirServer

REPO = Path(__file__).resolve().parents[2]
SIZES = (1, 1000, 100_000)
# distinct batches per size, applied in turn; a phase of 1,000-record batches (~60,000 records)
# meets few repeats, so its pending changes grow as a stream of random records' would and reach
# the store checkpoint's journal bound (db_updates.CHECKPOINT_JOURNAL_BYTES)
POOL = {1: 50, 1000: 64, 100_000: 3}


def phase_name(pace: float, size: int) -> str:
    return f"updating {size} at pace {pace:g}"


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def summary(xs: list[float]) -> dict[str, float]:
    return {"count": len(xs), "p50": percentile(xs, 0.5), "p99": percentile(xs, 0.99),
            "max": max(xs, default=float("nan"))}


class Steps:
    """(step, start, end) of every update step, recorded by wrapping the functions that run
    them (parse, commit's parts, the publish's wait and encoding, records file, checkpoint)."""

    def __init__(self) -> None:
        self.windows: list[tuple[str, float, float]] = []

    def wrap(self, step: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.windows.append((step, start, time.perf_counter()))
        return timed

    def overlap(self, a: float, b: float) -> dict[str, float]:
        """The share of the span [a, b] each step ran in."""
        out: dict[str, float] = {}
        for step, lo, hi in self.windows:
            cut = min(b, hi) - max(a, lo)
            if cut > 0:
                out[step] = out.get(step, 0.0) + cut / (b - a)
        return out


def instrument(steps: Steps, updater: db_updates.Updater, srv: PirServer,
               oracle: Versions) -> None:
    """Record the steps' times, and each version's changes in ``oracle`` before any answer
    can name the version."""
    targets: list[tuple[Any, str, str]] = [
        (updater.files, "snapshot", "snapshot"), (updater.files, "fingerprint", "fingerprint"),
        (update_journal, "patch_memory", "patch"), (update_journal, "commit", "journal"),
        (srv.live, "_drained", "wait"), (srv.live, "_encode", "encode"),
        (update_journal, "write_records", "records_file"),
        (updater, "_checkpoint_live", "checkpoint")]
    for obj, attr, step in targets:
        setattr(obj, attr, steps.wrap(step, getattr(obj, attr)))
    name = "_apply"
    applying = getattr(updater, name)

    def versioned(batch: changes.ChangeBatch, arrived: float) -> Any:
        oracle.add(updater.version + 1, batch.values)
        return applying(batch, arrived)
    setattr(updater, name, versioned)


class Querier:
    """One client querying random records in a loop; latencies by phase, answers checked."""

    def __init__(self, srv: PirServer, build: Build, oracle: Versions, seed: int) -> None:
        self.srv, self.build, self.oracle = srv, build, oracle
        self.rng = random.Random(seed)
        self.phase = "warmup"
        self.spans: dict[str, list[tuple[float, float]]] = {}  # (start, end) of each answer
        # seconds of each answer its thread did not run (with one runtime thread the answer
        # computes in it): waits for the interpreter lock or a core, which updates can cause,
        # apart from a slower core (the machine's other tenants), which they cannot
        self.off_cpu: dict[str, list[float]] = {}
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
            t0, c0 = time.perf_counter(), time.thread_time()
            resp, _, _, v = self.srv.answer_versioned(cid, q)
            t1, c1 = time.perf_counter(), time.thread_time()
            if keys.decode(i, resp, rs) != self.oracle.record(v, i):
                self.wrong += 1
            if phase == self.phase:  # whole query inside one phase
                self.spans.setdefault(phase, []).append((t0, t1))
                self.off_cpu.setdefault(phase, []).append(max(0.0, (t1 - t0) - (c1 - c0)))
        keys.close()


class Versions:
    """The records at every version: the first in full, then each version's changes only (not
    copied), so keeping the oracle neither copies the database per
    batch nor holds the GIL for it (the querying thread's latency is what is measured)."""

    def __init__(self, base: bytes, record_size: int) -> None:
        self.base, self.rs = base, record_size
        self.changes: dict[int, dict[int, bytes]] = {}  # version -> the batch that made it

    def add(self, version: int, values: dict[int, bytes]) -> None:
        self.changes[version] = values

    def record(self, version: int, i: int) -> bytes:
        for v in range(version, 0, -1):
            got = self.changes.get(v, {}).get(i)
            if got is not None:
                return got
        return self.base[i * self.rs : (i + 1) * self.rs]


Pool = dict[int, list[str]]


def batch_pool(rng: random.Random, n: int, rs: int) -> Pool:
    """Per size, distinct batches as the server receives them (JSON Lines)."""
    pool: Pool = {}
    for size in SIZES:
        pool[size] = []
        for _ in range(POOL[size]):
            pool[size].append("\n".join(f'{{"index": {i}, "value_hex": '
                                         f'"{rng.randbytes(rs).hex()}"}}'
                                         for i in rng.sample(range(n), size)))
    return pool


def submitter(updater: db_updates.Updater, pool: list[str],
              turn: list[int], n: int, rs: int, until: float, out: list[dict[str, Any]],
              steps: Steps) -> None:
    """Send batches of ``pool`` in turn until ``until``, as the server receives them."""
    parse = steps.wrap("parse", changes.parse)
    while time.perf_counter() < until:
        turn[0] += 1
        text = pool[turn[0] % len(pool)]
        start = time.perf_counter()
        batch = parse(text, "bench", n, rs)
        rep = updater.apply(batch)
        total = time.perf_counter() - start
        s = rep.seconds
        out.append({"records": len(batch), "plaintexts": rep.plaintexts, "seconds": total,
                    "batches": rep.batches,
                    "visible": total - s["records_file"] - (s["publish"] - s["switch"])
                    - s.get("store", 0.0), "steps": s})


def background_checkpoint(updater: db_updates.Updater) -> None:
    db_updates.yield_cores()
    updater.checkpoint()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", type=Path, default=REPO / "generated" / "spiral_2e20x256b")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--phase-seconds", type=float, default=40.0,
                    help="seconds of each phase (idle, and updates of each size)")
    ap.add_argument("--submitters", type=int, default=4,
                    help="threads sending single-record batches at once")
    ap.add_argument("--threads", type=int, default=1, help="runtime threads per answer")
    ap.add_argument("--update-threads", type=int, default=1, help="encoding threads of updates")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--paces", type=lambda t: [float(x) for x in t.split(",")],
                    default=[encode_pace.DEFAULT_RATE],
                    help="record updates/s the re-encoding is paced to while answers run, "
                         "comma-separated, alternated each round (0: flat out)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    build = Build(builder.build(args.build, show_progress=False, targets=["library"]))
    rs, n = build.record_size, build.num_records
    pool = batch_pool(rng, n, rs)  # made before any phase: not measured
    steps = Steps()
    with tempfile.TemporaryDirectory(prefix="bench-updates-") as tmp:
        db, pre = Path(tmp) / "db.bin", Path(tmp) / "db.pre"
        data = bytearray(os.urandom(n * rs))
        db.write_bytes(data)
        oracle = Versions(bytes(data), rs)
        del data
        t0 = time.perf_counter()
        recs = database.read_records(db, rs)
        files, fitted, version = db_updates.open_files(build, db, recs, pre, print,
                                                           resident=True)
        srv = PirServer(build, fitted, preprocessed=pre, threads=args.threads, progress=False,
                        version=version, updatable=True, log=lambda m: None)
        updater = db_updates.Updater(files, version, srv.live, threads=args.update_threads,
                                     sync_store=False, store_every=STORE_EVERY)
        instrument(steps, updater, srv, oracle)
        print(f"{n} x {rs} B, build {build.name}: ready in {time.perf_counter() - t0:.1f} s "
              "(preprocess, save the store, two in-memory buffers)", flush=True)
        q = Querier(srv, build, oracle, rng.randrange(1 << 30))
        q.thread.start()
        phases = [(pace, size) for pace in args.paces for size in SIZES]
        results: dict[str, list[dict[str, Any]]] = {phase_name(*ph): [] for ph in phases}
        bounds: dict[str, list[tuple[float, float]]] = {phase_name(*ph): [] for ph in phases}
        turn = [0]
        try:
            time.sleep(3.0)  # warm-up: the first answers fault pages in
            for _ in range(args.rounds):
                for pace in args.paces:  # alternated, so machine noise hits every pace
                    q.phase = "idle"
                    time.sleep(args.phase_seconds)
                    updater.pace = pace
                    for size in SIZES:
                        name = phase_name(pace, size)
                        q.phase = name
                        began = time.perf_counter()
                        submit = functools.partial(submitter, updater, pool[size], turn, n, rs,
                                                   began + args.phase_seconds, results[name],
                                                   steps)
                        threads = [threading.Thread(target=submit)
                                   for _ in range(args.submitters if size == 1 else 1)]
                        for t in threads:
                            t.start()
                        for t in threads:
                            t.join()
                        # what serve's checkpoint thread would make at its next look, if one
                        # is due (db_updates.CHECKPOINT_*), at its priority, answers counted
                        if updater.checkpoint_due():
                            last = threading.Thread(target=background_checkpoint,
                                                    args=(updater,))
                            last.start()
                            last.join()
                        bounds[name].append((began, time.perf_counter()))
                        q.phase = "between"
                        time.sleep(1.0)
        finally:
            q.stop.set()
            q.thread.join()
            updater.close()
    report(args, n, rs, q, results, bounds, steps)


def report(args: argparse.Namespace, n: int, rs: int, q: Querier,
           results: dict[str, list[dict[str, Any]]],
           bounds: dict[str, list[tuple[float, float]]], steps: Steps) -> None:
    latency = {k: [b - a for a, b in v] for k, v in q.spans.items()}
    out: dict[str, Any] = {"records": n, "record_size": rs, "wrong_answers": q.wrong,
                           "phase_seconds": args.phase_seconds, "rounds": args.rounds,
                           "queries": {k: summary(v) for k, v in latency.items()},
                           "queries_off_cpu": {k: summary(v) for k, v in q.off_cpu.items()},
                           "updates": {}}
    checkpoints = [(lo, hi) for step, lo, hi in steps.windows if step == "checkpoint"]
    for name, runs in results.items():
        secs = [r["seconds"] for r in runs]
        inside = [hi - lo for lo, hi in checkpoints
                  if any(a <= lo and hi <= b for a, b in bounds[name])]
        per_step: dict[str, list[float]] = {}
        slow = sorted(q.spans.get(name, []), key=lambda ab: ab[0] - ab[1])
        for a, b in slow:
            for step in steps.overlap(a, b) or {"nothing": 1.0}:
                per_step.setdefault(step, []).append(b - a)
        elapsed = sum(b - a for a, b in bounds[name])
        out["updates"][name] = {
            "batches": len(runs),
            "batches_per_version_median": statistics.median(r["batches"] for r in runs),
            "plaintexts_median": statistics.median(r["plaintexts"] for r in runs),
            # the phase's wall time: its checkpoints count against the rate
            "updates_per_second": sum(r["records"] for r in runs) / elapsed,
            "seconds_median": statistics.median(secs),
            "visible_seconds_median": statistics.median(r["visible"] for r in runs),
            "visible_seconds_max": max(r["visible"] for r in runs),
            "steps_median": {k: statistics.median(r["steps"].get(k, 0.0) for r in runs)
                             for k in runs[0]["steps"]},
            "checkpoint_seconds": inside,
            "answers_by_step": {k: summary(v) for k, v in sorted(per_step.items())},
            "slowest_answers": [{"seconds": b - a, "overlap": steps.overlap(a, b)}
                                for a, b in slow[:3]]}
    if args.json:
        print(json.dumps(out, indent=1, sort_keys=True))
        return
    idle = out["queries"].get("idle", summary([]))
    print(f"queries idle: {stats(idle)}; wrong answers: {q.wrong}")
    if args.threads == 1:
        print("answers' time off the CPU, p99 / max: " + "; ".join(
            f"{k} {v['p99'] * 1e3:.1f} / {v['max'] * 1e3:.1f} ms"
            for k, v in out["queries_off_cpu"].items() if k != "warmup"))
    for name, u in out["updates"].items():
        lat = out["queries"].get(name, summary([]))
        cps = u["checkpoint_seconds"]
        print(f"{name}: {u['batches']} batches ({u['batches_per_version_median']:g} per "
              f"version, median), {u['updates_per_second']:,.0f} record updates/s, "
              f"apply {u['seconds_median']:.3f} s, visible after "
              f"{u['visible_seconds_median']:.3f} s (max {u['visible_seconds_max']:.3f}), "
              f"{u['plaintexts_median']:.0f} plaintexts; steps "
              + ", ".join(f"{k} {v:.3f}" for k, v in u["steps_median"].items())
              + f"; {len(cps)} store checkpoints, "
              + (f"median {statistics.median(cps):.2f} s, max {max(cps):.2f} s" if cps else "")
              + f"\n  queries meanwhile: {stats(lat)} ({lat['p99'] / idle['p99']:.2f}x idle p99)"
              + "\n  answers overlapping: " + "; ".join(
                  f"{k} {stats(v)}" for k, v in u["answers_by_step"].items())
              + "\n  slowest answers overlapped: " + "; ".join(
                  f"{a['seconds']:.3f} s: " + (", ".join(f"{k} {v:.0%}" for k, v in
                                                         a["overlap"].items()) or "nothing")
                  for a in u["slowest_answers"]), flush=True)


def stats(s: dict[str, float]) -> str:
    return (f"{s['count']:.0f} answers, p50 {s['p50']:.3f} s, p99 {s['p99']:.3f} s, "
            f"max {s['max']:.3f} s")


if __name__ == "__main__":
    main()
