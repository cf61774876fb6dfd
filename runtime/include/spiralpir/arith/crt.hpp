// crt.hpp — moving between residues mod p_i and integers mod q = Π p_i (q < 2^128).
//
// API (namespace spiralpir, R a RingSpec):
//   crt_compose<R>(const uint64_t* residues)      -> u128 in [0, q)      (residues[i] ∈ [0, p_i);
//                                                   Garner's algorithm, no 128-bit division)
//   crt_compose<R>(std::array<uint64_t,k>)        same
//   crt_decompose<R>(u128 x)                      -> std::array<uint64_t,k>, x mod p_i (any x)
//   centered_lift<R>(u128 x)                      -> i128 in (−q/2, q/2]  (x ∈ [0, q))
//   (crt_compose, crt_decompose and centered_lift are constant time in their values)
//   round_modswitch(u128 x, u128 q, uint64_t q_to)-> round(x·q_to / q) mod q_to, exact (ties up),
//                                                   x ∈ [0, q); q_to < 2^64
//   round_modswitch<R>(u128 x, uint64_t q_to)     same with q = modulus<R>()
//   round_modswitch_long_division(x, q, q_to)     the same by bitwise long division (reference)
#pragma once

#include <array>
#include <cstdint>

#include "spiralpir/arith/modarith.hpp"
#include "spiralpir/arith/ring.hpp"
#include "spiralpir/arith/tables.hpp"

namespace spiralpir {

namespace detail {
// Barrett reducers of a ring's primes, built at compile time (no division at run time)
template <class R>
inline constexpr auto word_reducers = [] {
  std::array<Barrett64, R::num_primes> a{};
  for (std::size_t i = 0; i < R::num_primes; ++i) a[i] = Barrett64(R::primes[i]);
  return a;
}();

// Garner's constants of a ring: inv[i][j] = p_j^{-1} mod p_i (j < i), with Shoup companions.
template <class R>
struct Garner {
  static constexpr std::size_t np = R::num_primes;
  std::uint64_t inv[np][np]{};
  std::uint64_t inv_shoup[np][np]{};
  constexpr Garner() {
    for (std::size_t i = 0; i < np; ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        inv[i][j] = inv_mod(R::primes[j] % R::primes[i], R::primes[i]);
        inv_shoup[i][j] = shoup_precompute(inv[i][j], R::primes[i]);
      }
    }
  }
};
template <class R>
inline constexpr Garner<R> garner{};
}  // namespace detail

// Garner's mixed-radix reconstruction: x = v_0 + p_0·(v_1 + p_1·(v_2 + …)) with each v_i found
// mod p_i by Shoup multiplications, so no 128-bit division; constant time (masked reductions).
template <class R>
u128 crt_compose(const std::uint64_t* residues) {
  constexpr std::size_t np = R::num_primes;
  constexpr const detail::Garner<R>& g = detail::garner<R>;
  std::uint64_t v[np];
  for (std::size_t i = 0; i < np; ++i) {
    const std::uint64_t p = R::primes[i];
    std::uint64_t t = residues[i];
    for (std::size_t j = 0; j < i; ++j) {
      const std::uint64_t vj = detail::word_reducers<R>[i].reduce(v[j]);
      t = ct::sub_mod(t, vj, p);
      t = mul_shoup(t, g.inv[i][j], g.inv_shoup[i][j], p);
    }
    v[i] = t;
  }
  u128 x = v[np - 1];
  for (std::size_t i = np - 1; i-- > 0;) x = x * R::primes[i] + v[i];
  return x;
}

template <class R>
u128 crt_compose(const std::array<std::uint64_t, R::num_primes>& residues) {
  return crt_compose<R>(residues.data());
}

template <class R>
std::array<std::uint64_t, R::num_primes> crt_decompose(u128 x) {
  const auto& t = tables<R>();
  std::array<std::uint64_t, R::num_primes> r{};
  for (std::size_t i = 0; i < R::num_primes; ++i) r[i] = t.barrett[i].reduce(x);
  return r;
}

template <class R>
i128 centered_lift(u128 x) {
  constexpr u128 q = modulus<R>();
  // x − q if x > q/2 (q odd), by a mask
  return static_cast<i128>(x - (q & ct::select128(ct::lt_mask128(q / 2, x), ~u128{0}, 0)));
}

// round(x·q_to/q) with ties rounded up. q is odd (a product of odd primes), so
// ⌊x·q_to/q + 1/2⌋ = ⌊(x·q_to + (q−1)/2) / q⌋: the quotient of a 192-bit numerator N by q.
// Exact by restoring long division, one bit at a time (the reference, and the path for q ≥ 2^120).
inline std::uint64_t round_modswitch_long_division(u128 x, u128 q, std::uint64_t q_to) {
  const u128 half = q >> 1;
  // N = x·q_to + ⌊q/2⌋ as four 64-bit limbs, little-endian.
  std::uint64_t n[4] = {0, 0, 0, 0};
  {
    const std::uint64_t xl = static_cast<std::uint64_t>(x), xh = static_cast<std::uint64_t>(x >> 64);
    const u128 lo = static_cast<u128>(xl) * q_to;
    const u128 hi = static_cast<u128>(xh) * q_to + (lo >> 64);
    u128 s = static_cast<u128>(static_cast<std::uint64_t>(lo)) + static_cast<std::uint64_t>(half);
    n[0] = static_cast<std::uint64_t>(s);
    s = static_cast<u128>(static_cast<std::uint64_t>(hi)) + static_cast<std::uint64_t>(half >> 64) + (s >> 64);
    n[1] = static_cast<std::uint64_t>(s);
    s = static_cast<u128>(static_cast<std::uint64_t>(hi >> 64)) + (s >> 64);
    n[2] = static_cast<std::uint64_t>(s);
    n[3] = static_cast<std::uint64_t>(s >> 64);
  }
  // The running remainder is < q < 2^128, so after the shift it needs 129 bits: `top` holds
  // bit 128. Only the quotient mod q_to is kept.
  const Barrett128 red(q_to);
  u128 rem = 0;
  u128 quot = 0;
  for (int bit = 255; bit >= 0; --bit) {
    const bool top = (rem >> 127) != 0;
    rem = (rem << 1) | ((n[bit / 64] >> (bit % 64)) & 1);
    const bool ge = top || rem >= q;
    if (ge) rem -= q;  // exact modulo 2^128: the true difference is < q
    quot = red.reduce(quot * 2 + (ge ? 1 : 0));
  }
  return static_cast<std::uint64_t>(quot);
}

inline std::uint64_t round_modswitch(u128 x, u128 q, std::uint64_t q_to) {
  const u128 half = q >> 1;
  if (q < (static_cast<u128>(1) << 63)) {
    // x·q_to + q/2 < 2^63·2^64 + 2^62 < 2^128: exact in u128.
    return static_cast<std::uint64_t>((x * q_to + half) / q % q_to);
  }
  if (q >= (static_cast<u128>(1) << 120)) return round_modswitch_long_division(x, q, q_to);
  // The quotient Q = ⌊N / q⌋ lies in [0, q_to] (x < q). A long-double estimate (64-bit
  // mantissa: a few units off at most) is corrected exactly with the remainder N − Q·q, whose
  // true value is within a few q of [0, q) and so below 2^127 in magnitude: its low 128 bits,
  // computed with wrapping u128 arithmetic, read as i128 are exact. (About 10 ns against 1.6 µs
  // for the long division: modulus switching of three-prime rings spent most of its time here.)
  const long double estimate =
      (static_cast<long double>(x) * static_cast<long double>(q_to) + static_cast<long double>(half)) /
      static_cast<long double>(q);
  i128 quot = estimate <= 0 ? 0 : static_cast<i128>(estimate);
  i128 rem = static_cast<i128>((x * q_to + half) - static_cast<u128>(quot) * q);
  const i128 qs = static_cast<i128>(q);
  while (rem < 0) rem += qs, --quot;
  while (rem >= qs) rem -= qs, ++quot;
  return quot == static_cast<i128>(q_to) ? 0 : static_cast<std::uint64_t>(quot);
}

template <class R>
std::uint64_t round_modswitch(u128 x, std::uint64_t q_to) {
  return round_modswitch(x, modulus<R>(), q_to);
}

}  // namespace spiralpir
