"""Shared fixtures of the service tests: the demo build and real `spiralpir serve` processes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from service_helpers import DEMO, ServerProcess
from spiralpir.optimizer.build import builder


@pytest.fixture(scope="session")
def demo_inst() -> builder.Instance:
    return builder.build(DEMO, show_progress=False, targets=["library"])


@pytest.fixture
def serve_process() -> Iterator[Callable[[list[str], Path], ServerProcess]]:
    """Start servers (stopped at the end of the test)."""
    started: list[ServerProcess] = []

    def start(args: list[str], log: Path) -> ServerProcess:
        srv = ServerProcess(args, log)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()
