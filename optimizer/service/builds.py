"""Open a generated build: compile it if needed (build/), then load it (service/binding.py)."""

from __future__ import annotations

from pathlib import Path

from spiralpir.optimizer.build import builder
from spiralpir.optimizer.service.binding import Build


def open_build(source_dir: Path | str, build_dir: Path | str | None = None, ci: bool = False,
               show_progress: bool = True) -> Build:
    """Build generated/NAME if needed (incremental) and load its library."""
    inst = builder.build(Path(source_dir), Path(build_dir) if build_dir else None,
                         show_progress=show_progress, targets=["library"])
    return Build(inst, ci=ci)
