"""Independent planning jobs on the cores: the candidate plans a batch plan ranks.

A plan's search is single-threaded Python and numpy, and the candidates do not depend on each
other. `Workers` runs them on forked worker processes: fork, so that a worker starts with this
process's modules and model caches (secure rings, gadget tables, security estimates) instead of
filling its own: the first job runs in this process to fill them before the workers fork, and
the workers keep their own caches from job to job. Measured idle on 2 cores (`plan --batch 32
--json` at 2^20 x 32 B): 20.5 -> 14.7 s. Not used for a single plan's binding constraints
(relaxed searches after the main one): with another job keeping both cores busy, `plan
--records 2^20 --record-size 32 --objective time` took 13.7-14.3 s with them on workers against
10.1-10.7 s in one process (why was not measured).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Generic, TypeVar

from spiralpir.optimizer.errors import SpiralpirError

T = TypeVar("T")


def _result_or_error(fn: Callable[..., T], args: tuple[Any, ...]) -> T | SpiralpirError:
    try:
        return fn(*args)
    except SpiralpirError as e:
        return e


class Workers(Generic[T]):
    """fn(*job) of every job, on up to `processes` processes (default: every core). A job that
    raises a SpiralpirError gives that error as its result; other exceptions propagate. Use as
    a context manager: the workers stop at its end."""

    def __init__(self, fn: Callable[..., T], processes: int | None = None) -> None:
        self.fn = fn
        self.workers = max(1, processes or os.cpu_count() or 1)
        self.warm = False  # whether a job has run in this process
        self.pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> Workers[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.shutdown()

    def run(self, jobs: Sequence[tuple[Any, ...]]) -> list[T | SpiralpirError]:
        """Each job's result (or its SpiralpirError), in job order."""
        done: list[T | SpiralpirError] = []
        rest = list(jobs)
        if self.pool is None and not self.warm and rest:
            done.append(_result_or_error(self.fn, rest.pop(0)))  # fills the caches to fork with
            self.warm = True
        if self.workers == 1 or (len(rest) <= 1 and self.pool is None):  # nothing to share
            return done + [_result_or_error(self.fn, job) for job in rest]
        if self.pool is None:
            self.pool = ProcessPoolExecutor(self.workers,
                                            mp_context=multiprocessing.get_context("fork"))
        try:
            return done + list(self.pool.map(_result_or_error, [self.fn] * len(rest), rest))
        except BrokenProcessPool:
            # a worker was killed (out of memory, a signal): the jobs run here instead, one
            # after another, and no more workers are started
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool, self.workers = None, 1
            return done + [_result_or_error(self.fn, job) for job in rest]
