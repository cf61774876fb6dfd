"""The database a server answers from, at a version; with updates, double-buffered.

Every answer runs against one buffer from start to end (``reading`` pins it) and is labelled
with that buffer's version. A read-only database is one buffer (mapped or built, as loaded). An
updatable one is two in-memory copies: answers always start on the *active* one, an update
re-encodes the changed plaintexts in the *other* one once the answers still running on it
(started before the previous switch) have finished, then makes it active in one step under the
lock. That buffer also catches up with the previous batch, which it missed while it was
answering. So no answer reads a half-written plaintext and none waits for an update: the
price is twice the database's memory (runtime/README.md, "Live updates"). The encoding is paced
while answers run (encode_pace.py), so that it does not slow them down.
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
                version: int, threads: int = 1, until: float = 0.0) -> tuple[float, float]:
        """Make ``version`` visible: the records (all of them, already holding the batch)
        re-encoded at ``plaintexts`` in the inactive buffer, which then becomes the active
        one. While answers run, the encoding is spread until ``time.perf_counter()`` reads
        ``until`` (encode_pace.py; a past time: flat out). One caller at a time. Returns the
        seconds waited for answers to leave the inactive buffer and the seconds slept between
        chunks."""
        if not self.updatable:
            raise SpiralpirError("this server's database is read-only (serve "
                                 "--admin-token-file enables updates)")
        start = time.perf_counter()
        with self._cond:
            spare = 1 - self._active
            self._cond.wait_for(lambda: not self._readers[spare])
            waited = time.perf_counter() - start
            catch_up = sorted(set(self._lag) | set(plaintexts))
        # no answer starts on the spare buffer: answers pick the active one
        pacer = encode_pace.Pacer(len(catch_up), until)
        try:
            done = 0
            for chunk in encode_pace.chunks(catch_up, encode_pace.CHUNK_PLAINTEXTS):
                self._bufs[spare].update_records(records, num_records, record_size, chunk,
                                                 threads)
                done += len(chunk)
                pacer.after(done, self._answering())
        except BaseException:
            with self._cond:  # whatever it wrote is redone by the next update
                self._lag = catch_up
            raise
        with self._cond:
            self._active = spare
            self._version = version
            self._lag = list(plaintexts)
        return waited, pacer.slept

    def _answering(self) -> bool:
        with self._cond:
            return self._readers[self._active] > 0

    def close(self) -> None:
        for buf in self._bufs:
            buf.close()
