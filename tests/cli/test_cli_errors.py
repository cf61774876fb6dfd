"""Every command's user errors: exit code 2, one line on stderr naming the problem, no traceback.

The commands run in the test process through the real entry point (cli_run.py); nothing here
builds or benchmarks (the errors are found before that).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import assert_user_error, run_cli

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "generated" / "demo"
TIMING = REPO / "tests" / "models" / "data" / "timing"

# (arguments, words the one-line error must hold); {tmp} is a fresh empty directory
CASES: list[tuple[list[str], list[str]]] = [
    # usage errors of any command (click's own) are one line too
    (["plan", "--records", "2^16"], ["--record-size", "plan --help"]),
    (["plan", "--records", "2^16", "--record-size", "32", "--objective", "speed"],
     ["--objective", "speed"]),
    (["no-such-command"], ["no-such-command"]),
    # plan
    (["plan", "--records", "0", "--record-size", "8"], ["--records", "at least 1"]),
    (["plan", "--records", "12x", "--record-size", "8"], ["--records", "12x"]),
    (["plan", "--records", "2^16", "--record-size", "32", "--top", "0"], ["--top"]),
    (["plan", "--records", "2^16", "--record-size", "32", "--max-response-bytes", "10"],
     ["no SPIRAL parameters", "--max-response-bytes 10"]),
    (["plan", "--records", "2^16", "--record-size", "32", "--profile", "{tmp}/none.json"],
     ["none.json"]),
    (["plan", "--records", "2^16", "--record-size", "32", "--cpu-price", "-1"],
     ["--cpu-price"]),
    (["plan", "--records", "2^16", "--record-size", "32", "--variant", "fast"], ["--variant"]),
    (["plan", "--records", "2^16", "--record-size", "32", "--blocks", "8"],
     ["--blocks", "--objective stream"]),
    # generate
    (["generate", "--name", "x"], ["--params", "--records"]),
    (["generate", "--name", "x", "--records", "10"], ["--record-size"]),
    (["generate", "--name", "x", "--params", "{tmp}/none.json"], ["none.json"]),
    (["generate", "--name", "x", "--params", "{tmp}/bad.json"], ["bad.json"]),
    (["generate", "--name", "x", "--params", str(DEMO / "params.json"), "--variant", "pack"],
     ["--records"]),
    (["generate", "--name", "Bad Name", "--records", "10", "--record-size", "8", "--out",
      "{tmp}"], ["Bad Name"]),
    # build / bench: not a generated build, bad counts
    (["build", "{tmp}"], ["not a generated build"]),
    (["build", str(DEMO), "--jobs", "0"], ["--jobs"]),
    (["bench", "{tmp}"], ["not a generated build"]),
    (["bench", str(DEMO), "--trials", "0"], ["--trials"]),
    (["bench", str(DEMO), "--threads", "0"], ["--threads"]),
    # calibrate
    (["calibrate", "--suite", "replan"], ["--suite", "fit", "validate"]),
    (["calibrate", "--suite", "validate,trials=0"], ["trials=0", ">= 1"]),
    (["calibrate", "--suite", "validate,max-db-gib=x"], ["max-db-gib=x", "not a number"]),
    (["calibrate", "--suite", "validate,variants=foo"], ["variants", "foo"]),
    (["calibrate", "--suite", "validate,compare={tmp}/empty"], ["no suite runs"]),
    (["calibrate", "--suite", "validate,shapes=2e99x1b"], ["2e99x1b"]),
    (["calibrate", "--suite", "validate,bogus=1"], ["bogus", "unknown"]),
    (["calibrate", "--suite", "validate,store"], ["store", "NAME=VALUE"]),
    (["calibrate", "--suite", "run={tmp}/none.json"], ["PARAMS.json:REPORT.json"]),
    (["calibrate", "--suite", "run={tmp}/none.json:{tmp}/rep.json,arith-json={tmp}/arith.json",
      "--out", "{tmp}/p.json"], ["arith.json"]),
    # sample-db
    (["sample-db", "--out", "{tmp}/x.db", "--records", "-5"], ["--records", "-5"]),
    (["sample-db", "--out", "{tmp}/x.db", "--records", "0"], ["--records"]),
    (["sample-db", "--out", "{tmp}/d", "--blocks", "0"], ["--blocks"]),
    (["sample-db", "--out", "{tmp}/bad.json/x.db", "--records", "3"], ["cannot write"]),
    # serve: startup errors (before listening)
    (["serve", "--build", "{tmp}", "--db", "{tmp}/x.db"], ["not a generated build"]),
    (["serve", "--build", str(DEMO), "--db", "{tmp}/none.db"], ["no such database"]),
    (["serve", "--build", str(DEMO), "--db", "{tmp}/odd.db"], ["not a multiple", "33"]),
    (["serve", "--build", str(DEMO), "--db", "{tmp}/bad.jsonl"], ["line 1", "not valid JSON"]),
    (["serve", "--build", str(DEMO), "--db", "{tmp}/big.db"], ["planned for"]),
    (["serve", "--build", str(DEMO), "--ray", "local"], ["--ray ADDRESS|local and --shards DIR"]),
    (["serve", "--build", str(DEMO), "--ray", "local", "--shards", "{tmp}", "--db", "{tmp}/x.db"],
     ["no --db, --stream"]),
    (["serve", "--build", str(DEMO), "--ray", "local", "--shards", "{tmp}"], ["no manifest"]),
    (["shard", "--build", str(DEMO), "--db", "{tmp}/none.db", "--shards", "2", "--out", "{tmp}/s"],
     ["no such database"]),
    (["shard", "--build", str(DEMO), "--db", "{tmp}/none.db", "--shards", "6", "--out", "{tmp}/s"],
     ["--shards 6", "power of two"]),
    (["shard-model", "--machines", "16,x"], ["--machines '16,x'"]),
    (["shard-model", "--machines", "4", "--memory-per-machine", "8GiB"],
     ["no split of 1073741824 x 256 B fits 4 machines"]),
    (["serve", "--build", str(DEMO)], ["either --db"]),
    # query: its error paths without a server
    (["query", "--server", "http://127.0.0.1:9", "--index", "0", "--wait", "0"], ["cannot reach"]),
    (["query", "--server", "not-a-url", "--index", "0"], ["not-a-url"]),
    (["query", "--server", "http://127.0.0.1:9", "--index", "0", "--blocks", "1"],
     ["--stream"]),
    (["query", "--server", "http://127.0.0.1:9"], ["--index"]),
    # update: option errors, unreadable tokens, bad change files, non-binary databases
    (["update", "--changes", "{tmp}/bad.jsonl"], ["--server URL", "--build"]),
    (["update", "--changes", "{tmp}/bad.jsonl", "--server", "http://127.0.0.1:9"],
     ["--admin-token-file"]),
    (["update", "--changes", "{tmp}/bad.jsonl", "--server", "http://127.0.0.1:9",
      "--admin-token-file", "{tmp}/none"], ["admin token file"]),
    (["update", "--build", str(DEMO), "--db", "{tmp}/small.db", "--changes", "{tmp}/bad.jsonl",
      "--no-cache"], ["line 1", "not valid JSON", "nothing was applied"]),
    (["update", "--build", str(DEMO), "--db", "{tmp}/db.jsonl", "--changes", "{tmp}/bad.jsonl"],
     ["jsonl database", "binary"]),
    # demo: option errors before any work
    (["demo", "--queries", "0"], ["--queries"]),
    (["demo", "--threads", "-1"], ["--threads"]),
    # security (its main paths are in tests/estimator/test_cli_gate.py)
    (["security"], ["nothing to estimate", "--preset"]),
]


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    (tmp_path / "bad.json").write_text("{not json\n")
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    (tmp_path / "odd.db").write_bytes(bytes(33))  # not a whole number of 32-byte records
    (tmp_path / "big.db").write_bytes(bytes(32 * ((1 << 16) + 1)))  # one record too many
    (tmp_path / "arith.json").write_text("[]")  # not a microbenchmark report
    (tmp_path / "empty").mkdir()
    (tmp_path / "small.db").write_bytes(bytes(32 * 4))
    (tmp_path / "db.jsonl").write_text('"a"\n')
    return tmp_path


@pytest.mark.parametrize("args,needles", CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_user_error_is_one_line_and_exit_2(args: list[str], needles: list[str], tmp: Path,
                                           monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    argv = [a.replace("{tmp}", str(tmp)) for a in args]
    res = run_cli(monkeypatch, capsys, *argv)
    assert_user_error(res, *needles)


def test_sample_db_writes_nothing_on_error(tmp: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """--records -5 used to exit 0 with an empty file."""
    res = run_cli(monkeypatch, capsys, "sample-db", "--out", str(tmp / "x.db"), "--records",
                  "-5")
    assert res.code == 2 and not (tmp / "x.db").exists()


def test_every_command_has_error_cases() -> None:
    from spiralpir.optimizer.cli.main import COMMANDS

    assert {args[0] for args, _ in CASES} >= set(COMMANDS)


def test_plan_cpu_price_of_zero_is_a_price(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """--cpu-price 0 used to fall back to the default price (0 is falsy): the dollars are then
    the egress alone."""
    res = run_cli(monkeypatch, capsys, "plan", "--records", "2^12", "--record-size", "64",
                  "--cpu-price", "0", "--egress-price", "0.5", "--json")
    assert res.code == 0, res.err
    e = json.loads(res.out)["estimate"]
    assert e["dollars_per_query"] == pytest.approx(e["response_bytes"] * 0.5 / 1e9, rel=1e-12)


def test_bare_command_prints_the_help(monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(monkeypatch, capsys)
    assert res.code == 2 and "Usage: " in res.err and "Commands:" in res.err
