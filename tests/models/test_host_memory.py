"""The memory a database may take: the physical memory, or a smaller cgroup limit."""

from __future__ import annotations

from pathlib import Path

import pytest
from spiralpir.optimizer.models import host_memory


def test_cgroup_limits(tmp_path: Path) -> None:
    v2, v1, missing = tmp_path / "memory.max", tmp_path / "limit_in_bytes", tmp_path / "none"
    v2.write_text("max\n")
    v1.write_text("9223372036854771712\n")  # cgroup v1's "no limit"
    assert host_memory.cgroup_limit_bytes((v2, missing)) is None
    assert host_memory.cgroup_limit_bytes((v2, v1)) == 9223372036854771712
    v2.write_text("8589934592\n")
    assert host_memory.cgroup_limit_bytes((v2, v1, missing)) == 8 << 30


def test_usable_memory_is_the_smaller(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host_memory, "physical_memory_bytes", lambda: 24 << 30)
    monkeypatch.setattr(host_memory, "cgroup_limit_bytes", lambda: None)
    assert host_memory.usable_memory_bytes() == 24 << 30
    monkeypatch.setattr(host_memory, "cgroup_limit_bytes", lambda: 4 << 30)
    assert host_memory.usable_memory_bytes() == 4 << 30
    assert host_memory.database_budget_bytes() == int(0.85 * (4 << 30))
    monkeypatch.setattr(host_memory, "cgroup_limit_bytes", lambda: 2**63 - 4096)
    assert host_memory.usable_memory_bytes() == 24 << 30


def test_physical_memory_matches_meminfo() -> None:
    meminfo = Path("/proc/meminfo").read_text().split()
    total_kib = int(meminfo[meminfo.index("MemTotal:") + 1])
    assert abs(host_memory.physical_memory_bytes() - total_kib * 1024) < 64 << 20
