"""Keyword benchmark against an index lookup (printed figures, not a test): keyword lookups on
a keyword build (`generate --keys N --max-value-size B`) interleaved with index queries on the
one-database build of the same values (`generate --records N --record-size B+1`: a value and
its 1-byte length), in one process, one runtime thread each, server CPU seconds (process
time) and bytes on the wire. Random keys, values of exactly B bytes; every looked-up value is
decrypted and checked, absent keys must come back absent, and every keyword request must be
one query of the build's size.

    python3 tests/service/bench_keyword.py --index generated/IDX generated/KW [--trials 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path

from spiralpir.optimizer.build import builder
from spiralpir.optimizer.service import batch_wire, keyword_client, keyword_table
from spiralpir.optimizer.service.binding import Build, ClientKeys, PublicParams, ServerDb
from spiralpir.optimizer.service.keyword_input import KeywordData
from spiralpir.optimizer.service.keyword_server import KEYWORD_FILE, KeywordServer, read_shape


class Index:
    """One index database of random records and a client of it."""

    def __init__(self, source: Path) -> None:
        self.build = Build(builder.build(source, show_progress=False, targets=["library"]))
        n, rs = self.build.num_records, self.build.record_size
        self.n, self.rs = n, rs
        self.data = os.urandom(n * rs)
        self.db = ServerDb(self.build.lib, 1)
        self.db.load_records(self.data, n, rs)
        self.keys = ClientKeys.new(self.build.lib)
        self.pp = PublicParams(self.build.lib, self.keys.public_params())

    def lookup(self) -> tuple[float, int]:
        i = random.randrange(self.n)
        q = self.keys.query(i)
        c0 = time.process_time()
        resp, _ = self.db.answer(self.pp, q)
        cpu = time.process_time() - c0
        assert self.keys.decode(i, resp, self.rs) == self.data[i * self.rs:(i + 1) * self.rs]
        return cpu, len(q) + len(resp)


class Keyword:
    """A keyword table of random keys and values, its server and a client."""

    def __init__(self, source: Path) -> None:
        self.build = Build(builder.build(source, show_progress=False, targets=["library"]))
        self.doc = json.loads((source / KEYWORD_FILE).read_text())["keyword"]
        shape = read_shape(source / KEYWORD_FILE)
        n, size = int(self.doc["keys"]), int(self.doc["max_value_size"])
        self.keys = [os.urandom(16).hex().encode() for _ in range(n)]
        self.values = [os.urandom(size) for _ in range(n)]
        t0 = time.perf_counter()
        self.kt = keyword_table.make_table(KeywordData(self.keys, self.values, "random"), shape)
        self.table_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.srv = KeywordServer(self.build, self.kt, threads=1, progress=False,
                                 log=lambda _m: None)
        self.preprocess_seconds = time.perf_counter() - t0
        self.ck = ClientKeys.new(self.build.lib)
        self.cid = self.srv.setup(self.ck.public_params())
        self.request_sizes: set[int] = set()

    def lookup(self, present: bool) -> tuple[float, int]:
        lay = self.kt.table.layout
        i = random.randrange(len(self.keys))
        key = self.keys[i] if present else b"absent-" + os.urandom(8).hex().encode()
        q = keyword_client.lookup_query(self.ck, lay, key)
        self.request_sizes.add(len(q))
        out, stages, _, _ = self.srv.answer_keyword(self.cid, q)
        resp = batch_wire.unpack(out, lay.h, self.srv.response_bytes, batch_wire.REPLY_MAGIC)
        got = keyword_table.find(lay, key, keyword_client.decode_bins(self.ck, resp),
                                 self.kt.slot_size, self.build.record_size)
        assert got == (self.values[i] if present else None), "wrong lookup"
        return stages["process_cpu"], len(q) + len(out)

    def close(self) -> None:
        self.ck.close()
        self.srv.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("keyword", type=Path)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    kw = Keyword(a.keyword)
    idx = Index(a.index)
    kcpu: list[float] = []
    icpu: list[float] = []
    kbytes = ibytes = 0
    try:
        for t in range(2 * a.trials):  # keyword (present, absent alternating), then index
            c, kbytes = kw.lookup(t % 2 == 0)
            kcpu.append(c)
            c, ibytes = idx.lookup()
            icpu.append(c)
    finally:
        kw.close()
    assert len(kw.request_sizes) == 1, f"keyword requests of sizes {kw.request_sizes}"
    lay = kw.kt.table.layout
    report = {"keys": len(kw.keys), "max_value_size": int(kw.doc["max_value_size"]),
              "h": lay.h, "rows": lay.rows, "columns": lay.columns, "slots": lay.slots,
              "load": len(kw.keys) / lay.capacity, "seeds_tried": kw.kt.table.attempts,
              "expansion": kw.doc["expansion"], "table_build_seconds": kw.table_seconds,
              "preprocess_seconds": kw.preprocess_seconds,
              "keyword_cpu_seconds": statistics.median(kcpu), "keyword_bytes": kbytes,
              "index_cpu_seconds": statistics.median(icpu), "index_bytes": ibytes,
              "cpu_vs_index": statistics.median(k / i for k, i in zip(kcpu, icpu, strict=True)),
              "bytes_vs_index": kbytes / ibytes}
    if a.json:
        print(json.dumps(report, sort_keys=True, indent=1))
        return
    r = report
    print(f"{r['keys']:,} keys x {r['max_value_size']} B values: {r['rows']} x {r['columns']} "
          f"bins of {r['slots']} slots in h = {r['h']} row blocks (load {r['load']:.3f}, "
          f"expansion {r['expansion']:.2f}x, {r['seeds_tried']} seed(s)); table built in "
          f"{r['table_build_seconds']:.1f} s, preprocessed in {r['preprocess_seconds']:.1f} s")
    print(f"  keyword lookup  {r['keyword_cpu_seconds']:.3f} s CPU, {r['keyword_bytes']:,} B "
          "(one query, h responses), one round trip")
    print(f"  index lookup    {r['index_cpu_seconds']:.3f} s CPU, {r['index_bytes']:,} B")
    print(f"  keyword / index {r['cpu_vs_index']:.2f}x CPU (median of paired ratios), "
          f"{r['bytes_vs_index']:.2f}x bytes (goal: <= 2x each)")


if __name__ == "__main__":
    main()
