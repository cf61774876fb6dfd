"""The memory a database served from this machine may take.

The server memory-maps its preprocessed database and the first dimension reads all of it for
every query: a database larger than the memory the process can keep resident is read from disk
again on every query, at a fraction of the planned speed. The planners keep it within
DATABASE_MEMORY_SHARE of the usable memory: the physical memory, or a smaller cgroup limit (a
container's), the rest left to the process, the queries' working sets and the system.
"""

from __future__ import annotations

import os
from pathlib import Path

DATABASE_MEMORY_SHARE = 0.85
CGROUP_LIMIT_FILES = (Path("/sys/fs/cgroup/memory.max"),                       # cgroup v2
                      Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))     # cgroup v1


def physical_memory_bytes() -> int:
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def cgroup_limit_bytes(files: tuple[Path, ...] = CGROUP_LIMIT_FILES) -> int | None:
    """The smallest memory limit set in `files` ("max" or a missing file: none)."""
    limits = []
    for path in files:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            limits.append(int(text))
    return min(limits) if limits else None


def usable_memory_bytes() -> int:
    """Physical memory, or the cgroup's limit when that is smaller (v1 writes 2^63 - 4096 for
    no limit, which the minimum leaves out)."""
    physical = physical_memory_bytes()
    limit = cgroup_limit_bytes()
    return physical if limit is None else min(physical, limit)


def database_budget_bytes() -> int:
    """The preprocessed database bytes this machine can serve from memory."""
    return int(DATABASE_MEMORY_SHARE * usable_memory_bytes())
