#!/usr/bin/env python3
"""Fails when a runtime header includes a higher layer, or headers include each other in a cycle.

Layers, bottom to top: core < arith < rlwe < spiral < testing (runtime/testing/include, test and
benchmark helpers). A header may include its own layer and the ones below; src/*.cpp and
src/*.hpp may include any library layer, never testing. Usage: check_include_layers.py RUNTIME_DIR
"""
import re
import sys
from pathlib import Path

LAYERS = ["core", "arith", "rlwe", "spiral", "testing"]
# Known exceptions (none left); an entry that no longer occurs is an error too, so the lists
# only shrink.
ALLOWED: set[tuple[str, str]] = set()
ALLOWED_CYCLES: set[frozenset[str]] = set()
INCLUDE = re.compile(r'^\s*#\s*include\s+[<"]spiralpir/([a-z_]+)/([^">]+)[">]', re.M)


def headers(root: Path) -> dict[str, Path]:
    out = {}
    for base in (root / "include" / "spiralpir", root / "testing" / "include" / "spiralpir"):
        for p in base.rglob("*.hpp"):
            out[p.relative_to(base).as_posix()] = p
    return out


def main() -> int:
    root = Path(sys.argv[1])
    hdrs = headers(root)
    errors, seen_allowed = [], set()
    graph: dict[str, list[str]] = {}
    for name, path in sorted(hdrs.items()):
        layer = name.split("/")[0]
        if layer not in LAYERS:
            errors.append(f"{name}: not in a layer directory ({', '.join(LAYERS)})")
            continue
        graph[name] = []
        for inc_layer, rest in INCLUDE.findall(path.read_text()):
            target = f"{inc_layer}/{rest}"
            if target not in hdrs:
                errors.append(f"{name}: includes missing header {target}")
                continue
            graph[name].append(target)
            if LAYERS.index(inc_layer) > LAYERS.index(layer):
                if (name, target) in ALLOWED:
                    seen_allowed.add((name, target))
                else:
                    errors.append(f"{name} ({layer}) includes {target} (higher layer {inc_layer})")
    for src in sorted((root / "src").glob("*.[ch]pp")):
        for inc_layer, rest in INCLUDE.findall(src.read_text()):
            if inc_layer == "testing":
                errors.append(f"src/{src.name} includes testing/{rest}")
    errors += [f"allow-list entry {a} -> {b} no longer occurs: remove it" for a, b in ALLOWED - seen_allowed]
    # cycles: depth-first search, reporting each back edge's cycle once
    state: dict[str, int] = {}
    stack: list[str] = []
    seen_cycles: set[frozenset[str]] = set()

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for m in graph.get(n, []):
            if state.get(m) == 1:
                cycle = stack[stack.index(m):]
                if frozenset(cycle) in ALLOWED_CYCLES:
                    seen_cycles.add(frozenset(cycle))
                else:
                    errors.append("include cycle: " + " -> ".join(cycle + [m]))
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)
    errors += [f"allowed cycle {sorted(c)} no longer occurs: remove it" for c in ALLOWED_CYCLES - seen_cycles]
    for e in errors:
        print(e)
    print(f"{len(hdrs)} headers checked, {len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
