"""Derived constants of a generated build, computed in Python and spelled out by the header.

Gadget bases, the CRT constants, NTT root seeds, q2, lazy-reduction bounds and the CI-sized
twin's shape: computed here independently of params/parameters.py and cross-checked against it
(and, at compile time, against the runtime's static_asserts).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spiralpir.optimizer.errors import SpiralpirError
from spiralpir.optimizer.params.ci_twin import ci_shape
from spiralpir.optimizer.params.parameters import Parameters
from spiralpir.optimizer.params.primes import is_prime


def q2_prime(q2_bits: int, poly_len: int) -> int:
    """The largest prime q2 < 2^q2_bits with q2 = 1 mod 2*poly_len (the runtime's q2 rule)."""
    step = 2 * poly_len
    cand = ((1 << q2_bits) - 1) // step * step + 1
    if cand >= 1 << q2_bits:
        cand -= step
    while cand > step:
        if is_prime(cand):
            return cand
        cand -= step
    raise SpiralpirError(f"no prime q2 < 2^{q2_bits} with q2 = 1 mod {step}")


def gadget_bits(q: int, t: int) -> int:
    """log2 of the gadget base z = 2^ceil(log2(q)/t): the smallest b with 2^(b*t) >= q."""
    if t < 1:
        raise SpiralpirError(f"gadget length must be >= 1, got {t}")
    b = 1
    while (1 << (b * t)) < q:
        b += 1
    return b


def min_root_2n(prime: int, poly_len: int) -> int:
    """The smallest primitive 2*poly_len-th root of unity mod prime (the NTT seed)."""
    order = 2 * poly_len
    exp = (prime - 1) // order
    for g in range(2, prime):
        psi = pow(g, exp, prime)
        if pow(psi, poly_len, prime) == prime - 1:
            best = psi
            # every primitive root is psi^k for odd k; take the smallest
            cur, sq = psi, psi * psi % prime
            for _ in range(poly_len):
                best = min(best, cur)
                cur = cur * sq % prime
            return best
    raise SpiralpirError(f"{prime} has no primitive {order}-th root of unity")


@dataclass(frozen=True)
class Derived:
    """Everything computed from the parameters that the header spells out."""

    q: int
    log2_q: float
    q2: int
    q1: int
    delta: int
    gadget: dict[str, int]  # name -> base bits
    crt_hat_mod: list[int]  # (q/p_i) mod p_i
    crt_hat_inv: list[int]  # ((q/p_i) mod p_i)^-1 mod p_i
    barrett: list[int]  # floor(2^64 / p_i)
    psi: list[int]  # smallest primitive 2d-th root of unity mod p_i
    max_lazy_products: int  # products < (p_i - 1)^2 that fit on top of [0, p_i) in a uint64
    first_dim_terms: int  # 2^nu_1
    rows_stored: int  # first-dimension rows holding the records (the stored ones)
    ci_nu_1: int
    ci_nu_2: int
    ci_num_records: int


def derive(p: Mapping[str, Any]) -> Derived:
    """Derived constants from struct fields, computed here independently of params/parameters.py and
    cross-checked against it (and, at compile time, against the runtime)."""
    moduli = p["moduli"]
    d = p["poly_len"]
    q = math.prod(moduli)
    hat_mod = [(q // m) % m for m in moduli]
    hat_inv = [pow(h, -1, m) for h, m in zip(hat_mod, moduli, strict=True)]
    gadget = {
        key: gadget_bits(q, p[key]) for key in ("t_gsw", "t_conv", "t_exp_left", "t_exp_right")
    }
    # products a*b (a, b < p_i) added to an accumulator already in [0, p_i) within a uint64
    max_lazy = min(((1 << 64) - 1 - (m - 1)) // ((m - 1) ** 2) for m in moduli)
    if max_lazy < p["n"]:
        raise SpiralpirError(
            f"moduli {moduli} are too large for n = {p['n']}: the first-dimension accumulator "
            f"holds {max_lazy} product(s) of residues before reducing and must hold n "
            "(pick smaller primes or n <= that bound)"
        )
    nu_1, nu_2, recs = ci_shape(p)
    der = Derived(
        q=q,
        log2_q=math.log2(q),
        q2=q2_prime(p["q2_bits"], d),
        q1=4 * p["p"],
        delta=q // p["p"],
        gadget=gadget,
        crt_hat_mod=hat_mod,
        crt_hat_inv=hat_inv,
        barrett=[(1 << 64) // m for m in moduli],
        psi=[min_root_2n(m, d) for m in moduli],
        max_lazy_products=max_lazy,
        first_dim_terms=1 << p["nu_1"],
        rows_stored=_rows_stored(p),
        ci_nu_1=nu_1,
        ci_nu_2=nu_2,
        ci_num_records=recs,
    )
    _cross_check(p, der)
    return der


def _rows_stored(p: Mapping[str, Any]) -> int:
    """Rows i = pt >> nu_2 of the plaintexts that hold the num_records records (FORMATS.md §3)."""
    pt_bits = p["n"] * p["n"] * p["poly_len"] * (p["p"].bit_length() - 1)
    item_bits = 8 * p["db_item_size"]
    per_pt = pt_bits // item_bits if item_bits <= pt_bits else 1
    pts = -(-p["num_records"] // per_pt)
    return min(1 << p["nu_1"], -(-pts >> p["nu_2"]))


def _cross_check(p: Mapping[str, Any], der: Derived) -> None:
    ref = Parameters.from_literal({
        "variant": p["variant"], "poly_len": p["poly_len"], "moduli": p["moduli"],
        "noise_width": p["noise_width"], "secret_distribution": "gaussian", "n": p["n"],
        "nu_1": p["nu_1"], "nu_2": p["nu_2"], "p": p["p"], "q2_bits": p["q2_bits"],
        "t_gsw": p["t_gsw"], "t_conv": p["t_conv"], "t_exp_left": p["t_exp_left"],
        "t_exp_right": p["t_exp_right"], "instances": p["instances"],
        "db_item_size": p["db_item_size"], "records": p["num_records"],
        "record_size": p["record_size"],
    })
    mine = (der.q, der.q2, der.q1, der.delta, der.gadget["t_gsw"], der.gadget["t_conv"],
            der.gadget["t_exp_left"], der.gadget["t_exp_right"], der.rows_stored)
    theirs = (ref.q, ref.q2, ref.q1, ref.delta, ref.bits_gsw, ref.bits_conv, ref.bits_exp_left,
              ref.bits_exp_right, ref.rows_stored)
    if mine != theirs:
        raise SpiralpirError(f"generator and params/parameters.py disagree on derived constants: "
                             f"{mine} != {theirs}")
