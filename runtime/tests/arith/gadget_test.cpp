// Gadget decomposition: recomposition is the identity and digits respect their bounds; the word
// kernel (rings of one or two 32-bit primes) on every path against a plain reference; the
// residue and NTT-domain forms against the coefficient form.
#include <gtest/gtest.h>

#include "spiralpir/arith/gadget.hpp"
#include "spiralpir/arith/uniform.hpp"
#include "test_rings.hpp"

namespace spiralpir {
namespace {

template <class R>
class GadgetTest : public ::testing::Test {};
using RingOnePrime = RingSpec<2048, 268369921ULL>;
// One 40-bit prime: q < 2^62 but the prime exceeds 32 bits, so the scalar path with 64-bit digits.
using RingWidePrime = RingSpec<2048, 1099511590913ULL>;
// word kernel: Ring1024 (p0 ≈ 8·p1), Ring2048, Ring8192 (q ≈ 2^60) and RingOnePrime; scalar path:
// RingWidePrime (64-bit digits), Ring4096 and Ring2048Q128 (128-bit digits)
using Rings = ::testing::Types<test::Ring1024, test::Ring2048, test::Ring4096, test::Ring2048Q128, test::Ring8192,
                               RingOnePrime, RingWidePrime>;
TYPED_TEST_SUITE(GadgetTest, Rings);

template <class R>
void check(const PolyCoeff<R>& x, unsigned b, unsigned t) {
  const auto digits = gadget_decompose(x, b, t);
  ASSERT_EQ(digits.size(), t);
  EXPECT_EQ(gadget_recompose(digits, b), x) << "b=" << b << " t=" << t;
  const i128 half = static_cast<i128>(1) << (b - 1);
  const bool covers = static_cast<unsigned>(b) * t >= bit_length(modulus<R>() - 1);
  for (unsigned k = 0; k < t; ++k) {
    for (std::size_t j = 0; j < R::poly_len; ++j) {
      const i128 d = centered_coeff(digits[k], j);
      if (k + 1 < t) {
        ASSERT_TRUE(d >= -half && d < half) << "digit " << k << " coeff " << j;
      } else if (covers) {
        ASSERT_TRUE(d >= -half - 1 && d <= half + 1) << "top digit coeff " << j;
      }
    }
  }
}

TYPED_TEST(GadgetTest, RecomposeIsIdentityWithBoundedDigits) {
  using R = TypeParam;
  Csprng rng(testing::test_seed("arith"), 3);
  const PolyCoeff<R> x = uniform_poly_coeff<R>(rng);
  // SPIRAL's lengths (t_gsw = 8, t_conv = 4, t_exp = 8 / 56) with z = 2^⌈log2 q / t⌉, plus
  // lengths longer than needed and base 2.
  for (unsigned t : {2u, 3u, 4u, 8u, 16u})
    if (gadget_base_bits<R>(t) <= 62) check(x, gadget_base_bits<R>(t), t);  // digits are int64
  check(x, 1, bit_length(modulus<R>() - 1));
  check(x, 1, 130);
  check(x, 20, 9);
  // Edge values: 0, q − 1, ⌊q/2⌋.
  PolyCoeff<R> e;
  const u128 q = modulus<R>();
  for (std::size_t j = 0; j < R::poly_len; ++j) {
    const u128 v = j % 3 == 0 ? 0 : (j % 3 == 1 ? q - 1 : q / 2);
    const auto r = crt_decompose<R>(v);
    for (std::size_t i = 0; i < R::num_primes; ++i) e(i, j) = r[i];
  }
  for (unsigned t : {3u, 4u, 8u}) check(e, gadget_base_bits<R>(t), t);
}

// Random residues plus the edge values 0, 1, ⌊q/2⌋, ⌊q/2⌋ + 1, q − 1 in the first slots.
template <class R>
PolyCoeff<R> sample_with_edges(std::uint64_t stream) {
  Csprng rng(testing::test_seed("arith"), stream);
  PolyCoeff<R> x = uniform_poly_coeff<R>(rng);
  const u128 q = modulus<R>();
  const u128 edges[] = {0, 1, q / 2, q / 2 + 1, q - 1};
  for (std::size_t j = 0; j < 5; ++j) {
    const auto r = crt_decompose<R>(edges[j]);
    for (std::size_t i = 0; i < R::num_primes; ++i) x(i, j) = r[i];
  }
  return x;
}

// Plain reference for a ring of one or two primes: CRT by the textbook formula (not Garner),
// the centred value, then digits by signed division.
template <class R>
std::vector<std::vector<std::int64_t>> reference_digits(const PolyCoeff<R>& x, unsigned b, unsigned t) {
  const u128 q = modulus<R>();
  std::vector<std::vector<std::int64_t>> dg(t, std::vector<std::int64_t>(R::poly_len));
  for (std::size_t z = 0; z < R::poly_len; ++z) {
    u128 v = x(0, z);
    if constexpr (R::num_primes == 2) {
      const std::uint64_t p0 = R::primes[0], p1 = R::primes[1];
      const u128 e0 = static_cast<u128>(p1) * inv_mod(p1 % p0, p0), e1 = static_cast<u128>(p0) * inv_mod(p0 % p1, p1);
      v = (x(0, z) * e0 + x(1, z) * e1) % q;
    }
    i128 c = v > q / 2 ? static_cast<i128>(v) - static_cast<i128>(q) : static_cast<i128>(v);
    const i128 base = static_cast<i128>(1) << b;
    for (unsigned k = 0; k + 1 < t; ++k) {
      i128 d = ((c % base) + base) % base;
      if (d >= base / 2) d -= base;
      dg[k][z] = static_cast<std::int64_t>(d);
      c = (c - d) / base;
    }
    dg[t - 1][z] = static_cast<std::int64_t>(c);
  }
  return dg;
}

template <class R>
void check_words(Path path, const PolyCoeff<R>& x, unsigned b, unsigned t) {
  constexpr std::size_t d = R::poly_len, np = R::num_primes;
  if (GadgetWordRing::of<R>().reach(b) == GadgetWordRing::Reach::too_wide) {
    std::vector<std::uint64_t> out(d);
    std::vector<std::uint64_t*> outs(2 * t, out.data());
    EXPECT_THROW(gadget_decompose_words(GadgetWordRing::of<R>(), d, x.residue(0), x.residue(np - 1), b, t,
                                        outs.data(), path),
                 std::invalid_argument)
        << "b=" << b << ": digits reach twice the smaller prime";
    return;
  }
  const auto want = reference_digits(x, b, t);
  for (int mask : {3, 1, 2}) {
    if (np == 1 && mask != 1) continue;
    std::vector<std::vector<std::uint64_t>> out(2 * t, std::vector<std::uint64_t>(d, 7));
    std::vector<std::uint64_t*> outs(2 * t, nullptr);
    for (unsigned k = 0; k < t; ++k) {
      if (mask & 1) outs[2 * k] = out[2 * k].data();
      if (mask & 2) outs[2 * k + 1] = out[2 * k + 1].data();
    }
    gadget_decompose_words(GadgetWordRing::of<R>(), d, x.residue(0), x.residue(np - 1), b, t, outs.data(), path);
    for (unsigned k = 0; k < t; ++k)
      for (std::size_t h = 0; h < 2; ++h) {
        if (!(mask & (1 << h))) continue;
        const std::int64_t p = static_cast<std::int64_t>(R::primes[h == 0 ? 0 : np - 1]);
        for (std::size_t z = 0; z < d; ++z) {
          const std::int64_t w = want[k][z] % p;
          ASSERT_EQ(out[2 * k + h][z], static_cast<std::uint64_t>(w < 0 ? w + p : w))
              << path_name(path) << " b=" << b << " t=" << t << " digit " << k << " prime " << h << " coeff " << z;
        }
      }
  }
}

TYPED_TEST(GadgetTest, WordKernelMatchesReferenceOnEveryPath) {
  using R = TypeParam;
  if constexpr (GadgetWordRing::fits<R>()) {
    const PolyCoeff<R> x = sample_with_edges<R>(5);
    for (Path path : available_paths()) {
      for (unsigned t : {2u, 3u, 4u, 8u}) check_words(path, x, gadget_base_bits<R>(t), t);
      check_words(path, x, 1, bit_length(modulus<R>() - 1));  // base 2, the longest gadget
      check_words(path, x, 20, 9);                            // more digits than needed
    }
  } else {
    GTEST_SKIP() << "ring takes the scalar path";
  }
}

TYPED_TEST(GadgetTest, CoefficientDigitsMatchReference) {
  using R = TypeParam;
  if constexpr (R::num_primes <= 2) {
    const PolyCoeff<R> x = sample_with_edges<R>(7);
    for (unsigned t : {2u, 3u, 5u, 18u}) {
      const unsigned b = gadget_base_bits<R>(t);
      const auto want = reference_digits(x, b, t);
      const auto got = gadget_decompose(x, b, t);
      for (unsigned k = 0; k < t; ++k)
        for (std::size_t i = 0; i < R::num_primes; ++i) {
          const std::int64_t p = static_cast<std::int64_t>(R::primes[i]);
          for (std::size_t z = 0; z < R::poly_len; ++z) {
            const std::int64_t w = want[k][z] % p;
            ASSERT_EQ(got[k](i, z), static_cast<std::uint64_t>(w < 0 ? w + p : w)) << "t=" << t << " digit " << k;
          }
        }
    }
  } else {
    GTEST_SKIP() << "the reference takes one or two primes";
  }
}

TYPED_TEST(GadgetTest, ResidueAndNttFormsAgree) {
  using R = TypeParam;
  const PolyCoeff<R> x = sample_with_edges<R>(6);
  for (unsigned t : {1u, 3u, 8u}) {
    const unsigned b = gadget_base_bits<R>(t);
    if (t > 1 && b > 62) continue;
    const auto coeff_digits = gadget_decompose(x, b, t);
    const auto ntt_digits = gadget_decompose_ntt(x, b, t);
    ASSERT_EQ(ntt_digits.size(), t);
    for (unsigned k = 0; k < t; ++k) EXPECT_EQ(ntt_digits[k], to_ntt(coeff_digits[k])) << "t=" << t;
    for (std::size_t i = 0; i < R::num_primes; ++i) {
      std::vector<std::vector<std::uint64_t>> out(t, std::vector<std::uint64_t>(R::poly_len));
      std::vector<std::uint64_t*> outs(t);
      for (unsigned k = 0; k < t; ++k) outs[k] = out[k].data();
      gadget_decompose_residue_ntt<R>(x, b, t, i, outs.data());
      for (unsigned k = 0; k < t; ++k)
        for (std::size_t z = 0; z < R::poly_len; ++z) ASSERT_EQ(out[k][z], ntt_digits[k](i, z)) << "residue " << i;
    }
  }
}

TEST(Gadget, BaseRuleAndScalarDigits) {
  // SPIRAL's q ≈ 2^55.9: ⌈56/t⌉.
  EXPECT_EQ(gadget_base_bits<test::Ring2048>(8), 7u);
  EXPECT_EQ(gadget_base_bits<test::Ring2048>(4), 14u);
  EXPECT_EQ(gadget_base_bits<test::Ring2048>(56), 1u);
  // 13 = 16 − 4 + 1 in balanced base 4: digits (1, −1, 1).
  EXPECT_EQ(gadget_digit(13, 2, 3, 0), 1);
  EXPECT_EQ(gadget_digit(13, 2, 3, 1), -1);
  EXPECT_EQ(gadget_digit(13, 2, 3, 2), 1);
  EXPECT_THROW(gadget_decompose(PolyCoeff<test::Ring2048>(), 0, 4), std::invalid_argument);
  EXPECT_THROW(gadget_decompose(PolyCoeff<test::Ring2048Q128>(), 64, 2), std::invalid_argument);
  EXPECT_THROW(gadget_decompose(PolyCoeff<test::Ring2048>(), 7, 7), std::invalid_argument);  // 49 < log2 q
  const PolyCoeff<test::Ring2048Q128> big;  // t = 1 is x itself, whatever the base
  EXPECT_EQ(gadget_decompose(big, 128, 1).at(0), big);
}

}  // namespace
}  // namespace spiralpir
