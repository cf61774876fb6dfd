"""Every command's main path through the real entry point: plan, generate, sample-db,
calibrate (validation against saved runs, a fit from a saved run), build, bench (the CI twin),
demo (on the checked-in demo build: the same library the service tests build). serve and query
run as processes in tests/service; security in tests/estimator/test_cli_gate.py."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from cli_run import run_cli
from spiralpir.optimizer.cli import cmd_demo
from spiralpir.optimizer.models.parallel import wall_seconds
from spiralpir.optimizer.models.profile import Profile
from spiralpir.optimizer.params.ci_twin import ci_literal
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.plan.planner import ESTIMATE_KEYS

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "generated" / "demo"
TIMING = REPO / "tests" / "models" / "data" / "timing"

Mp = pytest.MonkeyPatch
Cap = pytest.CaptureFixture[str]


def test_plan(monkeypatch: Mp, capsys: Cap) -> None:
    res = run_cli(monkeypatch, capsys, "plan", "--records", "2^12", "--record-size", "64",
                  "--json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    p = Parameters.from_literal(doc["params"])
    assert (p.records, p.record_size) == (4096, 64)
    assert set(doc["estimate"]) == set(ESTIMATE_KEYS)
    text = run_cli(monkeypatch, capsys, "plan", "--records", "4096", "--record-size", "64")
    assert text.code == 0 and "binding constraints" in text.out


def test_generate_from_a_plan_file(tmp_path: Path, monkeypatch: Mp, capsys: Cap) -> None:
    res = run_cli(monkeypatch, capsys, "generate", "--params", str(DEMO / "params.json"),
                  "--name", "demo_copy", "--out", str(tmp_path))
    assert res.code == 0, res.err
    made = tmp_path / "demo_copy"
    assert json.loads((made / "params.json").read_text())["params"] == json.loads(
        (DEMO / "params.json").read_text())["params"]
    assert {"CMakeLists.txt", "params.hpp", "instance.cpp", "bench.cpp"} <= {
        f.name for f in made.iterdir()}
    assert f"spiralpir build {made}" in res.out


def test_sample_db_file_and_blocks(tmp_path: Path, monkeypatch: Mp, capsys: Cap) -> None:
    res = run_cli(monkeypatch, capsys, "sample-db", "--out", str(tmp_path / "s.db"),
                  "--records", "10")
    assert res.code == 0, res.err
    data = (tmp_path / "s.db").read_bytes()
    assert data == b"".join(hashlib.sha256(i.to_bytes(8, "big")).digest() for i in range(10))
    res = run_cli(monkeypatch, capsys, "sample-db", "--out", str(tmp_path / "blocks"),
                  "--records", "3", "--blocks", "2")
    assert res.code == 0, res.err
    files = sorted((tmp_path / "blocks").iterdir())
    assert len(files) == 2 and files[1].read_bytes()[:32] == hashlib.sha256(
        (1 << 32).to_bytes(8, "big")).digest()


def test_calibrate_validates_saved_runs(monkeypatch: Mp, capsys: Cap) -> None:
    res = run_cli(monkeypatch, capsys, "calibrate", "--suite", f"validate,compare={TIMING}")
    assert res.code == 0, res.err
    runs = len(list(TIMING.glob("*.json")))
    assert f"/{runs} within ±20%" in res.out
    assert res.out.count("TOTAL") == runs


def test_calibrate_fits_a_saved_run(tmp_path: Path, monkeypatch: Mp, capsys: Cap) -> None:
    """A profile from a saved bench run and a microbenchmark report, loadable by the planner."""
    doc = json.loads((TIMING / "spiral_2e20x256b_t1.json").read_text())
    (tmp_path / "params.json").write_text(json.dumps({"params": doc["params"]}))
    (tmp_path / "report.json").write_text(json.dumps(doc["bench"]))
    rows = [{"name": f"{kind}/avx512/{d}/28", "run_type": "iteration", "cpu_time": 1.2 * d,
             "real_time": 1.2 * d, "time_unit": "ns"}
            for d in (1024, 2048, 4096) for kind in ("ntt_forward", "ntt_inverse")]
    rows += [{"name": "mul_add/avx512/2048/28", "run_type": "iteration", "cpu_time": 600.0,
              "real_time": 600.0, "time_unit": "ns"},
             {"name": "stream_read/1024", "run_type": "iteration", "cpu_time": 1.0,
              "real_time": 1.0, "time_unit": "ns", "bytes_per_second": 1.2e10}]
    (tmp_path / "arith.json").write_text(json.dumps({"benchmarks": rows}))
    out = tmp_path / "profile.json"
    res = run_cli(monkeypatch, capsys, "calibrate", "--suite",
                  f"run={tmp_path / 'params.json'}:{tmp_path / 'report.json'},"
                  f"arith-json={tmp_path / 'arith.json'}", "--out", str(out))
    assert res.code == 0, res.err
    prof = Profile.load(out)
    assert prof.read_bytes_per_second == 1.2e10
    assert "calibration run" in res.err and f"wrote {out}" in res.out


@pytest.mark.timeout(1800)
def test_build_bench_and_demo(monkeypatch: Mp, capsys: Cap) -> None:
    """build compiles the demo (the library and both benchmarks), bench answers the CI twin's
    queries correctly, demo serves the sample database and retrieves records over HTTP (on
    the checked-in build: the planner's choice on this machine may differ from it)."""
    res = run_cli(monkeypatch, capsys, "build", str(DEMO))
    assert res.code == 0, res.err
    assert res.out.startswith("built demo") and "CI-sized twin" in res.out
    res = run_cli(monkeypatch, capsys, "bench", str(DEMO), "--ci", "--trials", "1",
                  "--threads", "1", "--json")
    assert res.code == 0, res.err
    report = json.loads(res.out)
    assert report["correct"] is True and report["server_seconds"] > 0
    # the active profile's prediction for the threads used (the tests run on the shipped one)
    lit = ci_literal(json.loads((DEMO / "params.json").read_text())["params"])
    assert report["predicted_server_seconds"] == pytest.approx(
        wall_seconds(Parameters.from_literal(lit), Profile.shipped(), 1))
    assert report["profile"] == Profile.shipped().describe()
    res = run_cli(monkeypatch, capsys, "bench", str(DEMO), "--ci", "--trials", "1",
                  "--threads", "2")
    assert res.code == 0, res.err
    assert "predicted vs measured (wall seconds, 2 thread(s); profile shipped default" in res.out
    assert "first_dimension" in res.out.split("predicted vs measured")[1]
    # expansion ... modswitch, TOTAL (spiral: no packing), the total against the bench's
    # uncontended estimate (2 threads), prepare, per database
    assert res.out.count("ratio") == 9 and "per database" in res.out
    assert "TOTAL, uncontended" in res.out
    checked_in = json.loads((DEMO / "params.json").read_text())
    monkeypatch.setattr(cmd_demo, "plan_demo", lambda: checked_in)
    res = run_cli(monkeypatch, capsys, "demo", "--queries", "2", "--threads", "1", "--seed", "3")
    assert res.code == 0, res.err
    assert "2/2 records retrieved privately and verified" in res.out
    assert "matches the plan" in res.err and res.err.count(" OK ") == 2
