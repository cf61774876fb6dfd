"""Benchmark (printed, not a test): the floor of a split query's Ray calls, without computation.

    python tests/service/bench_ray_floor.py [--share-mb 5.7] [--queries 60]

Two actors on a local 2-CPU cluster do what a split query asks of two shards (ray_shards.py):
each share call returns an array of ``--share-mb`` MB (a shard's share of the expanded query) and
keeps it, each answer call gets the other's share reference boxed, fetches it, and returns a
32 KB partial answer. Prints min and median seconds per query after 10 warm-up queries: what
Ray costs a split query on this machine when nothing else runs, against which the sharded
benchmark's "ray" stage (bench_ray.py) shows what the shards' computation adds to it.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np
import ray


class Shard:
    def __init__(self, share_bytes: int) -> None:
        self.share = np.ones(share_bytes, np.uint8)
        self.own: dict[int, Any] = {}

    def prepare(self, key: int, pp_box: list[Any], query: bytes) -> Any:
        self.own[key] = self.share
        return self.share

    def answer(self, key: int, others_box: list[Any]) -> bytes:
        ray.get(others_box)
        self.own.pop(key)
        return bytes(32808)

    def ping(self) -> int:
        return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--share-mb", type=float, default=5.7)
    ap.add_argument("--queries", type=int, default=60)
    args = ap.parse_args()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             object_store_memory=1 << 30, _system_config={"preallocate_plasma_memory": True})
    remote = ray.remote(num_cpus=1)(Shard)
    shards = [remote.remote(int(args.share_mb * 1e6)) for _ in range(2)]
    ray.get([s.ping.remote() for s in shards])
    pp = ray.put(bytes(1000))
    query = bytes(13888)
    times = []
    for key in range(10 + args.queries):
        start = time.perf_counter()
        made = [s.prepare.remote(key, [pp], query) for s in shards]
        ray.get([s.answer.remote(key, [m for t, m in enumerate(made) if t != k])
                 for k, s in enumerate(shards)])
        times.append(time.perf_counter() - start)
        del made
    times = times[10:]
    print(f"split query's Ray calls, {args.share_mb:g} MB shares, no computation: min "
          f"{min(times) * 1e3:.2f} ms, median {statistics.median(times) * 1e3:.2f} ms "
          f"({args.queries} queries)")
    ray.shutdown()


if __name__ == "__main__":
    main()
