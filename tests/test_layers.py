"""Every Python import and every runtime ``#include`` points down a declared layer order.

The tables at the top are the one declaration of that order; when a module or a source file
moves, update the table (a module that no table entry claims fails the test by name). The
checks take the import/include graph as data, and the self-checks at the bottom feed them
planted violations, so the checker cannot pass by finding nothing.

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

REPO = Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------------------------------
# The layer tables

# Source folder -> import package (pyproject.toml maps each top-level folder under spiralpir).
PY_ROOTS: Mapping[str, str] = {
    "estimator": "spiralpir.estimator",
    "optimizer": "spiralpir.optimizer",
}

# Python layers, low -> high. A module may import modules of its own layer and of lower
# ranks. Several layers in one rank are siblings: they must not import each other.
# A pattern "a.b" names one module; "a.b.*" names the package a.b and everything in it;
# other wildcards are fnmatch's. A package's root __init__ runs before any of its modules,
# so each root package sits at the bottom of its own tree.
# Entries for today's flat optimizer modules (variants, primes, …) say which subpackage they
# belong to; they can go once the modules live there.
PY_LAYERS: Sequence[Mapping[str, Sequence[str]]] = (
    # the estimator: lattice security, knows nothing of the optimizer
    {"estimator/errors": ("spiralpir.estimator", "spiralpir.estimator.errors")},
    {"estimator/foundations": (
        "spiralpir.estimator.logmath",
        "spiralpir.estimator.search",
        "spiralpir.estimator.distributions",
        "spiralpir.estimator.cost",
        "spiralpir.estimator.lwe_parameters",
        "spiralpir.estimator.reduction",
        "spiralpir.estimator.prob",
    )},
    {"estimator/attacks": ("spiralpir.estimator.attacks.*",)},
    {"estimator/driver": (
        "spiralpir.estimator.estimate",
        "spiralpir.estimator.spiral",
        "spiralpir.estimator.table",
        "spiralpir.estimator.gate",
        "spiralpir.estimator.backend",
    )},
    {"estimator/cli": ("spiralpir.estimator.cli",)},
    # the optimizer: plan -> generate -> build -> serve
    {"optimizer/errors": (
        "spiralpir.optimizer",
        "spiralpir.optimizer.errors",
        "spiralpir.optimizer.resources",
        "spiralpir.optimizer.resources.*",
    )},
    {"optimizer/params": (
        "spiralpir.optimizer.params.*",
        "spiralpir.optimizer.variants",
        "spiralpir.optimizer.primes",
        "spiralpir.optimizer.sizes",
    )},
    {"optimizer/models": (
        "spiralpir.optimizer.models.*",
        "spiralpir.optimizer.noise",
        "spiralpir.optimizer.cost",
    )},
    {"optimizer/plan": (
        "spiralpir.optimizer.plan.*",
        "spiralpir.optimizer.model",
        "spiralpir.optimizer.enumerate",
        "spiralpir.optimizer.search",
        "spiralpir.optimizer.planning",
    )},
    {"optimizer/codegen": ("spiralpir.optimizer.codegen.*",)},
    {"optimizer/build": ("spiralpir.optimizer.build.*", "spiralpir.optimizer.builder")},
    {
        "optimizer/measure": (
            "spiralpir.optimizer.measure.*",
            "spiralpir.optimizer.calibrate",
            "spiralpir.optimizer.validation",
        ),
        "optimizer/service": (
            "spiralpir.optimizer.service.*",
            "spiralpir.optimizer.instance",
            "spiralpir.optimizer.server",
            "spiralpir.optimizer.client",
            "spiralpir.optimizer.database",
            "spiralpir.optimizer.sampledb",
        ),
    },
    {"optimizer/cli": ("spiralpir.optimizer.cli.*", "spiralpir.optimizer.cmd_*")},
)

# Imports the ranks would allow but the design does not: (importer, imported, why), each side
# a layer name ("optimizer/service") or a module pattern as above.
PY_FORBIDDEN: Sequence[tuple[str, str, str]] = (
    ("optimizer/service", "optimizer/plan", "the service serves a built instance; it never plans"),
    (
        "spiralpir.optimizer.service.pir_client",
        "spiralpir.optimizer.service.pir_server",
        "client and server meet only in what they share (http_api)",
    ),
    (
        "spiralpir.optimizer.client",
        "spiralpir.optimizer.server",
        "client and server meet only in what they share (http_api)",
    ),
    (
        "spiralpir.optimizer.cli.cmd_*",
        "spiralpir.optimizer.cli.cmd_*",
        "a command does not import another; shared steps live in a lower layer",
    ),
    (
        "spiralpir.optimizer.cmd_*",
        "spiralpir.optimizer.cmd_*",
        "a command does not import another; shared steps live in a lower layer",
    ),
)

# Runtime header layers, low -> high: runtime/include/spiralpir/<layer>/…
CPP_LAYERS: Sequence[str] = ("core", "arith", "rlwe", "spiral")
# Test and benchmark code (runtime/testing/include/spiralpir/testing/…): may include any
# layer; nothing in the library (include/, src/) may include it.
CPP_TESTING = "testing"
# The library's sources, runtime/src/…: a file in src/<layer>/ has that layer; flat files are
# claimed here by fnmatch pattern (relative to src/).
CPP_SRC_LAYERS: Mapping[str, str] = {
    "cpu_features.cpp": "core",
    "debug_check.hpp": "core",
    "chacha20.cpp": "arith",
    "gaussian.cpp": "arith",
    "ternary.cpp": "arith",
    "ntt_*": "arith",
    "pointwise_*": "arith",
    "dot_*": "arith",
    "gadget_*": "arith",
}

# ------------------------------------------------------------------------------------------
# The checks (pure functions of a graph: module -> [(imported module, line)])

Graph = Mapping[str, Sequence[tuple[str, int]]]


@dataclass(frozen=True)
class Layer:
    name: str
    rank: int


def _matches(name: str, pattern: str) -> bool:
    if pattern.endswith(".*"):
        base = pattern[:-2]
        return name == base or name.startswith(base + ".")
    return fnmatch.fnmatchcase(name, pattern)


def py_layer(name: str, layers: Sequence[Mapping[str, Sequence[str]]]) -> Layer | str:
    """The layer claiming module ``name``, or a message saying why there is none."""
    found = [
        Layer(layer, rank)
        for rank, siblings in enumerate(layers)
        for layer, patterns in siblings.items()
        if any(_matches(name, p) for p in patterns)
    ]
    if not found:
        return f"{name} is in no layer: add it to PY_LAYERS in tests/test_layers.py"
    if len(found) > 1:
        names = ", ".join(f.name for f in found)
        return f"{name} is claimed by several layers ({names}): fix PY_LAYERS"
    return found[0]


def py_violations(
    graph: Graph,
    layers: Sequence[Mapping[str, Sequence[str]]] = PY_LAYERS,
    forbidden: Sequence[tuple[str, str, str]] = PY_FORBIDDEN,
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


def cpp_layer(node: str, src_layers: Mapping[str, str] = CPP_SRC_LAYERS) -> str | None:
    """Layer of a runtime file named as in ``cpp_graph``; ``None`` if nothing claims it."""
    parts = node.split("/")
    if parts[0] == CPP_TESTING:
        return CPP_TESTING
    if parts[0] == "spiralpir" and len(parts) >= 3:
        return parts[1] if parts[1] in (*CPP_LAYERS, CPP_TESTING) else None
    if parts[0] == "src":
        if len(parts) >= 3 and parts[1] in CPP_LAYERS:
            return parts[1]
        rest = "/".join(parts[1:])
        hits = {layer for pat, layer in src_layers.items() if fnmatch.fnmatchcase(rest, pat)}
        return hits.pop() if len(hits) == 1 else None
    return None


def cpp_violations(
    graph: Graph,
    order: Sequence[str] = CPP_LAYERS,
    src_layers: Mapping[str, str] = CPP_SRC_LAYERS,
) -> list[str]:
    """Unclaimed files, includes of missing headers, upward includes, and library files that
    include test code."""
    problems: list[str] = []
    rank = {layer: i for i, layer in enumerate(order)}
    for node in sorted(graph):
        src = cpp_layer(node, src_layers)
        if src is None:
            problems.append(
                f"{node} is in no layer: put it under a layer directory or claim it in "
                "CPP_SRC_LAYERS (tests/test_layers.py)"
            )
            continue
        for target, line in graph[node]:
            edge = f"{node}:{line} includes {target}"
            dst = cpp_layer(target, src_layers)
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


def _cycle_report(graph: Graph, comps: Iterable[list[str]]) -> list[str]:
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


def python_graph(root: Path = REPO) -> dict[str, list[tuple[str, int]]]:
    files: dict[str, tuple[Path, bool]] = {}
    for folder, package in PY_ROOTS.items():
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


def cpp_graph(root: Path = REPO) -> dict[str, list[tuple[str, int]]]:
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


# ------------------------------------------------------------------------------------------
# The tree as it is


def _fail(title: str, problems: list[str]) -> str:
    return f"{title} ({len(problems)}):\n  " + "\n  ".join(problems)


def test_python_imports_point_down() -> None:
    graph = python_graph()
    assert len(graph) >= 30, f"found only {len(graph)} Python modules: is PY_ROOTS right?"
    problems = py_violations(graph)
    assert not problems, _fail("Python imports against the layer table", problems)


def test_python_imports_have_no_cycles() -> None:
    graph = python_graph()
    found = cycles(graph)
    assert not found, _fail("Python import cycles", _cycle_report(graph, found))


def test_runtime_includes_point_down() -> None:
    graph = cpp_graph()
    assert sum(n.startswith("spiralpir/") for n in graph) >= 20, "runtime headers not found"
    problems = cpp_violations(graph)
    assert not problems, _fail("runtime includes against the layer order", problems)


def test_runtime_includes_have_no_cycles() -> None:
    graph = cpp_graph()
    found = cycles(graph)
    assert not found, _fail("runtime include cycles", _cycle_report(graph, found))


# ------------------------------------------------------------------------------------------
# The checker against planted graphs

_E = "spiralpir.estimator"
_O = "spiralpir.optimizer"


def test_checker_accepts_a_clean_graph() -> None:
    graph = {
        f"{_O}.cli.plan_cmd": [(f"{_O}.plan.search", 3), (f"{_O}.service.binding", 4)],
        f"{_O}.plan.search": [(f"{_O}.params.variants", 5), (f"{_E}.table", 6)],
        f"{_O}.params.variants": [(f"{_O}.errors", 7)],
        f"{_O}.errors": [(f"{_E}.errors", 1)],
        f"{_E}.table": [(f"{_E}.errors", 2)],
        f"{_E}.errors": [],
        f"{_O}.service.binding": [],
    }
    assert py_violations(graph) == []
    assert cycles(graph) == []


def test_checker_rejects_an_upward_import() -> None:
    graph = {f"{_E}.spiral": [(f"{_O}.plan.search", 12)], f"{_O}.plan.search": []}
    (problem,) = py_violations(graph)
    assert f"{_E}.spiral:12 imports {_O}.plan.search" in problem and "upward" in problem


def test_checker_rejects_an_import_between_siblings() -> None:
    graph = {f"{_O}.service.pir_server": [(f"{_O}.measure.bench", 2)], f"{_O}.measure.bench": []}
    (problem,) = py_violations(graph)
    assert "between siblings" in problem


def test_checker_rejects_a_forbidden_downward_import() -> None:
    graph = {f"{_O}.service.binding": [(f"{_O}.plan.planner", 9)], f"{_O}.plan.planner": []}
    (problem,) = py_violations(graph)
    assert "never plans" in problem
    graph = {
        f"{_O}.cli.cmd_demo": [(f"{_O}.cli.cmd_generate", 3), (f"{_O}.cli.render", 4)],
        f"{_O}.cli.cmd_generate": [],
        f"{_O}.cli.render": [],
    }
    (problem,) = py_violations(graph)
    assert f"{_O}.cli.cmd_demo:3 imports {_O}.cli.cmd_generate" in problem


def test_checker_rejects_an_unassigned_module() -> None:
    graph = {f"{_O}.misc": [(f"{_O}.errors", 1)], f"{_O}.errors": []}
    (problem,) = py_violations(graph)
    assert f"{_O}.misc is in no layer" in problem


def test_checker_finds_a_cycle() -> None:
    graph = {
        "a": [("b", 1)],
        "b": [("c", 2)],
        "c": [("a", 3), ("d", 4)],
        "d": [],
        "e": [("e", 5)],
    }
    assert cycles(graph) == [["a", "b", "c"], ["e"]]


def test_parser_sees_function_level_and_relative_imports() -> None:
    source = (
        "from __future__ import annotations\n"
        "import os\n"
        "from . import errors\n"
        "from .plan import search\n"
        "def late() -> None:\n"
        "    from spiralpir.optimizer.cli import main\n"
        "    import spiralpir.optimizer.service.binding\n"
    )
    known = {f"{_O}.errors", f"{_O}.plan", f"{_O}.plan.search", f"{_O}.cli", f"{_O}.x"}
    got = python_imports(source, f"{_O}.x", False, known)
    assert got == [
        (f"{_O}.errors", 3),
        (f"{_O}.plan.search", 4),
        (f"{_O}.cli", 6),
        (f"{_O}.service.binding", 7),
    ]
    # in a package's __init__, "." is the package itself
    assert python_imports("from .b import c\n", "p.q", True, set()) == []
    assert python_imports("from ..b import c\n", "spiralpir.q.r", False, set()) == [
        ("spiralpir.b", 1)
    ]


def test_checker_rejects_upward_and_test_includes() -> None:
    graph = {
        "spiralpir/core/aligned.hpp": [("spiralpir/arith/ntt.hpp", 3)],
        "spiralpir/arith/ntt.hpp": [("spiralpir/core/aligned.hpp", 2)],
        "spiralpir/spiral/server.hpp": [("spiralpir/testing/noise.hpp", 7)],
        "spiralpir/testing/noise.hpp": [("spiralpir/spiral/server.hpp", 4)],
        "src/ntt_native.cpp": [("spiralpir/arith/ntt.hpp", 1), ("spiralpir/rlwe/gsw.hpp", 2)],
        "src/stray.cpp": [],
    }
    problems = cpp_violations(graph)
    expected = (
        "spiralpir/core/aligned.hpp:3 includes spiralpir/arith/ntt.hpp: upward",
        "spiralpir/spiral/server.hpp:7 includes spiralpir/testing/noise.hpp: the library "
        "includes test code",
        "src/ntt_native.cpp:2 includes spiralpir/rlwe/gsw.hpp: no such runtime header",
        "src/stray.cpp is in no layer",
    )
    assert len(problems) == len(expected), problems
    for problem, start in zip(problems, expected, strict=True):
        assert problem.startswith(start), (problem, start)
    assert cycles(graph) == [
        ["spiralpir/arith/ntt.hpp", "spiralpir/core/aligned.hpp"],
        ["spiralpir/spiral/server.hpp", "spiralpir/testing/noise.hpp"],
    ]


def test_include_parser_reads_every_include_line(tmp_path: Path) -> None:
    inc = tmp_path / "runtime" / "include" / "spiralpir" / "arith"
    src = tmp_path / "runtime" / "src"
    inc.mkdir(parents=True)
    src.mkdir(parents=True)
    (inc / "a.hpp").write_text(
        '#pragma once\n#include <vector>\n#include "spiralpir/arith/b.hpp"\n'
    )
    (inc / "b.hpp").write_text("#pragma once\nint f();\n  #  include <spiralpir/spiral/late.hpp>\n")
    (src / "k.hpp").write_text("#pragma once\n")
    (src / "k.cpp").write_text('#include "k.hpp"\n#include "spiralpir/arith/a.hpp"\n')
    bench = tmp_path / "runtime" / "testing" / "bench"
    bench.mkdir(parents=True)
    (bench / "main.cpp").write_text('#include "spiralpir/arith/a.hpp"\n')
    assert cpp_graph(tmp_path) == {
        "spiralpir/arith/a.hpp": [("spiralpir/arith/b.hpp", 3)],
        "spiralpir/arith/b.hpp": [("spiralpir/spiral/late.hpp", 3)],
        "src/k.cpp": [("src/k.hpp", 1), ("spiralpir/arith/a.hpp", 2)],
        "src/k.hpp": [],
        "testing/bench/main.cpp": [("spiralpir/arith/a.hpp", 1)],
    }
    assert cpp_violations(cpp_graph(tmp_path)) == [
        "spiralpir/arith/b.hpp:3 includes spiralpir/spiral/late.hpp: no such runtime header",
        "src/k.cpp is in no layer: put it under a layer directory or claim it in CPP_SRC_LAYERS "
        "(tests/test_layers.py)",
        "src/k.hpp is in no layer: put it under a layer directory or claim it in CPP_SRC_LAYERS "
        "(tests/test_layers.py)",
    ]
