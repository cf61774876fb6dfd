"""Live updates: change files, versions seen by concurrent answers, the files after updates,
recovery from the journal, the admin endpoint's authentication, and a round of kills
(update_torture.py). Every record is checked against raw bytes kept here (an oracle that applies
the change lines itself), never through the code under test."""

from __future__ import annotations

import json
import mmap
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import requests
import update_torture
from service_helpers import CLI, DEMO, ServerProcess, pin_active
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import changes, db_updates, encode_pace, store, update_journal
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service.binding import Build, ClientKeys, ServerDb
from spiralpir.optimizer.service.db_lock import DbLock
from spiralpir.optimizer.service.pir_client import PirClient
from spiralpir.optimizer.service.pir_server import PirServer, StaleVersion

TOKEN = "s3cret-admin-token-0123456789"


def _raw_db(path: Path, build: Build, rng: random.Random) -> bytearray:
    data = bytearray(rng.randbytes(build.num_records * build.record_size))
    path.write_bytes(data)
    return data


def _open(build: Build, db: Path, pre: Path | None, notes: list[str] | None = None
          ) -> tuple[db_updates.DbFiles, database.Records, int]:
    recs = database.read_records(db, build.record_size)
    return db_updates.open_files(build, db, recs, pre, (notes if notes is not None else []).append)


def _stored(build: Build, tmp_path: Path, rng: random.Random
            ) -> tuple[Path, Path, bytearray, db_updates.DbFiles, int]:
    """A random records file db.bin and its store db.pre, made by a first server start."""
    db, pre = tmp_path / "db.bin", tmp_path / "db.pre"
    data = _raw_db(db, build, rng)
    files, fitted, version = _open(build, db, pre)
    PirServer(build, fitted, preprocessed=pre, threads=1, progress=False, log=lambda m: None)
    return db, pre, data, files, version


def _live_stored(build: Build, tmp_path: Path, rng: random.Random
                 ) -> tuple[Path, Path, bytearray, db_updates.DbFiles, int, PirServer]:
    """_stored(), and a server of it taking updates (two buffers)."""
    db, pre, data, files, version = _stored(build, tmp_path, rng)
    srv = PirServer(build, database.read_records(db, build.record_size), preprocessed=pre,
                    threads=1, progress=False, version=version, updatable=True,
                    log=lambda m: None)
    return db, pre, data, files, version, srv


# -- change files -----------------------------------------------------------------------------

@pytest.mark.parametrize(("line", "message"), [
    ('{"index": 70000, "value": "x"}', r"line 2: field 'index' 70000 out of range"),
    ('{"index": -1, "value": "x"}', r"line 2: field 'index' -1 out of range"),
    ('{"index": 3, "value_hex": "' + "ab" * 33 + '"}',
     r"line 2: field 'value_hex' is 33 bytes, longer than the record size 32"),
    ('{"index": 3, "value": "' + "é" * 17 + '"}', r"line 2: field 'value' is 34 bytes"),
    ('{"index": 3, "value_hex": "abc"}', r"line 2: field 'value_hex' is not an even number"),
    ('{"index": 3}', r"line 2: give exactly one of 'value' \(text\) and 'value_hex'"),
    ('{"index": 3, "value": "a", "value_hex": "00"}', r"line 2: give exactly one"),
    ('{"index": "3", "value": "a"}', r"line 2: field 'index' must be an integer"),
    ('{"index": true, "value": "a"}', r"line 2: field 'index' must be an integer"),
    ('{"index": 3, "value": 5}', r"line 2: field 'value' must be a string"),
    ('{"index": 3, "value": "a", "colour": 1}', r"line 2: unknown field 'colour'"),
    ('{"key": "alice", "value": "a"}', r"line 2: field 'key': a keyword change"),
    ('{"key": "alice", "delete": true}', r"line 2: field 'key': a keyword change"),
    ('[3, "a"]', r"line 2: expected a JSON object"),
    ('{"index": 3, "value": "a"', r"line 2: not valid JSON"),
])
def test_bad_change_lines_name_line_and_field(line: str, message: str) -> None:
    text = '{"index": 1, "value": "ok"}\n' + line + "\n"
    with pytest.raises(changes.BadChanges, match=message + ".*nothing was applied"):
        changes.parse(text, "c.jsonl", 65536, 32)


def test_change_batch_shape() -> None:
    text = ('{"index": 5, "value": "a"}\n\n{"index": 2, "value_hex": "ff00"}\n'
            '{"index": 5, "value": "b"}\n')
    batch = changes.parse(text, "c", 10, 4)
    assert batch.values == {2: b"\xff\x00\0\0", 5: b"b\0\0\0"}  # the later line wins
    assert batch.plaintexts(4) == [0, 1]
    with pytest.raises(changes.BadChanges, match="no changes"):
        changes.parse("\n \n", "c", 10, 4)
    many = "\n".join('{"index": 99, "value": "x"}' for _ in range(9))
    with pytest.raises(changes.BadChanges, match=r"and 4 more bad lines"):
        changes.parse(many, "c", 10, 4)


def test_index_order_matches_sorting(rng: random.Random) -> None:
    """The numpy orderings against Python's sort, on random sparse and dense index sets."""
    for count, n, per in ((0, 10, 3), (1, 10, 3), (5000, 1 << 40, 16), (60_000, 70_000, 64)):
        values = {i: rng.randbytes(2) for i in rng.sample(range(n), count)}
        ordered = changes.ascending(values)
        assert list(ordered.items()) == sorted(values.items())
        assert changes.plaintexts_of(values, per) == sorted({i // per for i in values})


# -- consistency under concurrent answers ------------------------------------------------------

def test_concurrent_answers_see_one_version(demo_inst: builder.Instance, tmp_path: Path,
                                            rng: random.Random) -> None:
    """Random batches land while two threads query continuously: every answer equals the
    record at the version its response names; afterwards the files equal a fresh build."""
    build = Build(demo_inst)
    rs, n = build.record_size, build.num_records
    db, pre = tmp_path / "db.bin", tmp_path / "db.pre"
    oracle = {0: bytes(_raw_db(db, build, rng))}
    files, fitted, version = _open(build, db, pre)
    srv = PirServer(build, fitted, preprocessed=pre, threads=1, progress=False,
                    version=version, updatable=True, log=lambda m: None)
    updater = db_updates.Updater(files, version, srv.live)
    seen: dict[int, int] = {}
    failures: list[str] = []
    stop = threading.Event()
    hot = rng.sample(range(n), 64)  # the batches change these often, so answers see changes

    def query_loop(seed: int) -> None:
        keys = ClientKeys.new(build.lib)
        cid = srv.setup(keys.public_params())
        local = random.Random(seed)
        while not stop.is_set():
            i = local.choice(hot) if local.random() < 0.7 else local.randrange(n)
            resp, _, _, v = srv.answer_versioned(cid, keys.query(i))
            got = keys.decode(i, resp, rs)
            if got != oracle[v][i * rs : (i + 1) * rs]:
                failures.append(f"record {i} at version {v}")
            seen[v] = seen.get(v, 0) + 1
        keys.close()

    threads = [threading.Thread(target=query_loop, args=(rng.randrange(1 << 30),))
               for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for v in range(1, 13):
            lines = [f'{{"index": {rng.choice(hot)}, "value_hex": "{rng.randbytes(rs).hex()}"}}'
                     for _ in range(rng.choice([1, 5, 40]))]
            lines += [f'{{"index": {rng.randrange(n)}, "value": "r{v}"}}' for _ in range(20)]
            text = "\n".join(lines)
            data = bytearray(oracle[v - 1])
            update_torture.oracle_apply(data, text, rs)
            oracle[v] = bytes(data)  # before it can be answered from
            report = updater.apply(changes.parse(text, "batch", n, rs))
            assert report.version == v and report.store_patched
            threading.Event().wait(rng.uniform(0.0, 0.15))
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not failures, failures[:5]
    assert len(seen) >= 3, seen
    final = oracle[12]
    assert db.read_bytes() == final
    # the patched store holds exactly what preprocessing the final records gives
    fresh = ServerDb(build.lib, 1)
    fresh.load_records(bytearray(final), n, rs)
    fresh.save_db(tmp_path / "fresh.pre")
    size = (tmp_path / "fresh.pre").stat().st_size
    with open(pre, "rb") as fh:
        assert fh.read(size) == (tmp_path / "fresh.pre").read_bytes()
    fresh.close()
    with pytest.raises(StaleVersion, match="version 12, the request asks for at least 13"):
        keys = ClientKeys.new(build.lib)
        srv.answer_versioned(srv.setup(keys.public_params()), keys.query(0), min_version=13)
    assert srv.live is not None
    srv.live.close()
    # a restart maps the patched store (its chunk checksums follow the version)
    files, fitted, version = _open(build, db, pre)
    notes: list[str] = []
    again = PirServer(build, fitted, preprocessed=pre, threads=1, progress=False,
                      version=version, log=notes.append)
    assert version == 12 and again.loaded_from_cache, notes


# -- recovery ----------------------------------------------------------------------------------

def test_recovery_finishes_a_committed_batch(demo_inst: builder.Instance, tmp_path: Path,
                                             rng: random.Random,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch whose journal was committed but whose files were not (or half) written is
    finished at the next start: records file, then store."""
    build = Build(demo_inst)
    rs, n = build.record_size, build.num_records
    db, pre, data, files, version = _stored(build, tmp_path, rng)
    text = "\n".join(f'{{"index": {i}, "value": "new{i}"}}' for i in rng.sample(range(n), 300))
    update_torture.oracle_apply(data, text, rs)
    half = dict(list(changes.parse(text, "c", n, rs).values.items())[:150])

    def crash(path: Path, values: dict[int, bytes], record_size: int, image: object) -> None:
        real(path, half, record_size)  # half the records reach the file, then the "kill"
        raise KeyboardInterrupt

    real = update_journal.write_records
    monkeypatch.setattr(update_journal, "write_records", crash)
    with pytest.raises(KeyboardInterrupt):
        db_updates.Updater(files, version).apply(changes.parse(text, "c", n, rs))
    monkeypatch.setattr(update_journal, "write_records", real)
    assert db.read_bytes() != bytes(data)
    notes: list[str] = []
    files, fitted, version = _open(build, db, pre, notes)
    assert version == 1 and db.read_bytes() == bytes(data), notes
    assert any("finished the interrupted update to version 1" in m for m in notes), notes
    srv = PirServer(build, fitted, preprocessed=pre, threads=1, progress=False, version=version,
                    log=notes.append)
    assert srv.loaded_from_cache, notes
    keys = ClientKeys.new(build.lib)
    cid = srv.setup(keys.public_params())
    for i in list(half)[:3] + list(changes.parse(text, "c", n, rs).values)[-3:]:
        resp, _, _, v = srv.answer_versioned(cid, keys.query(i))
        assert v == 1 and keys.decode(i, resp, rs) == bytes(data[i * rs : (i + 1) * rs])


def test_records_file_written_in_runs(tmp_path: Path, rng: random.Random) -> None:
    """Changed records close together are written as one run from the in-memory image (the
    unchanged bytes between them included); the file ends up as with one write per record."""
    rs = 256
    assert update_journal.runs([0, 1, 3, 200, 100_000], rs) == [
        (0, 4 * rs), (200 * rs, 201 * rs), (100_000 * rs, 100_001 * rs)]
    per_run = update_journal.RUN_MAX // rs
    assert update_journal.runs(list(range(per_run + 1)), rs) == [
        (0, per_run * rs), (per_run * rs, (per_run + 1) * rs)]
    n = 5000
    data = bytearray(rng.randbytes(n * rs))
    for image in (False, True):
        db = tmp_path / f"db{int(image)}.bin"
        db.write_bytes(data)
        want = bytearray(data)
        values = {i: rng.randbytes(rs) for i in rng.sample(range(n), 700)}
        for i, v in values.items():
            want[i * rs : (i + 1) * rs] = v
        update_journal.write_records(db, values, rs, want if image else None)
        assert db.read_bytes() == bytes(want)


def test_journal_written_in_pieces(tmp_path: Path, rng: random.Random) -> None:
    """A journal of several pieces reads back whole, its checksum over every piece (a byte
    flipped in the last piece is refused), and a value of the wrong size is refused."""
    rs, n = 48, 1 << 20
    values = changes.ascending({i: rng.randbytes(rs) for i in
                                rng.sample(range(n), 2 * update_journal.PIECE_CHANGES + 5)})
    journal = update_journal.Journal(7, rs, n, b"a" * 16, b"b" * 16, values, b"trailer")
    db = tmp_path / "db.bin"
    update_journal.commit(db, journal)
    assert update_journal.load(db) == journal
    raw = bytearray(update_journal.path_for(db).read_bytes())
    raw[-40] ^= 1
    with pytest.raises(update_journal.JournalError, match="checksum"):
        update_journal.decode(bytes(raw), "j")
    short = update_journal.Journal(7, rs, n, b"a" * 16, b"b" * 16, {3: b"x"})
    with pytest.raises(SpiralpirError, match="record 3 is 1 bytes, not 48"):
        update_journal.commit(db, short)
    assert update_journal.load(db) == journal  # the failed commit left the old one


def test_resident_records_are_private(tmp_path: Path, rng: random.Random) -> None:
    """A live server's records leave the file's copy-on-write mapping for private memory,
    with the same bytes; writing them does not reach the file."""
    db = tmp_path / "db.bin"
    data = rng.randbytes(4096 * 3)
    db.write_bytes(data)
    mapped = database.read_records(db, 64)
    assert isinstance(mapped.data, mmap.mmap)
    resident = database.resident(mapped)
    assert not isinstance(resident.data, mmap.mmap) and bytes(resident.data) == data
    assert (resident.num_records, resident.record_size) == (mapped.num_records, 64)
    resident.data[0:4] = b"\xff\xff\xff\xff"
    assert db.read_bytes() == data and bytes(mapped.data) == data


def test_records_file_follows_the_journal_when_publishing_fails(
        demo_inst: builder.Instance, tmp_path: Path, rng: random.Random,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch whose journal is committed reaches the records file even when publishing it to
    the answering buffers fails, so the checkpoint that empties the journal loses nothing."""
    build = Build(demo_inst)
    rs, n = build.record_size, build.num_records
    db, pre = tmp_path / "db.bin", tmp_path / "db.pre"
    data = _raw_db(db, build, rng)
    files, fitted, version = _open(build, db, pre)
    srv = PirServer(build, fitted, preprocessed=pre, threads=1, progress=False,
                    version=version, updatable=True, log=lambda m: None)
    assert srv.live is not None
    updater = db_updates.Updater(files, version, srv.live)
    text = "\n".join(f'{{"index": {i}, "value": "new{i}"}}' for i in rng.sample(range(n), 40))
    update_torture.oracle_apply(data, text, rs)

    def fail(*args: object, **kwargs: object) -> None:
        raise MemoryError("out of memory while encoding")

    monkeypatch.setattr(srv.live, "publish", fail)
    with pytest.raises(MemoryError):
        updater.apply(changes.parse(text, "c", n, rs))
    assert db.read_bytes() == bytes(data)
    srv.live.close()


def test_deferred_store_checkpoint(demo_inst: builder.Instance, tmp_path: Path,
                                   rng: random.Random) -> None:
    """With the store brought up to date only at checkpoints, the journal holds every change
    since the last one: a start after a kill patches the store with all of them."""
    build = Build(demo_inst)
    rs, n = build.record_size, build.num_records
    db, pre, data, files, version = _stored(build, tmp_path, rng)
    updater = db_updates.Updater(files, version, store_every=3600.0)
    texts = ["\n".join(f'{{"index": {rng.randrange(n)}, "value": "b{k}-{j}"}}'
                       for j in range(rng.choice([1, 50])))
             for k in range(4)]
    for k, text in enumerate(texts):
        if k == 2:
            assert updater.checkpoint()  # the first two batches reach the store
        report = updater.apply(changes.parse(text, "c", n, rs))
        assert not report.store_patched
        update_torture.oracle_apply(data, text, rs)
    journal = update_journal.load(db)
    assert journal is not None and journal.version == 4
    assert len(journal.values) == len(changes.parse("\n".join(texts[2:]), "c", n, rs).values)
    # the checkpoint thread yields the cores to answers and batches
    assert updater._thread is not None
    if sys.platform.startswith("linux"):
        assert os.getpriority(os.PRIO_PROCESS, updater._thread.native_id or 0) == 19
    # killed here: no last checkpoint; a server that shares the file cannot finish the work
    with pytest.raises(SpiralpirError, match="was interrupted and other servers read it"):
        db_updates.open_files(build, db, database.read_records(db, rs), pre, print,
                              may_write=False)
    notes: list[str] = []
    files, fitted, version = _open(build, db, pre, notes)
    assert version == 4 and db.read_bytes() == bytes(data)
    assert any("finished the interrupted update of" in m for m in notes), notes
    srv = PirServer(build, fitted, preprocessed=pre, threads=1, progress=False, version=version,
                    log=notes.append)
    assert srv.loaded_from_cache, notes
    keys = ClientKeys.new(build.lib)
    cid = srv.setup(keys.public_params())
    for i in sorted(changes.parse("\n".join(texts), "c", n, rs).values)[:6]:
        resp, _, _, v = srv.answer_versioned(cid, keys.query(i))
        assert v == 4 and keys.decode(i, resp, rs) == bytes(data[i * rs : (i + 1) * rs])


def test_checkpoint_thread_waits_until_one_is_due(demo_inst: builder.Instance, tmp_path: Path,
                                                  rng: random.Random) -> None:
    """A live server's checkpoint thread leaves the store alone until the pending changes fill
    ``due_bytes`` of journal or the first of them is ``due_age`` seconds old; the journal holds
    them meanwhile, and a checkpoint empties it."""
    build = Build(demo_inst)
    rs, n = build.record_size, build.num_records
    db, pre, data, files, version = _stored(build, tmp_path, rng)
    updater = db_updates.Updater(files, version, store_every=0.02, due_bytes=3 * rs,
                                 due_age=3600.0)

    def pending() -> int:
        journal = update_journal.load(db)
        assert journal is not None
        return len(journal.values)

    def emptied_within(seconds: float) -> bool:
        end = time.monotonic() + seconds
        while pending() and time.monotonic() < end:
            time.sleep(0.02)
        return pending() == 0

    try:
        for k in (1, 2):
            updater.apply(changes.parse(f'{{"index": {k}, "value": "v{k}"}}', "c", n, rs))
        time.sleep(0.3)  # some 15 looks: two records' values are below three
        assert pending() == 2 and not updater.checkpoint_due()
        updater.apply(changes.parse('{"index": 3, "value": "v3"}', "c", n, rs))
        assert emptied_within(20.0)  # three records' values: due
        updater.due_age = 1.0
        updater.apply(changes.parse('{"index": 4, "value": "v4"}', "c", n, rs))
        start = time.monotonic()
        assert pending() == 1
        assert emptied_within(20.0) and time.monotonic() - start >= 0.9  # due by age
    finally:
        updater.close()
    notes: list[str] = []
    _, fitted, reopened = _open(build, db, pre, notes)
    assert reopened == version + 4
    srv = PirServer(build, fitted, preprocessed=pre, threads=1, progress=False, version=reopened,
                    log=notes.append)
    assert srv.loaded_from_cache, notes  # the checkpoints left a valid store of that version
    keys = ClientKeys.new(build.lib)
    cid = srv.setup(keys.public_params())
    for k in (1, 2, 3, 4):
        resp, _, _, v = srv.answer_versioned(cid, keys.query(k))
        assert v == reopened and keys.decode(k, resp, rs).rstrip(b"\0") == f"v{k}".encode()


def test_batches_land_while_a_live_checkpoint_writes(demo_inst: builder.Instance,
                                                     tmp_path: Path, rng: random.Random,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A live checkpoint takes the updater's lock one slice of chunks at a time: batches applied
    while it writes are visible at once, not after it. It ties the store to mixed_base() and
    leaves their changes pending, also when the last of them restores the records of the
    version it began at (every plaintext has words in every chunk of this store, so chunks
    written between the two batches hold the record's intermediate value); a start finishes the
    store from the journal: it maps, and the records answer at the last version."""
    build = Build(demo_inst)
    rs, n = build.record_size, build.num_records
    db, pre, data, files, version, srv = _live_stored(build, tmp_path, rng)
    assert srv.live is not None
    budget = 2.0  # the checkpoint's chunks spread over 2 s while answers run
    chunks = -(-pre.stat().st_size // store.CHUNK_BYTES)
    monkeypatch.setattr(encode_pace, "CHECKPOINT_CHUNKS_PER_SECOND", chunks / budget)
    monkeypatch.setattr(encode_pace, "CHECKPOINT_SLICE_CHUNKS", 1)
    updater = db_updates.Updater(files, version, srv.live, store_every=3600.0)
    first = rng.sample(range(n), 5)
    updater.apply(changes.parse("\n".join(f'{{"index": {i}, "value": "first {i}"}}'
                                          for i in first), "c", n, rs))
    began = (updater.version, files.fingerprint())
    i = rng.choice([x for x in range(n) if x not in first])
    original = bytes(data[i * rs:(i + 1) * rs])
    stop = threading.Event()
    pinner = threading.Thread(target=pin_active, args=(srv.live, stop))
    pinner.start()
    done: list[bool] = []
    writing = threading.Thread(target=lambda: done.append(updater.checkpoint()))
    try:
        writing.start()
        time.sleep(0.3)
        start = time.perf_counter()
        updater.apply(changes.parse(f'{{"index": {i}, "value": "between"}}', "c", n, rs))
        took = time.perf_counter() - start
        keys = ClientKeys.new(build.lib)
        cid = srv.setup(keys.public_params())
        resp, _, _, v = srv.answer_versioned(cid, keys.query(i))
        assert writing.is_alive() and took < budget / 4, took  # visible, the checkpoint not over
        assert v == began[0] + 1 and keys.decode(i, resp, rs).rstrip(b"\0") == b"between"
        time.sleep(0.3)  # more chunks written with "between" in them
        updater.apply(changes.parse(f'{{"index": {i}, "value_hex": "{original.hex()}"}}', "c",
                                    n, rs))
        assert writing.is_alive() and files.fingerprint() == began[1]
    finally:
        writing.join()
        stop.set()
        pinner.join()
    assert done == [True]
    journal = update_journal.load(db)
    assert journal is not None and journal.version == began[0] + 2
    assert journal.base_fingerprint == db_updates.mixed_base(began[1], began[0])
    assert journal.values == {i: original}
    updater.stop()  # as by a kill: no last checkpoint
    srv.live.close()
    notes: list[str] = []
    _, fitted, reopened = _open(build, db, pre, notes)
    assert reopened == began[0] + 2
    assert any("finished the interrupted update of" in m for m in notes), notes
    again = PirServer(build, fitted, preprocessed=pre, threads=1, progress=False,
                      version=reopened, log=notes.append)
    assert again.loaded_from_cache, notes
    keys = ClientKeys.new(build.lib)
    cid = again.setup(keys.public_params())
    for x in [i, *first]:
        resp, _, _, v = again.answer_versioned(cid, keys.query(x))
        want = original if x == i else f"first {x}".encode().ljust(rs, b"\0")
        assert v == reopened and keys.decode(x, resp, rs) == want, x


def test_a_full_journal_wakes_the_checkpoint_thread(demo_inst: builder.Instance,
                                                    tmp_path: Path, rng: random.Random) -> None:
    """A live server's batch that brings the pending changes to ``max_pending`` returns once
    visible, and the checkpoint thread checkpoints at once instead of at its next look."""
    build = Build(demo_inst)
    rs, n = build.record_size, build.num_records
    db, pre, data, files, version, srv = _live_stored(build, tmp_path, rng)
    assert srv.live is not None
    updater = db_updates.Updater(files, version, srv.live, store_every=3600.0, max_pending=3,
                                 due_bytes=1 << 40, due_age=3600.0)
    try:
        for k in (1, 2):
            updater.apply(changes.parse(f'{{"index": {k}, "value": "v{k}"}}', "c", n, rs))
        time.sleep(0.3)
        journal = update_journal.load(db)
        assert journal is not None and len(journal.values) == 2  # not due: left pending
        updater.apply(changes.parse('{"index": 3, "value": "v3"}', "c", n, rs))
        end = time.monotonic() + 20.0
        while time.monotonic() < end:
            journal = update_journal.load(db)
            assert journal is not None
            if not journal.values:
                break
            time.sleep(0.02)
        assert not journal.values and journal.version == version + 3
    finally:
        updater.close()
        srv.live.close()


def test_journal_of_a_replaced_file_is_ignored(demo_inst: builder.Instance, tmp_path: Path,
                                               rng: random.Random) -> None:
    build = Build(demo_inst)
    db = tmp_path / "db.bin"
    _raw_db(db, build, rng)
    files, _, version = _open(build, db, None)
    db_updates.Updater(files, version).apply(changes.parse('{"index": 1, "value": "a"}', "c",
                                                           build.num_records, build.record_size))
    replaced = bytes(_raw_db(db, build, rng))
    notes: list[str] = []
    _, _, version = _open(build, db, None, notes)
    assert version == 2 and db.read_bytes() == replaced
    assert any("does not lead to these records" in m for m in notes), notes


def test_writer_lock_excludes_readers(tmp_path: Path) -> None:
    db = tmp_path / "db.bin"
    db.write_bytes(bytes(64))
    reader = DbLock(db, writer=False)
    also = DbLock(db, writer=False)  # readers share
    with pytest.raises(SpiralpirError, match="in use: a server or an update holds it"):
        DbLock(db, writer=True)
    reader.close()
    also.close()
    writer = DbLock(db, writer=True)
    with pytest.raises(SpiralpirError, match="in use: an update"):
        DbLock(db, writer=False)
    writer.close()


# -- the CLI and the admin endpoint ------------------------------------------------------------

def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)


def test_offline_update_all_or_nothing(demo_inst: builder.Instance, tmp_path: Path,
                                       rng: random.Random) -> None:
    build = Build(demo_inst)
    rs = build.record_size
    db = tmp_path / "db.bin"
    data = _raw_db(db, build, rng)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"index": 4, "value": "fine"}\n{"index": 65536, "value": "x"}\n')
    r = _cli("update", "--build", str(DEMO), "--db", str(db), "--changes", str(bad),
             "--no-cache")
    assert r.returncode != 0 and "line 2: field 'index' 65536 out of range" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert db.read_bytes() == bytes(data)
    assert not update_journal.path_for(db).exists()
    good = tmp_path / "good.jsonl"
    good.write_text('{"index": 4, "value": "fine"}\n{"index": 9, "value_hex": "0102"}\n')
    r = _cli("update", "--build", str(DEMO), "--db", str(db), "--changes", str(good),
             "--no-cache", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["version"] == 1
    data[4 * rs : 5 * rs] = b"fine".ljust(rs, b"\0")
    data[9 * rs : 10 * rs] = b"\x01\x02".ljust(rs, b"\0")
    assert db.read_bytes() == bytes(data)


def test_admin_endpoint(demo_inst: builder.Instance, tmp_path: Path, rng: random.Random,
                        serve_process: Callable[[list[str], Path], ServerProcess]) -> None:
    build = Build(demo_inst)
    rs = build.record_size
    db = tmp_path / "db.bin"
    data = _raw_db(db, build, rng)
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    srv = serve_process(["--build", str(DEMO), "--db", str(db), "--threads", "1",
                         "--admin-token-file", str(token)], tmp_path / "server.log")
    url = srv.url + "/v1/admin/update"
    body = b'{"index": 7, "value": "seven"}\n'
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"},
                    {"Authorization": "Bearer " + TOKEN[:-1]},
                    {"Authorization": "Basic " + TOKEN}, {"Authorization": TOKEN}):
        r = requests.post(url, data=body, headers=headers, timeout=60)
        assert r.status_code == 401 and "admin token" in r.json()["error"], headers
        assert r.headers["WWW-Authenticate"].startswith("Bearer")
    auth = {"Authorization": "Bearer " + TOKEN}
    r = requests.post(url, data=b'{"index": 7, "value": 5}\n', headers=auth, timeout=60)
    assert r.status_code == 400 and "request body line 1: field 'value'" in r.json()["error"]
    r = requests.post(url, data=body, headers=auth, timeout=60)
    assert r.status_code == 200 and r.json()["version"] == 1, r.text
    data[7 * rs : 8 * rs] = b"seven".ljust(rs, b"\0")
    changes_file = tmp_path / "c.jsonl"
    changes_file.write_text('{"index": 8, "value_hex": "ee"}\n')
    r2 = _cli("update", "--server", srv.url, "--admin-token-file", str(token), "--changes",
              str(changes_file))
    assert r2.returncode == 0 and "database version 2" in r2.stdout, r2.stderr
    data[8 * rs : 9 * rs] = b"\xee".ljust(rs, b"\0")
    client = PirClient(srv.url, build=build, state_path=tmp_path / "state")
    try:
        for i in (7, 8, 100):
            got = client.query(i, min_version=2)
            assert got.version == 2 and got.record == bytes(data[i * rs : (i + 1) * rs])
        with pytest.raises(SpiralpirError, match="holds database version 2, the request asks "
                                                 "for at least 3"):
            client.query(7, min_version=3)
    finally:
        client.close()
    assert db.read_bytes() == bytes(data)
    # no token file: no endpoint
    (tmp_path / "other.bin").write_bytes(data)
    plain = serve_process(["--build", str(DEMO), "--db", str(tmp_path / "other.bin"),
                           "--threads", "1", "--no-cache"], tmp_path / "plain.log")
    r = requests.post(plain.url + "/v1/admin/update", data=body, headers=auth, timeout=60)
    assert r.status_code == 404


def test_torture_round(demo_inst: builder.Instance, rng: random.Random) -> None:
    """A short round of update_torture.py (CI runs it longer: .ci/update-torture)."""
    tally = update_torture.run(8.0, rng.randrange(1 << 32), Build(demo_inst))
    assert tally.iterations >= 2 and tally.answers >= 8, tally.line()
