"""Batch benchmark against single queries (printed figures, not a test): one batch of k
records on a batch build (`generate --batch K`) beside k single queries on the single-database
build of the same records, in one process, one thread each, server CPU seconds (process time).
Every record is decrypted and checked. G: buckets per query ct (`--query-buckets`), Q: query
cts per batch (ceil(B/G)); up/down: request and reply bytes per batch.

    python3 tests/service/bench_batch.py --single generated/SINGLE BATCH_BUILD... \\
        [--trials 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

from spiralpir.optimizer.build import builder
from spiralpir.optimizer.service.batch_bench import run_batch_bench
from spiralpir.optimizer.service.batch_server import BATCH_FILE, read_layout
from spiralpir.optimizer.service.binding import Build, ClientKeys, PublicParams, ServerDb


def single(source: Path, trials: int) -> dict[str, Any]:
    build = Build(builder.build(source, show_progress=False, targets=["library"]))
    n, rs = build.num_records, build.record_size
    data = os.urandom(n * rs)
    db = ServerDb(build.lib, 1)
    db.load_records(data, n, rs)
    keys = ClientKeys.new(build.lib)
    pp = PublicParams(build.lib, keys.public_params())
    cpu: list[float] = []
    stages: list[dict[str, float]] = []
    q = b""
    resp = b""
    for _ in range(trials):
        i = random.randrange(n)
        q = keys.query(i)
        c0 = time.process_time()
        resp, st = db.answer(pp, q)
        cpu.append(time.process_time() - c0)
        stages.append(st)
        assert keys.decode(i, resp, rs) == data[i * rs:(i + 1) * rs], "wrong record"
    db.close()
    return {"cpu_seconds": statistics.median(cpu), "query_bytes": len(q),
            "response_bytes": len(resp),
            "stages": {s: statistics.median(x[s] for x in stages) for s in stages[0]}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--single", type=Path, required=True)
    ap.add_argument("batch", type=Path, nargs="+")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    one = single(a.single, a.trials)
    rows = []
    for src in a.batch:
        k = int(json.loads((src / BATCH_FILE).read_text())["batch"]["k"])
        build = Build(builder.build(src, show_progress=False, targets=["library"]))
        r = run_batch_bench(build, read_layout(src / BATCH_FILE), k, a.trials, 1)
        assert r["correct"], f"{src}: wrong records"
        k_bytes = k * (one["query_bytes"] + one["response_bytes"])
        rows.append({"build": src.name, **r,
                     "single_cpu_seconds": one["cpu_seconds"],
                     "batch_over_single_cpu": r["batch_cpu_seconds"] / one["cpu_seconds"],
                     "k_singles_cpu_seconds": k * one["cpu_seconds"],
                     "batch_bytes": r["batch_request_bytes"] + r["batch_response_bytes"],
                     "k_singles_bytes": k_bytes,
                     "batch_over_k_singles_bytes":
                         (r["batch_request_bytes"] + r["batch_response_bytes"]) / k_bytes})
        del build
    if a.json:
        print(json.dumps({"single": one, "batches": rows}, sort_keys=True, indent=1))
        return
    print(f"single query ({a.single.name}): {one['cpu_seconds']:.3f} s CPU, "
          f"{one['query_bytes']:,} + {one['response_bytes']:,} B; stages "
          + ", ".join(f"{s} {v * 1e3:.1f} ms" for s, v in one["stages"].items()))
    print(f"{'build':<24}{'k':>4}{'w':>3}{'B':>5}{'G':>4}{'Q':>5}{'batch CPU':>11}"
          f"{'x single':>10}{'k singles':>11}{'up KB':>9}{'down KB':>9}{'batch MB':>10}"
          f"{'x k-sgl B':>10}{'rec/CPU-s':>11}")
    for r in rows:
        print(f"{r['build']:<24}{r['k']:>4}{r['w']:>3}{r['buckets']:>5}"
              f"{r['query_buckets']:>4}{r['batch_queries']:>5}"
              f"{r['batch_cpu_seconds']:>10.3f}s{r['batch_over_single_cpu']:>10.1f}"
              f"{r['k_singles_cpu_seconds']:>10.3f}s{r['batch_request_bytes'] / 1e3:>9.1f}"
              f"{r['batch_response_bytes'] / 1e3:>9.1f}{r['batch_bytes'] / 1e6:>10.2f}"
              f"{r['batch_over_k_singles_bytes']:>10.2f}{r['records_per_cpu_second']:>11.1f}")
        print("    stages (wall, summed over buckets): " + ", ".join(
            f"{s} {v:.3f} s" for s, v in r["batch_stage_seconds"].items()))


if __name__ == "__main__":
    main()
