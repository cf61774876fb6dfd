"""The numbers an error states are the right ones: each expected message is written out by hand
from the literal (what a user reads to fix a parameters file), and the bounds that need a large
ring to reach (nu_1 + nu_2 <= 30 needs poly_len 8192) are exercised at their edge."""

from __future__ import annotations

from typing import Any

import pytest
from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.params.paper import PAPER_EXAMPLE
from spiralpir.optimizer.params.parameters import Parameters

# both paper primes are ≡ 1 mod 2·8192 (checked below), so they serve poly_len 8192 too
RING_8192 = {"poly_len": 8192, "moduli": [268369921, 249561089]}


def _lit(**changes: Any) -> dict[str, Any]:
    lit = {**PAPER_EXAMPLE, **changes}
    for k in ("instances", "db_item_size"):
        if k not in changes:
            lit.pop(k)
    return lit


def _message(lit: dict[str, Any]) -> str:
    with pytest.raises(SpiralpirError) as exc:
        Parameters.from_literal(lit)
    return str(exc.value)


def test_the_large_ring_literal_is_valid() -> None:
    assert all(m % (2 * 8192) == 1 for m in RING_8192["moduli"])
    p = Parameters.from_literal(_lit(**RING_8192, nu_1=10, nu_2=20, t_gsw=1, records=4096))
    assert (p.nu_1 + p.nu_2, p.rounds) == (30, 11)  # 20 GSW digits: 6 rounds on that side


def test_nu_total_at_most_30() -> None:
    msg = _message(_lit(**RING_8192, nu_1=11, nu_2=20, t_gsw=1, records=4096))
    assert msg == "parameter 'nu_2': nu_1 + nu_2 must be <= 30, got 31"


def test_messages_state_the_bound_from_the_literal() -> None:
    assert _message(_lit(moduli=[7681])) == (
        "parameter 'moduli': 7681 is not ≡ 1 mod 2·poly_len = 4096 (not NTT-friendly)")
    for m in (2, 1, -7, 1 << 32):
        assert _message(_lit(moduli=[268369921, m])) == (
            f"parameter 'moduli': each prime must be in (2, 2^32), got {m}")
    assert _message(_lit(moduli=[3])) == (
        "parameter 'moduli': 3 is not ≡ 1 mod 2·poly_len = 4096 (not NTT-friendly)")
    # 18433 = 9·2048 + 1 is prime and ≡ 1 mod poly_len, but not mod 2·poly_len
    assert _message(_lit(moduli=[268369921, 18433])) == (
        "parameter 'moduli': 18433 is not ≡ 1 mod 2·poly_len = 4096 (not NTT-friendly)")
    # no prime ≡ 1 mod 16384 lies below 2^14: 16385 is the first candidate
    assert _message(_lit(**RING_8192, q2_bits=14, p=4, records=4096)) == (
        "parameter 'q2_bits': no prime ≡ 1 mod 16384 below 2^14")
    assert _message(_lit(nu_1=11, nu_2=4)).startswith(
        "parameter 'nu_1': query expansion needs 12 rounds > log2(poly_len) = 11")
    assert _message(_lit(n=9, p=4)) == "parameter 'n': must be in [1, 8], got 9"
    assert _message(_lit(q2_bits=13, p=4, records=4096)) == (
        "parameter 'q2_bits': must be in [14, 48], got 13")
    assert _message(_lit(t_gsw=57)) == (
        "parameter 't_gsw': must be in [1, ceil(log2 q) = 56], got 57")
    assert _message(_lit(records=(1 << 15) * 32 + 1)) == (
        f"parameter 'records': {(1 << 15) * 32 + 1} records exceed the capacity "
        f"2^(nu_1+nu_2)·items_per_pt = {(1 << 15) * 32}; raise nu_1/nu_2")
    assert _message(_lit(instances=2, db_item_size=256)) == (
        "parameter 'instances': must be max(1, ceil(8·db_item_size / plaintext bits)) = 1, "
        "got 2")


@pytest.mark.parametrize("text", ["sparse-ternary:3,5:7", "sparse-ternary:3:5",
                                  "sparse-ternary:3,"])
def test_sparse_ternary_takes_exactly_two_counts(text: str) -> None:
    assert "secret_distribution" in _message(_lit(secret_distribution=text))


@pytest.mark.parametrize("n,p,record_size", [(1, 256, 4096), (1, 2, 4096), (2, 2, 1025),
                                             (1, 2, 1)])
def test_omitted_layout_is_derived_for_every_small_shape(n: int, p: int, record_size: int
                                                         ) -> None:
    """instances = ⌈8·record_size / (n²·poly_len·log2 p)⌉ (at least 1), db_item_size =
    record_size, whether n is 1 and p is 2 (the smallest values the layout rule takes) or not."""
    lit = _lit(n=n, p=p, record_size=record_size, records=64, q2_bits=20, nu_1=5, nu_2=1)
    got = Parameters.from_literal(lit)
    pt_bits = n * n * 2048 * (p.bit_length() - 1)
    assert (got.instances, got.db_item_size) == (max(1, -(-8 * record_size // pt_bits)),
                                                 record_size)
