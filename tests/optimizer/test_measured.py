"""The models against what the runtime measured (recorded `bench --json --noise` runs).

tests/optimizer/data/measured/*.json hold generated builds' benchmark reports from this
machine (see each file's "command"): the runtime's serialized object sizes, its noise hook's
per-stage variances (decrypting every intermediate ciphertext with the secret key) and its
per-stage CPU times. Regenerate with build/o/cal/run.sh-style runs (generate, build, bench).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from spiralpir.optimizer.cost import Profile, server_seconds
from spiralpir.optimizer.noise import (
    CORRECTNESS_LOG2,
    log2_coeff_failure,
    stage_variances,
)
from spiralpir.optimizer.params import Parameters
from spiralpir.optimizer.sizes import Sizes

DATA = sorted((Path(__file__).parent / "data" / "measured").glob("*.json"))
MIN_COUNT = 4096  # stages measured on fewer coefficients are too noisy for a factor-2 check


def _load(path: Path) -> tuple[Parameters, dict]:
    doc = json.loads(path.read_text())
    return Parameters.from_literal(doc["params"]), doc["bench"]


def test_there_is_measured_data() -> None:
    assert len(DATA) >= 4


@pytest.mark.parametrize("path", DATA, ids=[p.stem for p in DATA])
def test_sizes_equal_serialized_objects(path: Path) -> None:
    p, rep = _load(path)
    assert rep["params_hash"] == p.params_hash().hex()
    s = Sizes.of(p)
    assert (s.query_bytes, s.response_bytes, s.public_params_bytes) == (
        rep["query_bytes"], rep["response_bytes"], rep["public_params_bytes"])
    if not rep.get("implicit_db"):
        assert s.preprocessed_db_bytes == rep["preprocessed_db_bytes"]


@pytest.mark.parametrize("path", DATA, ids=[p.stem for p in DATA])
def test_noise_stages_within_factor_two(path: Path) -> None:
    p, rep = _load(path)
    sn = stage_variances(p)
    pred = sn.variances
    # where the empirical coherent allowance dominates the first dimension (noise.COHERENT_K,
    # an upper bound: measured from ~0 to its full size), later stages may only over-predict
    coherent = sn.coherent_fraction > 0.5
    checked = 0
    for stage, m in rep["noise"].items():
        if stage not in pred or m["count"] < MIN_COUNT or m["variance"] <= 0:
            continue
        ratio = pred[stage] / m["variance"]
        late = stage not in ("expansion", "expansion_right", "conversion", "conversion_gsw")
        assert 0.5 <= ratio, (stage, ratio)
        assert ratio <= 2.0 or (coherent and late), (stage, ratio)
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("path", DATA, ids=[p.stem for p in DATA])
def test_failure_probability_not_below_measurement(path: Path) -> None:
    p, rep = _load(path)
    sn = stage_variances(p)
    last = f"fold_{p.nu_2 - 1}" if p.nu_2 else "first_dimension"
    v_meas = rep["noise"][last]["variance"]
    vs = p.sigma**2 if p.secret_kind == "gaussian" else (
        2 / 3 if p.secret_kind == "ternary" else (p.secret_plus + p.secret_minus) / p.poly_len)
    v_g = (p.q1 / p.q) ** 2 * v_meas + (p.q1 / p.q2) ** 2 * p.poly_len * vs / 12.0
    eps = max(2.0**-8, 4.0 * p.p * p.p / p.q)
    implied = min(0.0, log2_coeff_failure(math.sqrt(v_g), eps) + math.log2(
        p.instances * p.n * p.n * p.poly_len))
    assert sn.log2_failure >= implied - 0.5
    if not rep["correct"]:  # a response that failed to decode must be outside the model
        assert sn.log2_failure > CORRECTNESS_LOG2


def test_server_time_within_25_percent() -> None:
    """The shipped profile predicts the single-thread CPU seconds of the measured runs: at
    least four sets within ±25% (small to large databases), none off by 2x or more."""
    prof = Profile.load()
    within, checked = [], []
    for path in DATA:
        p, rep = _load(path)
        st = rep.get("stages_cpu")
        if not st or rep.get("implicit_db"):  # implicit-db runs reuse a cache-resident database
            continue
        meas = sum(st.values())
        pred = server_seconds(p, prof)
        checked.append(path.stem)
        assert 0.5 < pred / meas < 2.0, (path.stem, pred, meas)
        if abs(pred / meas - 1) <= 0.25:
            within.append((path.stem, p.records * p.record_size))
    assert len(within) >= 4, (within, checked)
    sizes = sorted(b for _, b in within)
    assert sizes[-1] >= 100 * sizes[0]  # spanning small and large databases
