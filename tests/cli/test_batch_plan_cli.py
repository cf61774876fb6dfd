"""`spiralpir plan --batch K` and `generate --batch K`: the layout, the failure bound and the
bucket database's parameters in the plan; NAME/batch.json written (and removed again when the
build is regenerated without a batch)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_run import assert_user_error, run_cli
from spiralpir.optimizer.models.bucket_layout import BucketLayout
from spiralpir.optimizer.models.placement_bound import log2_failure_bound, min_buckets
from spiralpir.optimizer.plan import batch_plan


def check_batch_section(doc: dict, records: int, k: int) -> BucketLayout:
    batch = doc["batch"]
    lay = BucketLayout.from_json(batch, "plan")
    assert lay.records == records and batch["k"] == k
    assert batch["log2_failure_bound"] <= -40
    assert batch["log2_failure_bound"] == pytest.approx(log2_failure_bound(k, lay.buckets, lay.w))
    assert lay.buckets == min_buckets(k, lay.w)
    loads = np.bincount(lay.candidates(np.arange(records)).reshape(-1), minlength=lay.buckets)
    assert lay.capacity == loads.max()
    assert doc["params"]["records"] == lay.capacity  # the bucket database's shape
    est = doc["estimate"]
    g = doc["params"].get("query_buckets", 1)  # buckets per query ct
    queries = -(-lay.buckets // g)
    assert batch["query_buckets"] == g and batch["batch_queries"] == queries
    assert est["log2_failure_probability"] <= -40  # with the packed shape's expansion noise
    assert batch["batch_query_bytes"] == queries * est["query_bytes"]
    assert batch["per_record_bytes"] == pytest.approx(
        (queries * est["query_bytes"] + lay.buckets * est["response_bytes"]) / k)
    return lay


def test_plan_batch_json_and_text(monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(monkeypatch, capsys, "plan", "--records", "5000", "--record-size", "32",
                  "--batch", "16", "--json")
    assert res.code == 0, res.err
    check_batch_section(json.loads(res.out), 5000, 16)
    res = run_cli(monkeypatch, capsys, "plan", "--records", "5000", "--record-size", "32",
                  "--batch", "3", "--top", "1")
    assert res.code == 0, res.err
    assert "cannot fail (no more indices than copies" in res.out and "bucket database" in res.out
    assert "small batches need relatively more buckets" in res.out


def test_plan_batch_packs_queries_within_the_cpu_slack(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The chosen G is the largest considered whose batch seconds are within 5% of G = 1's;
    --query-buckets forces G (1: one query per bucket, as before packing)."""
    res = run_cli(monkeypatch, capsys, "plan", "--records", "20000", "--record-size", "32",
                  "--batch", "16", "--json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    check_batch_section(doc, 20000, 16)
    batch = doc["batch"]
    packed = [c for c in batch["considered"] if "query_buckets" in c]
    assert packed, "G > 1 considered"
    base = next(c for c in batch["considered"] if "query_buckets" not in c
                and c["w"] == batch["w"])
    ok = [c["query_buckets"] for c in packed
          if c["batch_server_seconds"] <= 1.05 * base["batch_server_seconds"]]
    assert batch["query_buckets"] == max(ok, default=1)
    assert batch["query_buckets"] > 1
    res = run_cli(monkeypatch, capsys, "plan", "--records", "20000", "--record-size", "32",
                  "--batch", "16", "--query-buckets", "1", "--json")
    assert res.code == 0, res.err
    one = json.loads(res.out)
    check_batch_section(one, 20000, 16)
    assert "query_buckets" not in one["params"] and one["batch"]["query_buckets"] == 1
    res = run_cli(monkeypatch, capsys, "plan", "--records", "20000", "--record-size", "32",
                  "--batch", "16", "--query-buckets", "4", "--top", "1")
    assert res.code == 0, res.err
    assert "G = 4 buckets per query ct" in res.out
    res = run_cli(monkeypatch, capsys, "plan", "--records", "20000", "--record-size", "32",
                  "--query-buckets", "4")
    assert_user_error(res, "--query-buckets goes with --batch")


def test_plan_batch_too_large(monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(monkeypatch, capsys, "plan", "--records", "10", "--record-size", "32",
                  "--batch", "11")
    assert_user_error(res, "batch", "exceeds the 10 records")


def test_generate_batch_writes_the_layout(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    res = run_cli(monkeypatch, capsys, "generate", "--records", "4000", "--record-size", "32",
                  "--batch", "8", "--name", "bat", "--out", str(tmp_path))
    assert res.code == 0, res.err
    assert "batch.json" in res.out
    doc = json.loads((tmp_path / "bat" / "batch.json").read_text())
    params = json.loads((tmp_path / "bat" / "params.json").read_text())
    check_batch_section({**params, "batch": doc["batch"]}, 4000, 8)
    # the plan file route: plan --batch --json, then generate --params
    res = run_cli(monkeypatch, capsys, "plan", "--records", "4000", "--record-size", "32",
                  "--batch", "8", "--json")
    (tmp_path / "plan.json").write_text(res.out)
    res = run_cli(monkeypatch, capsys, "generate", "--params", str(tmp_path / "plan.json"),
                  "--name", "bat2", "--out", str(tmp_path))
    assert res.code == 0, res.err
    assert json.loads((tmp_path / "bat2" / "batch.json").read_text())["batch"]["seed"] == \
        json.loads(res_out := (tmp_path / "plan.json").read_text())["batch"]["seed"], res_out
    # regenerated without a batch: no stale layout left to serve buckets by
    res = run_cli(monkeypatch, capsys, "generate", "--records", "4000", "--record-size", "32",
                  "--name", "bat", "--out", str(tmp_path), "--force")
    assert res.code == 0, res.err
    assert not (tmp_path / "bat" / "batch.json").exists()


def test_max_copies_caps_w(monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(monkeypatch, capsys, "plan", "--records", "5000", "--record-size", "32",
                  "--batch", "16", "--max-copies", "3", "--json")
    assert res.code == 0, res.err
    lay = check_batch_section(json.loads(res.out), 5000, 16)
    assert lay.w <= 3
    assert_user_error(run_cli(monkeypatch, capsys, "plan", "--records", "5000",
                              "--record-size", "32", "--max-copies", "3"),
                      "--max-copies goes with --batch")


def test_batch_candidates_are_ranked_alone_and_the_choice_explained_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every w and G candidate is planned without alternatives or binding constraints (a
    search each); only the chosen bucket plan gets them, and it is the plan a ranking-only
    batch plan of the same seed chooses."""
    calls: list[dict] = []
    real_plan = batch_plan.plan

    def spy(records: int, record_size: int, **options: object) -> batch_plan.Plan:
        calls.append(options)
        return real_plan(records, record_size, **options)

    monkeypatch.setattr(batch_plan, "plan", spy)
    seed = "00" * 16
    # one process: the spy sees every plan (a forked worker's calls stay in the worker)
    explained = batch_plan.plan_batch(20000, 32, 16, seed=seed, processes=1, top=3,
                                      explain=True)
    assert [c.get("explain") for c in calls].count(True) == 1
    assert calls[-1].get("explain") is True and calls[-1].get("top") == 3
    assert all(c.get("top") == 1 for c in calls[:-1]) and len(calls) > 2
    assert explained.plan.alternatives  # top 3: two alternatives searched for the choice
    calls.clear()
    ranked = batch_plan.plan_batch(20000, 32, 16, seed=seed, processes=1)
    assert all(not c.get("explain") and c.get("top") == 1 for c in calls)
    assert explained.plan.params == ranked.plan.params
    assert explained.figures == ranked.figures


def test_batch_candidates_planned_on_several_processes_choose_the_same() -> None:
    """Candidate plans searched on forked workers give the batch plan of one process, every
    candidate's figures included (in the same order)."""
    seed = "11" * 16
    alone = batch_plan.plan_batch(20000, 32, 16, seed=seed, processes=1)
    shared = batch_plan.plan_batch(20000, 32, 16, seed=seed, processes=3)
    assert len(alone.considered) > len(batch_plan.W_CHOICES)  # the G candidates too
    assert shared.to_json() == alone.to_json()
