"""An instance is rebuilt from clean when the installed runtime changed content, even when the
install kept an older modification time (CMake copies the source's mtime)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from spiralpir.optimizer.build import builder

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[list[str]]]:
    """builder.build with the runtime install at tmp/install and CMake replaced by a recorder
    that creates the instance's artifacts."""
    prefix = tmp_path / "install"
    (prefix / "include").mkdir(parents=True)
    (prefix / "include" / "kernel.hpp").write_text("int f() { return 1; }\n")
    calls: list[list[str]] = []

    def run(cmd: list[str], what: str, show_progress: bool) -> None:
        calls.append(cmd)
        if "--build" in cmd:
            inst = builder.instance_paths(REPO / "generated" / "demo", tmp_path / "b")
            for artifact in (inst.library, inst.bench, inst.ci_bench):
                artifact.parent.mkdir(parents=True, exist_ok=True)
                artifact.touch()

    monkeypatch.setattr(builder, "build_runtime", lambda *a, **k: prefix)
    monkeypatch.setattr(builder, "_run", run)
    return prefix, calls


def _builds(calls: list[list[str]]) -> list[list[str]]:
    return [c for c in calls if "--build" in c]


def test_changed_header_with_old_mtime_rebuilds_from_clean(
        tmp_path: Path, fake_build: tuple[Path, list[list[str]]]) -> None:
    prefix, calls = fake_build
    demo = REPO / "generated" / "demo"
    builder.build(demo, tmp_path / "b", show_progress=False)
    builder.build(demo, tmp_path / "b", show_progress=False)
    header = prefix / "include" / "kernel.hpp"
    old = header.stat()
    header.write_text("int f() { return 2; }\n")
    os.utime(header, ns=(old.st_atime_ns, old.st_mtime_ns))  # what `cmake --install` does
    builder.build(demo, tmp_path / "b", show_progress=False)
    builder.build(demo, tmp_path / "b", show_progress=False)
    clean = ["--clean-first" in c for c in _builds(calls)]
    assert clean == [False, False, True, False]


def test_digest_covers_paths_and_content(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x")
    first = builder.installed_digest(tmp_path)
    (tmp_path / "a").write_bytes(b"y")
    second = builder.installed_digest(tmp_path)
    (tmp_path / "a").rename(tmp_path / "b")
    third = builder.installed_digest(tmp_path)
    assert len({first, second, third}) == 3
