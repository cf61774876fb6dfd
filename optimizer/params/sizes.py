"""Exact byte sizes of the runtime's serialized objects (runtime/FORMATS.md §3).

Owns the formulas for public parameters, query, response, preprocessed database and client
state, byte-exact with what the runtime writes (32-byte header included). Everything is a
function of a validated `Parameters`; `Sizes.of(params)` bundles them.
"""

from __future__ import annotations

from dataclasses import dataclass

from spiralpir.optimizer.params.parameters import Parameters

HEADER_BYTES = 32
SEED_BYTES = 32


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def pp_polys(p: Parameters) -> int:
    """Polynomials (mod q, seed-compressed) in the public parameters (FORMATS.md §3, §7:
    stream variants carry no expansion keys, pack variants convert with n = 1 and add n·n·t_conv
    packing-key polynomials; ScalToMat keys only when the computation's n > 1)."""
    stream = p.variant in ("stream", "stream_pack")
    pack = p.variant in ("pack", "stream_pack")
    nc = 1 if pack else p.n
    expansion = (p.rounds - 1) * p.t_exp_left + p.rounds_right * p.t_exp_right
    return (
        (0 if stream else expansion)
        + (nc * nc * p.t_conv if nc > 1 else 0)
        + 2 * nc * p.t_conv
        + (p.n * p.n * p.t_conv if pack else 0)
    )


def query_polys(p: Parameters) -> int:
    """Polynomials in the query: 1, or 2^nu_1 + nu_2·t_gsw for the stream variants (§7)."""
    return p.dim0 + p.num_gsw_digits if p.variant in ("stream", "stream_pack") else 1


def public_params_bytes(p: Parameters) -> int:
    return HEADER_BYTES + SEED_BYTES + ceil_div(pp_polys(p) * p.poly_len * p.q_bits, 8)


def query_bytes(p: Parameters) -> int:
    return HEADER_BYTES + SEED_BYTES + ceil_div(query_polys(p) * p.poly_len * p.q_bits, 8)


def response_bytes(p: Parameters) -> int:
    bits = p.instances * p.poly_len * (p.n * p.q2_bits + p.n * p.n * p.q1_bits)
    return HEADER_BYTES + ceil_div(bits, 8)


def preprocessed_bytes(instances: int, stored_pts: int, n: int, poly_len: int, primes: int) -> int:
    """The preprocessed database file: one 32-bit word per residue of every NTT coefficient of
    the stored plaintexts (rows_stored·2^nu_2 per instance)."""
    return HEADER_BYTES + 4 * instances * stored_pts * n * n * poly_len * primes


def preprocessed_db_bytes(p: Parameters) -> int:
    return preprocessed_bytes(p.instances, p.stored_pts, p.n, p.poly_len, len(p.moduli))


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
