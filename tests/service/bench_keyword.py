"""Keyword benchmark against an index lookup (printed figures, not a test): one keyword lookup
on a keyword build (`generate --keys N --max-value-size B`) beside one index query on the
one-database build of the same values (`generate --records N --record-size B+1`: a value and
its 1-byte length), in one process, one thread each, server CPU seconds (process time).
Random keys, values of exactly B bytes; every looked-up value is decrypted and checked, and
absent keys must come back absent.

    python3 tests/service/bench_keyword.py --index generated/IDX generated/KW [--trials 3]
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

from bench_batch import single
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.service import batch_wire, keyword_table
from spiralpir.optimizer.service.binding import Build, ClientKeys
from spiralpir.optimizer.service.keyword_input import KeywordData
from spiralpir.optimizer.service.keyword_server import KEYWORD_FILE, KeywordServer, read_shape


def keyword(source: Path, trials: int) -> dict[str, Any]:
    build = Build(builder.build(source, show_progress=False, targets=["library"]))
    doc = json.loads((source / KEYWORD_FILE).read_text())["keyword"]
    shape = read_shape(source / KEYWORD_FILE)
    n, size = int(doc["keys"]), int(doc["max_value_size"])
    keys = [os.urandom(16).hex().encode() for _ in range(n)]
    values = [os.urandom(size) for _ in range(n)]
    t0 = time.perf_counter()
    kt = keyword_table.make_table(KeywordData(keys, values, "random"), shape.h, shape.slots,
                                  shape.slot_size, shape.tag_bytes)
    table_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    srv = KeywordServer(build, kt, threads=1, progress=False, log=lambda _m: None)
    preprocess = time.perf_counter() - t0
    ck = ClientKeys.new(build.lib)
    lay = kt.table.layout
    cpu: list[float] = []
    request = reply = 0
    try:
        cid = srv.setup(ck.public_params())
        for t in range(2 * trials):  # present and absent keys alternate
            present = t % 2 == 0
            i = random.randrange(n)
            key = keys[i] if present else b"absent-" + os.urandom(8).hex().encode()
            slots, _ = lay.locate(key)
            body = batch_wire.pack([ck.query(s) for s in slots])
            out, stages, _ = srv.answer_batch(cid, body)
            cpu.append(stages["process_cpu"])
            resp = batch_wire.unpack(out, lay.h, srv.response_bytes, batch_wire.REPLY_MAGIC)
            got = keyword_table.find(lay, key, [
                ck.decode(s, r, build.record_size)[: kt.slot_size]
                for s, r in zip(slots, resp, strict=True)])
            assert got == (values[i] if present else None), "wrong lookup"
            request, reply = len(body), len(out)
    finally:
        ck.close()
        srv.close()
    return {"keys": n, "max_value_size": size, "h": lay.h, "slots": lay.slots,
            "table_build_seconds": table_seconds, "preprocess_seconds": preprocess,
            "cpu_seconds": statistics.median(cpu), "request_bytes": request,
            "reply_bytes": reply, "expansion": doc["expansion"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("keyword", type=Path)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    kw = keyword(a.keyword, a.trials)
    one = single(a.index, a.trials)
    one_bytes = one["query_bytes"] + one["response_bytes"]
    kw_bytes = kw["request_bytes"] + kw["reply_bytes"]
    report = {"index": one, "keyword": kw,
              "cpu_vs_index": kw["cpu_seconds"] / one["cpu_seconds"],
              "bytes_vs_index": kw_bytes / one_bytes}
    if a.json:
        print(json.dumps(report, sort_keys=True, indent=1))
        return
    print(f"{kw['keys']:,} keys x {kw['max_value_size']} B values: h = {kw['h']} sub-tables "
          f"of {kw['slots']:,} slots (expansion {kw['expansion']:.2f}x); table built in "
          f"{kw['table_build_seconds']:.1f} s, preprocessed in {kw['preprocess_seconds']:.1f} s")
    print(f"  keyword lookup  {kw['cpu_seconds']:.3f} s CPU, {kw_bytes:,} B "
          f"({kw['request_bytes']:,} request + {kw['reply_bytes']:,} reply), one round trip")
    print(f"  index lookup    {one['cpu_seconds']:.3f} s CPU, {one_bytes:,} B")
    print(f"  keyword / index {report['cpu_vs_index']:.2f}x CPU, "
          f"{report['bytes_vs_index']:.2f}x bytes (goal: <= 2x each)")


if __name__ == "__main__":
    main()
