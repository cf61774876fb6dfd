"""Torture of the stored database: SIGKILL a server start at random points of preprocessing and
saving, change or roll back the data, damage the store, restart, and check every answer against
the raw bytes at index·record_size of the database file (never through the client's index
mapping). A restart must serve the file's current records, from a valid store or rebuilt, and
leave no temporary file of a dead writer behind.

    python tests/service/store_torture.py [--seconds 60] [--seed N]

Bounded by --seconds (wall time of the loop). The seed (--seed, else $SPIRALPIR_TORTURE_SEED, else
random) is printed first and again on failure. tests/service/test_store.py runs a short round.
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from spiralpir.optimizer.build import builder
from spiralpir.optimizer.service import atomic_file
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service.binding import Build, ClientKeys
from spiralpir.optimizer.service.pir_server import PirServer

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "generated" / "demo"

# the killed server start: the same PirServer the CLI builds, on one thread
CHILD = """
import sys
from pathlib import Path
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.service import records
from spiralpir.optimizer.service.binding import Build
from spiralpir.optimizer.service.pir_server import PirServer
src, root, db, pre = map(Path, sys.argv[1:5])
build = Build(builder.instance_paths(src, root))
recs = records.read_records(db, build.record_size)
print("ready", flush=True)
PirServer(build, recs, preprocessed=pre, threads=1, progress=False,
          log=lambda m: print(m.split()[0], flush=True))
print("done", flush=True)
"""


@dataclass
class Tally:
    iterations: int = 0
    killed: dict[str, int] = field(default_factory=lambda: {"preprocessing": 0, "saving": 0,
                                                            "after": 0})
    damaged: dict[str, int] = field(default_factory=lambda: {"bit flips": 0, "other store": 0,
                                                             "truncated": 0})
    mapped: int = 0
    rebuilt: int = 0
    answers: int = 0

    def line(self) -> str:
        return (f"{self.iterations} kills ({', '.join(f'{k} {v}' for k, v in self.killed.items())}"
                f"), damage ({', '.join(f'{k} {v}' for k, v in self.damaged.items())}), "
                f"restarts mapped {self.mapped} / rebuilt {self.rebuilt}, "
                f"{self.answers} answers checked")


class Torture:
    def __init__(self, build: Build, root: Path, work: Path, rng: random.Random) -> None:
        self.build, self.root, self.work, self.rng = build, root, work, rng
        size = build.num_records * build.record_size
        self.versions = [rng.randbytes(size) for _ in range(2)]
        self.db = work / "db.bin"
        self.pre = work / "db.pre"
        self.tally = Tally()
        self.keys = ClientKeys.new(build.lib)
        # another database's valid store, to swap in
        other_db, self.other_pre = work / "other.bin", work / "other.pre"
        atomic_file.write_bytes(other_db, rng.randbytes(size))
        self.restart(other_db, self.other_pre).blocks[0].db.close()
        self.full = self.time_start()
        self.stored = 0  # the version the store holds

    def time_start(self) -> tuple[float, float]:
        """Seconds from the child's "ready" to the end of preprocessing and of saving, for an
        uninterrupted start."""
        atomic_file.write_bytes(self.db, self.versions[0])
        self.pre.unlink(missing_ok=True)
        child = self.spawn()
        start = time.perf_counter()
        assert child.stdout is not None
        marks = {}
        for line in child.stdout:
            marks[line.strip()] = time.perf_counter() - start
        assert child.wait() == 0 and {"preprocessed", "saved", "done"} <= set(marks), marks
        return marks["preprocessed"], marks["saved"]

    def spawn(self) -> subprocess.Popen[str]:
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(DEMO), str(self.root),
                                  str(self.db), str(self.pre)], stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready", "child failed to start"
        return child

    def restart(self, db: Path, pre: Path) -> PirServer:
        recs = database.read_records(db, self.build.record_size)
        return PirServer(self.build, recs, preprocessed=pre, threads=1, progress=False,
                         log=lambda m: None)

    def iteration(self) -> None:
        rng, t = self.rng, self.tally
        # the child starts on the other version than the store's, so it preprocesses and saves
        # over a valid store of the other data
        atomic_file.write_bytes(self.db, self.versions[1 - self.stored])
        child = self.spawn()
        # a third of the kills while preprocessing, two thirds once it said so: while saving
        # and renaming (or just after)
        pre, saved = self.full
        preprocessing = rng.random() < 1 / 3
        if preprocessing:
            time.sleep(rng.uniform(0, pre))
        else:
            assert child.stdout is not None
            line = ""
            while line not in ("preprocessed", "done", "EOF"):
                line = child.stdout.readline().strip() or "EOF"
            preprocessing = line != "preprocessed"  # (a store it wrongly took: the oracle says)
            time.sleep(rng.uniform(0, (saved - pre) * 1.2))
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert child.stdout is not None
        said = {line.strip() for line in child.stdout}
        stage = ("after" if "saved" in said else "saving" if "preprocessed" in said or
                 not preprocessing else "preprocessing")
        t.killed[stage] += 1
        # keep the child's data or change / roll it back; damage the store a quarter of the time
        version = rng.randrange(2) if rng.random() < 0.5 else 1 - self.stored
        atomic_file.write_bytes(self.db, self.versions[version])
        if self.pre.exists() and rng.random() < 0.25:
            self.damage()
        srv = self.restart(self.db, self.pre)
        try:
            t.mapped += srv.loaded_from_cache
            t.rebuilt += not srv.loaded_from_cache
            self.check(srv)
        finally:
            srv.blocks[0].db.close()
        self.stored = version
        leftovers = [p.name for p in self.work.iterdir() if ".tmp" in p.name]
        assert not leftovers, f"temporary files left after the restart: {leftovers}"
        t.iterations += 1

    def damage(self) -> None:
        rng = self.rng
        kind = rng.choice(list(self.tally.damaged))
        self.tally.damaged[kind] += 1
        data = bytearray(self.pre.read_bytes())
        if kind == "bit flips":
            for _ in range(rng.randrange(1, 20)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            self.pre.write_bytes(bytes(data))
        elif kind == "other store":
            shutil.copyfile(self.other_pre, self.pre)
        else:
            self.pre.write_bytes(bytes(data[: rng.randrange(len(data))]))

    def check(self, srv: PirServer) -> None:
        raw = self.db.read_bytes()
        rs = self.build.record_size
        n = len(raw) // rs
        cid = srv.setup(self.keys.public_params())
        for i in [0, n - 1] + [self.rng.randrange(n) for _ in range(2)]:
            resp, _, _ = srv.answer(cid, self.keys.query(i))
            got = self.keys.decode(i, resp, rs)
            assert got == raw[i * rs : (i + 1) * rs], f"wrong record {i}"
            self.tally.answers += 1


def run(seconds: float, seed: int, build: Build | None = None) -> Tally:
    """The torture loop for ``seconds``; returns the tally (raises on the first failure)."""
    inst = builder.build(DEMO, show_progress=False, targets=["library"])
    build = build or Build(inst)
    root = inst.build_dir.parent.parent
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="spiralpir-torture-") as d:
        tort = Torture(build, root, Path(d), rng)
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                tort.iteration()
        except BaseException:
            print(f"store torture FAILED with seed {seed} after {tort.tally.line()} "
                  f"(SPIRALPIR_TORTURE_SEED={seed} repeats it)", file=sys.stderr)
            raise
        finally:
            tort.keys.close()
    return tort.tally


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=None)
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int(os.environ.get("SPIRALPIR_TORTURE_SEED") or
                                                  secrets.randbits(32))
    print(f"store torture: seed {seed}, {a.seconds:g} s", flush=True)
    start = time.monotonic()
    tally = run(a.seconds, seed)
    print(f"store torture: {tally.line()}, 0 wrong, in {time.monotonic() - start:.1f} s")
    if tally.iterations == 0 or tally.killed["saving"] + tally.killed["after"] == 0:
        sys.exit("store torture: no kill landed in or after the save; raise --seconds")


if __name__ == "__main__":
    main()
