// Gadget decomposition: recomposition is the identity and digits respect their bounds.
#include <gtest/gtest.h>

#include "spiralpir/arith/gadget.hpp"
#include "spiralpir/arith/uniform.hpp"
#include "test_rings.hpp"

namespace spiralpir {
namespace {

template <class R>
class GadgetTest : public ::testing::Test {};
using Rings = ::testing::Types<test::Ring2048, test::Ring4096, test::Ring2048Q128>;
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
  Csprng rng(Seed{}, 3);
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
}

}  // namespace
}  // namespace spiralpir
