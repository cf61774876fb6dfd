"""The planner against brute force: every parameter literal that `Parameters` accepts on a tiny
domain, scored with the scalar modules (params/sizes.py, models/noise.py, models/cost.py), never
with the search space's own helpers (plan/space.py rings/structures, plan/evaluate.py).

The domain: one ring (poly_len 1024, a 15-bit prime: small enough that every field can be
enumerated; in a ring this small only the stream variants, which have no query expansion,
decode reliably), and every field of the literal: n in 1..n_max, p = 2^1..2^30, nu_1 ≥ 1 and
nu_2 ≥ 0 whose hypercube is the smallest that holds the records at that (n, p) or one
larger, q2_bits in 14..48, the four gadget lengths (every base: `gadget_lengths_of`),
instances and db_item_size by the layout rule. A literal counts if `Parameters` accepts it
and it meets the options: security (the options' security function), failure ≤
2^correctness_log2 (noise.stage_variances), the model's modulus-switch offset 4p²/q ≤ 2^-8
(plan/space.py's documented requirement), the size caps. The planner (Z3 search) must reach
the brute-force choice under the documented ranking (plan/ranking.py, restated here): the
optimum's band, then the smallest tie key (equal within 1e-9).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.models.cost import Profile, split_seconds, stage_seconds
from spiralpir.optimizer.models.noise import stage_variances
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.params.sizes import Sizes
from spiralpir.optimizer.params.variants import VARIANTS, is_stream
from spiralpir.optimizer.plan.search import search
from spiralpir.optimizer.plan.space import Options

POLY_LEN = 1024
OFFSET_BOUND = 2.0**-8  # the model's 4p²/q bound (plan/space.py EPS)


def flat_security(d: int, log2_q: float, width: float, secret: str) -> float:
    """A stand-in security curve: every tiny ring is 'secure', so the optimizer's logic is
    what is tested (the estimator has its own tests)."""
    return 200.0


def gadget_lengths_of(q_bits: int) -> list[int]:
    """Lengths t whose base 2^⌈q_bits/t⌉ no shorter length has: a longer length with the same
    base is never better (test_longer_gadget_of_the_same_base_is_never_better checks that on
    the scalar modules), so the brute force need not score it."""
    seen: set[int] = set()
    out = []
    for t in range(1, q_bits + 1):
        b = -(-q_bits // t)
        if b not in seen:
            seen.add(b)
            out.append(t)
    return out


@dataclass(frozen=True)
class Scored:
    params: Parameters
    seconds: float
    one_time: float
    per_db: float
    sizes: Sizes
    log2_failure: float


def objective(s: Scored, options: Options) -> float:
    """The objectives as the planner documents them (plan/space.py)."""
    response = s.sizes.response_bytes
    if options.objective == "dollars":
        return options.prices.dollars(s.seconds, response)
    if options.objective == "time":
        return s.seconds
    if options.objective == "response":
        return float(response)
    if options.objective == "traffic":
        return float(response + s.sizes.query_bytes)
    assert options.objective == "stream" and math.isfinite(options.blocks)
    return s.per_db + s.one_time / options.blocks


def admissible(s: Scored, options: Options) -> bool:
    p = s.params
    return (s.log2_failure <= options.correctness_log2
            and 4 * p.p * p.p <= p.q * OFFSET_BOUND
            and s.sizes.query_bytes <= options.max_query_bytes
            and s.sizes.public_params_bytes <= options.max_params_bytes
            and s.sizes.response_bytes <= options.max_response_bytes
            and flat_security(p.poly_len, p.log2_q, p.noise_width,
                              p.secret_distribution) >= options.min_security)


def literals(records: int, record_size: int, modulus: int, options: Options
             ) -> Iterator[dict[str, Any]]:
    """Every literal of the domain that can pass `Parameters` and the offset bound; per (n, p),
    the hypercubes of the smallest size that holds the records and of the next size.

    Gadget lengths are tried only where all four at length 1 pass: a length enters
    `Parameters`' checks only through its range, and t_gsw through the expansion rounds and
    2·nu_2·t_gsw ≤ poly_len, which length 1 meets whenever any length does. The stream
    variants have no query expansion: their expansion lengths change no score
    (test_stream_variants_ignore_expansion_gadgets), so one is enough."""
    ts = gadget_lengths_of(modulus.bit_length())
    base = {"variant": options.variant, "poly_len": POLY_LEN, "moduli": [modulus],
            "noise_width": options.noise_width,
            "secret_distribution": options.secret_distribution,
            "records": records, "record_size": record_size}
    for n, pb in itertools.product(range(1, options.n_max + 1), range(1, 31)):
        if 4 * (1 << pb) ** 2 > modulus * OFFSET_BOUND:
            continue
        smallest = None
        for total, nu1, q2_bits in itertools.product(range(1, 31), range(1, 31), range(14, 49)):
            if nu1 > total or (smallest is not None and total > smallest + 1):
                continue
            outer = {**base, "n": n, "p": 1 << pb, "nu_1": nu1, "nu_2": total - nu1,
                     "q2_bits": q2_bits}
            if not _accepts({**outer, "t_gsw": 1, "t_conv": 1, "t_exp_left": 1,
                             "t_exp_right": 1}):
                continue
            smallest = total if smallest is None else smallest
            exp = [1] if is_stream(options.variant) else ts
            for tg, tc, tl, tr in itertools.product(ts, ts, exp, exp):
                yield {**outer, "t_gsw": tg, "t_conv": tc, "t_exp_left": tl, "t_exp_right": tr}


def _accepts(lit: dict[str, Any]) -> bool:
    try:
        Parameters.from_literal(lit)
    except SpiralpirError:
        return False
    return True


def band(options: Options, best: float) -> float:
    """The ranking's band as documented (plan/ranking.py): the byte objectives accept
    max(1%, 256 B) more than the optimum, the others exact ties."""
    if options.objective in ("response", "traffic"):
        return best + max(0.01 * best, 256.0)
    return best + 1e-9 * abs(best)


def tie(s: Scored, options: Options) -> tuple[float, ...]:
    """The documented tie key: server seconds (not under `time`), query + response bytes,
    public-params bytes, the objective."""
    key = (float(s.sizes.query_bytes + s.sizes.response_bytes),
           float(s.sizes.public_params_bytes), objective(s, options))
    return key if options.objective == "time" else (s.seconds, *key)


def brute_force(records: int, record_size: int, modulus: int, options: Options,
                profile: Profile) -> tuple[float, Scored, int]:
    """(best objective, the plan the ranking picks, how many literals Parameters accepted).
    The noise (the costly score) is computed in objective order and only through the band of
    the first admissible candidate: every later one is outside it."""
    cands: list[tuple[float, int, Scored]] = []
    for lit in literals(records, record_size, modulus, options):
        try:
            p = Parameters.from_literal(lit)
        except SpiralpirError:
            continue
        cheap = Scored(p, *_seconds(p, profile), Sizes.of(p), math.nan)
        cands.append((objective(cheap, options), len(cands), cheap))
    cands.sort(key=lambda c: c[:2])
    limit = math.inf
    best: tuple[float, Scored] | None = None
    for value, _, cheap in cands:
        if value > limit:
            break
        s = replace(cheap, log2_failure=stage_variances(cheap.params).log2_failure)
        if not admissible(s, options):
            continue
        if best is None:
            best, limit = (value, s), band(options, value)
        elif tie(s, options) < tie(best[1], options):
            best = (best[0], s)
    assert best is not None, "nothing admissible: the case tests nothing"
    return best[0], best[1], len(cands)


def _seconds(p: Parameters, profile: Profile) -> tuple[float, float, float]:
    st = stage_seconds(p, profile)
    one_time, per_db = split_seconds(st)
    return sum(st.values()), one_time, per_db


MODULUS = 18433  # 15 bits, ≡ 1 mod 2048: q2 = 12289 (q2_bits 14) fits below it
CASES = [  # variant, objective, blocks, records, record size, noise width, correctness, n_max
    ("stream", "dollars", math.inf, 1000, 8, 0.3, -10.0, 1),
    ("stream", "response", math.inf, 200, 100, 0.3, -10.0, 1),
    ("stream", "traffic", math.inf, 500, 30, 0.3, -10.0, 1),
    ("stream", "time", math.inf, 2000, 8, 0.3, -10.0, 1),
    ("stream_pack", "stream", 8.0, 1000, 40, 0.3, -10.0, 2),
    ("stream_pack", "response", math.inf, 300, 200, 0.3, -10.0, 2),
    ("stream_pack", "dollars", math.inf, 500, 64, 0.3, -10.0, 2),
]


def _options(variant: str, objective_: str, blocks: float, width: float, correctness: float,
             n_max: int, profile: Profile) -> Options:
    return Options(variant=variant, objective=objective_, blocks=blocks,
                   moduli=((MODULUS,),), poly_lens=(POLY_LEN,), security=flat_security,
                   noise_width=width, correctness_log2=correctness, n_max=n_max,
                   profile=profile)


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-{c[3]}x{c[4]}" for c in CASES])
def test_planner_reaches_the_brute_force_optimum(case: tuple) -> None:
    variant, objective_, blocks, records, size, width, correctness, n_max = case
    profile = Profile.load()
    opts = _options(variant, objective_, blocks, width, correctness, n_max, profile)
    want, best, accepted = brute_force(records, size, MODULUS, opts, profile)
    assert accepted >= 100
    chosen = search(records, size, opts, top=1).chosen
    assert chosen, ("the planner found nothing; brute force:", best.params.to_literal())
    got = chosen[0]
    # what the planner returns is a literal the brute force admits, scored the same, in the
    # optimum's band, with the brute force's tie key
    p = Parameters.from_literal(got.literal)
    mine = replace(Scored(p, *_seconds(p, profile), Sizes.of(p), math.nan),
                   log2_failure=stage_variances(p).log2_failure)
    assert admissible(mine, opts)
    assert math.isclose(objective(mine, opts), got.objective, rel_tol=1e-9)
    assert got.objective <= band(opts, want), (got.literal, best.params.to_literal(), want)
    assert all(math.isclose(a, b, rel_tol=1e-9) for a, b in zip(
        tie(mine, opts), tie(best, opts), strict=True)), (
        got.literal, best.params.to_literal(), tie(mine, opts), tie(best, opts))


def _some_literals(rng: random.Random, count: int) -> list[Parameters]:
    """Random accepted literals of every variant in the tiny ring and in a 2-prime ring."""
    out: list[Parameters] = []
    rings = [[MODULUS], [268369921, 249561089]]
    while len(out) < count:
        moduli = rng.choice(rings)
        bits = math.prod(moduli).bit_length()
        lit = {"variant": rng.choice(VARIANTS), "poly_len": 2048 if len(moduli) > 1 else 1024,
               "moduli": moduli, "noise_width": rng.choice([0.3, 6.4]),
               "secret_distribution": "gaussian", "n": rng.randint(1, 2),
               "nu_1": rng.randint(1, 5), "nu_2": rng.randint(0, 4),
               "p": 1 << rng.randint(1, 4), "q2_bits": 14 if len(moduli) == 1 else 21,
               "records": rng.randint(1, 50), "record_size": rng.randint(1, 300),
               **{k: rng.randint(1, bits) for k in ("t_gsw", "t_conv", "t_exp_left",
                                                    "t_exp_right")}}
        try:
            out.append(Parameters.from_literal(lit))
        except SpiralpirError:
            continue
    return out


def _metrics(p: Parameters, profile: Profile) -> list[float]:
    s = Sizes.of(p)
    return [sum(stage_seconds(p, profile).values()), s.public_params_bytes, s.query_bytes,
            s.response_bytes, stage_variances(p).log2_failure]


def test_longer_gadget_of_the_same_base_is_never_better(rng: random.Random) -> None:
    """The brute force's gadget lengths: a longer length with the same base 2^⌈q_bits/t⌉ adds
    time, bytes and noise (never less) in the scalar modules."""
    profile = Profile.load()
    checked = 0
    for p in _some_literals(rng, 40):
        for field in ("t_gsw", "t_conv", "t_exp_left", "t_exp_right"):
            t = getattr(p, field)
            longer = [u for u in range(t + 1, p.q_bits + 1) if p.base_bits(u) == p.base_bits(t)]
            if not longer:
                continue
            try:
                q = p.replace(**{field: rng.choice(longer)})
            except SpiralpirError:
                continue  # e.g. more GSW digits than the expansion has rounds for
            before, after = _metrics(p, profile), _metrics(q, profile)
            assert all(b >= a - 1e-9 * abs(a) for a, b in zip(before, after, strict=True)), (
                field, p.to_literal(), q.to_literal())
            checked += 1
    assert checked >= 20


def test_stream_variants_ignore_expansion_gadgets(rng: random.Random) -> None:
    profile = Profile.load()
    checked = 0
    for p in _some_literals(rng, 60):
        if not is_stream(p.variant):
            continue
        q = p.replace(t_exp_left=rng.randint(1, p.q_bits), t_exp_right=rng.randint(1, p.q_bits))
        assert _metrics(p, profile) == _metrics(q, profile)
        checked += 1
    assert checked >= 10
