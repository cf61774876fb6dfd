"""Output paths checked before a command does its work, so a missing directory or a read-only
one is a one-line error up front rather than a traceback after minutes of work (or after a
private query whose answer is then lost)."""

from __future__ import annotations

import os
from pathlib import Path

from spiralpir.optimizer.errors import SpiralpirError


def check_out_file(path: Path | None, option: str) -> None:
    """An error unless `path` can be created or replaced: its directory exists and is writable,
    and the path itself is not a directory."""
    if path is None:
        return
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise SpiralpirError(f"{option} {path}: directory {parent} does not exist")
    if path.is_dir():
        raise SpiralpirError(f"{option} {path}: is a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise SpiralpirError(f"{option} {path}: directory {parent} is not writable")
