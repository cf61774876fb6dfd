"""Batches that arrive while one is applied land together as one version: each caller gets
that version, later changes of an index win, both buffers, the records file and the store hold
exactly the merged records (checked against raw bytes kept here), and a failure fails every
batch of the group having applied none of them."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest
import update_torture
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import changes, db_updates, update_journal
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service.binding import Build, ClientKeys, ServerDb
from spiralpir.optimizer.service.pir_server import PirServer


def _served(build: Build, tmp_path: Path, rng: random.Random
            ) -> tuple[Path, Path, bytearray, db_updates.Updater, PirServer]:
    db, pre = tmp_path / "db.bin", tmp_path / "db.pre"
    data = bytearray(rng.randbytes(build.num_records * build.record_size))
    db.write_bytes(data)
    files, fitted, version = db_updates.open_files(
        build, db, database.read_records(db, build.record_size), pre, lambda m: None)
    srv = PirServer(build, fitted, preprocessed=pre, threads=1, progress=False, version=version,
                    updatable=True, log=lambda m: None)
    assert srv.live is not None
    updater = db_updates.Updater(files, version, srv.live, store_every=3600.0)
    return db, pre, data, updater, srv


def _queue_behind_a_held_lock(updater: db_updates.Updater, batches: list[changes.ChangeBatch]
                              ) -> tuple[list[db_updates.UpdateReport], list[BaseException]]:
    """Apply ``batches`` from one thread each, all queued (in order) before any may run."""
    reports: list[db_updates.UpdateReport] = []
    errors: list[BaseException] = []

    def send(batch: changes.ChangeBatch) -> None:
        try:
            reports.append(updater.apply(batch))
        except SpiralpirError as exc:
            errors.append(exc)

    lock = updater._lock
    threads = []
    with lock:  # a batch being applied
        for k, batch in enumerate(batches, 1):
            threads.append(threading.Thread(target=send, args=(batch,)))
            threads[-1].start()
            deadline = time.monotonic() + 10
            while len(updater._queue) < k:  # queued in this order
                assert time.monotonic() < deadline, "a batch never queued"
                time.sleep(0.001)
    for t in threads:
        t.join()
    return reports, errors


def test_queued_batches_land_as_one_version(demo_inst: builder.Instance, tmp_path: Path,
                                            rng: random.Random) -> None:
    build = Build(demo_inst)
    rs, n = build.record_size, build.num_records
    db, pre, data, updater, srv = _served(build, tmp_path, rng)
    shared = rng.randrange(n)  # changed by every batch: the last one wins
    texts = ["\n".join([f'{{"index": {shared}, "value": "batch {k}"}}']
                       + [f'{{"index": {rng.randrange(n)}, "value": "b{k}-{j}"}}'
                          for j in range(rng.choice([1, 20]))])
             for k in range(3)]
    start = updater.version
    reports, errors = _queue_behind_a_held_lock(
        updater, [changes.parse(t, "c", n, rs) for t in texts])
    assert not errors
    for text in texts:
        update_torture.oracle_apply(data, text, rs)
    assert {r.version for r in reports} == {start + 1} and updater.version == start + 1
    assert sorted(r.batches for r in reports) == [3, 3, 3]
    assert sorted(r.records for r in reports) == sorted(
        len(changes.parse(t, "c", n, rs)) for t in texts)
    assert data[shared * rs : shared * rs + 7] == b"batch 2"
    assert db.read_bytes() == bytes(data)
    journal = update_journal.load(db)
    assert journal is not None and journal.version == start + 1
    fresh = ServerDb(build.lib, 1)
    live = srv.live
    assert live is not None
    try:
        fresh.load_records(bytearray(data), n, rs)
        want = bytes(fresh.words_view())
        for k, buf in enumerate(live._bufs):
            assert bytes(buf.words_view()) == want, f"buffer {k}"
        keys = ClientKeys.new(build.lib)
        cid = srv.setup(keys.public_params())
        resp, _, _, v = srv.answer_versioned(cid, keys.query(shared))
        assert v == start + 1 and keys.decode(shared, resp, rs) == bytes(
            data[shared * rs : (shared + 1) * rs])
        assert updater.checkpoint()
        files, fitted, version = db_updates.open_files(
            build, db, database.read_records(db, rs), pre, lambda m: None)
        again = PirServer(build, fitted, preprocessed=pre, threads=1, progress=False,
                          version=version, log=lambda m: None)
        assert version == start + 1 and again.loaded_from_cache
    finally:
        fresh.close()
        live.close()


def test_a_failed_group_fails_every_batch(demo_inst: builder.Instance, tmp_path: Path,
                                          rng: random.Random,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    build = Build(demo_inst)
    rs, n = build.record_size, build.num_records
    db, _, data, updater, srv = _served(build, tmp_path, rng)
    before = updater.version
    batches = [changes.parse(f'{{"index": {rng.randrange(n)}, "value": "x{k}"}}', "c", n, rs)
               for k in range(3)]

    def full_disk(*_args: object) -> None:
        raise SpiralpirError("cannot write the update journal: No space left on device")

    monkeypatch.setattr(update_journal, "commit", full_disk)
    reports, errors = _queue_behind_a_held_lock(updater, batches)
    assert not reports and len(errors) == 3
    assert all("No space left" in str(e) for e in errors)
    assert updater.version == before and db.read_bytes() == bytes(data)
    assert bytes(memoryview(updater.files.records.data)[: len(data)]) == bytes(data)
    assert srv.live is not None and srv.live.version == before
    srv.live.close()


def test_a_batch_of_another_record_size_is_refused_alone(demo_inst: builder.Instance,
                                                         tmp_path: Path,
                                                         rng: random.Random) -> None:
    build = Build(demo_inst)
    _, _, _, updater, srv = _served(build, tmp_path, rng)
    bad = changes.ChangeBatch({0: b"x" * (build.record_size + 1)}, build.record_size + 1)
    with pytest.raises(SpiralpirError, match=rf"changes of {build.record_size + 1}-byte values"):
        updater.apply(bad)
    assert not updater._queue and updater.version == 0
    assert srv.live is not None
    srv.live.close()


def test_concurrent_callers_each_see_their_changes(demo_inst: builder.Instance, tmp_path: Path,
                                                    rng: random.Random) -> None:
    """Eight threads send batches of their own records at once: each call returns a version
    above the caller's previous one at which its changes are visible, no version is skipped,
    and the files end up holding every change."""
    build = Build(demo_inst)
    rs, n = build.record_size, build.num_records
    db, pre, data, updater, srv = _served(build, tmp_path, rng)
    own = rng.sample(range(n), 8 * 12)
    texts = [[f'{{"index": {own[t * 12 + k]}, "value": "t{t}-{k}"}}' for k in range(12)]
             for t in range(8)]
    seen: list[list[int]] = [[] for _ in range(8)]
    keys = ClientKeys.new(build.lib)
    cid = srv.setup(keys.public_params())
    lock = threading.Lock()  # one ClientKeys: queries built and decoded one at a time
    wrong: list[str] = []

    def send(t: int) -> None:
        for k, line in enumerate(texts[t]):
            report = updater.apply(changes.parse(line, "c", n, rs))
            seen[t].append(report.version)
            i = own[t * 12 + k]
            with lock:
                resp, _, _, v = srv.answer_versioned(cid, keys.query(i))
                got = keys.decode(i, resp, rs)
            if v < report.version or got[: len(f"t{t}-{k}")] != f"t{t}-{k}".encode():
                wrong.append(f"thread {t} batch {k}: version {v}, {got[:8]!r}")

    threads = [threading.Thread(target=send, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not wrong, wrong
    for versions in seen:
        assert versions == sorted(set(versions)), versions
    assert sorted({v for vs in seen for v in vs}) == list(range(1, updater.version + 1))
    assert updater.version <= 8 * 12
    for t in range(8):
        for line in texts[t]:
            update_torture.oracle_apply(data, line, rs)
    assert db.read_bytes() == bytes(data)
    keys.close()
    assert srv.live is not None
    srv.live.close()
