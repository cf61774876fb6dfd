// Automorphisms: the NTT-domain permutation equals the coefficient-domain map. Monomials: the
// negacyclic shift equals the NTT-domain product with −x^(d−m).
#include <gtest/gtest.h>

#include "spiralpir/arith/automorphism.hpp"
#include "spiralpir/arith/monomial.hpp"
#include "spiralpir/arith/uniform.hpp"
#include "test_rings.hpp"

namespace spiralpir {
namespace {

template <class R>
class AutomorphismTest : public ::testing::Test {};
using Rings = ::testing::Types<test::Ring1024, test::Ring2048, test::Ring4096, test::Ring8192, test::Ring2048Wide>;
TYPED_TEST_SUITE(AutomorphismTest, Rings);

TYPED_TEST(AutomorphismTest, BothDomainsAgree) {
  using R = TypeParam;
  Csprng rng(testing::test_seed("arith"), 11);
  const PolyCoeff<R> a = uniform_poly_coeff<R>(rng);
  const PolyNtt<R> an = to_ntt(a);
  constexpr std::uint64_t d = R::poly_len;
  // Expansion uses x → x^(2^k + 1); also the conjugation and arbitrary odd k (and k > 2d).
  for (std::uint64_t k : {std::uint64_t{3}, std::uint64_t{5}, d + 1, d / 2 + 1, 2 * d - 1, std::uint64_t{12345},
                          std::uint64_t{1}, 4 * d + 7}) {
    EXPECT_EQ(to_ntt(automorph(a, k)), automorph(an, k)) << "k=" << k;
  }
}

TYPED_TEST(AutomorphismTest, CoefficientMapMatchesDefinition) {
  using R = TypeParam;
  constexpr std::size_t d = R::poly_len;
  Csprng rng(testing::test_seed("arith"), 12);
  const PolyCoeff<R> a = uniform_poly_coeff<R>(rng);
  const std::uint64_t k = 2 * d - 1;  // x → x^{-1}: x^j ↦ −x^{d−j} for j > 0
  const PolyCoeff<R> b = automorph(a, k);
  for (std::size_t i = 0; i < R::num_primes; ++i) {
    ASSERT_EQ(b(i, 0), a(i, 0));
    for (std::size_t j = 1; j < d; ++j) ASSERT_EQ(b(i, d - j), a(i, j) == 0 ? 0 : R::primes[i] - a(i, j));
  }
  // A ring homomorphism: τ(a·c) = τ(a)·τ(c), and τ_k ∘ τ_l = τ_{kl}.
  const PolyCoeff<R> c = uniform_poly_coeff<R>(rng);
  EXPECT_EQ(automorph(from_ntt(to_ntt(a) * to_ntt(c)), 5), from_ntt(to_ntt(automorph(a, 5)) * to_ntt(automorph(c, 5))));
  EXPECT_EQ(automorph(automorph(a, 3), 5), automorph(a, 15));
  EXPECT_THROW(automorph(a, 2), std::invalid_argument);
}

TYPED_TEST(AutomorphismTest, MonomialShiftMatchesProduct) {
  using R = TypeParam;
  constexpr std::size_t d = R::poly_len;
  Csprng rng(testing::test_seed("arith"), 13);
  PolyCoeff<R> a = uniform_poly_coeff<R>(rng);
  a(0, 0) = 0;  // a zero coefficient wraps to 0, not p
  for (std::size_t m : {std::size_t{0}, std::size_t{1}, d / 2, d - 1}) {
    PolyCoeff<R> mono;  // x^{-m} = −x^(d−m) (m > 0)
    for (std::size_t i = 0; i < R::num_primes; ++i) {
      if (m == 0)
        mono(i, 0) = 1;
      else
        mono(i, d - m) = R::primes[i] - 1;
    }
    EXPECT_EQ(mul_monomial_inv(a, m), from_ntt(to_ntt(a) * to_ntt(mono))) << "m=" << m;
  }
}

}  // namespace
}  // namespace spiralpir
