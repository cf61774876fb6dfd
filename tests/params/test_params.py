"""Parameter literal -> validated Parameters: bounds, errors naming fields, JSON round-trip."""

from __future__ import annotations

import json
import math
import random

import pytest
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.params.paper import PAPER_EXAMPLE
from spiralpir.optimizer.params.parameters import Parameters, layout
from spiralpir.optimizer.params.primes import find_q2, is_prime, modulus_table, ntt_primes


def test_paper_example_derived_values() -> None:
    p = Parameters.from_literal(PAPER_EXAMPLE)
    assert p.q == 268369921 * 249561089
    assert p.q_bits == 56 and abs(p.log2_q - 55.897) < 0.01
    assert p.gadget_base(p.t_conv) == 2**14 and p.gadget_base(p.t_gsw) == 2**7
    assert p.gadget_base(p.t_exp_right) == 2
    for t in (1, 3, 5, 8, 13, 56):
        z = p.gadget_base(t)
        assert z**t >= p.q and (z // 2) ** t < p.q  # z = 2^ceil(log2(q)/t), minimal power of two
    assert p.q1 == 1024
    assert p.q2 < 2**20 and p.q2 % 4096 == 1 and is_prime(p.q2)
    assert p.items_per_pt == (4 * 2048 * 8) // (256 * 8) and p.instances == 1
    assert p.rounds == 10 and p.rounds_right == 7


def test_json_round_trip_sorted() -> None:
    p = Parameters.from_literal(PAPER_EXAMPLE)
    text = p.to_json()
    assert list(json.loads(text)) == sorted(json.loads(text))
    assert Parameters.from_json(text) == p
    assert Parameters.from_json(text).to_json() == text


@pytest.mark.parametrize(
    "field,value,needle",
    [
        ("poly_len", 3000, "poly_len"),
        ("moduli", [268369921, 268369921], "distinct"),
        ("moduli", [268369923], "not prime"),
        ("moduli", [7681], "NTT-friendly"),
        ("n", 0, "'n'"),
        ("p", 100, "power of two"),
        ("p", 2**31, "2^30"),
        ("p", 2**30, "CRT prime"),  # p/2 = 2^29 above the 28-bit primes
        ("q2_bits", 49, "q2_bits"),
        ("t_gsw", 0, "t_gsw"),
        ("t_exp_right", 57, "t_exp_right"),
        ("nu_1", 11, "nu_1"),
        ("records", 2**30, "capacity"),
        ("secret_distribution", "sparse-ternary:2000,2000", "sparse-ternary"),
        ("secret_distribution", "uniform", "secret_distribution"),
        ("variant", "fast", "variant"),
        ("noise_width", -1, "noise_width"),
        ("bogus", 1, "unknown"),
    ],
)
def test_errors_name_field(field: str, value: object, needle: str) -> None:
    lit = dict(PAPER_EXAMPLE)
    lit[field] = value
    with pytest.raises(SpiralpirError) as exc:
        Parameters.from_literal(lit)
    assert needle in str(exc.value)
    assert field in str(exc.value)


def test_missing_field() -> None:
    lit = dict(PAPER_EXAMPLE)
    del lit["t_conv"]
    with pytest.raises(SpiralpirError, match="t_conv.*missing"):
        Parameters.from_literal(lit)


def test_layout_default_and_instances() -> None:
    lit = dict(PAPER_EXAMPLE, records=2**14, record_size=100_000, nu_1=9, nu_2=5)
    del lit["instances"], lit["db_item_size"]
    p = Parameters.from_literal(lit)
    assert p.instances == math.ceil(800_000 / (4 * 2048 * 8))
    lit["instances"] = 3
    with pytest.raises(SpiralpirError, match="instances"):
        Parameters.from_literal(lit)
    assert layout(256, 2, 256, 2048) == (1, 32, 256)


def test_primes_random() -> None:
    rng = random.Random(5)
    for d in (1024, 2048, 4096, 8192):
        for bits in (rng.randint(20, 32) for _ in range(3)):
            ps = ntt_primes(d, bits, 3)
            assert ps and all(is_prime(x) and x % (2 * d) == 1 and x < 2**bits for x in ps)
            # nothing NTT-friendly and prime between the first one and 2^bits
            assert not any(is_prime(c) for c in range(ps[0] + 2 * d, 2**bits, 2 * d))
        assert find_q2(20, d) == ntt_primes(d, 20, 1)[0]
        table = modulus_table(d)
        assert len(table) > 20
        for m in table:
            assert len(m.moduli) <= 3 and all(x < 2**32 and x % (2 * d) == 1 for x in m.moduli)
