// spiralpir/core/ct.hpp — constant-time building blocks for secret values: no branch, no
// secret-dependent address, no division. Masks are all-zero or all-one words.
//
// API (namespace spiralpir::ct; u64 = std::uint64_t):
//   barrier(x)                x, hidden from the optimiser (so it cannot turn a mask made from a
//                             bool back into a branch); the arithmetic masks below need none
//                             (and stay vectorisable)
//   mask(bool b)              ~0 if b else 0
//   lt_mask(a, b), eq_mask(a, b), nonzero_mask(a)      u64 compares as masks
//   lt_mask128(a, b)          the same for u128 (-> u64 mask)
//   select(m, a, b)           m ? a : b for a u64 mask m;  select128 for u128 values
//   reduce_once(x, p)         x mod p for x ∈ [0, 2p), p < 2^63
//   reduce_once128(x, q)      the same for u128, q < 2^127
//   neg_mod(x, p)             (p − x) mod p for x ∈ [0, p)
//   add_mod(a, b, p), sub_mod(a, b, p)   inputs in [0, p), p < 2^63
//
// Validation hooks for the ctgrind check (runtime/tests/ct; they compile to nothing unless
// SPIRALPIR_CT_VALIDATION is defined, and then need Valgrind's memcheck.h):
//   SPIRALPIR_CT_SECRET(ptr, len)   mark memory secret (memcheck: undefined)
//   SPIRALPIR_CT_PUBLIC(ptr, len)   declassify: the value is published (e.g. a query's seed)
#pragma once

#include <cstdint>
#include <type_traits>

#include "spiralpir/core/int128.hpp"

#if defined(SPIRALPIR_CT_VALIDATION)
#include <valgrind/memcheck.h>
#define SPIRALPIR_CT_SECRET(ptr, len) VALGRIND_MAKE_MEM_UNDEFINED((ptr), (len))
#define SPIRALPIR_CT_PUBLIC(ptr, len) VALGRIND_MAKE_MEM_DEFINED((ptr), (len))
#else
#define SPIRALPIR_CT_SECRET(ptr, len) ((void)(ptr), (void)(len))
#define SPIRALPIR_CT_PUBLIC(ptr, len) ((void)(ptr), (void)(len))
#endif

namespace spiralpir::ct {

using u64 = std::uint64_t;

constexpr u64 barrier(u64 x) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  if (!std::is_constant_evaluated()) __asm__("" : "+r"(x));
#endif
  return x;
}

constexpr u64 mask(bool b) noexcept { return barrier(0 - static_cast<u64>(b)); }

// the borrow of a − b, as a mask
constexpr u64 lt_mask(u64 a, u64 b) noexcept {
  return static_cast<u64>((static_cast<u128>(a) - b) >> 64);
}
constexpr u64 lt_mask128(u128 a, u128 b) noexcept {
  // borrow out of the 128-bit subtraction: (¬a ∧ b) ∨ (¬(a ⊕ b) ∧ (a − b)), top bit
  const u128 d = a - b;
  return 0 - static_cast<u64>(((~a & b) | (~(a ^ b) & d)) >> 127);
}
constexpr u64 nonzero_mask(u64 a) noexcept { return 0 - ((a | (0 - a)) >> 63); }
constexpr u64 eq_mask(u64 a, u64 b) noexcept { return ~nonzero_mask(a ^ b); }

constexpr u64 select(u64 m, u64 a, u64 b) noexcept { return b ^ (m & (a ^ b)); }
constexpr u128 select128(u64 m, u128 a, u128 b) noexcept {
  const u128 wide = (static_cast<u128>(m) << 64) | m;
  return b ^ (wide & (a ^ b));
}

constexpr u64 reduce_once(u64 x, u64 p) noexcept {
  const u64 d = x - p;  // top bit set iff x < p (x < 2p < 2^64, p < 2^63)
  return d + (p & (0 - (d >> 63)));
}
constexpr u128 reduce_once128(u128 x, u128 q) noexcept {
  const u128 d = x - q;
  const u64 m = 0 - static_cast<u64>(d >> 127);
  return d + (q & ((static_cast<u128>(m) << 64) | m));
}

constexpr u64 neg_mod(u64 x, u64 p) noexcept { return (p - x) & nonzero_mask(x); }
constexpr u64 add_mod(u64 a, u64 b, u64 p) noexcept { return reduce_once(a + b, p); }
constexpr u64 sub_mod(u64 a, u64 b, u64 p) noexcept { return reduce_once(a + p - b, p); }

}  // namespace spiralpir::ct
