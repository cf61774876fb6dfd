"""Benchmark (printed, not a test): 2 shards on a local Ray cluster against the single-process
server of the same build, on a random database of the build's full shape.

    python tests/service/bench_ray.py generated/spiral_2e20x256b [--trials 15] [--json OUT]

The one-process server answers with 2 threads (the machine's cores); each shard's actor with 1
thread on 1 CPU; the sharded deployment twice, with the shards expanding the query (the
default) and with the coordinator expanding it once (2 threads) and sending the expanded
query; all on the same queries, interleaved (one-process, sharded, coordinator-expanded, …)
after warm-up, and every sharded response is checked byte for byte against the one-process
one. Prints the minimum and median of each, their ratios, the shards' stage seconds, the
coordinator's combine, and the sizes the shard model (`spiralpir shard-model`) takes: query,
partial answer, GSW cts, and the expanded/converted query a shard could receive instead of
expanding it itself. ``--json`` writes the same figures for `spiralpir shard-model
--measured`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import ray
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service import shards
from spiralpir.optimizer.service.binding import (
    ClientKeys,
    PublicParams,
    ServerDb,
    prepare_for_shards,
    prepared_query_bytes,
)
from spiralpir.optimizer.service.builds import open_build
from spiralpir.optimizer.service.ray_shards import RayShards


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", type=Path)
    ap.add_argument("--trials", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--json", dest="json_out", type=Path, default=None)
    args = ap.parse_args()
    build = open_build(args.build, show_progress=False)
    n, size = build.num_records, build.record_size
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-ray-"))
    work.mkdir(parents=True, exist_ok=True)

    def say(m: str) -> None:
        print(m, file=sys.stderr, flush=True)

    data = np.random.default_rng(1).integers(0, 256, n * size, dtype=np.uint8).tobytes()
    recs = database.Records(bytearray(data), n, size, "random", "binary")
    t = time.perf_counter()
    whole = ServerDb(build.lib, 2)
    whole.load_records(recs.data, n, size)
    say(f"one-process database: {time.perf_counter() - t:.1f} s")
    if not (work / shards.MANIFEST).exists():
        shards.write_shards(build, recs, 2, work, threads=2, progress=False, log=say)
    manifest = shards.read_manifest(work)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    cluster = RayShards(args.build, None, False, manifest, cpus=1.0, threads=1, combine_threads=2)
    keys = ClientKeys.new(build.lib, os.urandom(32))
    ppb = keys.public_params()
    pp = PublicParams(build.lib, ppb)
    cluster.register(pp, ppb)
    one: list[float] = []
    sharded: list[float] = []
    expanded: list[float] = []
    shard_stages: list[dict[str, float]] = []
    rng = np.random.default_rng(2)
    for k in range(args.warmup + args.trials):
        index = int(rng.integers(n))
        q = keys.query(index)
        t0 = time.perf_counter()
        want, _ = whole.answer(pp, q)
        t1 = time.perf_counter()
        got, stages = cluster.answer("bench", pp, q)
        t2 = time.perf_counter()
        got2, _ = cluster.answer("bench", pp, q, expand_at="coordinator")
        t3 = time.perf_counter()
        assert got == want and got2 == want, f"record {index}: the sharded response differs"
        assert keys.decode(index, got, size) == data[index * size:(index + 1) * size]
        if k >= args.warmup:
            one.append(t1 - t0)
            sharded.append(t2 - t1)
            expanded.append(t3 - t2)
            shard_stages.append(stages)
    # sizes for the model: the partial answers of one query
    db0 = shards.open_shard(build, manifest, 0, 1)
    part_gsw, secs0 = db0.answer(pp, keys.query(0), True)
    part, _ = db0.answer(pp, keys.query(0), False)
    out = {
        "build": build.name, "params": build.params, "trials": args.trials,
        "one_process_seconds": {"min": min(one), "median": statistics.median(one)},
        "sharded_seconds": {"min": min(sharded), "median": statistics.median(sharded)},
        "coordinator_expands_seconds": {"min": min(expanded),
                                        "median": statistics.median(expanded)},
        "ratio_min": min(sharded) / min(one),
        "coordinator_expands_ratio_min": min(expanded) / min(one),
        "coordinator_expands_ratio_median": statistics.median(expanded) / statistics.median(one),
        "ratio_median": statistics.median(sharded) / statistics.median(one),
        "shard_stage_seconds_median": {k: statistics.median(s[k] for s in shard_stages)
                                       for k in shard_stages[0]},
        "query_bytes": len(keys.query(0)),
        "partial_answer_bytes": len(part),
        "gsw_tail_bytes": len(part_gsw) - len(part),
        "expanded_query_bytes": prepared_query_bytes(build.params),
        "shard_query_bytes": len(prepare_for_shards(pp, keys.query(0), 2)),
        "shard0_expansion_conversion_seconds": secs0["expansion"] + secs0["conversion"],
        "response_bytes": len(want),
    }
    print(json.dumps(out, indent=1))
    print(f"{build.name}: one process (2 threads) min {min(one) * 1e3:.1f} ms, median "
          f"{statistics.median(one) * 1e3:.1f} ms; 2 shards on Ray (1 CPU each) min "
          f"{min(sharded) * 1e3:.1f} ms, median {statistics.median(sharded) * 1e3:.1f} ms; "
          f"sharded/one-process: min {out['ratio_min']:.3f}, median {out['ratio_median']:.3f}; "
          f"coordinator expanding (2 threads) min {min(expanded) * 1e3:.1f} ms, median "
          f"{statistics.median(expanded) * 1e3:.1f} ms, ratio min "
          f"{out['coordinator_expands_ratio_min']:.3f}, median "
          f"{out['coordinator_expands_ratio_median']:.3f}")
    if args.json_out:
        args.json_out.write_text(json.dumps(out, indent=1) + "\n")
    cluster.close()
    ray.shutdown()


if __name__ == "__main__":
    main()
