"""`spiralpir plan --keys N --max-value-size B` and `generate --keys FILE|N`: the table shape
and the table database's parameters in the plan, the comparison with an index lookup,
NAME/keyword.json written (and removed when the build is regenerated without keys)."""

from __future__ import annotations

import base64
import json
import math
from pathlib import Path

import pytest
from cli_run import assert_user_error, run_cli
from spiralpir.optimizer.models.cost import Profile, stage_seconds
from spiralpir.optimizer.models.cuckoo_layout import H_CHOICES, max_keys, tag_bytes_for
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.plan.planner import plan


def check_keyword_section(doc: dict, keys: int, max_value: int) -> dict:
    kw = doc["keyword"]
    h, params = kw["h"], doc["params"]
    assert kw["keys"] == keys and kw["max_value_size"] == max_value
    # the table is the database: its rows, columns and slots per bin are the plan's
    m = Parameters.from_literal(params).items_per_pt
    assert (kw["rows"], kw["columns"], kw["slots"]) == (1 << params["nu_1"],
                                                        1 << params["nu_2"], m)
    assert kw["capacity"] == kw["rows"] * kw["columns"] * m == params["records"]
    assert params["variant"] == "spiral" and kw["rows"] % h == 0
    assert keys <= max_keys(h, kw["rows"], kw["columns"], m)
    assert kw["tag_bytes"] == tag_bytes_for(h, m) and \
        8 * kw["tag_bytes"] >= 40 + math.log2(h * m)
    # tag, a 1-byte length (values under 256 bytes), the value
    assert kw["slot_size"] == kw["tag_bytes"] + 1 + max_value == params["record_size"]
    assert kw["expansion"] == pytest.approx(kw["capacity"] * kw["slot_size"] /
                                            (keys * max_value))
    est = doc["estimate"]
    # one query, h responses; folding and modswitch h times
    assert kw["lookup_query_bytes"] == est["query_bytes"]
    assert kw["lookup_response_bytes"] == h * est["response_bytes"]
    st = stage_seconds(Parameters.from_literal(params), Profile.load())
    assert kw["lookup_server_seconds"] == pytest.approx(
        sum(st.values()) + (h - 1) * (st["folding"] + st["modswitch"]))
    assert kw["lookup_server_seconds"] < h * est["server_seconds"]
    index = plan(keys, max_value + 1).to_json()["estimate"]
    assert kw["index_server_seconds"] == pytest.approx(index["server_seconds"])
    assert kw["bytes_vs_index"] == pytest.approx(
        (est["query_bytes"] + h * est["response_bytes"]) /
        (index["query_bytes"] + index["response_bytes"]))
    assert {c["h"] for c in kw["considered"]} <= set(H_CHOICES)
    return kw


def test_plan_keys_json_and_text(monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(monkeypatch, capsys, "plan", "--keys", "20000", "--max-value-size", "32",
                  "--json")
    assert res.code == 0, res.err
    kw = check_keyword_section(json.loads(res.out), 20000, 32)
    res = run_cli(monkeypatch, capsys, "plan", "--keys", "20000", "--max-value-size", "32")
    assert res.code == 0, res.err
    assert f"bins of {kw['slots']} slots in h = {kw['h']} row blocks" in res.out
    assert f"{kw['bytes_vs_index']:.2f}x the bytes" in res.out and "expansion" in res.out


def test_plan_keys_from_a_file(monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "kv.csv").write_text("name,blob\n" + "".join(
        f"n{i},{base64.b64encode(bytes(i % 50)).decode()}\n" for i in range(500)))
    res = run_cli(monkeypatch, capsys, "plan", "--keys", str(tmp_path / "kv.csv"), "--json",
                  "--key-column", "name", "--value-column", "blob", "--base64-values")
    assert res.code == 0, res.err
    check_keyword_section(json.loads(res.out), 500, 49)


@pytest.mark.parametrize("args,needle", [
    (["--keys", "100"], "--keys N needs --max-value-size B"),
    (["--keys", "100", "--max-value-size", "8", "--records", "5"], "not --records"),
    (["--max-value-size", "8"], "a keyword plan takes --keys"),
    ([], "give --records N --record-size B (or --keys N --max-value-size B)"),
])
def test_plan_keys_errors(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                          args: list[str], needle: str) -> None:
    assert_user_error(run_cli(monkeypatch, capsys, "plan", *args), needle)


def test_generate_keys_file_and_count(monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str],
                                      tmp_path: Path) -> None:
    kv = tmp_path / "kv.jsonl"
    kv.write_text("".join(json.dumps({"key": f"k{i}", "value": "v" * (i % 20)}) + "\n"
                          for i in range(300)))
    out = tmp_path / "gen"
    res = run_cli(monkeypatch, capsys, "generate", "--keys", str(kv), "--name", "kw",
                  "--out", str(out))
    assert res.code == 0, res.err
    assert "300 keys, longest value 19 bytes" in res.err and "keyword.json" in res.out
    doc = json.loads((out / "kw" / "keyword.json").read_text())
    params = json.loads((out / "kw" / "params.json").read_text())
    check_keyword_section({**doc, "params": params["params"], "estimate": params["estimate"]},
                          300, 19)
    res = run_cli(monkeypatch, capsys, "generate", "--keys", "1000", "--max-value-size", "10",
                  "--name", "kw", "--out", str(out), "--force")
    assert res.code == 0, res.err
    assert json.loads((out / "kw" / "keyword.json").read_text())["keyword"]["keys"] == 1000
    res = run_cli(monkeypatch, capsys, "generate", "--records", "1000", "--record-size", "10",
                  "--name", "kw", "--out", str(out), "--force")
    assert res.code == 0, res.err
    assert not (out / "kw" / "keyword.json").exists()
    assert_user_error(run_cli(monkeypatch, capsys, "generate", "--keys", str(kv),
                              "--max-value-size", "10", "--name", "kw", "--out", str(out)),
                      'key "k11" is 11 bytes, longer than the table\'s 10')
    assert_user_error(run_cli(monkeypatch, capsys, "generate", "--keys", "10", "--name", "kw",
                              "--out", str(out)), "--keys N needs --max-value-size B")
