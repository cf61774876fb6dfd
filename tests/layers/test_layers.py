"""Every Python import and every runtime ``#include`` points down a declared layer order.

The tables below are the one declaration of that order; when a module or a source file
moves, update them (a module or file that no entry claims fails the test by name). The
machinery is in layer_check.py; test_layer_check.py runs it against planted violations, so
these tests cannot pass by finding nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from layer_check import cpp_graph, cpp_violations, cycle_report, cycles, py_violations, python_graph

REPO = Path(__file__).resolve().parents[2]

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
PY_LAYERS: Sequence[Mapping[str, Sequence[str]]] = (
    # the estimator: lattice security, knows nothing of the optimizer
    {"estimator/errors": (
        "spiralpir.estimator",
        "spiralpir.estimator.errors",
        "spiralpir.estimator.jsonfile",
    )},
    {"estimator/foundations": (
        "spiralpir.estimator.logmath",
        "spiralpir.estimator.search",
        "spiralpir.estimator.distributions",
        "spiralpir.estimator.cost",
        "spiralpir.estimator.lwe_parameters",
        "spiralpir.estimator.reduction",
        "spiralpir.estimator.prob",
        "spiralpir.estimator.integers",
        "spiralpir.estimator.levels",
        "spiralpir.estimator.reference_runner",
    )},
    {"estimator/attacks": ("spiralpir.estimator.attacks.*",)},
    {"estimator/driver": (
        "spiralpir.estimator.estimate",
        "spiralpir.estimator.spiral",
        "spiralpir.estimator.table",
        "spiralpir.estimator.backend",
        "spiralpir.estimator.paramsets",
    )},
    {"estimator/presets": ("spiralpir.estimator.presets",)},
    {"estimator/gate": ("spiralpir.estimator.gate",)},
    {"estimator/cli": ("spiralpir.estimator.cli",)},
    # the optimizer: plan -> generate -> build -> serve
    {"optimizer/errors": (
        "spiralpir.optimizer",
        "spiralpir.optimizer.errors",
        "spiralpir.optimizer.resources",
        "spiralpir.optimizer.resources.*",
    )},
    {"optimizer/params": ("spiralpir.optimizer.params.*",)},
    {"optimizer/models": ("spiralpir.optimizer.models.*",)},
    {"optimizer/plan": ("spiralpir.optimizer.plan.*",)},
    {"optimizer/codegen": ("spiralpir.optimizer.codegen.*",)},
    {"optimizer/build": ("spiralpir.optimizer.build.*",)},
    {
        "optimizer/measure": ("spiralpir.optimizer.measure.*",),
        "optimizer/service": ("spiralpir.optimizer.service.*",),
    },
    {"optimizer/cli": ("spiralpir.optimizer.cli.*",)},
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
        "spiralpir.optimizer.service.client_*",
        "spiralpir.optimizer.service.pir_server",
        "client and server meet only in what they share (http_api)",
    ),
    (
        "spiralpir.optimizer.cli.cmd_*",
        "spiralpir.optimizer.cli.cmd_*",
        "a command does not import another; shared steps live in a lower layer",
    ),
)

# Runtime header layers, low -> high: runtime/include/spiralpir/<layer>/…
CPP_LAYERS: Sequence[str] = ("core", "arith", "rlwe", "spiral")
# Test and benchmark code (runtime/testing/…) may include any layer; nothing in the library
# (include/, src/) may include it.
# The library's sources, runtime/src/…: a file in src/<layer>/ has that layer; flat files are
# claimed here by fnmatch pattern (relative to src/).
CPP_SRC_LAYERS: Mapping[str, str] = {
    "cpu_features.cpp": "core",
    "wipe.cpp": "core",
    "debug_check.hpp": "core",
    "chacha20.cpp": "arith",
    "gaussian.cpp": "arith",
    "ternary.cpp": "arith",
    "ntt_*": "arith",
    "pointwise_*": "arith",
    "dot_*": "arith",
    "reduce32_*": "arith",
    "first_dim_*": "spiral",
    "gadget_*": "arith",
}

# ------------------------------------------------------------------------------------------
# The tree as it is


def _fail(title: str, problems: list[str]) -> str:
    return f"{title} ({len(problems)}):\n  " + "\n  ".join(problems)


def test_python_imports_point_down() -> None:
    graph = python_graph(REPO, PY_ROOTS)
    assert len(graph) >= 30, f"found only {len(graph)} Python modules: is PY_ROOTS right?"
    problems = py_violations(graph, PY_LAYERS, PY_FORBIDDEN)
    assert not problems, _fail("Python imports against the layer table", problems)


def test_python_imports_have_no_cycles() -> None:
    graph = python_graph(REPO, PY_ROOTS)
    found = cycles(graph)
    assert not found, _fail("Python import cycles", cycle_report(graph, found))


def test_runtime_includes_point_down() -> None:
    graph = cpp_graph(REPO)
    assert sum(n.startswith("spiralpir/") for n in graph) >= 20, "runtime headers not found"
    problems = cpp_violations(graph, CPP_LAYERS, CPP_SRC_LAYERS)
    assert not problems, _fail("runtime includes against the layer order", problems)


def test_runtime_includes_have_no_cycles() -> None:
    graph = cpp_graph(REPO)
    found = cycles(graph)
    assert not found, _fail("runtime include cycles", cycle_report(graph, found))
