"""Shared fixtures of the service tests: the demo build and real `spiralpir serve` processes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from service_helpers import DEMO, ServerProcess
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.service import sample_db as sampledb


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


@pytest.fixture(scope="module")
def sample_server(demo_inst: builder.Instance,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server of the demo build on the sample database, shared by a module's tests."""
    d = tmp_path_factory.mktemp("sample")
    sampledb.write_sample_db(d / "sample.db")
    srv = ServerProcess(["--build", str(DEMO), "--db", str(d / "sample.db"), "--no-cache",
                         "--threads", "1"], d / "server.log")
    yield srv
    srv.stop()
