"""The pre-commit hook definition and the README's CI examples run the gate as documented."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
SPIRALPIR = [sys.executable, "-c", "from spiralpir.optimizer.cli import main; main()"]


def hook() -> dict[str, Any]:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert isinstance(hooks, list) and len(hooks) == 1
    return dict(hooks[0])


def readme_yaml_blocks() -> list[Any]:
    text = (REPO / "README.md").read_text()
    return [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, re.S)]


def test_hook_definition() -> None:
    h = hook()
    assert h["id"] == "spiralpir-security" and h["language"] == "python"
    assert h["entry"] == "spiralpir security" and h["args"] == ["--require", "128"]
    files = re.compile(h["files"])
    for path in ("generated/demo/params.json", "params.json", "params/sealpir.ring.json"):
        assert files.search(path), path
    for path in ("pyproject.toml", "generated/demo/params.hpp", "tests/x/data.json",
                 "ring.json.bak"):
        assert not files.search(path), path


def test_hook_runs_the_gate_on_what_it_matches(tmp_path: Path) -> None:
    h = hook()
    weak = tmp_path / "spiral.ring.json"
    weak.write_text('{"ring_dimension": 2048, "moduli": [268369921, 249561089], '
                    '"error_width": 6.4, "secret": "gaussian"}')
    shipped = sorted(str(p) for p in (REPO / "generated").glob("*/params.json"))
    argv = SPIRALPIR + h["entry"].split()[1:] + h["args"]  # pre-commit appends the files
    ok = subprocess.run(argv + shipped, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = subprocess.run(argv + shipped[:1] + [str(weak)], capture_output=True, text=True,
                         timeout=300)
    assert bad.returncode == 1 and f"FAIL {weak}: 124.8 bits < 128" in bad.stdout


def test_readme_examples_are_valid_and_use_the_hook_and_the_gate() -> None:
    blocks = readme_yaml_blocks()
    config = next(b for b in blocks if isinstance(b, dict) and "repos" in b)
    used = config["repos"][0]["hooks"][0]
    assert used["id"] == hook()["id"] and used["args"] == hook()["args"]
    workflow = next(b for b in blocks if isinstance(b, dict) and "jobs" in b)
    runs = [s["run"] for job in workflow["jobs"].values() for s in job["steps"] if "run" in s]
    gates = [r for r in runs if r.startswith("spiralpir security")]
    assert len(gates) == 2 and all("--require 128" in g for g in gates)
    # the gate's options exist as written (the file globs are the user's)
    for g in gates:
        words = [w for w in shlex.split(g)[2:] if w.startswith("-")]
        res = subprocess.run(SPIRALPIR + ["security", "--help"], capture_output=True, text=True,
                             timeout=60)
        assert all(w in res.stdout for w in words), words
    install = next(r for r in runs if "lattice-estimator" in r)
    assert "passagemath-standard==10.8.13" in install
    assert "27a581bb8e9d49f5e9e2db315bd48ac769d5f5f5" in install
