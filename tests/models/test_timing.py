"""The time model against the real server's measured times, and the calibration fit.

tests/models/data/timing/*.json are full-size, single-thread benchmark runs of the validation
suite (measure/validation.py: every variant of four database shapes, d = 1024/2048/4096,
small to large databases, the largest through the bench drivers' implicit database), written by

    spiralpir calibrate --suite --validate --out PROFILE --store tests/models/data/timing \\
        --work-dir build/c/final --trials 3 --repeat 2 --max-db-gib 1.5

with the command, commit, CPU model, load averages and date of each run; the shipped profile
(models/profiles/default.json) is the fit of that run's calibration-shape runs
(`spiralpir calibrate --records build/c/final/runs/cal --arith-json ... --out ...`), shapes
disjoint from the validation suite. The test recomputes every prediction from the CURRENT
model (cost.py) and the SHIPPED profile, so a model change that drifts from the measurements
fails here.
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


def _load(path: Path) -> tuple[Parameters, dict]:
    doc = json.loads(path.read_text())
    return Parameters.from_literal(doc["params"]), doc


def test_timing_records_are_complete() -> None:
    assert len(DATA) >= 4
    for path in DATA:
        p, doc = _load(path)
        for key in ("command", "commit", "cpu_model", "loadavg_before", "date", "totals"):
            assert doc.get(key), (path.stem, key)
        rep = doc["bench"]
        assert rep["correct"] and rep["threads"] == 1
        assert rep["params_hash"] == p.params_hash().hex()


# predicted/measured single-thread server seconds of EVERY suite member within [LOW, HIGH]: the
# band the shipped profile meets on the recorded runs (0.819 val_streampack_2e16x1kb .. 1.534
# val_spiral_2e14x100kb); the geometric mean over the suite within [1/BIAS, BIAS] (today 1.093)
LOW, HIGH = 0.8, 1.55
BIAS = 1.15


def test_server_time_within_band() -> None:
    """The shipped profile predicts every suite member's measured single-thread server seconds
    within [LOW, HIGH], small and large databases and every ring degree, and is not biased over
    the suite by more than BIAS."""
    prof = Profile.load()
    ratios = {}
    for path in DATA:
        p, doc = _load(path)
        ratios[path.stem] = compare(p, doc["bench"], prof)["ratio"]
    assert len(ratios) >= 16
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
    """Calibration on synthetic runs made from a known profile predicts their totals again."""
    rng = random.Random(5)
    truth = Profile(cpu_model="x", date="d", ntt_seconds={1024: 1e-6, 2048: 2.2e-6, 4096: 5e-6},
                    op_seconds={"mac": 4e-10, "decomp": 2e-9, "compose": 3e-9, "auto": 3e-10,
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
