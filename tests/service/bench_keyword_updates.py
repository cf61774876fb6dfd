"""Keyword update benchmark (printed figures, not a test): a keyword build's table of N random
keys stored and served with updates enabled (double-buffered, no store file), then batches of 1,
1,000 and 100,000 keyword changes (a third inserts of new keys, a third replacements, a third
deletes) applied through KeywordUpdater.apply_text while one thread looks keys up continuously
with real decryption. For each batch: changes per second and the time until visible (apply_text
up to the switch of the answering buffer), with its steps; then the lookup latency
during and between updates, and the seconds a restart takes to find the keys in the stored
table.

    python3 tests/service/bench_keyword_updates.py generated/KW [--sizes 1,1000,100000]
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

from spiralpir.optimizer.build import builder
from spiralpir.optimizer.service import batch_wire, keyword_client, keyword_table
from spiralpir.optimizer.service.binding import Build, ClientKeys
from spiralpir.optimizer.service.keyword_input import KeywordOptions
from spiralpir.optimizer.service.keyword_server import KEYWORD_FILE, KeywordServer, read_shape
from spiralpir.optimizer.service.keyword_updates import open_table


def batch(rng: random.Random, state: dict[bytes, bytes], n: int, size: int, tag: str) -> str:
    present = rng.sample(sorted(state), min(len(state), 2 * n // 3 + 1))
    lines = []
    for i in range(n):
        kind = i % 3
        if kind == 0:
            key = f"{tag}-{i}".encode()
            value = os.urandom(size // 2).hex().encode()
            state[key] = value
            lines.append(json.dumps({"key": key.decode(), "value": value.decode()}))
        elif kind == 1:
            key = present.pop()
            value = os.urandom(size // 2).hex().encode()
            state[key] = value
            lines.append(json.dumps({"key": key.decode(), "value": value.decode()}))
        else:
            key = present.pop()
            del state[key]
            lines.append(json.dumps({"key": key.decode(), "delete": True}))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", type=Path)
    ap.add_argument("--sizes", default="1,1000,100000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    build = Build(builder.build(args.build, show_progress=False, targets=["library"]))
    shape = read_shape(args.build / KEYWORD_FILE)
    doc = json.loads((args.build / KEYWORD_FILE).read_text())["keyword"]
    n, size = int(doc["keys"]), int(doc["max_value_size"])
    rng = random.Random(1)
    with tempfile.TemporaryDirectory(prefix="bench-kwupd-") as tmp:
        db = Path(tmp) / "kv.jsonl"
        state = {os.urandom(8).hex().encode(): os.urandom(size // 2).hex().encode()
                 for _ in range(n)}
        with open(db, "w", encoding="utf-8") as fh:
            for k, v in state.items():
                fh.write(json.dumps({"key": k.decode(), "value": v.decode()}) + "\n")
        t0 = time.perf_counter()
        stored = open_table(build, shape, db, KeywordOptions(), None, lambda m: None, True)
        t1 = time.perf_counter()
        srv = KeywordServer(build, stored.kt, threads=1, progress=False, log=lambda m: None,
                            version=stored.version, updatable=True)
        t2 = time.perf_counter()
        print(f"{n:,} keys x {size} B, table {shape.rows} x {shape.columns} x {shape.slots} "
              f"(h = {shape.h}): filled and stored in {t1 - t0:.1f} s, preprocessed (two "
              f"buffers) in {t2 - t1:.1f} s")
        ku = stored.updater(srv.live, 1, sync_store=False, store_every=10.0)  # as `serve`
        lay = stored.kt.table.layout
        latencies: list[tuple[float, bool]] = []
        busy = threading.Event()
        stop = threading.Event()
        snapshot = dict(state)

        def lookups() -> None:
            keys = ClientKeys.new(build.lib)
            cid = srv.setup(keys.public_params())
            local = random.Random(2)
            pool = sorted(snapshot)
            while not stop.is_set():
                key = local.choice(pool)
                during = busy.is_set()
                q = keyword_client.lookup_query(keys, lay, key)
                s = time.perf_counter()
                reply, _, _, _ = srv.answer_keyword(cid, q)
                latencies.append((time.perf_counter() - s, during or busy.is_set()))
                bins = keyword_client.decode_bins(keys, batch_wire.unpack(
                    reply, lay.h, srv.response_bytes, batch_wire.REPLY_MAGIC, "reply"))
                keyword_table.find(lay, key, bins, stored.kt.slot_size, build.record_size)
            keys.close()

        reader = threading.Thread(target=lookups)
        reader.start()
        try:
            for count in (int(x) for x in args.sizes.split(",")):
                for r in range(args.repeat if count < 100_000 else 1):
                    text = batch(rng, state, count, size, f"b{count}-{r}")
                    busy.set()
                    s = time.perf_counter()
                    rep = ku.apply_text(text, f"batch of {count}")
                    total = time.perf_counter() - s
                    busy.clear()
                    sec = rep["seconds"]  # the other buffer's pass follows the switch
                    visible = total - sec.get("publish", 0.0) + sec.get("switch", 0.0)
                    steps = ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in rep["seconds"].items())
                    print(f"batch of {count:,}: visible after {visible:.3f} s, "
                          f"{count / total:,.0f} changes/s ({rep['records']} slots in "
                          f"{rep['plaintexts']} plaintexts, {rep['moves']} cuckoo moves; "
                          f"{steps})", flush=True)
                    time.sleep(0.5)
        finally:
            stop.set()
            reader.join()
        for label, flag in (("idle", False), ("during updates", True)):
            xs = sorted(t for t, d in latencies if d == flag)
            if xs:
                print(f"lookup {label}: {len(xs)} lookups, median {statistics.median(xs):.3f} s,"
                      f" max {xs[-1]:.3f} s")
        ku.close()
        assert srv.live is not None
        srv.live.close()
        stored.close()
        t3 = time.perf_counter()
        again = open_table(build, shape, db, KeywordOptions(), None, lambda m: None, False)
        print(f"restart: key file read and {again.kt.keys:,} keys found in the stored table "
              f"in {time.perf_counter() - t3:.1f} s (version {again.version})")
        assert again.kt.keys == len(state)
        again.close()


if __name__ == "__main__":
    main()
