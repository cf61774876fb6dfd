// ring.hpp — compile-time description of the ring R_q = Z_q[x]/(x^d + 1), q = Π p_i.
//
// API (namespace spiralpir):
//   RingSpec<PolyLen, Primes...>   poly_len, log2_poly_len, num_primes, primes (std::array)
//   modulus<R>()                   q = Π p_i as u128 (the product is checked to fit 128 bits)
//   log2_modulus<R>()              log2(q) as double
//   max_prime<R>(), min_prime<R>() largest / smallest p_i
//   max_lazy_terms<R>()            how many products a·b (a, b ∈ [0, p_i)) may be added to an
//                                  accumulator already in [0, p_i) inside one uint64 before it
//                                  must be reduced: ⌊(2^64 − p) / (p − 1)^2⌋ minimised over p_i.
//                                  Kernels that sum K products static_assert(K <= this).
// Generated code supplies the ring as constexpr template arguments, e.g.
//   using ring = spiralpir::RingSpec<2048, 268369921ULL, 249561089ULL>;
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "spiralpir/arith/modarith.hpp"

namespace spiralpir {

namespace detail {
template <std::size_t N>
constexpr bool all_distinct(const std::array<std::uint64_t, N>& a) {
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = i + 1; j < N; ++j)
      if (a[i] == a[j]) return false;
  return true;
}
template <std::size_t N>
constexpr unsigned total_bits(const std::array<std::uint64_t, N>& a) {
  unsigned s = 0;
  for (auto p : a) s += bit_length(p);
  return s;
}
}  // namespace detail

// Largest supported prime: the lazy forward NTT keeps values below 4p in 64-bit words and the
// IFMA kernels work on 52-bit limbs, so p < 2^50 keeps every path exact.
inline constexpr std::uint64_t kMaxPrime = 1ULL << 50;

template <std::size_t PolyLen, std::uint64_t... Primes>
struct RingSpec {
  static constexpr std::size_t poly_len = PolyLen;
  static constexpr unsigned log2_poly_len = bit_length(PolyLen) - 1;
  static constexpr std::size_t num_primes = sizeof...(Primes);
  static constexpr std::array<std::uint64_t, num_primes> primes{Primes...};

  static_assert(PolyLen == 1024 || PolyLen == 2048 || PolyLen == 4096 || PolyLen == 8192,
                "poly_len must be 1024, 2048, 4096 or 8192");
  static_assert(num_primes >= 1 && num_primes <= 4, "a ring has 1 to 4 primes");
  static_assert(((Primes < kMaxPrime) && ...), "every prime must be below 2^50");
  static_assert((is_prime(Primes) && ...), "every modulus must be prime");
  static_assert(((Primes % (2 * PolyLen) == 1) && ...),
                "every prime must be 1 mod 2*poly_len (negacyclic NTT-friendly)");
  static_assert(detail::all_distinct(primes), "primes must be distinct");
  static_assert(detail::total_bits(primes) <= 128, "q = product of primes must fit 128 bits");
};

template <class R>
constexpr u128 modulus() {
  u128 q = 1;
  for (auto p : R::primes) q *= p;  // any type with static primes[] (also a params' ring)
  return q;
}

template <class R>
double log2_modulus() {
  double s = 0;
  for (auto p : R::primes) s += std::log2(static_cast<double>(p));
  return s;
}

template <class R>
constexpr std::uint64_t max_prime() {
  std::uint64_t m = 0;
  for (auto p : R::primes) m = p > m ? p : m;
  return m;
}

template <class R>
constexpr std::uint64_t min_prime() {
  std::uint64_t m = ~std::uint64_t{0};
  for (auto p : R::primes) m = p < m ? p : m;
  return m;
}

template <class R>
constexpr std::size_t max_lazy_terms() {
  std::size_t best = ~std::size_t{0};
  for (auto p : R::primes) {
    u128 sq = static_cast<u128>(p - 1) * (p - 1);
    u128 room = (~std::uint64_t{0}) - (p - 1);  // accumulator starts in [0, p)
    std::size_t k = static_cast<std::size_t>(room / sq);
    best = k < best ? k : best;
  }
  return best;
}

}  // namespace spiralpir
