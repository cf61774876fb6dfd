"""The layer checker against planted graphs: it accepts a clean one and rejects each kind of
violation, and its readers see every import and include, so that test_layers.py cannot pass
by finding nothing."""

from __future__ import annotations

from pathlib import Path

from layer_check import cpp_graph, cpp_violations, cycles, py_violations, python_imports
from test_layers import CPP_LAYERS, CPP_SRC_LAYERS, PY_FORBIDDEN, PY_LAYERS


def _py(graph: dict[str, list[tuple[str, int]]]) -> list[str]:
    return py_violations(graph, PY_LAYERS, PY_FORBIDDEN)


def _cpp(graph: dict[str, list[tuple[str, int]]]) -> list[str]:
    return cpp_violations(graph, CPP_LAYERS, CPP_SRC_LAYERS)


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
    assert _py(graph) == []
    assert cycles(graph) == []


def test_checker_rejects_an_upward_import() -> None:
    graph = {f"{_E}.spiral": [(f"{_O}.plan.search", 12)], f"{_O}.plan.search": []}
    (problem,) = _py(graph)
    assert f"{_E}.spiral:12 imports {_O}.plan.search" in problem and "upward" in problem


def test_checker_rejects_an_import_between_siblings() -> None:
    graph = {f"{_O}.service.pir_server": [(f"{_O}.measure.bench", 2)], f"{_O}.measure.bench": []}
    (problem,) = _py(graph)
    assert "between siblings" in problem


def test_checker_rejects_a_forbidden_downward_import() -> None:
    graph = {f"{_O}.service.binding": [(f"{_O}.plan.planner", 9)], f"{_O}.plan.planner": []}
    (problem,) = _py(graph)
    assert "never plans" in problem
    graph = {
        f"{_O}.cli.cmd_demo": [(f"{_O}.cli.cmd_generate", 3), (f"{_O}.cli.render", 4)],
        f"{_O}.cli.cmd_generate": [],
        f"{_O}.cli.render": [],
    }
    (problem,) = _py(graph)
    assert f"{_O}.cli.cmd_demo:3 imports {_O}.cli.cmd_generate" in problem


def test_checker_rejects_an_unassigned_module() -> None:
    graph = {f"{_O}.misc": [(f"{_O}.errors", 1)], f"{_O}.errors": []}
    (problem,) = _py(graph)
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
    problems = _cpp(graph)
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
    assert _cpp(cpp_graph(tmp_path)) == [
        "spiralpir/arith/b.hpp:3 includes spiralpir/spiral/late.hpp: no such runtime header",
        "src/k.cpp is in no layer: put it under a layer directory or claim it in CPP_SRC_LAYERS "
        "(tests/layers/test_layers.py)",
        "src/k.hpp is in no layer: put it under a layer directory or claim it in CPP_SRC_LAYERS "
        "(tests/layers/test_layers.py)",
    ]
