"""Benchmark (printed, not a test): 2 shards on a local Ray cluster against the single-process
server of the same build, on a random database of the build's full shape.

    python tests/service/bench_ray.py generated/spiral_2e20x256b [--trials 15] [--json OUT]
        [--workdir DIR (keeps the shard files between runs)] [--modes split,shards,coordinator]
        [--object-store-mb 1024] [--cold-store]

The one-process server answers with 2 threads (the machine's cores); each shard's actor with 1
thread on 1 CPU; the sharded deployment once per mode of query preparation (ray_shards.py
EXPAND_AT): split between the shards (the default), repeated by every shard, or done once by
the coordinator (2 threads) which sends the expanded query; all on the same queries,
interleaved (one-process, then each mode, …) after warm-up, and every sharded response is
checked byte for byte against the one-process one. Prints the minimum and median of each, their
ratios, a profile (median seconds per stage: the slowest shard's for the shards' stages, the
coordinator's combine — the last S folds and the modulus switch — and "ray", the rest of the
coordinator's wall time: Ray's task calls, the transfers and copies of queries, shares and
partial answers, and waits), and the sizes the shard model (`spiralpir shard-model`) takes:
query, partial answer, GSW cts, and the expanded/converted query a shard could receive instead
of expanding it itself. The local cluster's object store (``--object-store-mb``, preallocated)
is written through once by split queries before the warm-up, as in a server that has run a
while (``--cold-store``: not; every share then lands in pages no process touched before, which
cost 4-6.5 ms instead of ~1.5 ms per 9.4 MB share on this machine). ``--json`` writes the same
figures for `spiralpir shard-model --measured`.
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
from typing import Any

import numpy as np
import ray
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service import shards
from spiralpir.optimizer.service.binding import (
    ClientKeys,
    PublicParams,
    ServerDb,
    ShardDb,
    prepare_for_shards,
    prepared_query_bytes,
)
from spiralpir.optimizer.service.builds import open_build
from spiralpir.optimizer.service.ray_shards import RayShards, connect_ray


def split_timeline(cluster: RayShards, stages: dict[str, float], start: float,
                   wall: float) -> dict[str, float]:
    """Where "ray" went in a split query, from the shards' stamps of their last calls:
    to_shards (submission to the first share's start), share_call (a share call's time
    outside the runtime: the share's allocation and Python), exchange (the last share's end to
    the last shard holding every other shard's share: the shares into the object store and
    their way to the other shard; of which return_share, a shard's share call's end to its
    answer call's start: its share written into the object store, and wait_shares, the answer
    call's wait for the others' shares), answer_call (an answer call's time from then on outside the
    runtime), back (the last answer's end to the coordinator holding every partial answer)."""
    st = ray.get([a.last_stamps.remote() for a in cluster.actors])
    ready = max(x["prepare_end"] for x in st)
    return {
        "to_shards": min(x["prepare_start"] for x in st) - start,
        "share_call": max(x["prepare_end"] - x["prepare_start"] for x in st)
        - stages["expansion"] - stages["conversion"],
        "exchange": max(x["shares_in"] for x in st) - ready,
        "return_share": max(x["answer_start"] - x["prepare_end"] for x in st),
        "wait_shares": max(x["shares_in"] - x["answer_start"] for x in st),
        "answer_call": max(x["answer_end"] - x["shares_in"] for x in st)
        - stages["assembly"] - stages["first_dimension"] - stages["folding"],
        "back": start + wall - stages["combine"] - max(x["answer_end"] for x in st),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", type=Path)
    ap.add_argument("--trials", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--json", dest="json_out", type=Path, default=None)
    ap.add_argument("--modes", default="split,shards,coordinator")
    ap.add_argument("--object-store-mb", type=int, default=1024,
                    help="the local cluster's object store, preallocated (0: Ray's default)")
    ap.add_argument("--cold-store", action="store_true",
                    help="skip the warm-up pass through the object store")
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
    connect_ray("local", 2, args.object_store_mb << 20)
    cluster = RayShards(args.build, None, False, manifest, cpus=1.0, threads=1, combine_threads=2,
                        expand_at="split")
    keys = ClientKeys.new(build.lib, os.urandom(32))
    ppb = keys.public_params()
    pp = PublicParams(build.lib, ppb)
    cluster.register(pp, ppb)
    modes = [m for m in args.modes.split(",") if m]
    one: list[float] = []
    one_stages: list[dict[str, float]] = []
    times: dict[str, list[float]] = {m: [] for m in modes}
    profile: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    rng = np.random.default_rng(2)
    if not args.cold_store and args.object_store_mb > 0 and "split" in modes:
        # a long-running server's object store has been written through once: from then on a
        # share is written into memory its processes have mapped before (a 9.4 MB share:
        # ~1.5 ms instead of 4-6.5 ms while every page is new); the warm-up queries get there
        empty = ShardDb(build.lib, manifest.bits, 0, 1)  # a share needs no database
        share = empty.prepare_share(pp, keys.query(0))[0].size
        empty.close()
        cycle = -(-(args.object_store_mb << 20) // (share * manifest.shards)) + 2
        t = time.perf_counter()
        for _ in range(cycle):
            cluster.answer("bench", pp, keys.query(0), expand_at="split")
        say(f"object store written through: {cycle} split queries, "
            f"{time.perf_counter() - t:.1f} s")
    for k in range(args.warmup + args.trials):
        index = int(rng.integers(n))
        q = keys.query(index)
        t0 = time.perf_counter()
        want, st = whole.answer(pp, q)
        wall = time.perf_counter() - t0
        if k >= args.warmup:
            one.append(wall)
            one_stages.append(dict(st))
        for mode in modes:
            t0, u0 = time.perf_counter(), time.time()
            got, stages = cluster.answer("bench", pp, q, expand_at=mode)
            wall = time.perf_counter() - t0
            assert got == want, f"record {index}: the sharded response ({mode}) differs"
            if k >= args.warmup:
                times[mode].append(wall)
                stages["ray"] = wall - sum(stages.values())
                if mode == "split":
                    stages.update(split_timeline(cluster, stages, u0, wall))
                profile[mode].append(stages)
        assert keys.decode(index, want, size) == data[index * size:(index + 1) * size]
    shard_stages = profile.get("shards", [])
    # sizes for the model: the partial answers of one query
    db0 = shards.open_shard(build, manifest, 0, 1)
    part_gsw, secs0 = db0.answer(pp, keys.query(0), True)
    part, _ = db0.answer(pp, keys.query(0), False)
    med = statistics.median
    out: dict[str, Any] = {
        "build": build.name, "params": build.params, "trials": args.trials,
        "one_process_seconds": {"min": min(one), "median": med(one)},
        "one_process_stage_seconds_median": {k: med(s[k] for s in one_stages)
                                             for k in one_stages[0]},
    }
    names = {"split": "split_seconds", "shards": "sharded_seconds",
             "coordinator": "coordinator_expands_seconds"}
    for mode in modes:
        ts = times[mode]
        out[names[mode]] = {"min": min(ts), "median": med(ts),
                            "ratio_min": min(ts) / min(one), "ratio_median": med(ts) / med(one)}
        out[f"{mode}_stage_seconds_median"] = {k: med(s.get(k, 0.0) for s in profile[mode])
                                               for k in profile[mode][0]}
    if shard_stages:  # the shard model's inputs (shards expanding)
        out["ratio_min"] = out["sharded_seconds"]["ratio_min"]
        out["ratio_median"] = out["sharded_seconds"]["ratio_median"]
        out["shard_stage_seconds_median"] = {
            k: med(s[k] for s in shard_stages)
            for k in ("expansion", "conversion", "first_dimension", "folding")}
    out.update({
        "query_bytes": len(keys.query(0)),
        "partial_answer_bytes": len(part),
        "gsw_tail_bytes": len(part_gsw) - len(part),
        "expanded_query_bytes": prepared_query_bytes(build.params),
        "shard_query_bytes": len(prepare_for_shards(pp, keys.query(0), 2)),
        "shard_share_bytes": int(db0.prepare_share(pp, keys.query(0))[0].size),
        "shard0_expansion_conversion_seconds": secs0["expansion"] + secs0["conversion"],
        "response_bytes": len(want),
    })
    print(json.dumps(out, indent=1))
    print(f"{build.name}: one process (2 threads) min {min(one) * 1e3:.1f} ms, median "
          f"{med(one) * 1e3:.1f} ms")
    for mode in modes:
        r = out[names[mode]]
        print(f"  2 shards on Ray (1 CPU each), preparation {mode}: min {r['min'] * 1e3:.1f} ms, "
              f"median {r['median'] * 1e3:.1f} ms; /one process: min {r['ratio_min']:.3f}, "
              f"median {r['ratio_median']:.3f}")
    print("profile, median ms per stage:")
    print("  one process: " + ", ".join(f"{k} {v * 1e3:.1f}" for k, v in
                                        out["one_process_stage_seconds_median"].items()))
    for mode in modes:
        print(f"  {mode}: " + ", ".join(f"{k} {v * 1e3:.1f}" for k, v in
                                       out[f"{mode}_stage_seconds_median"].items()))
    if args.json_out:
        args.json_out.write_text(json.dumps(out, indent=1) + "\n")
    cluster.close()
    ray.shutdown()


if __name__ == "__main__":
    main()
