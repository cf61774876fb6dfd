"""NTT-friendly primes and the modulus table the optimizer searches over.

Owns: primality (deterministic Miller-Rabin, exact below 2^64), `ntt_primes(poly_len, bits)`
(primes < 2^bits with p ≡ 1 mod 2·poly_len, largest first), `find_q2(bits, poly_len)` (the
largest such prime below 2^bits: the runtime's q2 rule), and `modulus_table(poly_len)`: for each
target size, a product of 1..3 distinct NTT-friendly primes < 2^32 that is as large as possible
below 2^target. The search picks q among these, so it can trade security (smaller q) for noise
room (larger q). SPIRAL's own modulus (268369921 · 249561089 ≈ 2^55.9) is `SPIRAL_MODULI`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

POLY_LENS: tuple[int, ...] = (1024, 2048, 4096, 8192)
SPIRAL_MODULI: tuple[int, ...] = (268369921, 249561089)
MAX_PRIME_BITS = 30  # search: CRT primes < 2^30 (runtime allows < 2^32, but the lazy
# first-dimension kernel then reduces after every product and the kernels are 2-3x slower)
MAX_PRIMES = 3  # runtime protocol layer: 1..3 CRT primes
MAX_Q_BITS = 100  # runtime: q < 2^100

_MR_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)


def is_prime(n: int) -> bool:
    """Deterministic Miller-Rabin; exact for n < 3.3·10^24 (so for every 64-bit n)."""
    if n < 2:
        return False
    for sp in _MR_BASES:
        if n % sp == 0:
            return n == sp
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in _MR_BASES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


@cache
def ntt_primes(poly_len: int, bits: int, count: int = 8) -> tuple[int, ...]:
    """The `count` largest primes < 2^bits that are ≡ 1 mod 2·poly_len, largest first."""
    step = 2 * poly_len
    top = 1 << bits
    c = ((top - 2) // step) * step + 1
    out: list[int] = []
    while c > step and len(out) < count:
        if is_prime(c):
            out.append(c)
        c -= step
    return tuple(out)


@cache
def find_q2(bits: int, poly_len: int) -> int:
    """q2 = the largest prime < 2^bits with q2 ≡ 1 mod 2·poly_len (0 if none): the runtime rule."""
    found = ntt_primes(poly_len, bits, 1)
    return found[0] if found else 0


@dataclass(frozen=True)
class Modulus:
    """One modulus choice: the CRT primes, their product q and log2 q."""

    poly_len: int
    moduli: tuple[int, ...]

    @property
    def q(self) -> int:
        return math.prod(self.moduli)

    @property
    def log2_q(self) -> float:
        return math.log2(self.q)

    @property
    def q_bits(self) -> int:
        return self.q.bit_length()


def _split_bits(total: int, k: int) -> list[int]:
    base, extra = divmod(total, k)
    return [base + (1 if i < extra else 0) for i in range(k)]


@cache
def modulus_for(poly_len: int, target_bits: int) -> Modulus | None:
    """The largest product of distinct NTT primes (< 2^32 each, ≤ 3 of them) below 2^target_bits.

    Uses the fewest primes that can reach the target (fewer primes = cheaper arithmetic), each
    prime the largest one below its share of the bits.
    """
    k = max(1, math.ceil(target_bits / MAX_PRIME_BITS))
    if k > MAX_PRIMES:
        return None
    best: tuple[int, ...] | None = None
    for shares in _share_variants(target_bits, k):
        chosen: list[int] = []
        for b in shares:
            cands = [c for c in ntt_primes(poly_len, b, 8) if c not in chosen]
            if not cands:
                break
            chosen.append(cands[0])
        else:
            if math.prod(chosen) < (1 << target_bits) and (
                best is None or math.prod(chosen) > math.prod(best)
            ):
                best = tuple(sorted(chosen, reverse=True))
    return Modulus(poly_len, best) if best else None


def _share_variants(total: int, k: int) -> list[list[int]]:
    """Ways to split `total` bits over k primes (balanced, and one-bit skews of it)."""
    base = _split_bits(total, k)
    out = [base]
    if k >= 2:
        for i in range(k):
            for j in range(k):
                if i != j and base[i] < MAX_PRIME_BITS:
                    v = list(base)
                    v[i] += 1
                    v[j] -= 1
                    out.append(v)
    return [v for v in out if all(10 < b <= MAX_PRIME_BITS for b in v)]


@cache
def modulus_table(poly_len: int, min_bits: int = 24, max_bits: int = 96) -> tuple[Modulus, ...]:
    """One modulus per target size 2^min_bits .. 2^max_bits (deduplicated), smallest first."""
    seen: set[tuple[int, ...]] = set()
    out: list[Modulus] = []
    for t in range(min_bits, max_bits + 1):
        m = modulus_for(poly_len, t)
        if m is not None and m.moduli not in seen and m.q_bits <= MAX_Q_BITS:
            seen.add(m.moduli)
            out.append(m)
    return tuple(out)


def lazy_terms(moduli: tuple[int, ...] | list[int]) -> int:
    """Products (< (p−1)²) that fit on top of a value < p in a uint64 (runtime params.hpp)."""
    m = max(moduli)
    return ((1 << 64) - 1 - (m - 1)) // ((m - 1) ** 2)
