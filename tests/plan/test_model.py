"""The vectorized model agrees with the scalar noise/cost/sizes modules; Z3 == enumerator."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Iterable, Iterator

import numpy as np
import pytest
from spiralpir.optimizer.models.cost import Profile, server_seconds, split_seconds, stage_seconds
from spiralpir.optimizer.models.noise import stage_variances
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.params.primes import find_q2
from spiralpir.optimizer.params.sizes import Sizes
from spiralpir.optimizer.plan.evaluate import Evaluation, evaluate, literal
from spiralpir.optimizer.plan.oracle import enumerate_all
from spiralpir.optimizer.plan.search import search
from spiralpir.optimizer.plan.space import Options, rings, structures


def monotone_security(d: int, log2_q: float, width: float, secret: str) -> float:
    """A stand-in security curve (decreasing in q, increasing in d) so that these tests
    exercise the search, not the estimator: 128 bits at d = 2048, log2 q = 54.6."""
    return 128.0 * (d / 2048) * (54.6 / log2_q)


def sample_candidates(opts: Options, profile: Profile, shapes: Iterable[tuple[int, int]],
                      rng: random.Random, counts: tuple[int, int, int] = (4, 6, 5)
                      ) -> Iterator[tuple[Evaluation, int, Parameters]]:
    """Random feasible candidates of the vectorized model: per shape, counts = (rings,
    structures per ring, gadget rows per structure) drawn at random; yields (the structure's
    evaluation, the row, its parameters)."""
    n_rings, n_structs, n_rows = counts
    for records, size in shapes:
        for ring in rng.sample(rings(opts), n_rings):
            ss = structures(records, size, ring, opts)
            for s in rng.sample(ss, min(n_structs, len(ss))):
                ev = evaluate(s, records, size, opts, profile)
                idx = np.flatnonzero(ev.feasible)
                for i in rng.sample(list(idx), min(n_rows, idx.size)):
                    yield ev, int(i), Parameters.from_literal(
                        literal(s, ev, int(i), records, size, opts))


def test_vectorized_model_matches_scalar_modules() -> None:
    rng = random.Random(11)
    profile = Profile.load()
    opts = Options(security=monotone_security, profile=profile)
    checked = 0
    shapes = ((2**16, 64), (3000, 5000), (2**12, 40_000))
    for ev, i, p in sample_candidates(opts, profile, shapes, rng):
        sz = Sizes.of(p)
        assert sz.public_params_bytes == ev.params_bytes[i]
        assert sz.response_bytes == ev.response_bytes[i]
        assert sz.query_bytes == ev.query_bytes
        assert math.isclose(server_seconds(p, profile), ev.seconds[i], rel_tol=1e-9)
        per_db = split_seconds(stage_seconds(p, profile))[1]
        assert math.isclose(per_db, ev.per_db_seconds[i], rel_tol=1e-9)
        lf = stage_variances(p).log2_failure
        assert lf <= opts.correctness_log2 + 1e-6
        # q2_bits is the smallest correct one
        lower = [b for b in range(14, p.q2_bits) if p.q1 < find_q2(b, p.poly_len)]
        for b in lower:
            smaller = p.replace(q2_bits=b)
            assert stage_variances(smaller).log2_failure > opts.correctness_log2
        checked += 1
    assert checked > 50


SHAPES = [(2**10, 32), (5000, 300), (2**16, 1024), (2**14, 20_000), (300, 100_000)]
GRID = {  # objective -> shapes (together they cover every shape)
    "dollars": [SHAPES[0], SHAPES[3]], "time": [SHAPES[2], SHAPES[4]],
    "response": [SHAPES[1], SHAPES[4]], "traffic": [SHAPES[0], SHAPES[2]],
    "stream": [SHAPES[1], SHAPES[3]],
}


@pytest.mark.parametrize("objective", sorted(GRID))
def test_z3_search_equals_enumerator(objective: str) -> None:
    opts = Options(objective=objective, security=monotone_security, poly_lens=(1024, 2048),
                   n_max=2, moduli_per_size=1, modulus_step=8)
    for records, size in GRID[objective]:
        want = enumerate_all(records, size, opts, top=1)
        got = search(records, size, opts, top=1).chosen
        assert want and got
        assert math.isclose(got[0].objective, want[0].objective, rel_tol=1e-12), (
            records, size, got[0].literal, want[0].literal)


def test_z3_search_equals_enumerator_with_caps() -> None:
    base = Options(security=monotone_security, poly_lens=(2048,), n_max=2, moduli_per_size=1,
                   modulus_step=8)
    for records, size in SHAPES[1:2]:
        free = enumerate_all(records, size, base, top=1)[0]
        capped = Options(**{**base.__dict__, "max_params_bytes": free.params_bytes * 0.7,
                            "max_response_bytes": free.response_bytes * 1.5})
        want = enumerate_all(records, size, capped, top=1)
        got = search(records, size, capped, top=1).chosen
        assert bool(want) == bool(got)
        if want:
            assert got[0].params_bytes <= capped.max_params_bytes
            assert math.isclose(got[0].objective, want[0].objective, rel_tol=1e-12)
            assert got[0].objective >= free.objective


def test_search_is_fast_on_full_domain() -> None:
    # CPU time of this process (the CI machine is shared: wall time = CPU time on an idle core)
    opts = Options(security=monotone_security)
    for records, size in ((2**20, 256), (2**18, 30_000), (2**14, 100_000), (7, 3),
                          (2**28, 16)):
        t0 = time.process_time()
        res = search(records, size, opts, top=3)
        assert res.chosen
        assert time.process_time() - t0 < 10.0
