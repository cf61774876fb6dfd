"""SpiralStream / SpiralPack / SpiralStreamPack in the optimizer: sizes equal
runtime/FORMATS.md §7, the vectorized model agrees with the scalar noise/cost/sizes modules,
Z3 == enumerator, and `plan --variant stream|pack|stream_pack|auto` works."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from spiralpir.optimizer.models import noise
from spiralpir.optimizer.models.cost import Profile, server_seconds, stage_op_counts
from spiralpir.optimizer.models.noise import stage_variances
from spiralpir.optimizer.params.paper import PAPER_EXAMPLE
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.params.primes import find_q2
from spiralpir.optimizer.params.sizes import Sizes
from spiralpir.optimizer.plan.evaluate import evaluate, literal
from spiralpir.optimizer.plan.oracle import enumerate_all
from spiralpir.optimizer.plan.planner import plan
from spiralpir.optimizer.plan.search import search
from spiralpir.optimizer.plan.space import Options, rings, structures

VARIANTS = ("stream", "pack", "stream_pack")


def monotone_security(d: int, log2_q: float, width: float, secret: str) -> float:
    """Stand-in security curve (as tests/plan/test_model.py) to exercise the search."""
    return 128.0 * (d / 2048) * (54.6 / log2_q)


PAPER_100KB = {**PAPER_EXAMPLE, "nu_1": 9, "nu_2": 5, "p": 512, "q2_bits": 21, "t_gsw": 9,
               "t_exp_left": 16, "db_item_size": 102400, "records": 2**14, "record_size": 102400}
PAPER_100KB.pop("instances")


@pytest.mark.parametrize("lit,variant,pp,query,resp", [
    (PAPER_EXAMPLE, "stream", 458_816, 8_028_224, 20_512),
    (PAPER_EXAMPLE, "pack", 6_996_032, 14_400, 20_512),
    (PAPER_EXAMPLE, "stream_pack", 344_128, 8_028_224, 20_512),
    (PAPER_100KB, "stream_pack", 344_128, 7_985_216, 264_224),
    (PAPER_EXAMPLE, "spiral", 7_110_720, 14_400, 20_512),
])
def test_sizes_equal_formats_reference(lit: dict, variant: str, pp: int, query: int,
                                       resp: int) -> None:
    """FORMATS.md §7 table (pinned on the C++ side by test_variant_formats.cpp)."""
    p = Parameters.from_literal({**lit, "variant": variant})
    s = Sizes.of(p)
    assert (s.public_params_bytes, s.query_bytes, s.response_bytes) == (pp, query, resp)
    vanilla = Sizes.of(Parameters.from_literal({**lit, "variant": "spiral"}))
    assert s.preprocessed_db_bytes == vanilla.preprocessed_db_bytes


def test_scalar_noise_and_cost_by_variant() -> None:
    base = Parameters.from_literal(dict(PAPER_EXAMPLE))
    van = stage_variances(base).variances
    stream = stage_variances(base.replace(variant="stream")).variances
    pack = stage_variances(base.replace(variant="pack")).variances
    sigma2 = base.sigma**2
    assert stream["expansion"] == pytest.approx(sigma2)  # fresh uploaded ciphertexts
    assert stream["first_dimension"] < van["first_dimension"]  # (conversion noise dominates)
    assert "packing" in pack and pack["packing"] > pack["folding"]
    ops = stage_op_counts(base.replace(variant="stream"))
    # no key switching: the stream server only parses the uploaded cts (2^nu_1 + nu_2·t_gsw)
    assert ops["expansion"]["mac"] == ops["expansion"]["decomp"] == ops["expansion"]["auto"] == 0
    polys = 2**base.nu_1 + base.nu_2 * base.t_gsw
    assert ops["expansion"]["parse"] == polys * len(base.moduli) * base.poly_len
    # pack: first dimension over n² sub-databases with n = 1: 2 words touched per db word
    fd_v = stage_op_counts(base)["first_dimension"]["fd"]
    fd_p = stage_op_counts(base.replace(variant="pack"))["first_dimension"]["fd"]
    assert fd_p * 3 == fd_v * 2


@pytest.mark.parametrize("variant,n,direct,keyed", [
    ("stream_pack", 2, True, False), ("stream_pack", 1, True, False), ("stream", 1, True, False),
    ("stream", 2, False, True), ("pack", 1, False, False), ("spiral", 1, False, False),
    ("spiral", 2, False, True),
])
def test_direct_first_dimension(variant: str, n: int, direct: bool, keyed: bool) -> None:
    """Stream variants with a 1×1 computation matrix upload the first-dimension cts under the
    computation secret (variant.hpp VariantOf::direct_first): their first dimension's input is
    the fresh error σ² (no ScalToMat key-switch error, no coherent key-error term). Every
    1×1 computation (n = 1, the pack variants) converts with the identity ScalToMat: the
    first-dimension cts keep the expansion's error and cost one forward NTT each; only the
    GSW digits are decomposed. ScalToMat is a key switch for n > 1 only."""
    base = Parameters.from_literal({**PAPER_EXAMPLE, "n": n, "variant": variant, "records": 2**18})
    assert noise.direct_first(variant, n) is direct
    assert noise.scal_to_mat_keys(variant, n) is keyed
    sn = stage_variances(base)
    v = sn.variances
    s2 = base.sigma**2
    ops = stage_op_counts(base)["conversion"]
    digits = base.nu_2 * base.t_gsw
    L, d, tc = len(base.moduli), base.poly_len, base.t_conv
    if direct:
        assert v["conversion"] == pytest.approx(s2)
        e_d = (base.p**2 + 2) / 12
        assert v["first_dimension"] == pytest.approx(base.rows_stored * d * e_d * s2)
    if not keyed:
        assert v["conversion"] == pytest.approx(v["expansion"] if not direct else s2)
        assert sn.coherent_fraction == 0.0
        assert ops["decomp"] == digits * 2 * tc * L * d  # RegevToGSW only
        assert ops["compose"] == 2 * digits * L * L * d
        assert ops["ntt"] == (0 if direct else base.rows_stored) * L \
            + digits * (2 * tc + 2) * L
    else:
        assert v["conversion"] > 2**10 * s2  # the ScalToMat key switch
        assert ops["decomp"] == (base.rows_stored + 2 * digits) * tc * L * d


@pytest.mark.parametrize("variant", VARIANTS)
def test_vectorized_model_matches_scalar_modules(variant: str, rng: random.Random) -> None:
    profile = Profile.load()
    opts = Options(variant=variant, security=monotone_security, profile=profile)
    checked = 0
    for records, size in ((2**16, 64), (3000, 5000), (2**12, 40_000)):
        rs = rings(opts)
        for ring in rng.sample(rs, 3):
            ss = structures(records, size, ring, opts)
            for s in rng.sample(ss, min(5, len(ss))):
                ev = evaluate(s, records, size, opts, profile)
                idx = np.flatnonzero(ev.feasible)
                for i in rng.sample(list(idx), min(4, idx.size)):
                    p = Parameters.from_literal(literal(s, ev, int(i), records, size, opts))
                    assert p.variant == variant
                    sz = Sizes.of(p)
                    assert sz.public_params_bytes == ev.params_bytes[i]
                    assert sz.response_bytes == ev.response_bytes[i]
                    q = np.ravel(ev.query_bytes)[i] if np.ndim(ev.query_bytes) else ev.query_bytes
                    assert sz.query_bytes == q
                    assert math.isclose(server_seconds(p, profile), ev.seconds[i], rel_tol=1e-9)
                    assert stage_variances(p).log2_failure <= opts.correctness_log2 + 1e-6
                    for b in range(14, p.q2_bits):
                        if p.q1 < find_q2(b, p.poly_len):
                            worse = stage_variances(p.replace(q2_bits=b)).log2_failure
                            assert worse > opts.correctness_log2
                    checked += 1
    assert checked > 20


@pytest.mark.parametrize("variant", VARIANTS)
def test_z3_search_equals_enumerator(variant: str) -> None:
    opts = Options(variant=variant, objective="time", security=monotone_security,
                   poly_lens=(2048,), n_max=3, moduli_per_size=1, modulus_step=8)
    for records, size in ((2**10, 32), (300, 100_000)):
        want = enumerate_all(records, size, opts, top=1)
        got = search(records, size, opts, top=1).chosen
        assert want and got
        assert math.isclose(got[0].objective, want[0].objective, rel_tol=1e-12)


def test_plan_variants_and_auto() -> None:
    kw = dict(security=monotone_security, poly_lens=(2048,), objective="time")
    plans = {v: plan(2**14, 100_000, variant=v, **kw) for v in ("spiral",) + VARIANTS}
    for v, pl in plans.items():
        assert pl.params.variant == v
        assert pl.estimate["log2_failure_probability"] <= -40
    # the paper's ordering: streaming + packing is the fastest on large records
    assert plans["stream_pack"].estimate["server_seconds"] < plans["spiral"].estimate[
        "server_seconds"]
    auto = plan(2**14, 100_000, variant="auto", **kw)
    best = min(plans.values(), key=lambda p: p.estimate["server_seconds"])
    assert auto.params.variant == best.params.variant
    assert any("variant auto" in n for n in auto.notes)
    # a query cap that rules out the stream variants makes auto pick a non-stream one
    capped = plan(2**14, 100_000, variant="auto", max_query_bytes=100_000, **kw)
    assert capped.params.variant in ("spiral", "pack")


@pytest.mark.parametrize("variant", ["stream", "stream_pack"])
def test_direct_conv_filter_is_exact(variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Direct first-dimension structures filter t_conv on its own RegevToGSW/packing terms
    (evaluate._direct_conv_lengths): over random structures, the best feasible objective with
    the filter equals the one over every gadget length."""
    from spiralpir.optimizer.plan import evaluate as evaluator
    from spiralpir.optimizer.plan import space

    rng = random.Random(7 if variant == "stream" else 8)
    profile = Profile.load()
    opts = Options(variant=variant, security=monotone_security, profile=profile, n_max=3)
    compared = 0
    for records, size in ((2**16, 64), (2**12, 40_000), (2**14, 100_000)):
        for ring in rng.sample(rings(opts), 3):
            ss = [s for s in structures(records, size, ring, opts)
                  if noise.direct_first(variant, s.n)]
            for s in rng.sample(ss, min(6, len(ss))):
                ev = evaluate(s, records, size, opts, profile)
                with monkeypatch.context() as mp:
                    mp.setattr(evaluator, "_direct_conv_lengths",
                               lambda d, q, *a: space.gadget_lengths(q.bit_length()))
                    full = evaluate(s, records, size, opts, profile)
                best = np.min(np.where(ev.feasible, ev.objective, np.inf))
                best_full = np.min(np.where(full.feasible, full.objective, np.inf))
                assert best == best_full
                compared += int(np.isfinite(best))
    assert compared >= 5
