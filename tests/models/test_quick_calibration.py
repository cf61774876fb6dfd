"""The default calibration (measure/quick.py) and the thread-scaling fit (measure/scaling.py),
on synthetic bench reports made from a known profile: no timing, no builds."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from spiralpir.optimizer.measure import quick
from spiralpir.optimizer.measure.calibrate import Kernels
from spiralpir.optimizer.measure.scaling import fit_threads
from spiralpir.optimizer.measure.validation import compare
from spiralpir.optimizer.models.cost import params_db_bytes, stage_seconds
from spiralpir.optimizer.models.parallel import wall_stage_seconds
from spiralpir.optimizer.models.profile import Profile, ThreadScaling
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.plan.planner import plan_json

TRUTH = Profile(cpu_model="x", date="d", ntt_seconds={1024: 1e-6, 2048: 2.2e-6, 4096: 5e-6},
                op_seconds={"mac": 4e-10, "decomp": 2e-9, "decomp_wide": 6e-9,
                            "redecomp_wide": 8e-9, "compose": 3e-9, "compose_wide": 2e-8,
                            "auto": 3e-10, "parse": 5e-8, "fd": 3e-10, "fd_n3": 1.5e-10,
                            "fd_n4": 3e-10, "fdout": 4e-9, "ms": 1e-8, "ms_wide": 9e-8},
                read_bytes_per_second=0.6e10, cache_bytes=32 << 20,
                threads={2: ThreadScaling(1.15, 0.9e10, 1.0)})


def repeated_layout(p: Parameters, mib: float) -> int:
    """The folding indices an implicit database of `mib` MiB distinct data stores (the bench
    driver's layout: the smallest power of two holding that much)."""
    per_j = params_db_bytes(p) / p.instances / (1 << p.nu_2)
    phys_j = 1
    while phys_j < (1 << p.nu_2) and per_j * phys_j < mib * 2**20:
        phys_j *= 2
    return phys_j


def fake_report(p: Parameters, threads: int, noise: random.Random,
                repeat_folding_mib: float | None = None) -> dict[str, Any]:
    """A bench report whose stages are TRUTH's predictions (±3%) at `threads` threads: wall
    stages, CPU stages (single thread, vanilla), packing inside modswitch as the runtime
    books it; repeat_folding_mib: on an implicit database that repeats folding indices."""
    phys_j = repeated_layout(p, repeat_folding_mib) if repeat_folding_mib else 0
    st = {k: v * noise.uniform(0.97, 1.03)
          for k, v in wall_stage_seconds(p, TRUTH, threads, phys_j > 0, phys_j > 0,
                                         phys_j).items()}
    st["modswitch"] += st.pop("packing")
    total = sum(st.values())
    rep: dict[str, Any] = {"correct": True, "threads": threads, "stages": st,
                           "server_seconds": total, "implicit_db": phys_j > 0}
    if phys_j:
        rep["implicit_layout"] = {"instances": 1, "folding": phys_j}
    if threads == 1:
        rep["server_cpu_seconds"] = total
        if p.variant == "spiral":
            rep["stages_cpu"] = dict(st)
    return rep


def test_min_report_takes_every_stage_minimum() -> None:
    a = {"server_seconds": 2.0, "stages": {"x": 1.0, "y": 1.0}, "threads": 1, "tag": "a",
         "streaming": {"per_database_seconds": 3.0, "stages": {"x": 1.0}}}
    b = {"server_seconds": 1.5, "stages": {"x": 1.2, "y": 0.3}, "threads": 1, "tag": "b",
         "streaming": {"per_database_seconds": 2.0, "stages": {"x": 0.5}}}
    m = quick.min_report([a, b])
    assert m["stages"] == {"x": 1.0, "y": 0.3} and m["server_seconds"] == 1.5
    assert m["tag"] == "b"  # the rest: the fastest run's
    assert m["streaming"]["per_database_seconds"] == 2.0
    assert m["streaming"]["stages"] == {"x": 0.5}


def test_thread_counts() -> None:
    assert quick.thread_counts(1) == []
    assert quick.thread_counts(2) == [2]
    assert quick.thread_counts(8) == [2, 8]


@pytest.fixture(scope="module")
def quick_params() -> dict[str, dict[str, Any]]:
    """The quick members' plans (as quick_calibrate plans them)."""
    out = {}
    for name, variant, _ in quick.QUICK_MEMBERS:
        shape = quick._shape(name)
        out[name] = plan_json(shape.records, shape.record_size, variant=variant,
                              poly_lens=(shape.poly_len,),
                              min_security=shape.min_security)["params"]
    return out


def test_quick_calibration_recovers_a_known_machine(quick_params: dict[str, dict[str, Any]],
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    """quick_calibrate's orchestration and fits, with the benchmarks replaced by reports made
    from TRUTH: the fitted profile predicts every run again within 10%, at 1 and 2 threads,
    and recovers the thread scaling."""
    rng = random.Random(11)
    calls: list[tuple[str, int]] = []

    fixed = dict(quick.FIXED_CALIBRATION + quick.KERNEL_CALIBRATION)
    quick_params = {**quick_params, **fixed}

    def fake_prepare(shape: Any, variant: str, work: Path, **_: Any) -> tuple[Any, Any]:
        return (shape.name, variant), quick_params[shape.name]

    def fake_prepare_fixed(name: str, lit: dict[str, Any], work: Path, **_: Any
                           ) -> tuple[Any, Any]:
        return (name, lit["variant"]), Parameters.from_literal(lit).to_literal()

    def fake_measure(inst: Any, threads: int, trials: int, repeat: int,
                     repeat_folding_mib: float | None = None) -> dict[str, Any]:
        calls.append((inst[0] + ("_repeats" if repeat_folding_mib else ""), threads))
        return fake_report(Parameters.from_literal(quick_params[inst[0]]), threads, rng,
                           repeat_folding_mib)

    def fake_kernels(*_: Any) -> tuple[Kernels, str, None]:
        return (Kernels(TRUTH.ntt_seconds, TRUTH.op_seconds["mac"], "avx512", 2e10,
                        TRUTH.cache_bytes), "kernels: test", None)

    monkeypatch.setattr(quick, "prepare", fake_prepare)
    monkeypatch.setattr(quick, "prepare_fixed", fake_prepare_fixed)
    monkeypatch.setattr(quick, "measure", fake_measure)
    monkeypatch.setattr(quick, "kernels_of", fake_kernels)
    steps: list[tuple[int, int, str]] = []
    prof, runs = quick.quick_calibrate(tmp_path, lambda *a: steps.append(a), cores=2)
    assert steps[-1][0] == steps[-1][1] and all(d <= t for d, t, _ in steps)
    many = [n for n, _, m in quick.QUICK_MEMBERS if m]
    assert sorted(calls) == sorted([(n, 1) for n, _, _ in quick.QUICK_MEMBERS]
                                   + [(n, 2) for n in many]
                                   + [(n, t) for n in quick.FIXED_MEMBERS for t in (1, 2)]
                                   + [(n + "_repeats", 1) for n, _, _ in quick.REPEATS]
                                   + [(n + "_repeats", 1) for n, _ in quick.KERNEL_CALIBRATION])
    for r in runs:
        p = Parameters.from_literal(r["params"])
        cmp = compare(p, r["report"], prof)
        assert cmp["ratio"] == pytest.approx(1, abs=0.10), (r["name"], r["threads"], cmp)
    assert prof.scaling(2).slowdown == pytest.approx(1.15, rel=0.08)
    # the scalar 128-bit ops' own thread scaling, from the three-prime members at 2 threads
    assert prof.scaling(2).scalar_slowdown == pytest.approx(1.0, abs=0.08)
    # the first dimension's compute per word and per output (the repeats member's words from
    # cache beside the members read from memory)
    assert prof.op_seconds["fd"] == pytest.approx(3e-10, rel=0.1)
    assert prof.op_seconds["fdout"] == pytest.approx(4e-9, rel=0.25)
    # the n = 3 and n = 4 kernels' extra cost per multiply-add, from their members alone
    assert prof.op_seconds["fd_n3"] == pytest.approx(1.5e-10, rel=0.15)
    assert prof.op_seconds["fd_n4"] == pytest.approx(3e-10, rel=0.15)
    # the three-prime decomposition: per coefficient composed, per digit, per digit repeated
    # by the expansion's per-residue tasks, told apart by the planned member's short gadgets
    # and the fixed member's long ones: every three-prime stage within 8% (the reports' noise
    # is ±3%; charged per digit only, the long gadgets' stages are 20-40% off)
    wide = [Parameters.from_literal(q) for q in quick_params.values() if len(q["moduli"]) >= 3]
    assert len({(p.t_exp_right, p.t_conv) for p in wide}) >= 2, "no long and short gadgets"
    assert prof.op_seconds["compose_wide"] > 0
    for p in wide:
        got, want = stage_seconds(p, prof), stage_seconds(p, TRUTH)
        for s in ("expansion", "conversion", "folding"):
            assert got[s] == pytest.approx(want[s], rel=0.08), (p.t_exp_right, s, got[s] / want[s])
    # the first dimension's own read rate from the memory-bound member, not the
    # microbenchmark's 2e10
    big = Parameters.from_literal(quick_params["cal2e18x128b"])
    assert params_db_bytes(big) > 4 * TRUTH.cache_bytes
    assert prof.read_bytes_per_second < 2e10
    quick.save_runs(runs, tmp_path / "runs")
    assert len(list((tmp_path / "runs").glob("*.json"))) == len(runs)


def test_fit_threads_from_measured_pairs() -> None:
    """slowdown and the 2-thread bandwidth from (1-thread, 2-thread) report pairs."""
    rng = random.Random(3)
    base = {"variant": "spiral", "poly_len": 2048, "moduli": [268369921, 249561089],
            "noise_width": 6.4, "secret_distribution": "gaussian", "q2_bits": 20,
            "instances": 1, "db_item_size": 64, "records": 100, "record_size": 64, "p": 256,
            "n": 1, "t_gsw": 4, "t_conv": 4, "t_exp_left": 4, "t_exp_right": 9}
    pairs = []
    for nu1, nu2 in ((6, 4), (9, 8), (5, 3)):
        p = Parameters.from_literal({**base, "nu_1": nu1, "nu_2": nu2})
        p = p.replace(records=p.capacity)  # every first-dimension row stored
        pairs.append((p, fake_report(p, 1, rng), fake_report(p, 2, rng)))
    start = Profile(**{**TRUTH.__dict__, "threads": {}})
    got = fit_threads(start, pairs)
    assert got.scaling(2).slowdown == pytest.approx(1.15, rel=0.05)
    assert got.scaling(2).scalar_slowdown is None  # two primes only: no scalar stage to fit on
    # the (9, 8) database (2 GiB) is memory bound at 2 threads: its rate is TRUTH's
    big = pairs[1][0]
    assert params_db_bytes(big) / 0.9e10 > 1.15 * stage_seconds(big, TRUTH)["first_dimension"] / 2
    assert got.scaling(2).read_bytes_per_second == pytest.approx(0.9e10, rel=0.05)


def test_disturbed_thread_runs_stay_within_physical_bounds() -> None:
    """A 2-thread run slowed down 8x by other load: the slowdown is capped at T, the 2-thread
    bandwidth is at least the single thread's."""
    rng = random.Random(4)
    p = Parameters.from_literal({
        "variant": "spiral", "poly_len": 2048, "moduli": [268369921, 249561089],
        "noise_width": 6.4, "secret_distribution": "gaussian", "q2_bits": 20, "instances": 1,
        "db_item_size": 64, "records": 100, "record_size": 64, "p": 256, "n": 1, "nu_1": 9,
        "nu_2": 8, "t_gsw": 4, "t_conv": 4, "t_exp_left": 4, "t_exp_right": 9})
    p = p.replace(records=p.capacity)  # every first-dimension row stored: 2 GiB
    slow = fake_report(p, 2, rng)
    slow["stages"] = {k: 8 * v for k, v in slow["stages"].items()}
    got = fit_threads(Profile(**{**TRUTH.__dict__, "threads": {}}),
                      [(p, fake_report(p, 1, rng), slow)])
    assert got.scaling(2).slowdown == 2.0
    assert got.scaling(2).read_bytes_per_second == TRUTH.read_bytes_per_second


def test_loaded_thread_runs_fit_on_their_uncontended_estimate() -> None:
    """2-thread runs whose wall time other processes stretched 3x, and 1-thread runs whose
    wall stages 2x (CPU stages unaffected): with the bench's uncontended estimate of the answer
    (the true wall time) the slowdown is TRUTH's again; without it, the disturbed one."""
    rng = random.Random(5)
    base = {"variant": "spiral", "poly_len": 2048, "moduli": [268369921, 249561089],
            "noise_width": 6.4, "secret_distribution": "gaussian", "q2_bits": 20,
            "instances": 1, "db_item_size": 64, "records": 100, "record_size": 64, "p": 256,
            "n": 1, "t_gsw": 4, "t_conv": 4, "t_exp_left": 4, "t_exp_right": 9}
    pairs, bare = [], []
    for nu1, nu2 in ((6, 4), (5, 3)):
        p = Parameters.from_literal({**base, "nu_1": nu1, "nu_2": nu2})
        one, two = fake_report(p, 1, rng), fake_report(p, 2, rng)
        one["stages"] = {k: 2 * v for k, v in one["stages"].items()}
        true_wall = two["server_seconds"]
        two["stages"] = {k: 3 * v for k, v in two["stages"].items()}
        two["server_seconds"] = 3 * true_wall
        bare.append((p, one, dict(two)))
        pairs.append((p, one, {**two, "server_uncontended_seconds": true_wall}))
    start = Profile(**{**TRUTH.__dict__, "threads": {}})
    assert fit_threads(start, pairs).scaling(2).slowdown == pytest.approx(1.15, rel=0.05)
    assert fit_threads(start, bare).scaling(2).slowdown == 2.0  # 3 x 1.15, capped at T
    cmp = compare(pairs[0][0], pairs[0][2], TRUTH)
    assert cmp["uncontended"][1] == pairs[0][2]["server_uncontended_seconds"]
    assert cmp["uncontended"][0] / cmp["uncontended"][1] == pytest.approx(1.0, rel=0.05)


def test_without_microbenchmarks_the_shipped_kernels_stand_in(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """An installed wheel has no runtime/bench: the quick calibration says so and fits the
    stages on the kernel costs of the profile shipped for this CPU's kernels."""
    from spiralpir.optimizer.build import builder
    from spiralpir.optimizer.errors import SpiralpirError

    monkeypatch.setattr(builder, "runtime_source", lambda: tmp_path)
    with pytest.raises(SpiralpirError, match="microbenchmarks are not installed"):
        builder.build_arith_bench(tmp_path / "build")
    said: list[str] = []
    kern, src, report = quick.kernels_of(None, tmp_path / "build",
                                         lambda d, t, m: said.append(m), 0, 1)
    assert report is None and "shipped" in src and "not installed" in said[0]
    assert kern.ntt_seconds == Profile.shipped_for_this_cpu().ntt_seconds
