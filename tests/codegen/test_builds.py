"""Every checked-in build compiles against the shared runtime and answers random queries
correctly at CI size; the sizes it measures equal the plan's estimates exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spiralpir.optimizer import codegen
from spiralpir.optimizer.build import builder
from spiralpir.optimizer.measure.bench import run_bench
from spiralpir.optimizer.params import sizes
from spiralpir.optimizer.params.parameters import Parameters

REPO = Path(__file__).resolve().parents[2]
CHECKED_IN = ["demo", "spiral_2e20x256b", "spiral_2e18x30kb", "spiral_2e14x100kb"]
# the same three databases for SpiralStream / SpiralPack / SpiralStreamPack
VARIANT_BUILDS = [f"{v}_{shape}" for v in ("stream", "pack", "streampack")
                  for shape in ("2e20x256b", "2e18x30kb", "2e14x100kb")]
CHECKED_IN += VARIANT_BUILDS
SIZE_KEYS = ("query_bytes", "response_bytes", "public_params_bytes", "preprocessed_db_bytes")


@pytest.fixture(scope="module")
def instances() -> dict[str, builder.Instance]:
    return {}


def _built(cache: dict[str, builder.Instance], name: str,
           target: str = "ci_bench") -> builder.Instance:
    """Compile only what a test runs (one translation unit per target keeps CI short)."""
    key = f"{name}:{target}"
    if key not in cache:
        cache[key] = builder.build(REPO / "generated" / name, show_progress=False,
                                   targets=[target])
    return cache[key]


def _expected(lit: dict) -> dict[str, int]:
    p = Parameters.from_literal(lit)
    return {
        "query_bytes": sizes.query_bytes(p),
        "response_bytes": sizes.response_bytes(p),
        "public_params_bytes": sizes.public_params_bytes(p),
        "preprocessed_db_bytes": sizes.preprocessed_db_bytes(p),
        "db_bytes": p.records * p.record_size,
    }


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name", CHECKED_IN)
def test_ci_twin_answers_correctly_with_exact_sizes(name: str, instances: dict) -> None:
    inst = _built(instances, name)
    doc = json.loads((REPO / "generated" / name / "params.json").read_text())
    report = run_bench(inst, trials=2, ci=True, threads=2, timeout=900)
    assert report["correct"] is True
    assert report["implicit_db"] is False
    twin = _expected(codegen.ci_literal(doc["params"]))
    full = _expected(doc["params"])
    for key in (*SIZE_KEYS, "db_bytes"):
        assert report[key] == twin[key], (key, report[key], twin[key])
    # the message formats do not depend on the hypercube: the plan's figures hold exactly
    # (except a stream variant's query: 2^nu_1 + nu_2·t_gsw ciphertexts, FORMATS.md §7)
    stream = doc["params"]["variant"] in ("stream", "stream_pack")
    for key in ("response_bytes",) if stream else ("query_bytes", "response_bytes"):
        assert report[key] == full[key]
    for key in SIZE_KEYS:
        if key in doc["estimate"]:
            assert doc["estimate"][key] == full[key], (key, doc["estimate"][key], full[key])
    assert report["server_seconds"] > 0
    assert abs(report["throughput_bytes_per_second"]
               - report["db_bytes"] / report["server_seconds"]) <= 1e-6 * report[
                   "throughput_bytes_per_second"]


@pytest.mark.timeout(1800)
def test_demo_full_size_measures_the_plan(instances: dict) -> None:
    """The demo database is small enough to bench at full size: every size matches."""
    inst = _built(instances, "demo", "bench")
    doc = json.loads((REPO / "generated" / "demo" / "params.json").read_text())
    report = run_bench(inst, trials=1, threads=2, timeout=900)
    assert report["correct"] is True
    full = _expected(doc["params"])
    for key in (*SIZE_KEYS, "db_bytes"):
        assert report[key] == full[key], (key, report[key], full[key])
        if key in doc["estimate"]:
            assert report[key] == doc["estimate"][key], key
    # the calibration's implicit database that repeats folding indices (1 MiB distinct: a
    # few of the 2^nu_2), still answered correctly, its layout reported
    rep = run_bench(inst, trials=1, threads=2, timeout=900, repeat_folding_mib=1)
    assert rep["correct"] is True and rep["implicit_db"] is True
    folds = 1 << doc["params"]["nu_2"]
    assert 1 <= rep["implicit_layout"]["folding"] < folds
    assert rep["implicit_layout"]["instances"] == 1


# Shape classes the optimizer may emit that no checked-in build has, generated from the demo's
# parameters: nu_2 = 0 with records shorter than the item (several items per plaintext), and records
# shorter than the item over two instances (SpiralStreamPack). The bench compares every decoded
# record with the bytes it built the database from (runtime/testing: bench_records.hpp).
SHAPES: dict[str, dict[str, int | str]] = {
    "shape_nu2zero_short": {"variant": "spiral", "nu_2": 0, "record_size": 24, "records": 1000},
    "shape_multi_short": {"variant": "stream_pack", "nu_2": 1, "db_item_size": 1000, "instances": 2,
                          "record_size": 900, "records": 100},
}


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_generated_shape_answers_correctly(name: str, tmp_path: Path) -> None:
    doc = json.loads((REPO / "generated" / "demo" / "params.json").read_text())
    lit = {**doc["params"], **SHAPES[name]}
    out = codegen.generate(name, lit, {}, tmp_path, security=doc["security"])
    inst = builder.build(out, show_progress=False, targets=["ci_bench"])
    report = run_bench(inst, trials=2, ci=True, threads=2, timeout=900)
    assert report["correct"] is True
    assert report["record_size"] == lit["record_size"] < int(lit["db_item_size"])
    twin = _expected(codegen.ci_literal(lit))
    for key in (*SIZE_KEYS, "db_bytes"):
        assert report[key] == twin[key], (key, report[key], twin[key])
