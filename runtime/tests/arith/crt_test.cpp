// CRT: compose/decompose round trips, centred lifting, exact modulus-switching rounding.
#include <gtest/gtest.h>

#include "spiralpir/arith/crt.hpp"
#include "test_rings.hpp"

namespace spiralpir {
namespace {

u128 random_u128_below(u128 q) {
  auto& g = test::test_rng();
  const u128 r = (static_cast<u128>(g()) << 64) | g();
  return r % q;
}

template <class R>
class CrtTest : public ::testing::Test {};
using Rings = ::testing::Types<test::Ring1024, test::Ring2048, test::Ring4096, test::Ring2048Q128, test::Ring2048Wide>;
TYPED_TEST_SUITE(CrtTest, Rings);

TYPED_TEST(CrtTest, ComposeDecomposeRoundTrip) {
  using R = TypeParam;
  const u128 q = modulus<R>();
  for (int it = 0; it < 20000; ++it) {
    const u128 x = random_u128_below(q);
    const auto r = crt_decompose<R>(x);
    for (std::size_t i = 0; i < R::num_primes; ++i) ASSERT_EQ(r[i], static_cast<std::uint64_t>(x % R::primes[i]));
    ASSERT_TRUE(crt_compose<R>(r) == x);
  }
  for (const u128 x : {u128{0}, u128{1}, q - 1, q / 2, q / 2 + 1}) EXPECT_TRUE(crt_compose<R>(crt_decompose<R>(x)) == x);
}

TYPED_TEST(CrtTest, CenteredLift) {
  using R = TypeParam;
  const u128 q = modulus<R>();
  EXPECT_TRUE(centered_lift<R>(0) == 0);
  EXPECT_TRUE(centered_lift<R>(q - 1) == -1);
  EXPECT_TRUE(centered_lift<R>(q / 2) == static_cast<i128>(q / 2));
  EXPECT_TRUE(centered_lift<R>(q / 2 + 1) == -static_cast<i128>(q / 2));
}

// 256-bit signed check that r is round(x·t/q): |x·t − R·q| ≤ q/2, where R ∈ {r, r + t}.
struct Wide {
  // value = hi·2^128 + lo, all non-negative (x·t < 2^192, R·q < 2^193)
  u128 hi, lo;
};
Wide mul_wide(u128 a, std::uint64_t b) {
  const u128 lo = static_cast<u128>(static_cast<std::uint64_t>(a)) * b;
  const u128 mid = static_cast<u128>(static_cast<std::uint64_t>(a >> 64)) * b;
  const u128 lo2 = lo + (mid << 64);
  const u128 carry = lo2 < lo ? 1 : 0;
  return {(mid >> 64) + carry, lo2};
}
// |a − b| ≤ bound?
bool close(Wide a, Wide b, u128 bound) {
  if (a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo)) std::swap(a, b);
  const u128 lo = a.lo - b.lo;
  const u128 hi = a.hi - b.hi - (a.lo < b.lo ? 1 : 0);
  return hi == 0 && lo <= bound;
}

TYPED_TEST(CrtTest, ModswitchRoundsExactly) {
  using R = TypeParam;
  const u128 q = modulus<R>();
  for (const std::uint64_t t : {std::uint64_t{1024}, std::uint64_t{1} << 20, std::uint64_t{1032193},
                                (std::uint64_t{1} << 62) + 135}) {
    for (int it = 0; it < 5000; ++it) {
      const u128 x = it == 0 ? q - 1 : (it == 1 ? u128{0} : random_u128_below(q));
      const std::uint64_t r = round_modswitch<R>(x, t);
      ASSERT_LT(r, t);
      const Wide xt = mul_wide(x, t);
      // R = r, or R = t when the rounding reached t (reduced to 0).
      const bool ok = close(xt, mul_wide(q, r), q / 2) || (r == 0 && close(xt, mul_wide(q, t), q / 2));
      ASSERT_TRUE(ok) << "t=" << t << " it=" << it;
    }
  }
}

TEST(Modswitch, SmallCasesAndFastPath) {
  // q = 7: round(x·4/7) for x = 0..6 is 0,1,1,2,2,3,3 → mod 4.
  const std::uint64_t expect[] = {0, 1, 1, 2, 2, 3, 3};
  for (int x = 0; x < 7; ++x) EXPECT_EQ(round_modswitch(static_cast<u128>(x), 7, 4), expect[x]) << x;
  // The wide path agrees with the fast path on a q that fits both.
  const u128 q = (static_cast<u128>(1) << 64) + 13;
  for (int it = 0; it < 1000; ++it) {
    const u128 x = random_u128_below(q);
    const std::uint64_t t = 1ULL << 20;
    // x·t + q/2 < 2^85: exact in u128.
    EXPECT_EQ(round_modswitch(x, q, t), static_cast<std::uint64_t>((x * t + q / 2) / q % t));
  }
}

// The estimate-and-correct path (2^63 ≤ q < 2^120) equals the long division on random x and on
// the rounding boundaries: x·q_to + ⌊q/2⌋ ≡ 0 and ≡ q − 1 (mod q), where an estimate off by
// one would show.
TEST(Modswitch, EstimateEqualsLongDivision) {
  const std::vector<u128> moduli = {
      static_cast<u128>(268369921ULL) * 249561089ULL * 268361729ULL,                    // 3 primes, ~2^84
      static_cast<u128>(1073707009ULL) * 1073692673ULL * 1073668097ULL,                 // 3 primes, ~2^90
      static_cast<u128>(1073707009ULL) * 1073692673ULL * 1073668097ULL * 268369921ULL,  // 4 primes, ~2^118
      (static_cast<u128>(1) << 63) + 25, (static_cast<u128>(1) << 120) - 119};
  for (const u128 q : moduli)
    for (const std::uint64_t t : {std::uint64_t{2}, std::uint64_t{1} << 20, std::uint64_t{1032193},
                                  (std::uint64_t{1} << 48) - 59, ~std::uint64_t{0} - 58}) {
      for (int it = 0; it < 3000; ++it) {
        const u128 x = it == 0 ? q - 1 : (it == 1 ? u128{0} : random_u128_below(q));
        ASSERT_EQ(round_modswitch(x, q, t), round_modswitch_long_division(x, q, t)) << "t=" << t << " it=" << it;
      }
      // boundaries: x near (k·q − ⌊q/2⌋)/t, where N crosses the multiple k·q (when k·q fits u128)
      if (q >= (~static_cast<u128>(0)) / t) continue;
      for (int it = 0; it < 500; ++it) {
        const u128 k = 1 + test::test_rng()() % (t - 1);
        const u128 x0 = (k * q - q / 2) / t;
        for (u128 x = x0 == 0 ? 0 : x0 - 1; x < x0 + 3 && x < q; ++x)
          ASSERT_EQ(round_modswitch(x, q, t), round_modswitch_long_division(x, q, t)) << "t=" << t << " k boundary";
      }
    }
}

TEST(Barrett, Reduce128) {
  for (const std::uint64_t p : {268369921ULL, 4294955009ULL, 1125899906826241ULL}) {
    for (int it = 0; it < 10000; ++it) {
      const u128 x = random_u128_below(~static_cast<u128>(0));
      ASSERT_EQ(barrett_reduce128(x, p), static_cast<std::uint64_t>(x % p));
    }
    EXPECT_EQ(barrett_reduce128(~static_cast<u128>(0), p), static_cast<std::uint64_t>(~static_cast<u128>(0) % p));
    const Barrett64 b64(p);
    for (int it = 0; it < 10000; ++it) {
      const std::uint64_t x = test::test_rng()();
      ASSERT_EQ(b64.reduce(x), x % p);
    }
    EXPECT_EQ(b64.reduce(~std::uint64_t{0}), ~std::uint64_t{0} % p);
    EXPECT_EQ(b64.reduce(p), 0u);
  }
}

}  // namespace
}  // namespace spiralpir
