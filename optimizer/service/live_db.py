"""The database a server answers from, at a version; with updates, double-buffered.

Every answer runs against one buffer from start to end (``reading`` pins it) and is labelled
with that buffer's version. A read-only database is one buffer (mapped or built, as loaded). An
updatable one is two in-memory copies: answers always start on the *active* one, an update
re-encodes the changed plaintexts in the *other* one once the answers still running on it
(started before the previous switch) have finished, then makes it active in one step under the
lock; then, once the answers still on the buffer just left have finished, it re-encodes the
same plaintexts there, so the next update finds that buffer at this version. (If that second
pass fails, the next update catches up with it first.) So no answer reads a half-written
plaintext and none waits for an update: the price is twice the database's memory
(runtime/README.md, "Live updates"). The encoding is paced while answers run
(encode_pace.py), so that it does not slow them down.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service import encode_pace
from spiralpir.optimizer.service.binding import ServerDb


class LiveDb:
    """Buffers of one database and the version each answer sees."""

    def __init__(self, db: ServerDb, version: int = 0, updatable: bool = False,
                 threads: int = 0) -> None:
        self._bufs = [db]
        if updatable:  # both buffers in memory: a mapped store is patched on disk in place
            first = ServerDb(db.lib, threads)
            first.copy_from(db)
            second = ServerDb(db.lib, threads)
            second.copy_from(first)
            db.close()
            self._bufs = [first, second]
        self._active = 0
        self._readers = [0] * len(self._bufs)
        self._lag: list[int] = []  # plaintexts the inactive buffer has not caught up with
        self._cond = threading.Condition()
        self._version = version

    @property
    def updatable(self) -> bool:
        return len(self._bufs) == 2

    @property
    def version(self) -> int:
        with self._cond:
            return self._version

    @property
    def db(self) -> ServerDb:
        """The active buffer (for what does not answer queries: sizes, streaming setup)."""
        with self._cond:
            return self._bufs[self._active]

    @contextmanager
    def reading(self) -> Iterator[tuple[ServerDb, int]]:
        """The active buffer and its version, kept from changing until the block exits."""
        with self._cond:
            k = self._active
            self._readers[k] += 1
            version = self._version
        try:
            yield self._bufs[k], version
        finally:
            with self._cond:
                self._readers[k] -= 1
                if not self._readers[k]:
                    self._cond.notify_all()

    def publish(self, records: Any, num_records: int, record_size: int, plaintexts: list[int],
                version: int, threads: int = 1, until: float = 0.0) -> dict[str, float]:
        """Make ``version`` visible: the records (all of them, already holding the batch)
        re-encoded at ``plaintexts`` in the inactive buffer, which then becomes the active
        one; then the other buffer is brought to the same version, so that the next batch
        finds it ready. While answers run, the first pass is spread until halfway to
        ``until`` (a ``time.perf_counter()`` reading) and the second until ``until``
        (encode_pace.py; a past time: flat out). One caller at a time. Returns seconds:
        ``wait`` for answers to leave the buffers written, ``paced`` slept between chunks,
        ``switch`` from the call to the version's visibility."""
        if not self.updatable:
            raise SpiralpirError("this server's database is read-only (serve "
                                 "--admin-token-file enables updates)")
        start = time.perf_counter()
        secs = {"wait": 0.0, "paced": 0.0}
        spare = self._drained(1 - self.active_index, secs)
        with self._cond:
            catch_up = sorted(set(self._lag) | set(plaintexts))
        try:
            self._encode(spare, catch_up, records, num_records, record_size, threads,
                         start + (until - start) / 2, secs)
        except BaseException:
            with self._cond:  # whatever it wrote is redone by the next update
                self._lag = catch_up
            raise
        with self._cond:
            self._active = spare
            self._version = version
            self._lag = list(plaintexts)
        secs["switch"] = time.perf_counter() - start
        # the buffer answers just left: after the answers still on it, the same batch
        other = self._drained(1 - spare, secs)
        self._encode(other, list(plaintexts), records, num_records, record_size, threads,
                     until, secs)  # if it raises, the lag stays for the next update
        with self._cond:
            self._lag = []
        return secs

    @property
    def active_index(self) -> int:
        with self._cond:
            return self._active

    def _drained(self, k: int, secs: dict[str, float]) -> int:
        """Buffer ``k`` once no answer runs on it (no answer starts on an inactive one)."""
        start = time.perf_counter()
        with self._cond:
            self._cond.wait_for(lambda: not self._readers[k])
        secs["wait"] += time.perf_counter() - start
        return k

    def _encode(self, k: int, plaintexts: list[int], records: Any, num_records: int,
                record_size: int, threads: int, until: float, secs: dict[str, float]) -> None:
        pacer = encode_pace.Pacer(len(plaintexts), until)
        done = 0
        try:
            for chunk in encode_pace.chunks(plaintexts, encode_pace.CHUNK_PLAINTEXTS):
                self._bufs[k].update_records(records, num_records, record_size, chunk,
                                             threads)
                done += len(chunk)
                pacer.after(done, self.answering())
        finally:
            secs["paced"] += pacer.slept

    def answering(self) -> bool:
        """Whether an answer runs on the active buffer now."""
        with self._cond:
            return self._readers[self._active] > 0

    def close(self) -> None:
        for buf in self._bufs:
            buf.close()
