"""Pacing an update's re-encoding so that answers running meanwhile keep their latency.

Re-encoding plaintexts streams writes over the whole database; an answer running at the same
time (on the other core) shares memory bandwidth and cache with it and slows down by up to
1.8x while the encoding runs flat out. An update does not need to be that fast: its goal is a
rate of record updates per second, not a minimum time. So the encoding is done in chunks, and
while answers are running, each chunk finishes no earlier than its share of a *budget*: the
batch is due ``records / rate`` seconds after it arrived (journal commit included). The
gaps are sleeps, in which answers have the machine to themselves; with no answer running nothing
waits. If the encoding alone takes longer than the budget, nothing waits either: pacing never
makes an update slower than its rate.
"""

from __future__ import annotations

import time
from collections.abc import Callable

# plaintexts encoded per chunk: ~2 ms of work at 2^20 x 256 B, so a gap follows soon after any
# answer starts
CHUNK_PLAINTEXTS = 128

# record updates per second a batch is paced to while answers run (from its arrival: any wait
# for the batch before it, journal commit, wait for the spare buffer and encoding): 1.5x the
# 10^4/s goal, leaving a third of that goal's time for writing the records file after the switch
DEFAULT_RATE = 15_000.0

# 1 MiB store chunks a checkpoint writes (and hashes) per second while answers run: a checkpoint
# after any change rewrites 256 to all 2,048 chunks of a 2 GiB store (every plaintext has words
# in 256 of them), streaming memory as answers do; so a whole store is spread over 4 s
CHECKPOINT_CHUNKS_PER_SECOND = 512.0

# chunks a live checkpoint writes per hold of the updater's lock: a batch that arrives meanwhile
# waits for one slice at most (16 MiB written and hashed: ~10-20 ms flat out), not for the
# checkpoint
CHECKPOINT_SLICE_CHUNKS = 16


class Pacer:
    """The schedule of one publish: ``units`` of work spread from now until the clock reads
    ``until`` (an earlier or equal time: no schedule)."""

    def __init__(self, units: int, until: float,
                 clock: Callable[[], float] = time.perf_counter,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if units < 0:
            raise ValueError(f"pacing {units} units: must be >= 0")
        self.units = units
        self._clock, self._sleep = clock, sleep
        self._start = clock()
        self.budget = max(0.0, until - self._start)
        self.slept = 0.0

    def after(self, done: int, busy: bool) -> None:
        """``done`` units are finished; while ``busy`` (answers running), wait until the
        schedule reaches them."""
        if not busy or not self.units or not self.budget:
            return
        ahead = self._start + self.budget * min(done, self.units) / self.units - self._clock()
        if ahead > 0:
            self._sleep(ahead)
            self.slept += ahead


def deadline(start: float, records: int, rate: float) -> float:
    """When a batch of ``records`` begun at ``start`` is due at ``rate`` record updates/s (0:
    at ``start``, i.e. no pacing)."""
    if rate < 0:
        raise ValueError(f"pace {rate} record updates/s must be >= 0 (0: no pacing)")
    return start + records / rate if rate else start


def chunks(items: list[int], size: int) -> list[list[int]]:
    """``items`` in consecutive runs of at most ``size``."""
    if size < 1:
        raise ValueError(f"chunk size {size} must be >= 1")
    return [items[k : k + size] for k in range(0, len(items), size)]
