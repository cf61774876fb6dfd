"""Reproducible randomness for every test: the `seed` and `rng` fixtures.

Each test that asks for them gets a seed derived from the run's base seed and its own node id
(crc32, stable across processes — unlike hash(), which Python randomises per process), so a test
draws the same values whether it runs alone or in the whole suite. The base seed is 0 unless
SPIRALPIR_TEST_SEED is set; a failing test prints its seed and the line that reruns it:

    SPIRALPIR_TEST_SEED=<base> pytest '<node id>'

Run with another base seed (e.g. SPIRALPIR_TEST_SEED=$RANDOM) to draw new cases.
"""

from __future__ import annotations

import os
import random
import zlib
from collections.abc import Callable, Generator

import numpy as np
import pytest

SEED_ENV = "SPIRALPIR_TEST_SEED"

# every test (and every process it starts) plans with the shipped profile, whatever profile
# `spiralpir calibrate` wrote for the user running them (models/profile.py)
os.environ["SPIRALPIR_PROFILE"] = "default"


def base_seed() -> int:
    text = os.environ.get(SEED_ENV, "0")
    try:
        return int(text, 0)
    except ValueError:
        raise pytest.UsageError(f"{SEED_ENV}={text!r}: expected an integer") from None


def pytest_configure(config: pytest.Config) -> None:
    base_seed()  # a malformed SPIRALPIR_TEST_SEED stops the run before any test


def derive_seed(base: int, nodeid: str) -> int:
    return (base * 0x9E3779B1 + zlib.crc32(nodeid.encode())) % (1 << 32)


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """This test's seed (printed with the rerun command if the test fails)."""
    return derive_seed(base_seed(), request.node.nodeid)


@pytest.fixture
def rng(seed: int) -> random.Random:
    return random.Random(seed)


@pytest.fixture
def np_rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


@pytest.fixture(scope="session")
def seeded() -> Callable[[str], random.Random]:
    """For fixtures of a wider scope: seeded(name) -> a generator seeded from the base seed and
    name (e.g. the fixture's request.node.nodeid)."""
    return lambda name: random.Random(derive_seed(base_seed(), name))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        base = base_seed()
        report.sections.append(("seed", f"test seed {derive_seed(base, item.nodeid)} (base "
                                f"seed {base}); rerun with: {SEED_ENV}={base} pytest "
                                f"'{item.nodeid}'"))
    return report
