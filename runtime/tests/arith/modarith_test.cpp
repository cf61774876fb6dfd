// Scalar modular arithmetic that the parameter checks (params.hpp) and the protocol use:
// is_prime, ceil_log2, largest_ntt_prime_below (SPIRAL's q2), the 128-bit helpers.
#include <gtest/gtest.h>

#include "spiralpir/arith/modarith.hpp"
#include "test_rings.hpp"

namespace spiralpir {
namespace {

// Trial division: the reference for small n.
bool prime_by_division(std::uint64_t n) {
  if (n < 2) return false;
  for (std::uint64_t f = 2; f * f <= n; ++f)
    if (n % f == 0) return false;
  return true;
}

TEST(Modarith, IsPrimeMatchesTrialDivision) {
  for (std::uint64_t n = 0; n < 20000; ++n) ASSERT_EQ(is_prime(n), prime_by_division(n)) << n;
  EXPECT_TRUE(is_prime(268369921ULL));
  EXPECT_TRUE(is_prime(18446744073709551557ULL));  // the largest 64-bit prime
  EXPECT_FALSE(is_prime(3215031751ULL));           // strong pseudoprime to bases 2, 3, 5, 7
  static_assert(is_prime(249561089ULL));
}

TEST(Modarith, CeilLog2) {
  EXPECT_EQ(ceil_log2(1), 0u);
  EXPECT_EQ(ceil_log2(2), 1u);
  EXPECT_EQ(ceil_log2(3), 2u);
  EXPECT_EQ(ceil_log2(1ULL << 40), 40u);
  EXPECT_EQ(ceil_log2((1ULL << 40) + 1), 41u);
}

TEST(Modarith, LargestNttPrimeBelow) {
  for (unsigned bits : {14u, 20u, 28u, 32u}) {
    for (std::uint64_t d : {1024u, 2048u}) {
      const std::uint64_t p = largest_ntt_prime_below(bits, d);
      ASSERT_NE(p, 0u);
      EXPECT_LT(p, 1ULL << bits);
      EXPECT_EQ(p % (2 * d), 1u);
      EXPECT_TRUE(prime_by_division(p));
      for (std::uint64_t c = p + 2 * d; c < (1ULL << bits); c += 2 * d) EXPECT_FALSE(prime_by_division(c)) << c;
    }
  }
  EXPECT_EQ(largest_ntt_prime_below(11, 1024), 0u);  // 2^11 <= 2·1024 + 1
}

TEST(Modarith, Wide) {
  const u128 q = modulus<test::Ring2048Q128>();
  auto& g = test::test_rng();
  for (int it = 0; it < 1000; ++it) {
    const u128 a = ((static_cast<u128>(g()) << 64) | g()) % q, b = ((static_cast<u128>(g()) << 64) | g()) % q;
    const u128 s = add_mod128(a, b, q);
    ASSERT_TRUE(s < q && (s == a + b - q || s == a + b));  // exact modulo 2^128
  }
  const u128 q56 = modulus<test::Ring2048>();
  u128 x = 1;
  for (unsigned e = 0; e < 200; ++e, x = x * 2 % q56) ASSERT_TRUE(pow2_mod128(e, q56) == x) << e;
  for (const u128 a : {u128{2}, u128{3}, u128{12345678901ULL}, q56 - 1}) {
    const u128 inv = inv_mod128(a, q56);
    ASSERT_TRUE(inv < q56 && a * inv % q56 == 1);  // a, inv < 2^56: the product fits
  }
}

}  // namespace
}  // namespace spiralpir
