// Polynomial types: domain changes, ring operations, lazy accumulation at its bound, matrices.
#include <gtest/gtest.h>

#include <vector>

#include "spiralpir/arith/poly.hpp"
#include "spiralpir/arith/uniform.hpp"
#include "test_rings.hpp"

namespace spiralpir {
namespace {

template <class R>
class PolyTest : public ::testing::Test {};
using Rings = ::testing::Types<test::Ring1024, test::Ring2048, test::Ring4096, test::Ring8192,
                               test::Ring2048Q128, test::Ring2048Wide>;
TYPED_TEST_SUITE(PolyTest, Rings);

template <class R>
PolyCoeff<R> random_coeff() {
  PolyCoeff<R> a;
  for (std::size_t i = 0; i < R::num_primes; ++i) {
    const auto v = test::random_below(R::poly_len, R::primes[i]);
    std::copy(v.begin(), v.end(), a.residue(i));
  }
  return a;
}

template <class R>
std::vector<std::uint64_t> residue_vec(const PolyCoeff<R>& a, std::size_t i) {
  return std::vector<std::uint64_t>(a.residue(i), a.residue(i) + R::poly_len);
}

TYPED_TEST(PolyTest, StorageIsAlignedAndZero) {
  using R = TypeParam;
  PolyNtt<R> a;
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % 64, 0u);
  EXPECT_EQ(a.size(), R::poly_len * R::num_primes);
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a.data()[i], 0u);
}

TYPED_TEST(PolyTest, NttRoundTripAndProduct) {
  using R = TypeParam;
  const PolyCoeff<R> a = random_coeff<R>(), b = random_coeff<R>();
  EXPECT_EQ(from_ntt(to_ntt(a)), a);
  const PolyCoeff<R> c = from_ntt(to_ntt(a) * to_ntt(b));
  // Only the first prime gets the O(d^2) check at 8192 to keep the suite fast.
  const std::size_t primes = R::poly_len >= 8192 ? 1 : R::num_primes;
  for (std::size_t i = 0; i < primes; ++i)
    EXPECT_EQ(residue_vec(c, i), test::schoolbook_negacyclic(residue_vec(a, i), residue_vec(b, i), R::primes[i]));
}

TYPED_TEST(PolyTest, AddSubNegScalar) {
  using R = TypeParam;
  const PolyCoeff<R> a = random_coeff<R>(), b = random_coeff<R>();
  EXPECT_EQ((a + b) - b, a);
  EXPECT_EQ(a + (-a), PolyCoeff<R>());
  EXPECT_EQ(neg(neg(a)), a);
  EXPECT_EQ(scalar_mul(a, std::uint64_t{3}), a + a + a);
  // Multiplying by q − 1 is negation (the u128 overload reduces the constant per prime).
  EXPECT_EQ(scalar_mul(a, modulus<R>() - 1), -a);
  // NTT is linear: the scalar commutes with it.
  EXPECT_EQ(from_ntt(scalar_mul(to_ntt(a), std::uint64_t{12345})), scalar_mul(a, std::uint64_t{12345}));
}

TYPED_TEST(PolyTest, FromSignedAndCoefficients) {
  using R = TypeParam;
  std::vector<std::int64_t> c(R::poly_len);
  for (std::size_t j = 0; j < R::poly_len; ++j) c[j] = static_cast<std::int64_t>(j % 7) - 3;
  c[1] = INT64_MIN;
  c[2] = INT64_MAX;
  const PolyCoeff<R> a = PolyCoeff<R>::from_signed(c);
  for (std::size_t j = 0; j < R::poly_len; ++j) {
    const i128 expect = c[j];
    const i128 q = static_cast<i128>(modulus<R>());
    // Values of magnitude above q/2 wrap; compare modulo q.
    i128 got = centered_coeff(a, j);
    i128 diff = (got - expect) % q;
    ASSERT_EQ(diff, 0) << j;
  }
}

TYPED_TEST(PolyTest, MulAddReducedMatchesMulThenAdd) {
  using R = TypeParam;
  const PolyNtt<R> a = to_ntt(random_coeff<R>()), b = to_ntt(random_coeff<R>()), c = to_ntt(random_coeff<R>());
  PolyNtt<R> acc = c;
  mul_add(acc, a, b);
  EXPECT_EQ(acc, c + a * b);
}

TYPED_TEST(PolyTest, MatrixProductMatchesNaive) {
  using R = TypeParam;
  PolyMatrix<PolyNtt<R>> A(2, 3), B(3, 2);
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t k = 0; k < 3; ++k) {
      A.at(r, k) = to_ntt(random_coeff<R>());
      B.at(k, r) = to_ntt(random_coeff<R>());
    }
  const auto C = matmul(A, B);
  ASSERT_EQ(C.rows(), 2u);
  ASSERT_EQ(C.cols(), 2u);
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 2; ++c) {
      PolyNtt<R> e;
      for (std::size_t k = 0; k < 3; ++k) e += A.at(r, k) * B.at(k, c);
      EXPECT_EQ(C.at(r, c), e);
    }
  EXPECT_EQ((A + A) - A, A);
  EXPECT_THROW(A.at(2, 0), std::out_of_range);
  EXPECT_THROW(matmul(A, A), std::invalid_argument);
}

// The worst case of the lazy bound: every product is (p−1)^2, exactly max_lazy_terms of them.
template <class R>
void lazy_worst_case() {
  constexpr std::size_t K = max_lazy_terms<R>();
  PolyNtt<R> a;
  for (std::size_t i = 0; i < R::num_primes; ++i)
    for (std::size_t j = 0; j < R::poly_len; ++j) a(i, j) = R::primes[i] - 1;
  LazyAccumulator<R, K> acc;
  for (std::size_t t = 0; t < K; ++t) acc.add_product(a, a);
  EXPECT_THROW(acc.add_product(a, a), std::logic_error);
  const PolyNtt<R> got = acc.reduce();
  for (std::size_t i = 0; i < R::num_primes; ++i) {
    const std::uint64_t p = R::primes[i];
    // No wrap: the raw sum is exactly K·(p−1)^2.
    ASSERT_EQ(acc.raw()[i * R::poly_len], static_cast<std::uint64_t>(K * static_cast<u128>(p - 1) * (p - 1)));
    for (std::size_t j = 0; j < R::poly_len; ++j) ASSERT_EQ(got(i, j), K % p);
  }
  // One more term would overflow for at least one prime: the bound is tight.
  bool overflows = false;
  for (std::uint64_t p : R::primes)
    overflows |= (p - 1) + static_cast<u128>(K + 1) * (p - 1) * (p - 1) > ~std::uint64_t{0};
  EXPECT_TRUE(overflows);
}

TEST(LazyAccumulation, WorstCaseAtBound) {
  EXPECT_EQ(max_lazy_terms<test::Ring2048>(), 256u);
  lazy_worst_case<test::Ring1024>();
  lazy_worst_case<test::Ring2048>();
  lazy_worst_case<test::Ring4096>();
  lazy_worst_case<test::Ring2048Q128>();
  EXPECT_EQ(max_lazy_terms<test::Ring2048Wide>(), 0u);
}

TEST(LazyAccumulation, RandomSumsMatchReducedSums) {
  using R = test::Ring2048;
  constexpr std::size_t K = max_lazy_terms<R>();
  LazyAccumulator<R, K> acc;
  PolyNtt<R> expect;
  for (std::size_t t = 0; t < K; ++t) {
    const PolyNtt<R> a = to_ntt(random_coeff<R>()), b = to_ntt(random_coeff<R>());
    acc.add_product(a, b);
    mul_add(expect, a, b);
  }
  EXPECT_EQ(acc.reduce(), expect);
  acc.clear();
  EXPECT_EQ(acc.count(), 0u);
  EXPECT_EQ(acc.reduce(), PolyNtt<R>());
}

TEST(LazyAccumulation, MatmulAcrossReductionBoundary) {
  // Inner dimension above max_lazy_terms forces intermediate reductions.
  using R = test::Ring1024;
  constexpr std::size_t K = max_lazy_terms<R>() + 3;
  PolyMatrix<PolyNtt<R>> A(1, K), B(K, 1);
  PolyNtt<R> expect;
  for (std::size_t k = 0; k < K; ++k) {
    for (std::size_t i = 0; i < R::num_primes; ++i)
      for (std::size_t j = 0; j < R::poly_len; ++j) {
        A.at(0, k)(i, j) = R::primes[i] - 1 - (j & 1);
        B.at(k, 0)(i, j) = R::primes[i] - 1;
      }
    mul_add(expect, A.at(0, k), B.at(k, 0));
  }
  EXPECT_EQ(matmul(A, B).at(0, 0), expect);
}

TEST(Uniform, SeededExpansionIsDeterministic) {
  using R = test::Ring2048;
  Seed s{};
  s[0] = 7;
  const auto a = uniform_poly_ntt<R>(s, 1), b = uniform_poly_ntt<R>(s, 1), c = uniform_poly_ntt<R>(s, 2);
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a == c);
  for (std::size_t i = 0; i < R::num_primes; ++i)
    for (std::size_t j = 0; j < R::poly_len; ++j) ASSERT_LT(a(i, j), R::primes[i]);
}

}  // namespace
}  // namespace spiralpir
