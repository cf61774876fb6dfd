"""Stream sessions: prepared queries by stream id, bounded in number and idle time.

A streaming server (pir_server.PirServer with several databases) prepares an uploaded query
once (parse, expansion, conversion) and keeps it here while the client fetches the blocks.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.service.binding import PreparedQuery


class UnknownStream(SpiralpirError):
    """The stream session is unknown, expired, evicted or closed: upload the query again."""


@dataclass
class StreamSession:
    """A prepared query and what it has cost so far (per-block figures exclude the one-time
    part, ``prepared.seconds``)."""

    prepared: PreparedQuery
    client_id: str
    created: float
    last_used: float
    blocks_answered: int = 0
    block_seconds: float = 0.0
    block_bytes: int = 0

    def summary(self) -> str:
        one_time = sum(self.prepared.seconds.values())
        if not self.blocks_answered:
            return f"no blocks answered (one-time {one_time * 1e3:.1f} ms)"
        per = self.block_seconds / self.blocks_answered
        rate = self.block_bytes / self.block_seconds if self.block_seconds > 0 else float("inf")
        return (f"{self.blocks_answered} block(s) answered, {per * 1e3:.1f} ms per block, "
                f"{rate / 1e6:.1f} MB/s without the one-time {one_time * 1e3:.1f} ms")


class StreamSessions:
    """Prepared queries by stream id: at most ``max_sessions`` (least recently used evicted
    first) and none idle for longer than ``ttl`` seconds. A dropped id is remembered (up to
    ``TOMBSTONES``) so that its next use names the bound that dropped it."""

    TOMBSTONES = 4096

    def __init__(self, max_sessions: int, ttl: float,
                 on_drop: Callable[[str, StreamSession, str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if max_sessions < 1:
            raise SpiralpirError(f"max_streams must be >= 1, not {max_sessions}")
        if not ttl > 0:
            raise SpiralpirError(f"stream_ttl must be > 0 seconds, not {ttl}")
        self.max_sessions = max_sessions
        self.ttl = float(ttl)
        self._clock = clock
        self._on_drop = on_drop
        self._sessions: OrderedDict[str, StreamSession] = OrderedDict()
        self._gone: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def _drop(self, sid: str, reason: str, dropped: list[tuple[str, StreamSession, str]]) -> None:
        sess = self._sessions.pop(sid)
        self._gone[sid] = reason
        while len(self._gone) > self.TOMBSTONES:
            self._gone.popitem(last=False)
        dropped.append((sid, sess, reason))

    def _expire(self, now: float, dropped: list[tuple[str, StreamSession, str]]) -> None:
        while self._sessions:
            sid, sess = next(iter(self._sessions.items()))
            if now - sess.last_used <= self.ttl:
                break
            self._drop(sid, f"expired: idle for more than stream_ttl = {self.ttl:g} s "
                            "(serve --stream-ttl)", dropped)

    def _release(self, dropped: list[tuple[str, StreamSession, str]]) -> None:
        for sid, sess, reason in dropped:
            sess.prepared.close()  # freed now, or by the last answer still running on it
            if self._on_drop is not None:
                self._on_drop(sid, sess, reason)

    def add(self, prepared: PreparedQuery, client_id: str) -> str:
        sid = secrets.token_hex(16)
        dropped: list[tuple[str, StreamSession, str]] = []
        with self._lock:
            now = self._clock()
            self._expire(now, dropped)
            self._sessions[sid] = StreamSession(prepared, client_id, now, now)
            while len(self._sessions) > self.max_sessions:
                oldest = next(iter(self._sessions))
                self._drop(oldest, f"evicted: the server keeps at most max_streams = "
                                   f"{self.max_sessions} sessions (serve --max-streams)", dropped)
        self._release(dropped)
        return sid

    def get(self, sid: str) -> StreamSession:
        """The live session (marked used now); UnknownStream naming why it is gone."""
        dropped: list[tuple[str, StreamSession, str]] = []
        with self._lock:
            now = self._clock()
            self._expire(now, dropped)
            sess = self._sessions.get(sid)
            if sess is not None:
                sess.last_used = now
                self._sessions.move_to_end(sid)
            reason = self._gone.get(sid)
        self._release(dropped)
        if sess is not None:
            return sess
        shown = sid[:64]
        if reason is not None:
            raise UnknownStream(f"stream session '{shown}' {reason}; upload the query again "
                                "with POST /v1/stream")
        raise UnknownStream(f"unknown stream session '{shown}': upload a query with "
                            "POST /v1/stream first")

    def close(self, sid: str) -> StreamSession:
        sess = self.get(sid)
        dropped: list[tuple[str, StreamSession, str]] = []
        with self._lock:
            if sid in self._sessions:
                self._drop(sid, "was closed by its client (DELETE)", dropped)
        self._release(dropped)
        return sess

    def sweep(self) -> None:
        """Drop expired sessions (called periodically so idle memory is returned)."""
        dropped: list[tuple[str, StreamSession, str]] = []
        with self._lock:
            self._expire(self._clock(), dropped)
        self._release(dropped)

    def clear(self) -> None:
        dropped: list[tuple[str, StreamSession, str]] = []
        with self._lock:
            for sid in list(self._sessions):
                self._drop(sid, "was dropped: the server stopped", dropped)
        self._release(dropped)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)
