"""The time model against the real server's measured times, and the calibration fit.

tests/models/data/timing/*.json are timing references: every checked-in build in generated/
(larger databases through the bench drivers' implicit one, >= 1 GiB distinct) and three
shapes no calibration was fitted on, at 1 and 2 threads, measured by
tests/models/refresh_timing.sh --ship (tests/models/bench_accuracy.py --repeat 2 --trials 2) on
2026-11-28 on a quiet 2-core AMD EPYC (load average ~1.1), each record with its command, commit,
CPU model, load averages and date. That script measures them again in a quiet window. The
shipped profile (models/profiles/default.json) is the quick calibration (`spiralpir calibrate`)
of the same machine: small shapes, none of these. The test recomputes
every prediction from the CURRENT model (cost.py, parallel.py) and the SHIPPED profile, so a
model change that drifts from the measurements fails here.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from spiralpir.optimizer.measure.calibrate import Kernels, fit, kernel_costs, stage_times
from spiralpir.optimizer.measure.validation import compare
from spiralpir.optimizer.models.cost import STAGES, Profile, params_db_bytes, stage_seconds
from spiralpir.optimizer.params.parameters import Parameters

DATA = sorted((Path(__file__).parent / "data" / "timing").glob("*.json"))
GENERATED = Path(__file__).resolve().parents[2] / "generated"


def _load(path: Path) -> tuple[Parameters, dict]:
    doc = json.loads(path.read_text())
    return Parameters.from_literal(doc["params"]), doc


def test_timing_records_are_complete() -> None:
    """Every checked-in build single-threaded (and at 2 threads once any is), shapes outside
    the calibration, one machine, with their provenance."""
    docs = {path.stem: _load(path) for path in DATA}
    for name, (p, doc) in docs.items():
        for key in ("command", "commit", "cpu_model", "loadavg_before", "date", "totals"):
            assert doc.get(key), (name, key)
        rep = doc["bench"]
        assert rep["correct"] and rep["threads"] in (1, 2)
        assert rep["params_hash"] == p.params_hash().hex()
        assert name.endswith(f"_t{rep['threads']}")
    builds = {p.name for p in GENERATED.iterdir() if (p / "params.json").is_file()}
    for t in (1, 2):
        measured = {n.rsplit("_t", 1)[0] for n in docs if n.endswith(f"_t{t}")}
        if t == 1 or measured:  # 2 threads: every build once any is (a quiet-window refresh)
            assert builds <= measured, (t, sorted(builds - measured))
    assert sum(n.startswith("unfitted_") for n in docs) >= 3
    assert len({doc["cpu_model"] for _, doc in docs.values()}) == 1
    # the shipped profile comes from the machine the references were measured on
    assert Profile.shipped().cpu_model == next(iter(docs.values()))[1]["cpu_model"]


# predicted/measured server seconds of EVERY reference within [LOW, HIGH] at its thread count
# (1 thread: process CPU seconds; 2 threads: the uncontended wall estimate when recorded, else
# wall seconds), the geometric mean within
# [1/BIAS, BIAS].
# The shipped profile is a default calibrate of the same window, made before its last runtime
# change (the n = 1 conversion tiling straight from the ct): from 0.84 (demo at 2 threads,
# against the uncontended estimate; 0.76 against wall time) to 1.15 (pack_2e14x100kb at 2
# threads). Calibrations of one window differ most in the near ties of the planner: of four
# made there, the two after that change re-plan two and five checked-in builds; this one
# keeps every plan. The goal is ±20%; the band holds what the refresh measured.
LOW, HIGH = 0.8, 1.25
BIAS = 1.25


def test_server_time_within_band() -> None:
    """The shipped profile predicts every reference's measured server seconds within
    [LOW, HIGH] at its thread count, small and large databases, every variant, and is not
    biased over them by more than BIAS."""
    prof = Profile.shipped()
    ratios = {}
    for path in DATA:
        p, doc = _load(path)
        cmp = compare(p, doc["bench"], prof)
        # several threads: against the bench's uncontended estimate when the reference has it
        # (a shared machine's wall time holds the other processes' load)
        pred, meas = cmp.get("uncontended", cmp["total"])
        ratios[path.stem] = pred / meas
    outside = {k: round(r, 3) for k, r in ratios.items() if not LOW <= r <= HIGH}
    assert not outside, outside
    geomean = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
    assert 1 / BIAS <= geomean <= BIAS, geomean
    params = [_load(path)[0] for path in DATA]
    sizes = sorted(params_db_bytes(p) for p in params)
    assert sizes[-1] >= 100 * sizes[0]  # small and large databases
    assert len({p.poly_len for p in params}) >= 2
    assert {p.variant for p in params} == {"spiral", "stream", "pack", "stream_pack"}


def _report(p: Parameters, prof: Profile, noise: random.Random) -> dict:
    """A bench report whose stage times are a profile's predictions with ±5% noise."""
    st = {k: v * noise.uniform(0.95, 1.05) for k, v in stage_seconds(p, prof).items()}
    st["modswitch"] += st.pop("packing")
    return {"stages": st, "threads": 1, "implicit_db": False}


def test_fit_recovers_a_known_profile() -> None:
    """Calibration on synthetic runs made from a known profile predicts their totals again.
    The profile is one the fit can express: two-prime composition costs nothing apart from
    the digits (calibrate fits it as 0: the vector kernel composes while it extracts them)."""
    rng = random.Random(5)
    truth = Profile(cpu_model="x", date="d", ntt_seconds={1024: 1e-6, 2048: 2.2e-6, 4096: 5e-6},
                    op_seconds={"mac": 4e-10, "decomp": 2e-9, "compose": 0.0, "auto": 3e-10,
                                "parse": 5e-8, "fd": 3e-10, "fdout": 4e-9, "ms": 1e-8},
                    read_bytes_per_second=1.4e10, cache_bytes=16 << 20)
    base = {"variant": "spiral", "poly_len": 2048, "moduli": [268369921, 249561089],
            "noise_width": 6.4,
            "secret_distribution": "gaussian", "q2_bits": 20, "instances": 1,
            "db_item_size": 64, "records": 100, "record_size": 64, "p": 256}
    runs = []
    for n, nu1, nu2, tg, tc, tl, tr in ((1, 4, 2, 4, 4, 4, 9), (2, 3, 2, 5, 6, 8, 16),
                                        (1, 2, 1, 3, 5, 6, 12), (1, 4, 2, 8, 3, 4, 28)):
        p = Parameters.from_literal({**base, "n": n, "nu_1": nu1, "nu_2": nu2, "t_gsw": tg,
                                     "t_conv": tc, "t_exp_left": tl, "t_exp_right": tr})
        p = p.replace(records=p.capacity)  # every first-dimension row stored
        runs.append((p, _report(p, truth, rng)))
    kern = Kernels(truth.ntt_seconds, truth.op_seconds["mac"], "avx512",
                   truth.read_bytes_per_second, truth.cache_bytes)
    got = fit(kern, runs)
    for p, rep in runs:
        meas = sum(stage_times(rep).values())
        pred = sum(stage_seconds(p, got).values())
        assert pred == pytest.approx(meas, rel=0.1)
    assert got.read_bytes_per_second == truth.read_bytes_per_second
    assert set(got.stage_scale) == set(STAGES)


def test_kernel_costs_read_bandwidth_and_cache() -> None:
    def row(name: str, cpu_ns: float, **extra: float) -> dict:
        return {"name": name, "run_type": "iteration", "cpu_time": cpu_ns, "real_time": 2 * cpu_ns,
                "time_unit": "ns", **extra}

    rep = {"benchmarks": [
        row("ntt_forward/avx512/2048/28", 2400), row("ntt_inverse/avx512/2048/28", 2200),
        row("ntt_forward/avx512/2048/28", 2300),  # a second repetition: the minimum counts
        row("mul_add/avx512/2048/28", 640),
        row("stream_read/4", 1, bytes_per_second=2.8e10),
        row("stream_read/16", 1, bytes_per_second=2.7e10),
        row("stream_read/64", 1, bytes_per_second=1.8e10),
        row("stream_read/1024", 1, bytes_per_second=1.3e10),
    ]}
    k = kernel_costs(rep)
    assert k.ntt_seconds == {2048: pytest.approx(2.25e-6)}  # CPU time, not wall
    assert k.mac == pytest.approx(640e-9 / 2048)
    assert k.read_bytes_per_second == 1.3e10
    assert k.cache_bytes == 16 << 20


def test_variant_stages_in_cpu_seconds() -> None:
    """The variant drivers' stages from their CPU figures: the first dimension's own, the
    one-time part (answer less prepared answer) and the prepared answer's rest split by wall
    time."""
    rep = {"threads": 1, "server_cpu_seconds": 1.0,
           "stages": {"expansion": 3.0, "conversion": 1.0, "first_dimension": 9.0,
                      "folding": 9.0, "modswitch": 9.0},
           "streaming": {"per_database_cpu_seconds": 0.6, "first_dimension_cpu_seconds": 0.3,
                         "stages": {"first_dimension": 5.0, "folding": 2.0, "packing": 0.5,
                                    "modswitch": 0.5}}}
    st = stage_times(rep)
    assert st == pytest.approx({"expansion": 0.3, "conversion": 0.1, "first_dimension": 0.3,
                                "folding": 0.2, "packing": 0.05, "modswitch": 0.05})
    assert sum(st.values()) == pytest.approx(rep["server_cpu_seconds"])
