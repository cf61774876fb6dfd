"""pyproject.toml ships every Python package and the package data an installed spiralpir needs
(templates, the runtime's sources, the default profile), and nothing test-only of the runtime."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def import_name(folder: Path) -> str:
    """The import name of a package folder under the package-dir mapping."""
    for name, top in SETUPTOOLS["package-dir"].items():
        rel = folder.relative_to(ROOT)
        if rel.parts[: len(Path(top).parts)] == Path(top).parts:
            return ".".join([name, *rel.parts[len(Path(top).parts):]])
    raise AssertionError(f"{folder} is not under any package-dir mapping")


def test_every_python_package_is_listed() -> None:
    found = {import_name(init.parent) for top in ("optimizer", "estimator")
             for init in (ROOT / top).rglob("__init__.py")}
    assert found <= set(SETUPTOOLS["packages"]), sorted(found - set(SETUPTOOLS["packages"]))


def test_package_data_covers_what_the_build_reads() -> None:
    data = SETUPTOOLS["package-data"]
    assert "profiles/*.json" in data["spiralpir.optimizer.models"]
    assert "*.j2" in data["spiralpir.templates"]
    # the WebAssembly client's module template and serve's page
    assert {"wasm_client.mjs", "wasm_batch.mjs", "wasm_keyword.mjs"} <= \
        set(data["spiralpir.optimizer.build"])
    assert "web/*" in data["spiralpir.optimizer.service"]
    runtime = data["spiralpir.runtime"]
    assert {"CMakeLists.txt", "cmake/*", "include/**/*", "src/*"} <= set(runtime)
    assert not any(p.startswith(("tests", "bench")) for p in runtime)  # not shipped
