"""`spiralpir generate` into an existing build directory, and planning from a data file."""

from __future__ import annotations

import json
from pathlib import Path

from ux_helpers import one_line_error, run


def params_of(build: Path) -> dict[str, object]:
    return dict(json.loads((build / "params.json").read_text())["params"])


def test_regenerating_the_same_parameters_is_allowed(tmp_path: Path) -> None:
    args = ("generate", "--records", "1000", "--record-size", "32", "--name", "x",
            "--out", tmp_path)
    assert run(*args).returncode == 0
    before = (tmp_path / "x" / "params.json").read_text()
    again = run(*args)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "x" / "params.json").read_text() == before


def test_other_parameters_under_an_existing_name_need_force(tmp_path: Path) -> None:
    first = ("--name", "x", "--out", tmp_path)
    assert run("generate", "--records", "1000", "--record-size", "32", *first).returncode == 0
    old = params_of(tmp_path / "x")
    other = ("generate", "--records", "1000", "--record-size", "64", *first)
    line = one_line_error(run(*other))
    assert "holds a build of other parameters" in line and "--force" in line
    # only the fields that differ are named, with both values
    assert "record_size 32 -> 64" in line
    assert "records " not in line and "poly_len" not in line
    assert len(line) < 400
    assert params_of(tmp_path / "x") == old  # untouched
    forced = run(*other, "--force")
    assert forced.returncode == 0, forced.stderr
    assert params_of(tmp_path / "x")["record_size"] == 64
