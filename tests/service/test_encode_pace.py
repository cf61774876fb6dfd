"""Pacing of an update's re-encoding: the schedule (with a fake clock), and a live database
updated in many small chunks, paced while an answer runs, that ends holding exactly what a fresh
build of the new records holds."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest
from service_helpers import pin_active
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import changes, db_updates, encode_pace
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service.binding import Build, ServerDb
from spiralpir.optimizer.service.pir_server import PirServer


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.now += s


def test_schedule_spreads_work_over_the_budget() -> None:
    c = FakeClock()
    p = encode_pace.Pacer(10, 102.0, c.clock, c.sleep)  # 2 s from now
    c.now += 0.05  # the first two units took 0.05 s: wait until 2/10 of 2 s
    p.after(2, busy=True)
    assert c.now == pytest.approx(100.4)
    c.now += 1.0  # slower than the schedule: no wait
    p.after(4, busy=True)
    assert c.sleeps == [pytest.approx(0.35)]
    c.now += 0.01
    p.after(8, busy=False)  # no answer running: no wait, however far ahead
    assert len(c.sleeps) == 1
    p.after(10, busy=True)  # the last unit ends no earlier than the budget
    assert c.now == pytest.approx(102.0)
    assert p.slept == pytest.approx(sum(c.sleeps))


def test_no_budget_never_waits() -> None:
    c = FakeClock()
    for units, until in ((10, 100.0), (10, 99.0), (0, 105.0)):
        p = encode_pace.Pacer(units, until, c.clock, c.sleep)
        p.after(units, busy=True)
    assert not c.sleeps
    with pytest.raises(ValueError, match="must be >= 0"):
        encode_pace.Pacer(-3, 1.0)


def test_deadline_follows_the_rate() -> None:
    assert encode_pace.deadline(7.0, 30_000, 15_000.0) == pytest.approx(9.0)
    assert encode_pace.deadline(7.0, 30_000, 0.0) == 7.0
    with pytest.raises(ValueError, match=r"pace -1.0 record updates/s must be >= 0"):
        encode_pace.deadline(7.0, 1, -1.0)


def test_chunks_cover_the_items_in_order() -> None:
    items = list(range(0, 70, 3))
    parts = encode_pace.chunks(items, 5)
    assert [len(c) for c in parts] == [5, 5, 5, 5, 4]
    assert [x for c in parts for x in c] == items
    assert encode_pace.chunks([], 5) == []
    with pytest.raises(ValueError, match="chunk size 0"):
        encode_pace.chunks(items, 0)


def _words(db: ServerDb) -> bytes:
    return bytes(db.words_view())


def test_paced_chunked_publish_equals_a_fresh_build(demo_inst: builder.Instance,
                                                     tmp_path: Path, rng: random.Random,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of ~150 plaintexts are encoded 8 at a time into each buffer in turn; with
    answers running on the active buffer the encoding is spread over the batch's budget, without
    one it is not. After each batch both buffers equal a fresh build of the records."""
    monkeypatch.setattr(encode_pace, "CHUNK_PLAINTEXTS", 8)
    build = Build(demo_inst)
    rs, n = build.record_size, build.num_records
    db = tmp_path / "db.bin"
    data = bytearray(rng.randbytes(n * rs))
    db.write_bytes(data)
    files, fitted, version = db_updates.open_files(
        build, db, database.read_records(db, rs), None, lambda m: None)
    srv = PirServer(build, fitted, threads=1, progress=False, version=version, updatable=True,
                    log=lambda m: None)
    assert srv.live is not None
    records = 150
    budget = 0.4
    updater = db_updates.Updater(files, version, srv.live, pace=records / budget)
    fresh = ServerDb(build.lib, 1)
    try:
        for round_ in range(3):
            values = {i: rng.randbytes(rs) for i in rng.sample(range(n), records)}
            text = "\n".join(f'{{"index": {i}, "value_hex": "{v.hex()}"}}'
                             for i, v in values.items())
            for i, v in values.items():
                data[i * rs : (i + 1) * rs] = v
            batch = changes.parse(text, "batch", n, rs)
            answering = round_ != 1
            start = time.perf_counter()
            stop = threading.Event()
            # "answers" of 5 ms one after the other on whichever buffer is active: the
            # encoding nearly always finds one running, and each buffer is soon left
            pinner = threading.Thread(target=pin_active, args=(srv.live, stop))
            if answering:
                pinner.start()
            try:
                report = updater.apply(batch)
            finally:
                stop.set()
                if answering:
                    pinner.join()
            took = time.perf_counter() - start
            assert report.plaintexts > 8 * 10
            if answering:
                assert report.seconds["paced"] > 0 and took >= budget
            else:
                assert report.seconds["paced"] == 0
            fresh.load_records(bytearray(data), n, rs)
            want = _words(fresh)
            assert report.seconds["switch"] < took
            for k, buf in enumerate(srv.live._bufs):  # both: the next batch finds either ready
                assert _words(buf) == want, f"batch {round_ + 1}, buffer {k}"
    finally:
        fresh.close()
        srv.live.close()


def test_negative_pace_is_refused(demo_inst: builder.Instance, tmp_path: Path) -> None:
    build = Build(demo_inst)
    db = tmp_path / "db.bin"
    db.write_bytes(bytes(build.num_records * build.record_size))
    files, _, version = db_updates.open_files(
        build, db, database.read_records(db, build.record_size), None, lambda m: None)
    with pytest.raises(SpiralpirError, match=r"Updater: pace -1.0 record updates/s must be >= 0"):
        db_updates.Updater(files, version, pace=-1.0)


def test_checkpoint_paced_while_answers_run(demo_inst: builder.Instance, tmp_path: Path,
                                            rng: random.Random,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A live server's store checkpoint spreads its chunks over their budget while answers run,
    goes flat out without answers, and leaves a store that a restart maps (its chunk checksums
    follow the version)."""
    build = Build(demo_inst)
    rs, n = build.record_size, build.num_records
    db, pre = tmp_path / "db.bin", tmp_path / "db.pre"
    db.write_bytes(rng.randbytes(n * rs))
    files, fitted, version = db_updates.open_files(
        build, db, database.read_records(db, rs), pre, lambda m: None)
    srv = PirServer(build, fitted, preprocessed=pre, threads=1, progress=False, version=version,
                    updatable=True, log=lambda m: None)
    assert srv.live is not None
    updater = db_updates.Updater(files, version, srv.live, store_every=3600.0)
    budget = 1.0
    chunks = -(-pre.stat().st_size // (1 << 20))
    monkeypatch.setattr(encode_pace, "CHECKPOINT_CHUNKS_PER_SECOND", chunks / budget)
    try:
        for case in ("answering", "idle"):
            updater.apply(changes.parse(f'{{"index": {rng.randrange(n)}, "value": "{case}"}}',
                                        "c", n, rs))
            stop = threading.Event()
            pinner = threading.Thread(target=pin_active, args=(srv.live, stop))
            if case != "idle":
                pinner.start()
            start = time.perf_counter()
            try:
                assert updater.checkpoint()
            finally:
                stop.set()
                if case != "idle":
                    pinner.join()
            took = time.perf_counter() - start
            if case == "answering":
                assert took >= budget * 0.99, case
            else:
                assert took < budget / 2, case
        files, fitted, version = db_updates.open_files(
            build, db, database.read_records(db, rs), pre, lambda m: None)
        again = PirServer(build, fitted, preprocessed=pre, threads=1, progress=False,
                          version=version, log=lambda m: None)
        assert version == 2 and again.loaded_from_cache
    finally:
        srv.live.close()
