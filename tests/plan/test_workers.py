"""plan/workers.py: jobs on forked workers give the results of one process, in job order; a
SpiralpirError is a job's result; a killed worker's jobs run in this process instead."""

from __future__ import annotations

import os

import pytest
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.plan.workers import Workers

PARENT = os.getpid()


def square_or_refuse(x: int) -> int:
    if x < 0:
        raise SpiralpirError(f"refused {x}")
    return x * x


def dies_in_a_worker(x: int) -> tuple[int, int]:
    """(x, the pid that computed it); a worker process is killed the moment it runs a job."""
    if os.getpid() != PARENT:
        os._exit(3)
    return x, os.getpid()


def worker_pid(x: int) -> int:
    return os.getpid() if x >= 0 else 0


@pytest.mark.parametrize("processes", [1, 2, 3])
def test_results_in_job_order_and_errors_as_results(processes: int) -> None:
    jobs = [(x,) for x in (3, -1, 5, 7, -2, 11, 13)]
    with Workers(square_or_refuse, processes) as workers:
        first = workers.run(jobs)
        again = workers.run(jobs[1:])  # the same workers, started once
    want = [x * x if x >= 0 else None for (x,) in jobs]
    assert [None if isinstance(r, SpiralpirError) else r for r in first] == want
    assert [None if isinstance(r, SpiralpirError) else r for r in again] == want[1:]
    assert str(first[1]) == "refused -1" and isinstance(first[4], SpiralpirError)


def test_the_first_job_runs_here_the_rest_on_workers() -> None:
    with Workers(worker_pid, 2) as workers:
        pids = workers.run([(x,) for x in range(6)])
    assert pids[0] == PARENT  # it fills this process's caches before the workers fork
    assert all(isinstance(p, int) and p != PARENT for p in pids[1:])


def test_a_killed_worker_leaves_its_jobs_to_this_process() -> None:
    with Workers(dies_in_a_worker, 2) as workers:
        got = workers.run([(x,) for x in range(5)])
        later = workers.run([(9,), (10,)])  # no workers are started again
    assert got == [(x, PARENT) for x in range(5)]
    assert later == [(9, PARENT), (10, PARENT)]
