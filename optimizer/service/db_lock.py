"""Who may touch a records file and its store: any number of read-only servers, or one writer
(a server taking updates, or an offline update), never both.

An advisory lock (flock) on the records file itself, held for the process's life: a
read-only server maps the store and must not see it patched under its mapping; a writer
patches both files in place. The lock is released when the process ends, however it ends.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from spiralpir.optimizer.errors import SpiralpirError


class DbLock:
    """A held lock on ``path`` (shared for readers, exclusive for a writer)."""

    def __init__(self, path: Path, writer: bool) -> None:
        self.path = Path(path)
        try:
            self._fd: int | None = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise SpiralpirError(f"cannot open {self.path}: {exc.strerror}") from None
        try:
            fcntl.flock(self._fd, (fcntl.LOCK_EX if writer else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            self._fd = None
            raise SpiralpirError(
                f"{self.path} is in use: " + (
                    "a server or an update holds it (stop it, or send the update to the "
                    "running server with `spiralpir update --server URL`)" if writer else
                    "an update or a server taking updates holds it")) from None

    @classmethod
    def reader_first_writing(cls, path: Path) -> tuple[DbLock, bool]:
        """A reader's lock, held exclusively if no one else holds one (then the reader may
        finish an interrupted update first, and ``downgrade`` afterwards): (lock, exclusive)."""
        try:
            return cls(path, writer=True), True
        except SpiralpirError:
            return cls(path, writer=False), False

    def downgrade(self) -> None:
        """Exclusive to shared (not atomic: another writer may take it in between, and a
        reader then fails to start rather than serve a file being patched)."""
        assert self._fd is not None
        fcntl.flock(self._fd, fcntl.LOCK_SH | fcntl.LOCK_NB)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
