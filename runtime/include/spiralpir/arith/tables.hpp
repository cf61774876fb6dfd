// tables.hpp — per-ring precomputation, built once per ring type on first use (thread-safe:
// a function-local static).
//
// API (namespace spiralpir):
//   const RingTables<R>& tables<R>()
//   RingTables<R>::ntt[i]        NttTable for prime i (ntt.hpp)
//   RingTables<R>::crt_hat[i]    q / p_i (u128)
//   RingTables<R>::crt_inv[i]    (q / p_i)^{-1} mod p_i, with Shoup companion crt_inv_shoup[i]
//   RingTables<R>::barrett[i]    Barrett128 reducer for p_i
#pragma once

#include <array>
#include <cstdint>

#include "spiralpir/arith/modarith.hpp"
#include "spiralpir/arith/ntt.hpp"
#include "spiralpir/arith/ring.hpp"

namespace spiralpir {

template <class R>
struct RingTables {
  static constexpr std::size_t k = R::num_primes;
  std::array<NttTable, k> ntt;
  std::array<u128, k> crt_hat{};
  std::array<std::uint64_t, k> crt_inv{};
  std::array<std::uint64_t, k> crt_inv_shoup{};
  std::array<Barrett128, k> barrett{};

  RingTables() {
    const u128 q = modulus<R>();
    for (std::size_t i = 0; i < k; ++i) {
      const std::uint64_t p = R::primes[i];
      ntt[i] = NttTable::make(p, R::poly_len);
      crt_hat[i] = q / p;
      crt_inv[i] = inv_mod(static_cast<std::uint64_t>(crt_hat[i] % p), p);
      crt_inv_shoup[i] = shoup_precompute(crt_inv[i], p);
      barrett[i] = Barrett128(p);
    }
  }
};

template <class R>
const RingTables<R>& tables() {
  static const RingTables<R> t;
  return t;
}

}  // namespace spiralpir
