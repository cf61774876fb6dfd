"""Streaming benchmark: a whole answer beside its split into the one-time part
(prepare: parse, expansion, conversion) and the per-database part (answer_prepared), on the
same random databases, same thread count, in one process. Prints medians and throughput
without the one-time part; every answer is decrypted and checked.

    python3 tests/service/bench_stream.py generated/demo [--ci] [--threads 1] [--trials 5]
        [--blocks 2] [--json]
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
from spiralpir.optimizer.service.binding import Build, ClientKeys, PublicParams, ServerDb


def bench(source: Path, ci: bool, threads: int, trials: int, blocks: int) -> dict[str, Any]:
    build = Build(builder.build(source, show_progress=False, targets=["library"]), ci=ci)
    n, rs = build.num_records, build.record_size
    datas = [os.urandom(n * rs) for _ in range(blocks)]
    dbs = []
    for blob in datas:
        db = ServerDb(build.lib, threads)
        db.load_records(blob, n, rs)
        dbs.append(db)
    keys = ClientKeys.new(build.lib)
    pp = PublicParams(build.lib, keys.public_params())
    whole: list[float] = []
    prepare: list[float] = []
    per_block: list[float] = []
    for _ in range(trials):
        index = random.randrange(n)
        query = keys.query(index)
        t0 = time.perf_counter()
        resp, _ = dbs[0].answer(pp, query)
        whole.append(time.perf_counter() - t0)
        assert keys.decode(index, resp, rs) == datas[0][index * rs:(index + 1) * rs]
        t0 = time.perf_counter()
        prepared = dbs[0].prepare(pp, query)
        prepare.append(time.perf_counter() - t0)
        for db, blob in zip(dbs, datas, strict=True):
            t0 = time.perf_counter()
            resp, _ = db.answer_prepared(prepared)
            per_block.append(time.perf_counter() - t0)
            assert keys.decode(index, resp, rs) == blob[index * rs:(index + 1) * rs]
        prepared.close()
    db_bytes = n * rs
    m_whole, m_prep, m_block = (statistics.median(x) for x in (whole, prepare, per_block))
    return {
        "build": build.label, "variant": build.variant, "records": n, "record_size": rs,
        "threads": threads, "trials": trials, "blocks": blocks, "correct": True,
        "whole_answer_seconds": m_whole, "prepare_seconds": m_prep,
        "per_block_seconds": m_block,
        "whole_answer_bytes_per_second": db_bytes / m_whole,
        "per_block_bytes_per_second": db_bytes / m_block,
        "load_average": os.getloadavg()[0],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", type=Path, help="generated/NAME")
    ap.add_argument("--ci", action="store_true", help="the build's CI-sized twin")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    r = bench(a.source, a.ci, a.threads, a.trials, a.blocks)
    if a.json:
        print(json.dumps(r, sort_keys=True))
        return
    print(f"{r['build']} [{r['variant']}] {r['records']} x {r['record_size']} B, "
          f"{r['threads']} thread(s), {r['blocks']} block(s), median of {r['trials']}, "
          f"load {r['load_average']:.1f}: whole answer {r['whole_answer_seconds'] * 1e3:.1f} ms "
          f"({r['whole_answer_bytes_per_second'] / 1e6:.1f} MB/s); one-time prepare "
          f"{r['prepare_seconds'] * 1e3:.1f} ms; per block {r['per_block_seconds'] * 1e3:.1f} ms "
          f"({r['per_block_bytes_per_second'] / 1e6:.1f} MB/s without the one-time part)")


if __name__ == "__main__":
    main()
