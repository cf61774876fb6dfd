// The constant-time primitives (core/ct.hpp) and the masked reductions built on them, against
// plain (branching, dividing) reference arithmetic on edge values and random values.
#include <gtest/gtest.h>

#include <climits>
#include <vector>

#include "spiralpir/arith/crt.hpp"
#include "spiralpir/arith/poly.hpp"
#include "spiralpir/arith/random.hpp"
#include "spiralpir/core/ct.hpp"
#include "test_rings.hpp"

using namespace spiralpir;
using namespace spiralpir::test;

namespace {

constexpr std::uint64_t kAll = ~std::uint64_t{0};

std::vector<std::uint64_t> edges64() {
  std::vector<std::uint64_t> v = {0, 1, 2, 3, 268369920, 268369921, 268369922, (1ULL << 50) - 1, 1ULL << 62,
                                  (1ULL << 63) - 1, 1ULL << 63, (1ULL << 63) + 1, kAll - 1, kAll};
  Csprng rng(Seed{}, 5);
  for (int i = 0; i < 50; ++i) v.push_back(rng.next_u64() >> (rng.next_u64() % 64));
  return v;
}

std::vector<u128> edges128() {
  const u128 one = 1;
  std::vector<u128> v = {0, 1, 2, (one << 64) - 1, one << 64, (one << 64) + 1, (one << 127) - 1, one << 127,
                         (one << 127) + 1, ~u128{0} - 1, ~u128{0}, modulus<Ring2048Q128>(), modulus<Ring2048>()};
  Csprng rng(Seed{}, 6);
  for (int i = 0; i < 50; ++i) v.push_back(rng.next_u128() >> (rng.next_u64() % 128));
  return v;
}

}  // namespace

TEST(ConstantTime, ComparisonMasks) {
  for (const std::uint64_t a : edges64()) {
    EXPECT_EQ(ct::mask(a & 1), (a & 1) ? kAll : 0);
    EXPECT_EQ(ct::nonzero_mask(a), a != 0 ? kAll : 0) << a;
    for (const std::uint64_t b : edges64()) {
      EXPECT_EQ(ct::lt_mask(a, b), a < b ? kAll : 0) << a << " " << b;
      EXPECT_EQ(ct::eq_mask(a, b), a == b ? kAll : 0) << a << " " << b;
      EXPECT_EQ(ct::select(kAll, a, b), a);
      EXPECT_EQ(ct::select(0, a, b), b);
    }
  }
  for (const u128 a : edges128())
    for (const u128 b : edges128()) {
      EXPECT_EQ(ct::lt_mask128(a, b), a < b ? kAll : 0);
      EXPECT_EQ(ct::select128(kAll, a, b), a);
      EXPECT_EQ(ct::select128(0, a, b), b);
    }
}

TEST(ConstantTime, ModularHelpers) {
  for (const std::uint64_t p : {2ULL, 3ULL, 268369921ULL, 1125899906826241ULL, (1ULL << 62) + 1, (1ULL << 63) - 1}) {
    Csprng rng(Seed{}, p);
    std::vector<std::uint64_t> xs = {0, 1, p - 1};
    for (int i = 0; i < 200; ++i) xs.push_back(rng.uniform_mod(p));
    for (const std::uint64_t a : xs) {
      EXPECT_EQ(ct::reduce_once(a, p), a);
      EXPECT_EQ(ct::reduce_once(a + p, p), a);
      EXPECT_EQ(ct::neg_mod(a, p), a == 0 ? 0 : p - a);
      for (const std::uint64_t b : {std::uint64_t{0}, std::uint64_t{1}, p - 1, xs[7], xs[8]}) {
        EXPECT_EQ(ct::add_mod(a, b, p), static_cast<std::uint64_t>((static_cast<u128>(a) + b) % p));
        EXPECT_EQ(ct::sub_mod(a, b, p), static_cast<std::uint64_t>((static_cast<u128>(a) + p - b) % p));
      }
    }
  }
  const u128 q = modulus<Ring2048Q128>();  // > 2^127: reduce_once128 needs q < 2^127
  const u128 q2 = modulus<Ring4096>();
  for (const u128 x : edges128()) {
    const u128 a = x % q2;
    EXPECT_EQ(ct::reduce_once128(a, q2), a);
    EXPECT_EQ(ct::reduce_once128(a + q2, q2), a);
  }
  EXPECT_GT(q, u128{1} << 127);
}

TEST(ConstantTime, BarrettReductionsAndQuotient) {
  for (const std::uint64_t p : {3ULL, 12289ULL, 268369921ULL, (1ULL << 40) - 87, 1125899906826241ULL,
                                (1ULL << 62) - 57}) {
    const Barrett64 b64(p);
    const Barrett128 b128(p);
    for (const std::uint64_t x : edges64()) {
      EXPECT_EQ(b64.reduce(x), x % p) << x << " mod " << p;
      EXPECT_EQ(b64.quotient(x), x / p) << x << " / " << p;
    }
    for (const u128 x : edges128()) {
      EXPECT_EQ(b128.reduce(x), static_cast<std::uint64_t>(x % p));
      EXPECT_TRUE(b128.quotient(x) == x / p) << "quotient mod " << p;
    }
  }
}

TEST(ConstantTime, CenteredLiftAndSignedCoefficients) {
  using R = Ring2048Q128;  // q > 2^127: the lift's mask arithmetic at full width
  const u128 q = modulus<R>();
  for (const u128 x : {u128{0}, u128{1}, q / 2, q / 2 + 1, q - 1}) {
    const i128 want = x > q / 2 ? -static_cast<i128>(q - x) : static_cast<i128>(x);
    EXPECT_TRUE(centered_lift<R>(x) == want);
  }
  std::vector<std::int64_t> c(R::poly_len);
  Csprng rng(Seed{}, 9);
  for (auto& v : c) v = static_cast<std::int64_t>(rng.next_u64()) >> (rng.next_u64() % 64);
  c[0] = INT64_MIN, c[1] = INT64_MAX, c[2] = -1, c[3] = 0, c[4] = 1, c[5] = -static_cast<std::int64_t>(R::primes[0]);
  const auto poly = PolyCoeff<R>::from_signed(c);
  for (std::size_t i = 0; i < R::num_primes; ++i)
    for (std::size_t j = 0; j < R::poly_len; ++j) {
      const i128 p = R::primes[i];
      const i128 want = ((static_cast<i128>(c[j]) % p) + p) % p;
      ASSERT_EQ(poly(i, j), static_cast<std::uint64_t>(want)) << "coefficient " << c[j] << " mod p_" << i;
    }
}
