"""Stored databases prove what they hold: the trailer ties a store to its parameters and records,
every chunk is checked before mapping, and a damaged or foreign store is rebuilt (one log line),
never served. Answers are checked against the raw bytes at index·record_size of the database file,
never through the client's own index mapping. Randomness: SPIRALPIR_TEST_SEED repeats a run."""

from __future__ import annotations

import dataclasses
import os
import random
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import store_torture
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models import host_memory
from spiralpir.optimizer.service import atomic_file, store
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service.binding import Build, ClientKeys, StorageError
from spiralpir.optimizer.service.pir_server import PirServer

# -- the store format alone (a synthetic object: header + random payload) -------------------------

def _tie(payload_bytes: int, num_records: int = 7, fp: bytes = b"F" * 16) -> store.Tie:
    return store.Tie(b"P" * 8, 32 + payload_bytes, num_records, 32, fp)


def _write_object(tie: store.Tie, payload: bytes) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        hdr = struct.pack("<4sHH8sQQ", b"SPRL", store.OBJECT_VERSION, 5, tie.params_hash,
                          len(payload), tie.num_records)
        path.write_bytes(hdr + payload)
    return write


def _check(path: Path, tie: store.Tie) -> None:
    with store.opened(path, tie):
        pass


def test_store_round_trip_and_every_damage_is_named(tmp_path: Path, rng: random.Random) -> None:
    payload = rng.randbytes(3 * store.CHUNK_BYTES + 1000)
    tie = _tie(len(payload))
    path = tmp_path / "db.store"
    store.save(path, tie, _write_object(tie, payload))
    _check(path, tie)
    good = path.read_bytes()
    assert good[: tie.object_bytes][32:] == payload
    assert os.listdir(tmp_path) == ["db.store"], "no temporary file left"

    def damaged(data: bytes, match: str, against: store.Tie = tie) -> None:
        path.write_bytes(data)
        with pytest.raises(store.StoreRejected, match=match):
            _check(path, against)

    # one flipped bit anywhere in the object: the chunk it falls in is named
    for _ in range(4):
        pos = rng.randrange(32, tie.object_bytes)
        flipped = bytearray(good)
        flipped[pos] ^= 1 << rng.randrange(8)
        damaged(bytes(flipped), f"chunk {pos // store.CHUNK_BYTES} ")
    # a flipped bit in the trailer
    trailer_pos = rng.randrange(tie.object_bytes, len(good) - 16)
    flipped = bytearray(good)
    flipped[trailer_pos] ^= 0x10
    damaged(bytes(flipped), "trailer is corrupted")
    # truncation anywhere, and the bare object of older versions
    for cut in (rng.randrange(1, tie.object_bytes), tie.object_bytes + 5, len(good) - 1):
        damaged(good[:cut], "truncated|no store trailer|do not fit")
    damaged(good[: tie.object_bytes], "older spiralpir")
    # the right file for other records, shapes or parameters
    damaged(good, "other records", _tie(len(payload), fp=b"G" * 16))
    damaged(good, "built from 7 records", _tie(len(payload), num_records=8))
    damaged(good, "other parameters", dataclasses.replace(tie, params_hash=b"Q" * 8))
    # an object of the previous layout (every first-dimension row stored), its trailer intact
    old = bytearray(good)
    old[4:6] = (store.OBJECT_VERSION - 1).to_bytes(2, "little")
    damaged(bytes(old), f"format version {store.OBJECT_VERSION - 1}, this spiralpir reads "
                        f"{store.OBJECT_VERSION}")
    with pytest.raises(store.StoreMissing):
        _check(tmp_path / "none", tie)
    # a valid store renamed over the path between the check and the mapping
    path.write_bytes(good)
    (tmp_path / "copy").write_bytes(good)
    with store.opened(path, tie) as checked:
        store.ensure_same(path, checked)
        os.replace(tmp_path / "copy", path)
        with pytest.raises(store.StoreRejected, match="replaced while being checked"):
            store.ensure_same(path, checked)


def test_save_failure_leaves_the_old_store(tmp_path: Path) -> None:
    payload = bytes(5000)
    tie = _tie(len(payload))
    path = tmp_path / "db.store"
    store.save(path, tie, _write_object(tie, payload))
    before = path.read_bytes()

    def short(p: Path) -> None:
        p.write_bytes(b"SPRL")

    with pytest.raises(SpiralpirError, match="the runtime wrote 4 bytes"):
        store.save(path, tie, short)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["db.store"]


def test_stale_temporaries_of_dead_writers_only(tmp_path: Path) -> None:
    target = tmp_path / "db.x.spiralpir-db"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    names = {
        f"{target.name}.tmp{dead.pid}": False,  # a killed writer's: removed
        f"{target.name}.json.tmp{dead.pid}": False,  # its old sidecar's temporary: removed
        f"{target.name}.tmp{os.getppid()}": True,  # a live process's: kept
        f"{target.name}.tmp{os.getpid()}": True,  # ours: kept
        f"other.bin.tmp{dead.pid}": True,  # another file's: kept
        f"{target.name}.tmpx{dead.pid}": True,  # not our pattern: kept
        f"{target.name}.tmp0{dead.pid}": True,
    }
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    removed = atomic_file.remove_stale_temps(target, also=(".json",))
    assert sorted(p.name for p in removed) == sorted(n for n, keep in names.items() if not keep)
    assert sorted(os.listdir(tmp_path)) == sorted(n for n, keep in names.items() if keep)


# -- a real build: restart, change, corrupt, truncate while mapped --------------------------------

@pytest.fixture(scope="module")
def ci_build(demo_inst: builder.Instance) -> Build:
    return Build(demo_inst, ci=True)


class Run:
    """One server start on (db, store) with its log lines."""

    def __init__(self, build: Build, db: Path, pre: Path) -> None:
        self.log: list[str] = []
        records = database.read_records(db, build.record_size)
        self.server = PirServer(build, records, preprocessed=pre, threads=1, progress=False,
                                log=self.log.append)
        self.keys = ClientKeys.new(build.lib)
        self.cid = self.server.setup(self.keys.public_params())

    def record(self, i: int) -> bytes:
        resp, _, _ = self.server.answer(self.cid, self.keys.query(i))
        return self.keys.decode(i, resp, self.server.record_size)

    def check(self, db: Path, rng: random.Random, count: int = 3) -> None:
        raw = db.read_bytes()
        rs = self.server.record_size
        n = len(raw) // rs
        for i in [0, n - 1] + [rng.randrange(n) for _ in range(count)]:
            assert self.record(i) == raw[i * rs : (i + 1) * rs], f"record {i}"

    def close(self) -> None:
        self.keys.close()
        for b in self.server.blocks:
            b.db.close()


def _data(build: Build, rng: random.Random) -> bytes:
    return rng.randbytes(build.num_records * build.record_size)


def test_restart_follows_the_data_and_refuses_damaged_stores(
        ci_build: Build, tmp_path: Path, rng: random.Random) -> None:
    db, other_db = tmp_path / "db.bin", tmp_path / "other.bin"
    pre, other_pre = tmp_path / "db.pre", tmp_path / "other.pre"
    atomic_file.write_bytes(db, _data(ci_build, rng))
    atomic_file.write_bytes(other_db, _data(ci_build, rng))
    for d, p in ((db, pre), (other_db, other_pre)):
        run = Run(ci_build, d, p)
        assert not run.server.loaded_from_cache
        run.check(d, rng)
        run.close()
    run = Run(ci_build, db, pre)
    assert run.server.loaded_from_cache, run.log
    run.check(db, rng)
    run.close()

    def restart(why: str) -> None:
        again = Run(ci_build, db, pre)
        assert not again.server.loaded_from_cache, why
        assert any(line.startswith(f"not using {pre}: ") for line in again.log), (why, again.log)
        again.check(db, rng)
        again.close()
        assert Run(ci_build, db, pre).server.loaded_from_cache, f"{why}: rebuilt store"

    # the data changed (same shape): answers follow the new data
    atomic_file.write_bytes(db, _data(ci_build, rng))
    restart("changed data")
    good = pre.read_bytes()
    # bit flips in the payload
    flipped = bytearray(good)
    for _ in range(20):
        flipped[rng.randrange(64, len(good) // 2)] ^= 1 << rng.randrange(8)
    pre.write_bytes(bytes(flipped))
    restart("bit flips")
    # another database's store in its place
    os.replace(other_pre, pre)
    restart("another database's store")
    # truncated
    good = pre.read_bytes()
    pre.write_bytes(good[: rng.randrange(1, len(good))])
    restart("truncated store")


def test_truncated_while_mapped_is_refused_not_a_crash(
        ci_build: Build, tmp_path: Path, rng: random.Random) -> None:
    db, pre = tmp_path / "db.bin", tmp_path / "db.pre"
    atomic_file.write_bytes(db, _data(ci_build, rng))
    Run(ci_build, db, pre).close()
    run = Run(ci_build, db, pre)
    assert run.server.loaded_from_cache
    run.check(db, rng, count=1)
    os.truncate(pre, 4096)  # from outside, while mapped
    for _ in range(2):
        with pytest.raises(StorageError, match="shrank while mapped"):
            run.record(rng.randrange(run.server.num_records))
    run.close()
    again = Run(ci_build, db, pre)  # a restart rebuilds it
    assert not again.server.loaded_from_cache
    again.check(db, rng)
    again.close()


def test_torture_round(demo_inst: builder.Instance, rng: random.Random) -> None:
    """A short round of store_torture.py (CI runs it for 60 s: .ci/store-torture)."""
    tally = store_torture.run(8.0, rng.randrange(1 << 32), Build(demo_inst))
    assert tally.iterations >= 2 and tally.answers >= 8, tally.line()


def test_unwritable_store_is_one_error(tmp_path: Path) -> None:
    tie = _tie(100)
    (tmp_path / "dir.store").mkdir()
    with pytest.raises(SpiralpirError, match=r"cannot write the preprocessed database .*store"):
        store.save(tmp_path / "dir.store", tie, _write_object(tie, bytes(100)))
    assert sorted(os.listdir(tmp_path)) == ["dir.store"]



def test_a_database_beyond_the_memory_budget_is_announced(
        ci_build: Build, tmp_path: Path, rng: random.Random,
        monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "db.bin"
    atomic_file.write_bytes(db, _data(ci_build, rng))
    fits = Run(ci_build, db, tmp_path / "a.pre")
    assert not [m for m in fits.log if m.startswith("warning:")], fits.log
    fits.close()
    monkeypatch.setattr(host_memory, "database_budget_bytes", lambda: 4096)
    small = Run(ci_build, db, tmp_path / "b.pre")
    warnings = [m for m in small.log if m.startswith("warning:")]
    assert len(warnings) == 1 and "read it from disk" in warnings[0], small.log
    assert "4.1 kB" in warnings[0]
    small.check(db, rng)  # served all the same
    small.close()
