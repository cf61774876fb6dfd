"""Torture of keyword updates' durability: a child process applies random keyword batches
(inserts, replacements, deletes) to a stored keyword table, its journal and store, and is
SIGKILLed at a random moment; a restart must find exactly the old or the new version of the
batch in flight, with every key's value that version's (an oracle of key -> value built here
from the same seeded batches; keys are looked up in the raw table the way a client does) and
the server's key count equal to it.

    python tests/service/keyword_torture.py [--seconds 20] [--seed N]

Bounded by --seconds. The seed (--seed, else $SPIRALPIR_TORTURE_SEED, else random) is printed
first and again on failure. tests/service/test_keyword_updates.py runs a short round and uses
the helpers here.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from spiralpir.optimizer.build import builder
from spiralpir.optimizer.models.cuckoo_layout import max_keys, tag_bytes_for
from spiralpir.optimizer.service import keyword_table
from spiralpir.optimizer.service.binding import Build
from spiralpir.optimizer.service.keyword_input import KeywordOptions
from spiralpir.optimizer.service.keyword_table import TableShape
from spiralpir.optimizer.service.keyword_updates import StoredTable, open_table

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "generated" / "demo"
OPTS = KeywordOptions()

# the killed updater: versions v+1, v+2, ... each from batch_text(seed, version, state), forever
CHILD = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[5])
import keyword_torture as kt
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.service.binding import Build
from spiralpir.optimizer.service.keyword_updates import open_table
src, root, db, pre = map(Path, sys.argv[1:5])
seed = int(sys.argv[6])
build = Build(builder.instance_paths(src, root), ci=True)
shape = kt.shape_of(build, 2)
stored = open_table(build, shape, db, kt.OPTS, pre, lambda m: None, True)
up = stored.updater(None, 1)
oracle = kt.Oracle(seed, db)
print("ready", up.updater.version, flush=True)
while True:
    v = up.updater.version + 1
    up.apply_text(oracle.text(v), f"batch {v}")
    print("applied", v, flush=True)
"""


def shape_of(build: Build, h: int) -> TableShape:
    """The table a build's database is: its rows, columns and records per plaintext."""
    p = build.lib.params
    m = int(p["items_per_plaintext"])
    return TableShape(h, 1 << int(p["nu_1"]), 1 << int(p["nu_2"]), m, tag_bytes_for(h, m),
                      build.record_size)


def write_keys(path: Path, rng: random.Random, n: int, cap: int) -> dict[bytes, bytes]:
    """A .jsonl key file of n random keys with random hex-digit values of up to cap bytes."""
    pairs = {f"user-{i}-{rng.randrange(10**6)}".encode(): rng.randbytes(cap // 2 + 1).hex()[
        : rng.randrange(cap + 1)].encode() for i in range(n)}
    path.write_text("".join(json.dumps({"key": k.decode(), "value": v.decode()}) + "\n"
                            for k, v in pairs.items()), encoding="utf-8")
    return pairs


def table_values(stored: StoredTable, pool: list[bytes]) -> dict[bytes, bytes]:
    """The value of every key of ``pool`` the stored table holds, found in the raw records of
    its candidate bins as a client finds it (keyword_table.find)."""
    kt = stored.kt
    lay = kt.table.layout
    rs = kt.records.record_size
    data = kt.records.data
    out: dict[bytes, bytes] = {}
    for key in pool:
        column, rows, _ = lay.locate(key)
        bins = [bytes(data[lay.bin_of(r, column) * lay.slots * rs:
                           (lay.bin_of(r, column) + 1) * lay.slots * rs]) for r in rows]
        value = keyword_table.find(lay, key, bins, kt.slot_size, rs)
        if value is not None:
            out[key] = value
    return out


class Oracle:
    """The key -> value map of every version, from the key file and the seeded batches."""

    def __init__(self, seed: int, db: Path) -> None:
        self.seed = seed
        first: dict[bytes, bytes] = {}
        for line in db.read_text(encoding="utf-8").splitlines():
            obj = json.loads(line)
            first[obj["key"].encode()] = obj["value"].encode()
        self.pool = list(first) + [f"added-{i}".encode() for i in range(len(first) // 3)]
        self.states = [first]
        self.texts = [""]

    def text(self, version: int) -> str:
        while len(self.states) <= version:
            rng = random.Random(self.seed * 1_000_003 + len(self.states))
            state = dict(self.states[-1])
            lines = []
            for _ in range(rng.choice([1, 5, 40])):
                key = rng.choice(self.pool)
                if key in state and rng.random() < 0.3:
                    lines.append(json.dumps({"key": key.decode(), "delete": True}))
                    del state[key]
                else:
                    value = f"v{len(self.states)}-{rng.randrange(1000)}".encode()
                    lines.append(json.dumps({"key": key.decode(), "value": value.decode()}))
                    state[key] = value
            self.states.append(state)
            self.texts.append("\n".join(lines))
        return self.texts[version]

    def state(self, version: int) -> dict[bytes, bytes]:
        self.text(version)
        return self.states[version]


@dataclass
class Tally:
    kills: int = 0
    checked: int = 0
    new: int = 0  # restarts that found the batch in flight applied

    def line(self) -> str:
        return (f"{self.kills} kills, {self.checked} restarts checked ({self.new} found the "
                "batch in flight applied)")


def run(seconds: float, seed: int, build: Build | None = None) -> Tally:
    inst = builder.build(DEMO, show_progress=False, targets=["library"])
    build = build or Build(inst, ci=True)
    root = inst.build_dir.parent.parent
    rng = random.Random(seed)
    tally = Tally()
    shape = shape_of(build, 2)
    n = max_keys(shape.h, shape.rows, shape.columns, shape.slots) // 2
    with tempfile.TemporaryDirectory(prefix="keyword-torture-") as tmp:
        db, pre = Path(tmp) / "kv.jsonl", Path(tmp) / "kv.pre"
        write_keys(db, rng, n, keyword_table.value_capacity(shape.slot_size, shape.tag_bytes))
        oracle = Oracle(seed, db)
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                child = subprocess.Popen(
                    [sys.executable, "-c", CHILD, str(build.source_dir), str(root), str(db),
                     str(pre), str(Path(__file__).parent), str(seed)],
                    stdout=subprocess.PIPE, text=True)
                assert child.stdout is not None
                first = child.stdout.readline().split()
                assert first[:1] == ["ready"], f"updater did not start: {first}"
                time.sleep(rng.uniform(0.0, 1.0))
                child.send_signal(signal.SIGKILL)
                out = child.stdout.read().split()
                child.wait()
                tally.kills += 1
                applied = [int(v) for k, v in zip(out[::2], out[1::2], strict=False)
                           if k == "applied"]
                last = applied[-1] if applied else int(first[1])
                stored = open_table(build, shape, db, OPTS, pre, lambda m: None, True)
                try:
                    v = stored.version
                    assert v in (last, last + 1), f"version {v} after the child applied {last}"
                    want = oracle.state(v)
                    assert table_values(stored, oracle.pool) == want, f"table is not version {v}"
                    assert stored.kt.keys == len(want), f"{stored.kt.keys} keys at version {v}"
                finally:
                    stored.close()
                tally.checked += 1
                tally.new += v == last + 1
        except BaseException:
            print(f"keyword torture FAILED with seed {seed} after {tally.line()} "
                  f"(SPIRALPIR_TORTURE_SEED={seed} repeats it)", file=sys.stderr)
            raise
    return tally


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else int(
        os.environ.get("SPIRALPIR_TORTURE_SEED") or secrets.randbits(32))
    print(f"keyword torture seed {seed}", flush=True)
    print(run(args.seconds, seed).line())


if __name__ == "__main__":
    main()
