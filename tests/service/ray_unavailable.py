"""Child process of test_ray.py: a shard set on a local Ray cluster whose shard 1 is killed
for good (no restarts) answers no more; the coordinator refuses with Unavailable (503 with
Retry-After) within its deadline. Usage: ray_unavailable.py BUILD SHARD_DIR SEED; prints what
happened, exit status 0 when it is what it must be."""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

import ray
from spiralpir.optimizer.service import sample_db as sampledb
from spiralpir.optimizer.service import shards
from spiralpir.optimizer.service.binding import ClientKeys, PublicParams
from spiralpir.optimizer.service.builds import open_build
from spiralpir.optimizer.service.pir_server import Unavailable
from spiralpir.optimizer.service.ray_shards import RayShards, connect_ray


def main() -> int:
    build_dir, shard_dir, seed = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    build = open_build(build_dir, show_progress=False)
    connect_ray("local", 2)
    try:
        cluster = RayShards(build_dir, None, False, shards.read_manifest(shard_dir),
                            max_restarts=0, deadline=120.0)
        keys = ClientKeys.new(build.lib, rng.randbytes(32))
        data = keys.public_params()
        pp = PublicParams(build.lib, data)
        cluster.register(pp, data)
        index = rng.randrange(sampledb.SAMPLE_RECORDS)
        resp, _ = cluster.answer("c", pp, keys.query(index))
        if keys.decode(index, resp, build.record_size) != sampledb.sample_record(index):
            print("wrong answer before the kill")
            return 1
        # the first answer loads the shards (slow on a busy machine); the deadline under test
        # is the one after the kill
        cluster.deadline = 3.0
        ray.kill(cluster.actors[1], no_restart=True)
        start = time.monotonic()
        try:
            cluster.answer("c", pp, keys.query(index))
        except Unavailable as exc:
            took = time.monotonic() - start
            print(f"refused: {exc} (retry after {exc.retry_after} s, {took:.1f} s)")
            return 0 if exc.retry_after >= 1 and took < 10 else 1
        print("answered with a shard dead")
        return 1
    finally:
        ray.shutdown()


if __name__ == "__main__":
    sys.exit(main())
