"""Torture of live updates' durability: a child process applies random batches of record changes
to a binary records file and its store (the Updater every update path uses; half the time as a
live server, whose checkpoints write beside the batches) and is SIGKILLed at a random moment; a
restart (recovery, then the store's full check) must find exactly the old or the new version of
the batch in flight, never a mix, a mapped store must be word for word a fresh build of that
version, and every sampled record must answer as its raw bytes (an oracle built here from the
same seeded batches, never through the code under test).

    python tests/service/update_torture.py [--seconds 45] [--seed N]

Bounded by --seconds (wall time of the loop). The seed (--seed, else $SPIRALPIR_TORTURE_SEED,
else random) is printed first and again on failure. tests/service/test_updates.py runs a short
round.
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from spiralpir.optimizer.build import builder
from spiralpir.optimizer.service import db_updates
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service.binding import Build, ClientKeys, ServerDb
from spiralpir.optimizer.service.pir_server import PirServer

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "generated" / "demo"

# the killed updater: versions v+1, v+2, ... each from batch(seed, version), forever; the store
# brought up to date after every batch, or every 0.3 s (then the journal holds several batches);
# as a live server (argv[8] "live": double buffers, the checkpoint copying chunks from the
# answering buffer on its own thread while batches land between its slices) or at rest
CHILD = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[5])
from update_torture import batch_text
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.service import changes, db_updates
from spiralpir.optimizer.service import records
from spiralpir.optimizer.service.binding import Build
src, root, db, pre = map(Path, sys.argv[1:5])
seed = int(sys.argv[6])
build = Build(builder.instance_paths(src, root))
recs = records.read_records(db, build.record_size)
files, fitted, version = db_updates.open_files(build, db, recs, pre, lambda m: None,
                                               resident=sys.argv[8] == "live")
live = None
if sys.argv[8] == "live":
    import threading
    import time
    from spiralpir.optimizer.service import encode_pace
    from spiralpir.optimizer.service.pir_server import PirServer
    live = PirServer(build, fitted, preprocessed=pre, threads=1, progress=False, version=version,
                     updatable=True, log=lambda m: None).live

    def answering():  # readers on the active buffer, as answers: the checkpoint is paced
        while True:
            with live.reading():
                time.sleep(0.002)

    threading.Thread(target=answering, daemon=True).start()
    encode_pace.CHECKPOINT_SLICE_CHUNKS = 2  # many slices: batches land between them
up = db_updates.Updater(files, version, live, threads=1, store_every=float(sys.argv[7]),
                        due_bytes=0, due_age=0.0)  # a checkpoint at every look: killed inside many
print("ready", version, flush=True)
while True:
    text = batch_text(seed, up.version + 1, fitted.num_records, build.record_size)
    up.apply(changes.parse(text, "batch", fitted.num_records, build.record_size))
    print("applied", up.version, flush=True)
"""


def batch_text(seed: int, version: int, num_records: int, record_size: int) -> str:
    """The CHANGES of ``version`` (deterministic in seed and version): a few to a few
    thousand records, some of them given twice (the later value wins) and some as text."""
    rng = random.Random(seed * 1_000_003 + version)
    count = rng.choice([1, 7, 300, 3000])
    lines = []
    for _ in range(count):
        i = rng.randrange(num_records)
        if rng.random() < 0.2:
            lines.append(f'{{"index": {i}, "value": "v{version}-{i}"}}')
        else:
            size = rng.randrange(record_size + 1)
            lines.append(f'{{"index": {i}, "value_hex": "{rng.randbytes(size).hex()}"}}')
    return "\n".join(lines)


def oracle_apply(data: bytearray, text: str, record_size: int) -> None:
    """The batch applied to raw bytes, read independently of changes.py."""
    import json

    for line in text.splitlines():
        obj = json.loads(line)
        value = obj["value"].encode() if "value" in obj else bytes.fromhex(obj["value_hex"])
        i = obj["index"]
        data[i * record_size : (i + 1) * record_size] = value.ljust(record_size, b"\0")


@dataclass
class Tally:
    iterations: int = 0
    live: int = 0  # of them, kills of a live server (checkpoints beside batches)
    landed: dict[str, int] = field(default_factory=lambda: {"old": 0, "new": 0})
    finished: int = 0  # restarts that completed an interrupted batch from the journal
    mapped: int = 0
    rebuilt: int = 0
    answers: int = 0

    def line(self) -> str:
        return (f"{self.iterations} kills ({self.live} of a live server; after them: old "
                f"version {self.landed['old']}, new {self.landed['new']}; journal finished a "
                f"batch {self.finished}), restarts mapped the store {self.mapped} / rebuilt "
                f"{self.rebuilt}, {self.answers} answers checked")


class Torture:
    def __init__(self, build: Build, root: Path, work: Path, rng: random.Random,
                 seed: int) -> None:
        self.build, self.root, self.work, self.rng, self.seed = build, root, work, rng, seed
        self.rs, self.n = build.record_size, build.num_records
        self.versions = {0: bytearray(rng.randbytes(self.n * self.rs))}
        self.db = work / "db.bin"
        self.pre = work / "db.pre"
        self.db.write_bytes(self.versions[0])
        self.version = 0
        self.tally = Tally()
        self.keys = ClientKeys.new(build.lib)

    def snapshot(self, version: int) -> bytes:
        while max(self.versions) < version:
            v = max(self.versions)
            data = bytearray(self.versions[v])
            oracle_apply(data, batch_text(self.seed, v + 1, self.n, self.rs), self.rs)
            self.versions[v + 1] = data
        return bytes(self.versions[version])

    def iteration(self) -> None:
        live = self.rng.random() < 0.5
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(self.build.source_dir), str(self.root),
             str(self.db), str(self.pre), str(Path(__file__).parent), str(self.seed),
             str(0.3 if live else self.rng.choice([0.0, 0.3])), "live" if live else "rest"],
            stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        first = child.stdout.readline().split()
        assert first[:1] == ["ready"], f"updater did not start: {first}"
        time.sleep(self.rng.uniform(0.0, 1.5))
        child.send_signal(signal.SIGKILL)
        out = child.stdout.read().split()
        child.wait()
        applied = [int(v) for k, v in zip(out[::2], out[1::2], strict=False) if k == "applied"]
        last = applied[-1] if applied else int(first[1])
        self.tally.iterations += 1
        self.tally.live += live
        self.restart(last)

    def restart(self, last: int) -> None:
        notes: list[str] = []
        recs = database.read_records(self.db, self.rs)
        files, fitted, version = db_updates.open_files(self.build, self.db, recs, self.pre,
                                                       notes.append)
        # the batch in flight at the kill (last + 1) is either wholly there or not at all
        assert version in (last, last + 1), f"version {version} after the child applied {last}"
        self.tally.landed["new" if version == last + 1 else "old"] += 1
        self.tally.finished += any("finished the interrupted update to" in m for m in notes)
        want = self.snapshot(version)
        assert self.db.read_bytes() == want, f"records file is not version {version}"
        srv = PirServer(self.build, fitted, preprocessed=self.pre, threads=1, progress=False,
                        version=version, log=notes.append)
        try:
            self.tally.mapped += srv.loaded_from_cache
            self.tally.rebuilt += not srv.loaded_from_cache
            if srv.loaded_from_cache:  # the mapped store, word for word a fresh build's
                fresh = ServerDb(self.build.lib, 2)
                try:
                    fresh.load_records(bytearray(want), self.n, self.rs)
                    assert srv.live.db.words_view() == fresh.words_view(), \
                        f"the store restarted at version {version} is not that version's build"
                finally:
                    fresh.close()
            cid = srv.setup(self.keys.public_params())
            for i in [self.rng.randrange(self.n) for _ in range(4)]:
                resp, _, _, v = srv.answer_versioned(cid, self.keys.query(i))
                got = self.keys.decode(i, resp, self.rs)
                assert v == version and got == want[i * self.rs : (i + 1) * self.rs], \
                    f"record {i} differs from version {version}"
                self.tally.answers += 1
        finally:
            if srv.live is not None:
                srv.live.close()
        leftovers = [p.name for p in self.work.iterdir() if ".tmp" in p.name]
        assert not leftovers, f"temporary files left: {leftovers}"
        self.version = version


def run(seconds: float, seed: int, build: Build | None = None) -> Tally:
    inst = builder.build(DEMO, show_progress=False, targets=["library"])
    build = build or Build(inst)
    root = inst.build_dir.parent.parent
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="update-torture-") as tmp:
        tort = Torture(build, root, Path(tmp), rng, seed)
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                tort.iteration()
        except BaseException:
            print(f"update torture FAILED with seed {seed} after {tort.tally.line()} "
                  f"(SPIRALPIR_TORTURE_SEED={seed} repeats it)", file=sys.stderr)
            raise
    return tort.tally


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=45.0)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else int(
        os.environ.get("SPIRALPIR_TORTURE_SEED") or secrets.randbits(32))
    print(f"update torture: seed {seed}, {args.seconds:g} s", flush=True)
    tally = run(args.seconds, seed)
    print(f"update torture passed: {tally.line()}")


if __name__ == "__main__":
    main()
