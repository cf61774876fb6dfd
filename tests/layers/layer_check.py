"""The machinery behind tests/layers/test_layers.py: read the import and include graphs of
the tree, and check a graph against a layer table.

Every check is a pure function of a graph given as data (file or module ->
[(what it imports, line)]) and of the tables, so that test_layer_check.py can feed it
planted violations.

Python: every ``import`` / ``from … import`` statement anywhere in a module counts (function
level and ``if TYPE_CHECKING:`` included: a deferred import is still a dependency);
``importlib.import_module("…")`` by string is not seen.
C++: every ``#include`` line of runtime/include, runtime/src and runtime/testing counts,
wherever it sits in the file.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# runtime/testing/ and its headers' folder (spiralpir/testing/): test and benchmark code,
# which may include any layer and which no library file may include
CPP_TESTING = "testing"
_TABLES = "tests/layers/test_layers.py"

# ------------------------------------------------------------------------------------------
# The checks: pure functions of a graph, module -> [(imported module, line)]

Graph = Mapping[str, Sequence[tuple[str, int]]]
# low -> high; each rank maps sibling layer names to module patterns
Layers = Sequence[Mapping[str, Sequence[str]]]


@dataclass(frozen=True)
class Layer:
    name: str
    rank: int


def _matches(name: str, pattern: str) -> bool:
    if pattern.endswith(".*"):
        base = pattern[:-2]
        return name == base or name.startswith(base + ".")
    return fnmatch.fnmatchcase(name, pattern)


def py_layer(name: str, layers: Layers) -> Layer | str:
    """The layer claiming module ``name``, or a message saying why there is none."""
    found = [
        Layer(layer, rank)
        for rank, siblings in enumerate(layers)
        for layer, patterns in siblings.items()
        if any(_matches(name, p) for p in patterns)
    ]
    if not found:
        return f"{name} is in no layer: add it to PY_LAYERS ({_TABLES})"
    if len(found) > 1:
        names = ", ".join(f.name for f in found)
        return f"{name} is claimed by several layers ({names}): fix PY_LAYERS ({_TABLES})"
    return found[0]


def py_violations(
    graph: Graph, layers: Layers, forbidden: Sequence[tuple[str, str, str]]
) -> list[str]:
    """Unassigned modules, and imports that go up, sideways between siblings, or across a
    forbidden pair."""
    problems: list[str] = []
    unassigned: set[str] = set()

    def layer_of(name: str) -> Layer | None:
        got = py_layer(name, layers)
        if isinstance(got, str):
            if name not in unassigned:
                unassigned.add(name)
                problems.append(got)
            return None
        return got

    def claims(side: str, module: str, layer: Layer) -> bool:
        return side == layer.name if "/" in side else _matches(module, side)

    for module in sorted(graph):
        src = layer_of(module)
        for target, line in graph[module]:
            dst = layer_of(target)
            if src is None or dst is None or target == module:
                continue
            edge = f"{module}:{line} imports {target} ({src.name} -> {dst.name})"
            if dst.rank > src.rank:
                problems.append(f"{edge}: upward")
            elif dst.rank == src.rank and src.name != dst.name:
                problems.append(f"{edge}: between siblings")
            else:
                problems += [
                    f"{edge}: {why}"
                    for a, b, why in forbidden
                    if claims(a, module, src) and claims(b, target, dst)
                ]
    return problems


def cpp_layer(node: str, order: Sequence[str], src_layers: Mapping[str, str]) -> str | None:
    """Layer of a runtime file named as in ``cpp_graph``; ``None`` if nothing claims it."""
    parts = node.split("/")
    if parts[0] == CPP_TESTING:
        return CPP_TESTING
    if parts[0] == "spiralpir" and len(parts) >= 3:
        return parts[1] if parts[1] in (*order, CPP_TESTING) else None
    if parts[0] == "src":
        if len(parts) >= 3 and parts[1] in order:
            return parts[1]
        rest = "/".join(parts[1:])
        hits = {layer for pat, layer in src_layers.items() if fnmatch.fnmatchcase(rest, pat)}
        return hits.pop() if len(hits) == 1 else None
    return None


def cpp_violations(graph: Graph, order: Sequence[str], src_layers: Mapping[str, str]) -> list[str]:
    """Unclaimed files, includes of missing headers, upward includes, and library files that
    include test code."""
    problems: list[str] = []
    rank = {layer: i for i, layer in enumerate(order)}
    for node in sorted(graph):
        src = cpp_layer(node, order, src_layers)
        if src is None:
            problems.append(
                f"{node} is in no layer: put it under a layer directory or claim it in "
                f"CPP_SRC_LAYERS ({_TABLES})"
            )
            continue
        for target, line in graph[node]:
            edge = f"{node}:{line} includes {target}"
            dst = cpp_layer(target, order, src_layers)
            if target not in graph or dst is None:
                problems.append(f"{edge}: no such runtime header")
            elif dst == CPP_TESTING:
                if src != CPP_TESTING:
                    problems.append(f"{edge}: the library includes test code ({src} -> testing)")
            elif src != CPP_TESTING and rank[dst] > rank[src]:
                problems.append(f"{edge}: upward ({src} -> {dst})")
    return problems


def cycles(graph: Graph) -> list[list[str]]:
    """The graph's cycles, as its strongly connected components with more than one node (or
    a node that reaches itself); Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w, _ in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or any(t == v for t, _ in graph[v]):
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def cycle_report(graph: Graph, comps: Iterable[list[str]]) -> list[str]:
    out = []
    for comp in comps:
        members = set(comp)
        edges = [
            f"{a}:{line} -> {b}" for a in comp for b, line in graph[a] if b in members
        ]
        out.append("cycle among " + ", ".join(comp) + "\n      " + "\n      ".join(edges))
    return out


# ------------------------------------------------------------------------------------------
# Reading the tree


def python_imports(
    source: str, module: str, is_package: bool, known: set[str]
) -> list[tuple[str, int]]:
    """spiralpir modules imported anywhere in ``source`` (module ``module``), with lines.
    ``from P import n`` names the module P.n if it exists, else P."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - (node.level - 1)])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            for a in node.names:
                sub = f"{base}.{a.name}"
                found.append((sub if sub in known else base, node.lineno))
    return sorted({(m, line) for m, line in found if m.split(".")[0] == "spiralpir"},
                  key=lambda x: (x[1], x[0]))


def python_graph(root: Path, roots: Mapping[str, str]) -> dict[str, list[tuple[str, int]]]:
    """Module -> [(imported spiralpir module, line)] for every module under the ``roots``
    folders (folder -> import package) of ``root``."""
    files: dict[str, tuple[Path, bool]] = {}
    for folder, package in roots.items():
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root / folder).with_suffix("").parts
            is_package = rel[-1] == "__init__"
            name = ".".join((package, *(rel[:-1] if is_package else rel)))
            files[name] = (path, is_package)
    known = set(files)
    return {
        name: python_imports(path.read_text(), name, is_package, known)
        for name, (path, is_package) in files.items()
    }


_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)


def cpp_graph(root: Path) -> dict[str, list[tuple[str, int]]]:
    """Runtime file -> [(included runtime file, line)]. Headers are named as they are included
    ("spiralpir/arith/ntt.hpp"), other files by their place: "src/…", "testing/…"."""
    runtime = root / "runtime"
    names: dict[Path, str] = {}
    for base, prefix in (
        (runtime / "include", ""),
        (runtime / "testing" / "include", ""),
        (runtime / "testing", "testing/"),
        (runtime / "src", "src/"),
    ):
        for path in sorted(base.rglob("*")):
            if path.suffix in (".hpp", ".h", ".cpp", ".cc", ".inc"):
                names.setdefault(path, prefix + path.relative_to(base).as_posix())
    graph: dict[str, list[tuple[str, int]]] = {}
    for path, name in names.items():
        text = path.read_text()
        edges = []
        for m in _INCLUDE.finditer(text):
            target = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            local = path.parent / target
            if target.startswith("spiralpir/"):
                edges.append((target, line))
            elif local in names:
                edges.append((names[local], line))
        graph[name] = edges
    return graph
