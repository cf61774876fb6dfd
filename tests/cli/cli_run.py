"""Running `spiralpir` in the test process: the real entry point (optimizer/cli/main.py main),
its exit code and what it printed."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import pytest
from spiralpir.optimizer.cli.main import main


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
            *args: str) -> Result:
    """`spiralpir ARGS`; an exception other than the CLI's own exit (a traceback for the user)
    propagates and fails the test."""
    monkeypatch.setattr(sys, "argv", ["spiralpir", *args])
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return Result(code, out, err)


def assert_user_error(res: Result, *needles: str) -> None:
    """Exit 2 and exactly one line on stderr that names the problem."""
    lines = res.err.strip().splitlines()
    assert res.code == 2, (res.code, res.err)
    assert len(lines) == 1 and lines[0].startswith("spiralpir: error: "), res.err
    assert all(n in lines[0] for n in needles), (needles, lines[0])
