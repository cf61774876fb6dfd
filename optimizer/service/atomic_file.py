"""Files that appear whole or not at all: written to ``NAME.tmpPID`` next to the target,
fsynced, renamed over it, and the directory fsynced; plus the clean-up of such temporary
files left behind by killed processes.

A reader therefore sees the old file or the new one, never a prefix of the new one, even
after a crash or power loss; the pid in the name says whose a temporary file is, so a start
removes only files of this naming pattern whose writer is gone.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path


def temp_path(path: Path) -> Path:
    """This process's temporary file for ``path``."""
    return path.with_name(f"{path.name}.tmp{os.getpid()}")


def fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """Yields the temporary path to write; on success fsyncs it and renames it over ``path``,
    on any failure removes it and leaves ``path`` untouched."""
    path = Path(path)
    tmp = temp_path(path)
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)


def write_bytes(path: Path, data: bytes) -> None:
    with replacing(path) as tmp:
        tmp.write_bytes(data)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def remove_stale_temps(path: Path, also: tuple[str, ...] = ()) -> list[Path]:
    """Remove the temporary files of ``path`` (and of ``path`` + each suffix in ``also``)
    written by processes that no longer run; returns what was removed. Only names of exactly
    this pattern count; files of live processes (and of this one) are left alone."""
    path = Path(path)
    names = "|".join(re.escape(path.name + s) for s in ("", *also))
    pattern = re.compile(rf"(?:{names})\.tmp([1-9][0-9]{{0,9}})")
    removed: list[Path] = []
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        m = pattern.fullmatch(entry.name)
        if m is None:
            continue
        pid = int(m.group(1))
        if pid == os.getpid() or _pid_alive(pid) or not entry.is_file() or entry.is_symlink():
            continue
        with contextlib.suppress(FileNotFoundError):
            entry.unlink()
            removed.append(entry)
    return removed
