// Automorphisms: the NTT-domain permutation equals the coefficient-domain map. Monomials: the
// negacyclic shift equals the NTT-domain product with −x^(d−m). The expansion's step on b in
// the NTT domain equals its step on a in the coefficient domain.
#include <gtest/gtest.h>

#include "spiralpir/arith/automorphism.hpp"
#include "spiralpir/arith/monomial.hpp"
#include "spiralpir/arith/pointwise.hpp"
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

TYPED_TEST(AutomorphismTest, NttResidueMatchesThePermutation) {
  using R = TypeParam;
  constexpr std::size_t d = R::poly_len;
  Csprng rng(testing::test_seed("arith"), 15);
  const PolyNtt<R> a = to_ntt(uniform_poly_coeff<R>(rng));
  for (std::uint64_t k : {d + 1, d / 4 + 1, std::uint64_t{3}, 2 * d - 1}) {
    const PolyNtt<R> want = automorph(a, k);
    PolyNtt<R> got = PolyNtt<R>::uninitialised();
    const std::vector<std::uint32_t> perm = automorph_ntt_permutation<R>(k);
    for (std::size_t i = 0; i < R::num_primes; ++i) automorph_ntt_residue(a.residue(i), got.residue(i), perm.data(), d);
    EXPECT_EQ(got, want) << "k=" << k;
  }
}

TYPED_TEST(AutomorphismTest, ExpansionSplitBothDomainsAgree) {
  using R = TypeParam;
  constexpr std::size_t d = R::poly_len;
  Csprng rng(testing::test_seed("arith"), 14);
  PolyCoeff<R> c = uniform_poly_coeff<R>(rng);
  const PolyCoeff<R> ks = uniform_poly_coeff<R>(rng);  // the key-switched part
  c(0, 1) = 0;
  for (std::size_t m : {std::size_t{1}, std::size_t{4}, d / 2}) {
    const std::uint64_t k = d / m + 1;  // the automorphism of the round that splits by x^{-m}
    // coefficients: tau = τ_k(c) + ks, hi = x^{-m}·(c − tau), c + tau
    PolyCoeff<R> cur = c, hi = PolyCoeff<R>::uninitialised(), tau = automorph(c, k);
    tau += ks;
    // NTT domain: τ_k a slot permutation, x^{-m} a product
    PolyNtt<R> cur_n = to_ntt(c), hi_n = PolyNtt<R>::uninitialised(), tau_n = to_ntt(ks);
    PolyCoeff<R> mono;  // x^{-m} = −x^(d−m)
    for (std::size_t i = 0; i < R::num_primes; ++i) mono(i, d - m) = R::primes[i] - 1;
    const PolyNtt<R> w = to_ntt(mono);
    const std::vector<std::uint32_t> perm = automorph_ntt_permutation<R>(k);
    for (std::size_t i = 0; i < R::num_primes; ++i) {
      const std::uint64_t p = R::primes[i];
      split_halves(cur.residue(i), tau.residue(i), hi.residue(i), m, d, p);
      std::vector<std::uint64_t> t(d);
      automorph_ntt_residue(cur_n.residue(i), t.data(), perm.data(), d);
      add_mod(tau_n.residue(i), tau_n.residue(i), t.data(), d, p);
      split_halves_ntt(cur_n.residue(i), tau_n.residue(i), hi_n.residue(i), w.residue(i), d, p);
    }
    EXPECT_EQ(to_ntt(cur), cur_n) << "m=" << m;
    EXPECT_EQ(to_ntt(hi), hi_n) << "m=" << m;
  }
}

}  // namespace
}  // namespace spiralpir
