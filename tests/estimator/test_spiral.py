"""The SPIRAL mapping, units, and known security levels of SPIRAL's rings (anchors)."""

from __future__ import annotations

import math
import random
import time

import pytest
from spiralpir.estimator import distributions as nd
from spiralpir.estimator.errors import SpiralpirError
from spiralpir.estimator.spiral import lwe_instance, params_from_mapping, security_report

SPIRAL_Q = 268369921 * 249561089  # ≈ 2^55.9


def test_width_and_stddev_are_different_units() -> None:
    assert nd.width_to_stddev(6.4) == pytest.approx(6.4 / math.sqrt(2 * math.pi))
    assert nd.width_to_stddev(6.4) == pytest.approx(2.553231, abs=1e-6)
    x = random.Random(4).uniform(0.5, 100)
    assert nd.stddev_to_width(nd.width_to_stddev(x)) == pytest.approx(x)
    assert nd.gaussian_from_width(6.4).stddev == pytest.approx(nd.gaussian(2.553231).stddev)


def test_distribution_statistics() -> None:
    t = nd.ternary(3000)
    assert t.stddev == pytest.approx(math.sqrt(2 / 3))
    assert t.hamming_weight == 2000 and not t.is_sparse
    s = nd.sparse_ternary(256, 200, 2048)
    assert s.hamming_weight == 456 and s.is_sparse
    assert s.stddev == pytest.approx(math.sqrt(456 / 2048 - (56 / 2048) ** 2))
    left, right = s.split_balanced(1000, 100)
    assert left.hamming_weight == 100 and right.hamming_weight == 356
    assert left.n + right.n == 2048 and left.plus + right.plus == 256
    u = nd.uniform_mod(17, 10)
    assert (u.lo, u.hi) == (-8, 8)


def test_spiral_ring_anchor() -> None:
    """d = 2048, q ≈ 2^55.9, width 6.4, Gaussian secret: ≈ 124.9 bits (BDD, MATZOV)."""
    rep = security_report(2048, SPIRAL_Q, 6.4, "gaussian")
    assert rep["security_bits"] == pytest.approx(124.9, abs=0.1)
    assert rep["cheapest_attack"] == "bdd"
    assert set(rep) == {"security_bits", "cheapest_attack", "attacks", "cost_model", "estimator"}
    assert set(rep["attacks"]) == {
        "usvp", "bdd", "bdd_hybrid", "bdd_mitm_hybrid", "dual", "dual_hybrid"
    }
    for a in rep["attacks"].values():
        assert set(a) == {"log2_rop", "beta", "dim"}
    assert rep["estimator"].startswith("spiralpir ")


def test_width_misread_as_stddev_overstates_by_about_7_bits() -> None:
    as_width = security_report(2048, SPIRAL_Q, 6.4, "gaussian")["security_bits"]
    as_stddev = security_report(2048, SPIRAL_Q, 6.4 * math.sqrt(2 * math.pi), "gaussian")
    assert as_stddev["security_bits"] == pytest.approx(131.5, abs=0.3)
    assert 6 < as_stddev["security_bits"] - as_width < 8


def test_sparse_ternary_anchor() -> None:
    rep = security_report(2048, SPIRAL_Q, 6.4, "sparse-ternary:256,256")
    assert rep["security_bits"] == pytest.approx(118.3, abs=0.5)


def test_q_at_most_2_54_anchor() -> None:
    rep = security_report(2048, 2**54, 6.4, "gaussian")
    assert rep["security_bits"] == pytest.approx(129.6, abs=0.1)
    assert rep["security_bits"] >= 128


def test_level_is_monotone_in_q_width_and_dimension() -> None:
    rng = random.Random(2026)
    lq = rng.uniform(40, 60)
    base = security_report(2048, round(2**lq), 6.4, "ternary")["security_bits"]
    assert security_report(2048, round(2 ** (lq + 2)), 6.4, "ternary")["security_bits"] < base
    assert security_report(2048, round(2**lq), 12.8, "ternary")["security_bits"] > base
    assert security_report(4096, round(2**lq), 6.4, "ternary")["security_bits"] > base


def test_full_estimate_is_fast() -> None:
    for d, lq, secret in ((2048, 56, "gaussian"), (4096, 109, "ternary"), (8192, 218, "ternary")):
        t = time.perf_counter()
        security_report(d, 2**lq - 1, 6.4, secret)
        assert time.perf_counter() - t < 4.0  # < 2 s on an idle core; slack for shared CI


def test_params_mapping_shapes_and_errors() -> None:
    flat = {"poly_len": 2048, "moduli": [268369921, 249561089], "noise_width": 6.4,
            "secret_distribution": "ternary"}
    assert params_from_mapping(flat) == (2048, SPIRAL_Q, 6.4, "ternary")
    assert params_from_mapping({"params": flat, "estimate": {}}) == (2048, SPIRAL_Q, 6.4, "ternary")
    with pytest.raises(SpiralpirError, match="moduli"):
        params_from_mapping({"poly_len": 2048, "noise_width": 6.4})
    with pytest.raises(SpiralpirError, match="moduli"):
        params_from_mapping({**flat, "moduli": [3.5]})
    with pytest.raises(SpiralpirError, match="secret_distribution"):
        lwe_instance(2048, SPIRAL_Q, 6.4, "binary")
    with pytest.raises(SpiralpirError, match="sparse-ternary"):
        lwe_instance(2048, SPIRAL_Q, 6.4, "sparse-ternary:2000,100")
    with pytest.raises(SpiralpirError, match="noise_width"):
        lwe_instance(2048, SPIRAL_Q, -1.0, "gaussian")
    with pytest.raises(SpiralpirError, match="poly_len"):
        lwe_instance(8, SPIRAL_Q, 6.4, "gaussian")
