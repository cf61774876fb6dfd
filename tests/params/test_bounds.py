"""Every bound of `Parameters` at its edge: the literal at the limit is accepted, one step past
it is rejected with an error naming the field (the runtime's limits, spiral/params.hpp, and the
protocol's: a bound that drifts by one either way fails here)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.params.paper import PAPER_EXAMPLE
from spiralpir.optimizer.params.parameters import Parameters, ceil_log2, layout
from spiralpir.optimizer.params.primes import find_q2

PRIMES_31 = [2147565569, 2147573761, 2147577857]  # ≡ 1 mod 4096, just above 2^31
PRIMES_30 = [536903681, 536924161, 536952833, 536973313]  # ≡ 1 mod 4096, just above 2^29
PRIMES_29 = [536813569, 536752129]  # ≡ 1 mod 4096, just below 2^29
PRIME_33 = 4294991873  # ≡ 1 mod 4096, above 2^32
Q2_20 = find_q2(20, 2048)  # a one-prime q equal to the q2 of q2_bits = 20


def _lit(**changes: Any) -> dict[str, Any]:
    lit = {**PAPER_EXAMPLE, **changes}
    for k in ("instances", "db_item_size"):
        if k not in changes:
            lit.pop(k)
    return lit


# (name, accepted literal, rejected literal, the field its error names)
EDGES: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    ("q2_bits 14..48", _lit(q2_bits=14, p=4, records=4096), _lit(q2_bits=13, p=4, records=4096),
     "q2_bits"),
    ("q2_bits 48", _lit(q2_bits=48), _lit(q2_bits=49), "q2_bits"),
    ("q1 = 4p < q2", _lit(q2_bits=14, p=1024), _lit(q2_bits=14, p=4096), "q2_bits"),
    ("nu_2 <= 20", _lit(nu_1=9, nu_2=20, t_gsw=1), _lit(nu_1=9, nu_2=21, t_gsw=1), "nu_2"),
    ("nu_1 >= 1", _lit(nu_1=1, nu_2=14), _lit(nu_1=0, nu_2=15), "nu_1"),
    ("nu_2 >= 0", _lit(nu_1=10, nu_2=0, records=1024), _lit(nu_1=10, nu_2=-1, records=512),
     "nu_2"),
    ("2·2^nu_1 <= poly_len", _lit(nu_1=10, nu_2=5), _lit(nu_1=11, nu_2=4), "nu_1"),
    # expansion rounds ≤ log2 poly_len: at most poly_len/2 GSW digits (2·nu_2·t_gsw ≤ poly_len)
    ("GSW digits <= poly_len/2", _lit(poly_len=1024, nu_1=4, nu_2=16, t_gsw=32),
     _lit(poly_len=1024, nu_1=4, nu_2=16, t_gsw=33), "nu_1"),
    ("n <= 8", _lit(n=8, p=4), _lit(n=9, p=4), "'n'"),
    ("n >= 1", _lit(n=1, records=4096), _lit(n=0, records=4096), "'n'"),
    ("p >= 2", _lit(p=2, records=1 << 15), _lit(p=1, records=1 << 15), "'p'"),
    ("p <= 2^30", _lit(moduli=PRIMES_31[:2], p=1 << 30, q2_bits=48),
     _lit(moduli=PRIMES_31[:2], p=1 << 31, q2_bits=48), "'p'"),
    ("p/2 below every prime", _lit(moduli=PRIMES_29, p=1 << 29, q2_bits=48),
     _lit(moduli=PRIMES_29, p=1 << 30, q2_bits=48), "'p'"),
    ("1..3 primes", _lit(moduli=PRIMES_30[:3], t_exp_right=88),
     _lit(moduli=PRIMES_30[:4], t_exp_right=88), "moduli"),
    ("primes below 2^32", _lit(moduli=[PRIMES_31[0]], p=4, q2_bits=20, t_exp_right=32,
                               records=4096),
     _lit(moduli=[PRIME_33], p=4, q2_bits=20, t_exp_right=32, records=4096), "moduli"),
    ("n <= lazy_terms", _lit(moduli=[PRIMES_31[0]], n=3, p=4, q2_bits=20, t_exp_right=32,
                             records=4096),
     _lit(moduli=[PRIMES_31[0]], n=4, p=4, q2_bits=20, t_exp_right=32, records=4096), "'n'"),
    ("q2 < q", _lit(moduli=[Q2_20], p=4, q2_bits=19, t_exp_right=20, records=4096),
     _lit(moduli=[Q2_20], p=4, q2_bits=20, t_exp_right=20, records=4096), "q2_bits"),
    ("gadget length <= ceil(log2 q)", _lit(t_exp_right=56), _lit(t_exp_right=57),
     "t_exp_right"),
    ("gadget length >= 1", _lit(t_conv=1), _lit(t_conv=0), "t_conv"),
    ("noise width < 1000", _lit(noise_width=999.5), _lit(noise_width=1000.0), "noise_width"),
    ("noise width > 0", _lit(noise_width=1e-9), _lit(noise_width=0.0), "noise_width"),
    ("sparse ternary weight <= poly_len", _lit(secret_distribution="sparse-ternary:1024,1024"),
     _lit(secret_distribution="sparse-ternary:1024,1025"), "secret_distribution"),
    ("sparse ternary weight > 0", _lit(secret_distribution="sparse-ternary:0,1"),
     _lit(secret_distribution="sparse-ternary:0,0"), "secret_distribution"),
    ("records <= capacity", _lit(records=(1 << 15) * 32), _lit(records=(1 << 15) * 32 + 1),
     "records"),
    ("records >= 1", _lit(records=1), _lit(records=0), "records"),
    ("record_size >= 1", _lit(record_size=1), _lit(record_size=0), "record_size"),
    ("db_item_size >= record_size", _lit(db_item_size=256, instances=1),
     _lit(db_item_size=255, instances=1), "db_item_size"),
    ("instances by the layout", _lit(instances=1, db_item_size=256),
     _lit(instances=2, db_item_size=256), "instances"),
]


@pytest.mark.parametrize("name,ok,bad,field", EDGES, ids=[e[0] for e in EDGES])
def test_bound_edges(name: str, ok: dict[str, Any], bad: dict[str, Any], field: str) -> None:
    Parameters.from_literal(ok)
    with pytest.raises(SpiralpirError) as exc:
        Parameters.from_literal(bad)
    assert field in str(exc.value), str(exc.value)


@pytest.mark.parametrize("text,kind,plus,minus", [
    ("gaussian", "gaussian", 0, 0), ("ternary", "ternary", 0, 0),
    ("sparse-ternary:3,5", "sparse_ternary", 3, 5),
    ("sparse-ternary: 7 , 1", "sparse_ternary", 7, 1),
])
def test_secret_distributions(text: str, kind: str, plus: int, minus: int) -> None:
    p = Parameters.from_literal(_lit(secret_distribution=text))
    assert (p.secret_kind, p.secret_plus, p.secret_minus) == (kind, plus, minus)
    assert f"secret_dist={kind}\nsecret_plus={plus}\nsecret_minus={minus}\n" in (
        p.canonical_string())


@pytest.mark.parametrize("bad", ["sparse-ternary:", "sparse-ternary:1", "sparse-ternary:a,b",
                                 "sparse-ternary:1,2,3", "Gaussian", ""])
def test_malformed_secret_distributions(bad: str) -> None:
    with pytest.raises(SpiralpirError, match="secret_distribution"):
        Parameters.from_literal(_lit(secret_distribution=bad))


def test_ceil_log2_and_layout_by_brute_force() -> None:
    for x in range(1, 5000):
        k = ceil_log2(x)
        assert 2**k >= x and (k == 0 or 2 ** (k - 1) < x)
    for n, p, d, rs in [(1, 2, 1024, 1), (2, 256, 2048, 256), (1, 4, 1024, 257),
                        (3, 2**20, 4096, 100_000), (2, 8, 2048, 3072), (2, 8, 2048, 3073)]:
        pt_bits = n * n * d * ceil_log2(p)
        inst, per, item = layout(rs, n, p, d)
        assert item == rs
        # the fewest instances whose plaintexts hold a record, and as many records as fit
        assert inst * pt_bits >= 8 * rs and (inst == 1 or (inst - 1) * pt_bits < 8 * rs)
        if inst == 1:
            assert per * 8 * rs <= pt_bits < (per + 1) * 8 * rs
        else:
            assert per == 1


def test_literal_types_are_checked() -> None:
    for field, value in (("n", 2.0), ("n", True), ("moduli", [268369921.0]), ("moduli", []),
                         ("noise_width", "6.4"), ("noise_width", True), ("variant", 3),
                         ("records", "1")):
        with pytest.raises(SpiralpirError, match=field):
            Parameters.from_literal(_lit(**{field: value}))
    with pytest.raises(SpiralpirError, match="JSON object"):
        Parameters.from_literal([1, 2])  # type: ignore[arg-type]


def test_derived_values_by_their_definitions() -> None:
    """rounds_right: the smallest R' with 2^(R'−1) ≥ the GSW digits (one round for ≤ 1); delta
    = ⌊q/p⌋; items per plaintext; an immutable, implemented set; replace() re-derives the
    layout."""
    for nu_2, t_gsw in ((0, 1), (1, 1), (1, 2), (1, 3), (2, 2), (1, 5), (3, 3)):
        p = Parameters.from_literal(_lit(nu_2=nu_2, t_gsw=t_gsw, records=4096))
        g = nu_2 * t_gsw
        want = next(r for r in range(1, 20) if 2 ** (r - 1) >= max(g, 1))
        assert p.rounds_right == want, (nu_2, t_gsw)
    p = Parameters.from_literal(PAPER_EXAMPLE)
    assert p.delta * p.p <= p.q < (p.delta + 1) * p.p
    assert p.items_per_pt * 8 * p.db_item_size <= p.pt_bits < (p.items_per_pt + 1) * 8 * (
        p.db_item_size)
    assert p.implemented
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.n = 3  # type: ignore[misc]
    big = p.replace(record_size=100_000, records=4096)
    assert (big.instances, big.db_item_size) == (layout(100_000, 2, 256, 2048)[0], 100_000)
    for field, value in (("n", 1), ("p", 2**16), ("poly_len", 4096)):
        q = p.replace(**{field: value, "records": 4096})
        want_inst, _, want_item = layout(q.record_size, q.n, q.p, q.poly_len)
        assert (q.instances, q.db_item_size) == (want_inst, want_item), field
    kept = p.replace(nu_2=5, records=4096)
    assert (kept.instances, kept.db_item_size) == (p.instances, p.db_item_size)
