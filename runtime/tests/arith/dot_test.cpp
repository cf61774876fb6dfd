// Lazy dot products: every path's dot_mac_lazy against a plain 128-bit reference (random words
// below 2^30 and the all-ones 32-bit worst case, 1 to 9 rows), and dot_residue / dot_multi against the
// reduced NTT-domain products across the lazy-reduction boundary.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "spiralpir/arith/dot.hpp"
#include "spiralpir/arith/uniform.hpp"
#include "test_rings.hpp"

namespace spiralpir {
namespace {

constexpr std::size_t kN = 64;

void check_mac(Path path, std::size_t m, std::size_t k, bool worst) {
  std::vector<std::vector<std::uint64_t>> dig(k), key(m * k), acc(m);
  const std::uint64_t top = 0xffffffffULL;
  const std::uint64_t bound = 1ULL << 30;  // random words: k ≤ 5 products fit 64 bits
  for (auto& v : dig) v = worst ? std::vector<std::uint64_t>(kN, top) : test::random_below(kN, bound);
  for (auto& v : key) v = worst ? std::vector<std::uint64_t>(kN, top) : test::random_below(kN, bound);
  for (auto& v : acc) v = test::random_below(kN, 1ULL << 20);
  std::vector<std::vector<std::uint64_t>> want = acc;
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t z = 0; z < kN; ++z) {
      u128 s = want[r][z];
      for (std::size_t j = 0; j < k; ++j) s += static_cast<u128>(dig[j][z]) * key[r * k + j][z];
      ASSERT_LT(s >> 64, 1u) << "test bound";  // k small enough for the worst case
      want[r][z] = static_cast<std::uint64_t>(s);
    }
  std::vector<std::uint64_t*> ap(m);
  std::vector<const std::uint64_t*> dp(k), kp(m * k);
  for (std::size_t r = 0; r < m; ++r) ap[r] = acc[r].data();
  for (std::size_t j = 0; j < k; ++j) dp[j] = dig[j].data();
  for (std::size_t j = 0; j < m * k; ++j) kp[j] = key[j].data();
  dot_mac_lazy(m, ap.data(), dp.data(), kp.data(), k, kN, path);
  EXPECT_EQ(acc, want) << path_name(path) << " m=" << m << " k=" << k;
}

TEST(Dot, MacLazyMatchesReferenceOnEveryPath) {
  for (Path path : available_paths())
    for (std::size_t m = 1; m <= kDotMaxRows; ++m) {
      for (std::size_t k : {1u, 2u, 5u}) check_mac(path, m, k, false);
      check_mac(path, m, 1, true);  // (2^32 − 1)^2 + acc < 2^64
    }
  EXPECT_THROW(check_mac(Path::native, kDotMaxRows + 1, 1, false), std::invalid_argument);
}

template <class R>
class DotTest : public ::testing::Test {};
using Rings = ::testing::Types<test::Ring1024, test::Ring2048, test::Ring4096>;
TYPED_TEST_SUITE(DotTest, Rings);

TYPED_TEST(DotTest, MultiMatchesReducedProducts) {
  using R = TypeParam;
  constexpr std::size_t M = 3;
  Csprng rng(testing::test_seed("arith"), 21);
  for (std::size_t K : {std::size_t{1}, std::size_t{7}, max_lazy_terms<R>() + 3}) {
    std::vector<PolyNtt<R>> dig(K), key(M * K);
    for (auto& p : dig) p = uniform_poly_ntt<R>(rng);
    for (auto& p : key) p = uniform_poly_ntt<R>(rng);
    if (K == 1)  // worst case: every word p − 1
      for (auto* v : {&dig, &key})
        for (auto& p : *v)
          for (std::size_t i = 0; i < R::num_primes; ++i)
            for (std::size_t j = 0; j < R::poly_len; ++j) p(i, j) = R::primes[i] - 1;
    std::array<PolyNtt<R>, M> got;
    dot_multi<R, M>({&got[0], &got[1], &got[2]}, K, [&](std::size_t k) -> const PolyNtt<R>& { return dig[k]; },
                    [&](std::size_t m, std::size_t k) -> const PolyNtt<R>& { return key[m * K + k]; });
    for (std::size_t m = 0; m < M; ++m) {
      PolyNtt<R> want;
      for (std::size_t k = 0; k < K; ++k) mul_add(want, dig[k], key[m * K + k]);
      EXPECT_EQ(got[m], want) << "K=" << K << " m=" << m;
    }
    PolyNtt<R> one;
    dot<R>(one, K, [&](std::size_t k) -> const PolyNtt<R>& { return dig[k]; },
           [&](std::size_t k) -> const PolyNtt<R>& { return key[k]; });
    PolyNtt<R> want;
    for (std::size_t k = 0; k < K; ++k) mul_add(want, dig[k], key[k]);
    EXPECT_EQ(one, want) << "K=" << K;
  }
}

}  // namespace
}  // namespace spiralpir
