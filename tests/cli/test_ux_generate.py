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


def write_jsonl(path: Path, values: list[str]) -> None:
    path.write_text("".join(json.dumps(v) + "\n" for v in values), encoding="utf-8")


def test_from_db_plans_for_the_count_and_longest_value(tmp_path: Path) -> None:
    values = [f"https://example.com/{'é' * (i % 40)}" for i in range(3001)]
    write_jsonl(tmp_path / "urls.jsonl", values)
    longest = max(len(v.encode()) for v in values)
    proc = run("generate", "--from-db", tmp_path / "urls.jsonl", "--headroom", "10%",
               "--name", "urls", "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    params = params_of(tmp_path / "urls")
    # 10% more than 3001 records, rounded up
    # the longest value and its 1-byte length (records of values carry their length)
    assert (params["records"], params["record_size"]) == (3302, longest + 1)
    assert f"3,001 records (jsonl, longest value {longest} bytes)" in proc.stderr


def test_from_db_lists_every_over_long_value(tmp_path: Path) -> None:
    values = ["short"] * 10 + ["x" * (40 + i) for i in range(8)] + ["ok"]
    write_jsonl(tmp_path / "v.jsonl", values)
    line = one_line_error(run("generate", "--from-db", tmp_path / "v.jsonl", "--record-size",
                              "32", "--name", "v", "--out", tmp_path))
    assert ("8 records are longer than the 31 bytes a 32-byte item holds beside the value's "
            "1-byte length (the longest 47 bytes") in line
    for i in range(10, 15):
        assert f"record {i} (line {i + 1} of {tmp_path / 'v.jsonl'}) is {30 + i} bytes" in line
    assert "record 15 " not in line and line.endswith("and 3 more")
    assert not (tmp_path / "v").exists()


def test_from_db_binary_needs_and_checks_the_record_size(tmp_path: Path) -> None:
    db = tmp_path / "r.bin"
    db.write_bytes(bytes(64 * 100))
    base = ("generate", "--from-db", db, "--name", "r", "--out", tmp_path)
    assert "give --record-size" in one_line_error(run(*base))
    assert "not a multiple of the record size 48" in one_line_error(
        run(*base, "--record-size", "48"))
    ok = run(*base, "--record-size", "32")
    assert ok.returncode == 0, ok.stderr
    assert (params_of(tmp_path / "r")["records"], params_of(tmp_path / "r")["record_size"]) \
        == (200, 32)


def test_headroom_needs_from_db(tmp_path: Path) -> None:
    line = one_line_error(run("generate", "--records", "10", "--record-size", "8", "--headroom",
                              "5%", "--name", "h", "--out", tmp_path))
    assert line.endswith("--headroom goes with --from-db")
