// Rings and reference helpers shared by the arithmetic tests.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "spiralpir/arith/modarith.hpp"
#include "spiralpir/arith/ring.hpp"
#include "spiralpir/testing/gtest_seed.hpp"

namespace spiralpir::test {

// SPIRAL's own ring, and one of each other supported dimension.
using Ring1024 = RingSpec<1024, 1073707009ULL, 134215681ULL>;
using Ring2048 = RingSpec<2048, 268369921ULL, 249561089ULL>;
using Ring4096 = RingSpec<4096, 1073692673ULL, 1073668097ULL, 1073651713ULL>;
using Ring8192 = RingSpec<8192, 1073692673ULL, 1073643521ULL>;
// Four 32-bit primes: q just below 2^128, every vector kernel falls back to native.
using Ring2048Q128 = RingSpec<2048, 4294955009ULL, 4294914049ULL, 4294828033ULL, 4294807553ULL>;
// A 50-bit and a 45-bit prime: the AVX-512 IFMA kernels (and 128-bit native products).
using Ring2048Wide = RingSpec<2048, 1125899906826241ULL, 35184372060161ULL>;

/// SPIRALPIR_TEST_SEED or its fixed default (test_seed.hpp): failures reproduce
inline std::mt19937_64& test_rng() {
  static std::mt19937_64 g(testing::test_seed_value());
  return g;
}

inline std::vector<std::uint64_t> random_below(std::size_t n, std::uint64_t bound) {
  std::uniform_int_distribution<std::uint64_t> d(0, bound - 1);
  std::vector<std::uint64_t> v(n);
  for (auto& x : v) x = d(test_rng());
  return v;
}

// O(n^2) product in Z_p[x]/(x^n + 1): positive and negative parts are summed separately in
// 128 bits and reduced once at the end.
inline std::vector<std::uint64_t> schoolbook_negacyclic(const std::vector<std::uint64_t>& a,
                                                        const std::vector<std::uint64_t>& b, std::uint64_t p) {
  const std::size_t n = a.size();
  std::vector<std::uint64_t> out(n);
  for (std::size_t k = 0; k < n; ++k) {
    u128 pos = 0, neg = 0;
    for (std::size_t i = 0; i <= k; ++i) pos += static_cast<u128>(a[i]) * b[k - i] % p;
    for (std::size_t i = k + 1; i < n; ++i) neg += static_cast<u128>(a[i]) * b[n + k - i] % p;
    const std::uint64_t P = static_cast<std::uint64_t>(pos % p), N = static_cast<std::uint64_t>(neg % p);
    out[k] = P >= N ? P - N : P + p - N;
  }
  return out;
}

}  // namespace spiralpir::test
