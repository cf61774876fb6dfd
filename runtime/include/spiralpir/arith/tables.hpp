// tables.hpp — per-ring precomputation, built once per ring type on first use (thread-safe:
// a function-local static).
//
// API (namespace spiralpir):
//   const RingTables<R>& tables<R>()
//   RingTables<R>::ntt[i]        NttTable for prime i (ntt.hpp)
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
  std::array<Barrett128, k> barrett{};

  RingTables() {
    for (std::size_t i = 0; i < k; ++i) {
      const std::uint64_t p = R::primes[i];
      ntt[i] = NttTable::make(p, R::poly_len);
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
