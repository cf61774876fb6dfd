"""Progress as plain lines, for a log rather than a terminal (where tqdm draws a bar): one line
per tenth of the work, or after PERIOD seconds without one, so a long step is never silent;
none in the first QUIET seconds, so a quick step is not noisy."""

from __future__ import annotations

import time
from collections.abc import Callable

PERIOD = 5.0
QUIET = 1.0
STEPS = 10


class ProgressLines:
    """Call with (done, total); logs 'WHAT: P% (done/total), S s' at each tenth or PERIOD."""

    def __init__(self, what: str, log: Callable[[str], None],
                 clock: Callable[[], float] = time.monotonic, period: float = PERIOD) -> None:
        self.what = what
        self.log = log
        self.clock = clock
        self.period = period
        self.start = clock()
        self.last_time = self.start
        self.last_step = 0

    def __call__(self, done: int, total: int) -> None:
        if total <= 0:
            return
        now = self.clock()
        step = min(STEPS, done * STEPS // total)
        if now - self.start < QUIET:
            return
        if step > self.last_step or (now - self.last_time >= self.period and done < total):
            self.last_step = max(step, self.last_step)
            self.last_time = now
            self.log(f"{self.what}: {100 * done // total}% ({done:,}/{total:,}), "
                     f"{now - self.start:.1f} s")
