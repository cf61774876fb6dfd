"""Where the shipped data lives and where outputs go.

Templates (spiralpir.templates) and the runtime's sources (spiralpir.runtime) are package data,
found through importlib.resources, so an installed spiralpir finds them wherever it is
installed. Outputs (generated builds, CMake build trees) go to the current working directory,
never into the installation.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

# outputs, relative to the current working directory
GENERATED_DIR = Path("generated")
BUILD_ROOT = Path("build")


def _package_dir(package: str) -> Path:
    path = resources.files(package)
    if not isinstance(path, Path):  # pragma: no cover - zipped installs are not supported
        raise RuntimeError(f"{package} is not installed as plain files")
    return path


def templates_dir() -> Path:
    """The Jinja2 templates of a generated build."""
    return _package_dir("spiralpir.templates")


def runtime_source_dir() -> Path:
    """The runtime's CMake project (runtime/CMakeLists.txt, include/, src/, testing/)."""
    return _package_dir("spiralpir.runtime")


def default_build_dir() -> Path:
    """CMake build trees: $SPIRALPIR_BUILD_DIR, else build/spiralpir in the working directory."""
    return Path(os.environ.get("SPIRALPIR_BUILD_DIR") or BUILD_ROOT / "spiralpir")
