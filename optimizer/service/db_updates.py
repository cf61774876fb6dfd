"""Applying batches of record changes to a database being served or at rest.

``Updater.apply(batch)``, one version at a time:
  1. the batch is checked whole (changes.py) before this point; the records in memory take the
     new values and their fingerprint is computed;
  2. the journal (update_journal.py) is committed: from here the new version survives a kill;
  3. a live server's inactive buffer is re-encoded at the changed plaintexts and switched in
     (live_db.py): the version is visible; then the other buffer is brought to it; while
     answers run, the encoding is spread until ``len(batch) / pace`` seconds after the batch
     arrived (encode_pace.py);
  4. the records file is patched in place (fsynced; close changes in one write from the
     records in memory, update_journal.write_records);
  5. at a checkpoint (Updater: after every batch, or on a live server once due: CHECKPOINT_*) the
     store: the changed plaintexts' words written in place (encoded into the file, or whole
     chunks copied from the answering buffer), those chunks re-hashed, the trailer rewritten
     (store.patch / store.ChunkRewriter). Until then the journal holds every change since the
     last. A live server's checkpoint leaves the pages to the kernel's write-back
     (``sync_store``), spreads its writes while answers run (encode_pace.CHECKPOINT_*), and
     lets batches land between its slices of chunks, so it never delays a version's
     visibility; each chunk is then written at the version current when its slice ran, and
     the changes that landed meanwhile stay pending (``_checkpoint_live``).
Batches that arrive while one is applied wait, and are then applied together as one version
(later changes of an index win), so that many small batches from concurrent callers do not each
pay a publish: every answer still reads one version, and each caller returns once its changes
are durable and visible.
A kill during 3 to 5 leaves files that ``recover`` (run before a database is loaded) finishes
from the journal; a kill before 2 leaves the old version. Only binary records files are
updated in place (the journal holds their records; other formats are rewritten by their owner).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import xxhash
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.params import sizes
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.service import binding, changes, encode_pace, store, update_journal
from spiralpir.optimizer.service import records as database
from spiralpir.optimizer.service.binding import Build
from spiralpir.optimizer.service.changes import ChangeBatch
from spiralpir.optimizer.service.live_db import LiveDb

Log = Callable[[str], None]

# A live server's store checkpoint is due (its thread looks every ``store_every`` seconds) once
# the changes since the last one fill CHECKPOINT_JOURNAL_BYTES of journal, or the first of them
# is CHECKPOINT_AGE seconds old. Any change rewrites 256 to all 2,048 1 MiB chunks of a 2 GiB
# store (every plaintext has words in 256 of them), so a checkpoint every 10 s rewrote the whole
# store every 10 s for a trickle of changes (a 1,000-record batch per 12 s: ~170 MB/s written
# for 21 KB/s of changes). The bounds keep what a batch's journal commit rewrites, and what a
# start replays, to 8 MiB and two minutes of changes.
CHECKPOINT_JOURNAL_BYTES = 8 << 20
CHECKPOINT_AGE = 120.0


def mixed_base(fingerprint: bytes, version: int) -> bytes:
    """What a live checkpoint ties the store to when batches landed while it wrote: the store
    holds version ``version`` (records ``fingerprint``) except at the plaintexts of those
    batches' changes, which may hold any later version. A token no records fingerprint equals,
    so no start takes that store as current: recovery patches the pending changes first, even
    when later batches restored the records of ``version``."""
    return xxhash.xxh3_128_digest(f"spiralpir-mixed-store\n{version}\n".encode() + fingerprint)


def check_updatable(records: database.Records) -> None:
    if records.fmt != "binary":
        raise SpiralpirError(f"{records.source} is a {records.fmt} database: updates change "
                             "binary records files in place (convert it to one first)")


@dataclass
class UpdateReport:
    """What one batch did: its version, sizes and seconds per step."""

    version: int
    records: int
    plaintexts: int
    store_patched: bool
    seconds: dict[str, float] = field(default_factory=dict)
    batches: int = 1  # applied together as this version (this one and those queued with it)

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "records": self.records,
                "plaintexts": self.plaintexts, "store_patched": self.store_patched,
                "batches": self.batches, "seconds": self.seconds}


@dataclass
class _Queued:
    """A batch waiting to be applied, then what became of it."""

    batch: ChangeBatch
    arrived: float
    report: UpdateReport | None = None
    error: BaseException | None = None


class DbFiles:
    """A binary records file, its (optional) store, and the build that reads them; ``records``
    is the in-memory copy fitted to the build (records.fit_to_build)."""

    def __init__(self, build: Build, db_path: Path, records: database.Records,
                 file_record_size: int, store_path: Path | None) -> None:
        check_updatable(records)
        self.build = build
        self.db_path = Path(db_path)
        self.records = records
        self.file_record_size = file_record_size
        self.store_path = Path(store_path) if store_path is not None else None
        params = Parameters.from_literal(build.params)
        self._params_hash = params.params_hash()
        self._object_bytes = sizes.preprocessed_db_bytes(params)
        self.items_per_plaintext = int(build.lib.params["items_per_plaintext"])

    def fingerprint(self) -> bytes:
        r = self.records
        return store.records_fingerprint(r.data, r.num_records, r.record_size)

    def tie(self, fingerprint: bytes) -> store.Tie:
        return store.Tie(self._params_hash, self._object_bytes, self.records.num_records,
                         self.records.record_size, fingerprint)

    def snapshot(self, indices: Any) -> dict[int, bytes]:
        return {i: self.records.record(i) for i in indices}

    def patch_store(self, base: bytes, base_trailer: bytes, new: bytes,
                    plaintexts: list[int], threads: int, sync: bool = True) -> None:
        assert self.store_path is not None
        r = self.records

        def write(path: Path) -> list[int]:
            return binding.patch_db_file(self.build.lib, path, r.data, r.num_records,
                                         r.record_size, plaintexts, store.CHUNK_BYTES, threads)

        store.patch(self.store_path, self.tie(base), base_trailer, self.tie(new), write, sync)


def recover(files: DbFiles, log: Log, may_write: bool = True) -> int:
    """Finish what a kill interrupted (records file, then store) and return the database's
    version (0 without a journal). A journal of other records (the file was replaced) is left
    alone: versions go on from the one after it. Without ``may_write`` (other servers read the
    files) work to finish is an error."""
    for stale in update_journal.remove_stale(files.db_path):
        log(f"removed {stale}, left by an earlier run")
    journal = update_journal.load(files.db_path)
    if journal is None:
        return 0
    what = f"update journal {update_journal.path_for(files.db_path)}"
    shape = (files.records.num_records, files.file_record_size)
    fp = files.fingerprint()
    if (journal.num_records, journal.record_size) != shape:
        log(f"{what} is for {journal.num_records} x {journal.record_size} B records, not "
            f"{shape[0]} x {shape[1]} B: ignored; versions continue at {journal.version + 1}")
        return journal.version + 1
    if fp != journal.fingerprint:
        before = files.snapshot(journal.values)
        update_journal.patch_memory(files.records.data, journal.values,
                                    files.records.record_size)
        if files.fingerprint() != journal.fingerprint:
            update_journal.patch_memory(files.records.data, before, files.records.record_size)
            log(f"{what} does not lead to these records (the file was replaced?): ignored; "
                f"versions continue at {journal.version + 1}")
            return journal.version + 1
        if not may_write:
            raise SpiralpirError(_busy(files.db_path))
        update_journal.write_records(files.db_path, journal.values, files.file_record_size)
        log(f"finished the interrupted update to version {journal.version} in {files.db_path}")
    if files.store_path is not None and journal.store_trailer and \
            store.trailer_for(files.store_path, files.tie(journal.fingerprint)) is None:
        if not may_write:
            raise SpiralpirError(_busy(files.db_path))
        plaintexts = changes.plaintexts_of(journal.values, files.items_per_plaintext)
        try:
            files.patch_store(journal.base_fingerprint, journal.store_trailer,
                              journal.fingerprint, plaintexts, 0)
            log(f"finished the interrupted update of {files.store_path} to version "
                f"{journal.version}")
        except SpiralpirError as exc:  # the store's check at load rebuilds it
            log(f"could not finish updating {files.store_path}: {exc}")
    return journal.version


def yield_cores() -> None:
    """Lower the calling thread's priority to the least (nice 19; Linux sets it per thread).
    A live server's checkpoints only keep the store current for the next start: run beside
    an answer and a batch's parse on two cores, they took turns with the answer (its p99 off
    the CPU 22 ms, at most 114 ms); now they wait for a free core."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


def _busy(db_path: Path) -> str:
    return (f"an update of {db_path} was interrupted and other servers read it: stop them and "
            "start one server alone to finish it")


def open_files(build: Build, db_path: Path, records: database.Records,
               store_path: Path | None, log: Log, may_write: bool = True,
               resident: bool = False) -> tuple[DbFiles, database.Records, int]:
    """The records fitted to the build, their files (after ``recover``) and their version;
    ``resident``: the records copied into private memory (a server taking updates while
    answering, records.resident)."""
    fitted = database.fit_to_build(records, build.num_records, build.record_size, build.label)
    if resident:
        fitted = database.resident(fitted)
    files = DbFiles(build, db_path, fitted, records.record_size, store_path)
    return files, fitted, recover(files, log, may_write)


class Updater:
    """Applies batches to ``files`` (and to a live server's buffers), one at a time.

    The store is brought to the records' version at a *checkpoint*: after every batch when
    ``store_every`` is 0 (offline), else by ``checkpoint()`` (a live server: on a thread of its
    own, which looks every ``store_every`` seconds whether one is due — ``due_bytes`` of
    pending changes' values, or the first of them ``due_age`` seconds old; 0 and 0: at every
    look — and at shutdown), so one pass over the store serves all the batches since the last
    one. Until then the journal holds every change
    since the checkpoint, merged, and the store's trailer of that checkpoint. A live server's
    re-encoding is paced to ``pace`` record updates/s while answers run (0: flat out)."""

    def __init__(self, files: DbFiles, version: int, live: LiveDb | None = None,
                 threads: int = 1, log: Log | None = None, sync_store: bool = True,
                 store_every: float = 0.0, max_pending: int = 1 << 18,
                 pace: float = encode_pace.DEFAULT_RATE,
                 due_bytes: int = CHECKPOINT_JOURNAL_BYTES,
                 due_age: float = CHECKPOINT_AGE) -> None:
        if pace < 0:
            raise SpiralpirError(f"Updater: pace {pace} record updates/s must be >= 0 (0: no "
                                 "pacing)")
        self.files = files
        self.pace = pace
        self.sync_store = sync_store
        self.version = version
        self.live = live
        self.threads = threads
        self.store_every = store_every
        self.max_pending = max_pending
        self.due_bytes = due_bytes
        self.due_age = due_age
        self._log = log or (lambda _m: None)
        self._lock = threading.Lock()
        self._fingerprint = files.fingerprint()
        # the checkpoint: records fingerprint and store trailer (None: no valid store) the
        # pending changes (index -> file-sized value) start from
        self._base = self._fingerprint
        self._trailer = (store.trailer_for(files.store_path, files.tie(self._base))
                         if files.store_path is not None else None)
        self._pending: dict[int, bytes] = {}
        self._pending_since: float | None = None  # when the first pending change was applied
        # a live checkpoint writing: the indices changed since it took its version, and when
        # the first of them was (None: no checkpoint writing)
        self._since: set[int] | None = None
        self._since_first: float | None = None
        self._checkpointing = threading.Lock()  # one live checkpoint at a time
        self._queue: list[_Queued] = []  # batches waiting for the one being applied
        self._turn = threading.Condition()  # guards the queue, ``_leading`` and ``_groups``
        self._leading = False  # a caller is applying a group (or waiting for the lock)
        self._groups = 0  # groups applied (or failed) so far
        self._stop = threading.Event()
        self._wake = threading.Event()  # the checkpoint thread looks now, not at its next look
        self._thread: threading.Thread | None = None
        if store_every > 0:
            self._thread = threading.Thread(target=self._checkpoints, daemon=True,
                                            name="spiralpir-checkpoint")
            self._thread.start()

    def apply(self, batch: ChangeBatch) -> UpdateReport:
        """Apply ``batch`` (with any queued meanwhile: one version) once it is durable and,
        on a live server, visible; raises if that failed (for all batches applied with it)."""
        self._check_size(batch)
        mine = _Queued(batch, time.perf_counter())
        with self._turn:
            self._queue.append(mine)
            # a caller whose batch another applied returns then, without waiting for the lock
            # (that caller may already be applying the next group)
            while mine.report is None and mine.error is None and self._leading:
                self._turn.wait()
            lead = mine.report is None and mine.error is None
            self._leading = self._leading or lead
        if lead:
            try:
                with self._lock:  # between a live checkpoint's slices, or after an offline one
                    with self._turn:
                        group, self._queue = self._queue, []
                    self._apply_group(group)
                    full = self.live is not None and len(self._pending) >= self.max_pending
            finally:
                with self._turn:
                    self._leading = False
                    self._groups += 1
                    self._turn.notify_all()
            if full:  # the journal's bound: the checkpoint thread starts one now
                self._wake.set()
        if mine.error is not None:
            raise mine.error
        assert mine.report is not None
        return mine.report

    def _apply_group(self, group: list[_Queued]) -> None:
        """Apply ``group`` (one caller's batch and those queued with it) as one version; each
        gets its report, or the error, whatever happens."""
        try:
            merged = group[0].batch
            if len(group) > 1:
                values: dict[int, bytes] = {}
                for q in group:
                    values.update(q.batch.values)
                merged = ChangeBatch(changes.ascending(values), merged.record_size)
            report = self._apply(merged, min(q.arrived for q in group))
            if not self.store_every or (self.live is None
                                        and len(self._pending) >= self.max_pending):
                start = time.perf_counter()
                report.store_patched = self._checkpoint()
                report.seconds["store"] = time.perf_counter() - start
        except BaseException as exc:
            for q in group:
                q.error = exc
            raise
        for q in group:
            q.report = UpdateReport(report.version, len(q.batch), report.plaintexts,
                                    report.store_patched, dict(report.seconds), len(group))

    def _check_size(self, batch: ChangeBatch) -> None:
        if batch.record_size != self.files.file_record_size:
            raise SpiralpirError(f"changes of {batch.record_size}-byte values for a file of "
                                 f"{self.files.file_record_size}-byte records")

    def checkpoint_due(self) -> bool:
        """Whether a live server's checkpoint thread checkpoints at its next look."""
        with self._lock:
            if not self._pending:
                return self._base != self._fingerprint
            held = len(self._pending) * self.files.file_record_size
            return (held >= self.due_bytes or len(self._pending) >= self.max_pending
                    or self._pending_since is None
                    or time.monotonic() - self._pending_since >= self.due_age)

    def checkpoint(self) -> bool:
        """Bring the store to the current version now (a live server: to the version current
        when it began, and later changes as far as they landed meanwhile); whether it was
        patched."""
        if self.live is not None:
            with self._checkpointing:
                return self._checkpoint_live(self.live)
        with self._lock:
            return self._checkpoint()

    def close(self) -> None:
        """Stop the checkpoint thread and make a last checkpoint."""
        self.stop()
        self.checkpoint()

    def stop(self) -> None:
        """Stop the checkpoint thread (after its checkpoint, if one runs)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()

    def _checkpoints(self) -> None:
        yield_cores()
        while True:
            self._wake.wait(self.store_every)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                if self.checkpoint_due():
                    self.checkpoint()
            except SpiralpirError as exc:  # the journal still holds the changes
                self._log(f"store checkpoint failed: {exc}")

    def _journal(self, values: dict[int, bytes]) -> update_journal.Journal:
        f = self.files
        return update_journal.Journal(self.version, f.file_record_size, f.records.num_records,
                                      self._base, self._fingerprint, values,
                                      self._trailer or b"")

    def _checkpoint(self) -> bool:
        """The store brought to this version by encoding the changed plaintexts into it (the
        caller holds the lock)."""
        if not self._pending and self._base == self._fingerprint:
            return False
        f = self.files
        patched = False
        if self._trailer is not None and f.store_path is not None:
            plaintexts = changes.plaintexts_of(self._pending, f.items_per_plaintext)
            f.patch_store(self._base, self._trailer, self._fingerprint, plaintexts,
                          self.threads, self.sync_store)
            patched = True
        elif f.store_path is not None:
            self._log(f"{f.store_path} was not a valid store of the records: not patched "
                      "(the next start rebuilds it)")
        self._checkpointed(self._fingerprint, {}, None, patched)
        return patched

    def _checkpoint_live(self, live: LiveDb) -> bool:
        """The store brought to this version from the answering buffer, whose chunks it holds
        (the caller holds ``_checkpointing``, not the lock). It takes the lock one slice of
        chunks at a time, so batches land between slices: a chunk is written at the version
        current then, the checkpoint ties the store to mixed_base() and the changes since it
        began stay pending (their plaintexts may be of any version in the store; recovery and
        the next checkpoint rewrite them). A kill at any point leaves the journal of the last
        commit, whose changes cover every chunk written (recover())."""
        f = self.files
        with self._lock:
            if not self._pending and self._base == self._fingerprint:
                return False
            if self._trailer is None or f.store_path is None:
                return self._checkpoint()
            version, fingerprint = self.version, self._fingerprint
            plaintexts = changes.plaintexts_of(self._pending, f.items_per_plaintext)
            chunks = binding.touched_chunks(f.build.lib, plaintexts, store.CHUNK_BYTES)
            writer = store.ChunkRewriter(f.store_path, f.tie(self._base), self._trailer)
            self._since, self._since_first = set(), None
        try:
            pacer = encode_pace.Pacer(len(chunks), time.perf_counter() + len(chunks)
                                      / encode_pace.CHECKPOINT_CHUNKS_PER_SECOND)
            done = 0
            for piece in encode_pace.chunks(chunks, encode_pace.CHECKPOINT_SLICE_CHUNKS):
                self._after_waiting_group()
                with self._lock, live.reading() as (db, _):
                    writer.write(piece, db.words_view())
                done += len(piece)
                pacer.after(done, live.answering())
            with self._lock:
                since = self._since
                base = mixed_base(fingerprint, version) if since else fingerprint
                writer.finish(f.tie(base), self.sync_store)
                self._checkpointed(base, {i: self._pending[i] for i in since},
                                   self._since_first, True)
        finally:
            writer.close()
            with self._lock:
                self._since = None
        return True

    def _after_waiting_group(self) -> None:
        """Return once the group whose caller waits for the lock (if one does) is applied: the
        lock is not fair, and a checkpoint behind its schedule would take it again slice after
        slice while a batch waited."""
        with self._turn:
            if self._leading:
                groups = self._groups
                self._turn.wait_for(lambda: self._groups != groups)

    def _checkpointed(self, base: bytes, pending: dict[int, bytes], since: float | None,
                      patched: bool) -> None:
        """The store holds ``base`` but for ``pending`` (whose first change was at ``since``):
        the journal says so (the caller holds the lock)."""
        f = self.files
        self._base = base
        self._trailer = (store.trailer_for(f.store_path, f.tie(base))
                         if patched and f.store_path is not None else None)
        self._pending = pending
        self._pending_since = since if pending else None
        update_journal.commit(f.db_path, self._journal(changes.ascending(pending)))

    def _apply(self, batch: ChangeBatch, arrived: float) -> UpdateReport:
        f = self.files
        r = f.records
        self._check_size(batch)
        clock = time.perf_counter()
        secs: dict[str, float] = {}

        def lap(step: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            secs[step] = now - clock
            clock = now

        before = f.snapshot(batch.values)
        update_journal.patch_memory(r.data, batch.values, r.record_size)
        pending = {**self._pending, **batch.values}
        old = (self.version, self._fingerprint)
        try:
            self.version, self._fingerprint = self.version + 1, f.fingerprint()
            update_journal.commit(f.db_path, self._journal(changes.ascending(pending)))
        except BaseException:
            update_journal.patch_memory(r.data, before, r.record_size)
            self.version, self._fingerprint = old
            raise
        if not self._pending:
            self._pending_since = time.monotonic()
        self._pending = pending
        if self._since is not None:  # a live checkpoint is writing: these stay pending after it
            self._since.update(batch.values)
            if self._since_first is None:
                self._since_first = time.monotonic()
        lap("commit")
        plaintexts = batch.plaintexts(f.items_per_plaintext)
        try:
            if self.live is not None:
                secs.update(self.live.publish(
                    r.data, r.num_records, r.record_size, plaintexts, self.version,
                    self.threads, encode_pace.deadline(arrived, len(batch), self.pace)))
                lap("publish")
        finally:
            # the journal holds the batch from here on: the records file follows it even when
            # publishing fails, since the next checkpoint empties the journal
            update_journal.write_records(f.db_path, batch.values, f.file_record_size,
                                         r.data if r.record_size == f.file_record_size
                                         else None)
        lap("records_file")
        return UpdateReport(self.version, len(batch), len(plaintexts), False, secs)
