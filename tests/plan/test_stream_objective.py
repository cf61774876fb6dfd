"""The streaming objective (`plan --objective stream [--blocks K]`): a query prepared
once and answered against a sequence of databases; the planner minimises the per-database
server seconds (first dimension, folding, packing, modulus switching), the one-time part
(parse/expansion, conversion) weighted 1/K or only breaking ties.

Z3 == enumerator on it for every variant; the vectorized per-database seconds equal the scalar
cost model's; on the paper's databases its plan is never slower per database than the dollars
plan and still meets security and correctness; the CLI accepts it and rejects misuse."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from spiralpir.optimizer.cli.cmd_generate import generate as generate_cmd
from spiralpir.optimizer.cli.cmd_plan import plan as plan_cmd
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.cost import Profile, params_db_bytes, split_seconds, stage_seconds
from spiralpir.optimizer.models.noise import stage_variances
from spiralpir.optimizer.params import sizes
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.params.variants import VARIANTS
from spiralpir.optimizer.plan.evaluate import one_time_weight
from spiralpir.optimizer.plan.oracle import enumerate_all
from spiralpir.optimizer.plan.planner import ESTIMATE_KEYS, plan
from spiralpir.optimizer.plan.search import search
from spiralpir.optimizer.plan.space import STREAM_TIE_WEIGHT, Options
from test_model import monotone_security, sample_candidates

SMALL = {"security": monotone_security, "poly_lens": (1024, 2048), "n_max": 2,
         "moduli_per_size": 1, "modulus_step": 8}


def _split(p: Parameters, profile: Profile) -> tuple[float, float]:
    one_time, per_db = split_seconds(stage_seconds(p, profile))
    return float(one_time), float(per_db)


@pytest.mark.parametrize("variant", VARIANTS)
def test_z3_search_equals_enumerator(variant: str) -> None:
    profile = Profile.load()
    for blocks in (math.inf, 16.0):
        opts = Options(variant=variant, objective="stream", blocks=blocks, profile=profile,
                       **SMALL)
        for records, size in ((2**12, 256), (300, 100_000)):
            want = enumerate_all(records, size, opts, top=1)
            got = search(records, size, opts, top=1).chosen
            assert want and got
            assert math.isclose(got[0].objective, want[0].objective, rel_tol=1e-12), (
                variant, blocks, records, size, got[0].literal, want[0].literal)
            # the objective is the scalar cost model's split of the chosen parameters
            one_time, per_db = _split(Parameters.from_literal(got[0].literal), profile)
            assert one_time > 0 and per_db > 0
            assert math.isclose(got[0].objective, per_db + one_time * one_time_weight(opts),
                                rel_tol=1e-9)


@pytest.mark.parametrize("variant", VARIANTS)
def test_vectorized_split_matches_scalar_cost(variant: str) -> None:
    rng = random.Random(8)
    profile = Profile.load()
    opts = Options(variant=variant, objective="stream", blocks=5.0, profile=profile, **SMALL)
    checked = 0
    shapes = ((2**14, 64), (3000, 30_000))
    for ev, i, p in sample_candidates(opts, profile, shapes, rng, (2, 5, 4)):
        one_time, per_db = _split(p, profile)
        assert math.isclose(ev.per_db_seconds[i], per_db, rel_tol=1e-9)
        assert math.isclose(ev.seconds[i], one_time + per_db, rel_tol=1e-9)
        assert math.isclose(ev.objective[i], per_db + one_time / 5.0, rel_tol=1e-9)
        checked += 1
    assert checked >= 10


PAPER = [(2**14, 100_000), (2**20, 256), (2**18, 30_000)]


@pytest.mark.parametrize("records,size", PAPER)
@pytest.mark.parametrize("variant", ["stream", "stream_pack"])
def test_stream_plan_never_slower_per_database(records: int, size: int, variant: str) -> None:
    """Same feasible set (the estimator's security, the noise model, the default caps): the
    stream objective's plan is at least as fast per database as the dollars plan (up to the
    tie-break weight of the one-time part), and is secure and correct."""
    dollars = plan(records, size, variant=variant)
    stream = plan(records, size, variant=variant, objective="stream")
    for pl in (dollars, stream):
        e, p = pl.estimate, pl.params
        assert set(e) == set(ESTIMATE_KEYS)
        assert e["security_bits"] >= 128.0
        assert e["log2_failure_probability"] <= -40.0
        assert stage_variances(p).log2_failure <= -40.0
        assert p.capacity >= records
        one_time, per_db = _split(p, Profile.load())
        assert math.isclose(e["per_database_seconds"], per_db, rel_tol=1e-12)
        assert math.isclose(e["one_time_seconds"], one_time, rel_tol=1e-12)
        assert math.isclose(e["server_seconds"], one_time + per_db, rel_tol=1e-9)
        assert math.isclose(e["streaming_throughput_bytes_per_second"],
                            records * size / per_db, rel_tol=1e-12)
        # the file the first dimension streams: the words the cost model reads, plus the header
        assert e["preprocessed_db_bytes"] == sizes.preprocessed_db_bytes(p)
        assert sizes.preprocessed_db_bytes(p) > params_db_bytes(p) >= records * size
    d, s = dollars.estimate, stream.estimate
    slack = STREAM_TIE_WEIGHT * (d["one_time_seconds"] - s["one_time_seconds"])
    assert s["per_database_seconds"] <= d["per_database_seconds"] * (1 + 1e-9) + slack
    # and the dollars plan is the cheaper one in dollars (each optimum on its own objective)
    assert d["dollars_per_query"] <= s["dollars_per_query"] * (1 + 1e-9)


def test_blocks_amortise_the_one_time_part() -> None:
    kw = {"variant": "stream_pack", "security": monotone_security, "poly_lens": (2048, 4096)}
    records, size = 2**14, 100_000
    free = plan(records, size, objective="stream", **kw)
    few = plan(records, size, objective="stream", blocks=2, **kw)
    whole = plan(records, size, objective="time", **kw)

    def cost(pl: object, k: float) -> float:
        e = pl.estimate  # type: ignore[attr-defined]
        return e["per_database_seconds"] + e["one_time_seconds"] / k

    # each plan is the optimum of its own objective among the three
    for other in (free, whole):
        assert cost(few, 2) <= cost(other, 2) * (1 + 1e-9)
    assert free.estimate["per_database_seconds"] <= few.estimate["per_database_seconds"] * (
        1 + 1e-9) + STREAM_TIE_WEIGHT * few.estimate["one_time_seconds"]
    assert whole.estimate["server_seconds"] <= cost(few, 1) * (1 + 1e-9)
    # one database per prepared query: the whole answer, the time objective's optimum
    single = plan(records, size, objective="stream", blocks=1, **kw)
    assert math.isclose(single.estimate["server_seconds"], whole.estimate["server_seconds"],
                        rel_tol=1e-9)


def test_auto_picks_the_fastest_variant_per_database() -> None:
    kw = {"objective": "stream", "security": monotone_security, "poly_lens": (2048,)}
    plans = {v: plan(2**14, 100_000, variant=v, **kw) for v in VARIANTS}
    auto = plan(2**14, 100_000, variant="auto", **kw)

    def objective(pl: object) -> float:
        e = pl.estimate  # type: ignore[attr-defined]
        return e["per_database_seconds"] + STREAM_TIE_WEIGHT * e["one_time_seconds"]

    best = min(plans.values(), key=objective)
    assert auto.params.variant == best.params.variant
    assert math.isclose(objective(auto), objective(best), rel_tol=1e-12)
    assert any("variant auto" in n and "objective stream" in n for n in auto.notes)


@pytest.mark.parametrize("kw,words", [
    ({"objective": "time", "blocks": 4.0}, ["--blocks", "--objective stream"]),
    ({"objective": "dollars", "blocks": 4.0}, ["--blocks", "--objective stream"]),
    ({"objective": "stream", "blocks": 0.5}, ["--blocks", "at least 1"]),
    ({"objective": "stream", "blocks": math.nan}, ["--blocks"]),
    ({"objective": "throughput"}, ["--objective", "stream"]),
])
def test_options_reject_misuse(kw: dict, words: list[str]) -> None:
    with pytest.raises(SpiralpirError) as exc:
        Options(**kw)
    assert all(w in str(exc.value) for w in words), str(exc.value)


def test_cli_plan_and_generate(tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["--records", "2^12", "--record-size", "256", "--variant", "stream_pack"]
    res = runner.invoke(plan_cmd, [*args, "--objective", "stream", "--blocks", "64", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert set(doc["estimate"]) == set(ESTIMATE_KEYS)
    e = doc["estimate"]
    assert e["per_database_seconds"] < e["server_seconds"]
    assert math.isclose(e["streaming_throughput_bytes_per_second"],
                        2**12 * 256 / e["per_database_seconds"], rel_tol=1e-12)
    text = runner.invoke(plan_cmd, [*args, "--objective", "stream", "--top", "2"])
    assert text.exit_code == 0, text.output
    assert "objective stream" in text.output and "per database" in text.output
    # --blocks without the stream objective, or not a count: a clear error
    bad = runner.invoke(plan_cmd, [*args, "--blocks", "64"])
    assert bad.exit_code != 0 and "--blocks" in str(bad.exception)
    bad = runner.invoke(plan_cmd, [*args, "--objective", "stream", "--blocks", "many"])
    assert bad.exit_code != 0 and "--blocks" in str(bad.exception)
    bad = runner.invoke(plan_cmd, [*args, "--objective", "fastest"])
    assert bad.exit_code == 2 and "stream" in bad.output
    # generate: the objective is a plan option (with --records, not --params)
    out = str(tmp_path)
    gen = runner.invoke(generate_cmd, [*args, "--objective", "stream", "--blocks", "64",
                                       "--name", "st_twin", "--out", out])
    assert gen.exit_code == 0, gen.output
    assert "planned with cost profile shipped default" in gen.output
    saved = json.loads((tmp_path / "st_twin" / "params.json").read_text())
    assert saved["params"] == doc["params"]
    assert math.isclose(saved["estimate"]["per_database_seconds"], e["per_database_seconds"],
                        rel_tol=1e-12)
    bad = runner.invoke(generate_cmd, ["--params", str(tmp_path / "st_twin" / "params.json"),
                                       "--objective", "stream", "--name", "x", "--out", out])
    assert bad.exit_code != 0 and "--records" in str(bad.exception)
    # --profile: a machine twice as slow in every operation, half the read bandwidth: the same
    # plan (every stage's time doubles), twice the seconds in the estimate
    slow = Profile.load().to_dict()
    slow["ntt_seconds"] = {k: 2 * v for k, v in slow["ntt_seconds"].items()}
    slow["op_seconds"] = {k: 2 * v for k, v in slow["op_seconds"].items()}
    slow["read_bytes_per_second"] /= 2
    (tmp_path / "slow.json").write_text(json.dumps(slow))
    gen = runner.invoke(generate_cmd, [*args, "--objective", "stream", "--blocks", "64",
                                       "--profile", str(tmp_path / "slow.json"),
                                       "--name", "st_slow", "--out", out])
    assert gen.exit_code == 0, gen.output
    slow_doc = json.loads((tmp_path / "st_slow" / "params.json").read_text())
    assert slow_doc["params"] == doc["params"]
    for key in ("per_database_seconds", "one_time_seconds", "server_seconds"):
        assert math.isclose(slow_doc["estimate"][key], 2 * e[key], rel_tol=1e-9), key
