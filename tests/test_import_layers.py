"""Every import in optimizer/ points down the layers (DESIGN.md §8), and none hides in a function.

Layers, low to high: spiralpir.estimator < optimizer.errors, optimizer.resources < params <
models < plan < codegen < build < measure, service (siblings: neither imports the other) < cli.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OPTIMIZER = ROOT / "optimizer"
RANK = {
    "spiralpir.estimator": 0,
    "spiralpir.optimizer": 1,  # the package itself, errors, resources
    "spiralpir.optimizer.params": 2,
    "spiralpir.optimizer.models": 3,
    "spiralpir.optimizer.plan": 4,
    "spiralpir.optimizer.codegen": 5,
    "spiralpir.optimizer.build": 6,
    "spiralpir.optimizer.measure": 7,
    "spiralpir.optimizer.service": 7,
    "spiralpir.optimizer.cli": 8,
}


def layer(module: str) -> str:
    """The layer a module belongs to: the longest key of RANK that prefixes it."""
    parts = module.split(".")
    for k in range(len(parts), 0, -1):
        name = ".".join(parts[:k])
        if name in RANK:
            return name
    raise AssertionError(f"{module} is in no layer")


def module_name(path: Path) -> str:
    rel = path.relative_to(OPTIMIZER).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(["spiralpir.optimizer", *parts])


def imports(tree: ast.Module) -> list[tuple[str, bool]]:
    """(spiralpir module imported, at module level?) of every import in a file."""
    top = {id(node) for node in tree.body}
    out: list[tuple[str, bool]] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            if name.startswith("spiralpir."):
                out.append((name, id(node) in top))
    return out


SOURCES = sorted(OPTIMIZER.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down(path: Path) -> None:
    me = layer(module_name(path))
    for name, at_top in imports(ast.parse(path.read_text(encoding="utf-8"))):
        try:
            them = layer(name)
        except AssertionError:
            continue  # an attribute of a module already checked (from X import name)
        assert at_top, f"{path.name}: function-level import of {name}"
        if them == me:
            continue
        assert RANK[them] < RANK[me], f"{path.name} ({me}) imports {name} ({them}): upward " \
            "or sideways"


def test_layers_cover_every_package() -> None:
    packages = {module_name(p) for p in OPTIMIZER.rglob("__init__.py")}
    assert packages <= set(RANK), packages - set(RANK)
