"""Exact byte sizes of the runtime's serialized objects (runtime/FORMATS.md §3).

Owns the formulas for public parameters, query, response, preprocessed database and client
state, byte-exact with what the runtime writes (32-byte header included). Everything is a
function of a validated `Parameters`; `Sizes.of(params)` bundles them.
"""

from __future__ import annotations

from dataclasses import dataclass

from spiralpir.optimizer.params import Parameters

HEADER_BYTES = 32
SEED_BYTES = 32


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def pp_polys(p: Parameters) -> int:
    """Polynomials (mod q, seed-compressed) in the public parameters."""
    return (
        (p.rounds - 1) * p.t_exp_left
        + p.rounds_right * p.t_exp_right
        + p.n * p.n * p.t_conv
        + 2 * p.n * p.t_conv
    )


def public_params_bytes(p: Parameters) -> int:
    return HEADER_BYTES + SEED_BYTES + ceil_div(pp_polys(p) * p.poly_len * p.q_bits, 8)


def query_bytes(p: Parameters) -> int:
    return HEADER_BYTES + SEED_BYTES + ceil_div(p.poly_len * p.q_bits, 8)


def response_bytes(p: Parameters) -> int:
    bits = p.instances * p.poly_len * (p.n * p.q2_bits + p.n * p.n * p.q1_bits)
    return HEADER_BYTES + ceil_div(bits, 8)


def preprocessed_db_bytes(p: Parameters) -> int:
    return HEADER_BYTES + 4 * p.instances * p.num_pts * p.n * p.n * p.poly_len * len(p.moduli)


def client_state_bytes(p: Parameters) -> int:
    return HEADER_BYTES + SEED_BYTES


@dataclass(frozen=True)
class Sizes:
    public_params_bytes: int
    query_bytes: int
    response_bytes: int
    preprocessed_db_bytes: int
    client_state_bytes: int

    @classmethod
    def of(cls, p: Parameters) -> Sizes:
        return cls(
            public_params_bytes=public_params_bytes(p),
            query_bytes=query_bytes(p),
            response_bytes=response_bytes(p),
            preprocessed_db_bytes=preprocessed_db_bytes(p),
            client_state_bytes=client_state_bytes(p),
        )
