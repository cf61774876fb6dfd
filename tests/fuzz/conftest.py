"""Fixtures of the property tests: the demo build (compiled once per session)."""

from __future__ import annotations

from pathlib import Path

import pytest
from spiralpir.optimizer.build import builder

DEMO = Path(__file__).resolve().parents[2] / "generated" / "demo"


@pytest.fixture(scope="session")
def demo_inst() -> builder.Instance:
    return builder.build(DEMO, show_progress=False, targets=["library"])
