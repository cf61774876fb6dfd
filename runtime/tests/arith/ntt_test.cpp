// NTT kernels: every path against the schoolbook product, against each other, inverse,
// lazy ranges, and the documented slot order.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "spiralpir/arith/modarith.hpp"
#include "spiralpir/arith/ntt.hpp"
#include "test_rings.hpp"

namespace spiralpir {
namespace {

using test::random_below;

struct Case {
  std::size_t n;
  std::uint64_t p;
};

// Every prime of every ring in test_rings.hpp.
const std::vector<Case> kCases = {
    {1024, 1073707009ULL}, {1024, 134215681ULL},   {2048, 268369921ULL},       {2048, 249561089ULL},
    {4096, 1073692673ULL}, {4096, 1073668097ULL},  {4096, 1073651713ULL},      {8192, 1073692673ULL},
    {8192, 1073643521ULL}, {2048, 4294955009ULL},  {2048, 1125899906826241ULL}, {2048, 35184372060161ULL},
};

// Only the paths this process may run are instantiated (SPIRALPIR_DISABLE_AVX512=1 drops one).
class NttTest : public ::testing::TestWithParam<std::tuple<Case, Path>> {
 protected:
  void SetUp() override {
    path_ = std::get<1>(GetParam());
    const Case c = std::get<0>(GetParam());
    tab_ = NttTable::make(c.p, c.n);
  }
  Path path_ = Path::native;
  NttTable tab_;
};

TEST_P(NttTest, ProductMatchesSchoolbook) {
  const std::uint64_t p = tab_.p;
  auto a = random_below(tab_.n, p), b = random_below(tab_.n, p);
  const auto expect = test::schoolbook_negacyclic(a, b, p);
  ntt_forward(a.data(), tab_, path_);
  ntt_forward(b.data(), tab_, path_);
  for (std::size_t i = 0; i < tab_.n; ++i) a[i] = mul_mod(a[i], b[i], p);
  ntt_inverse(a.data(), tab_, path_);
  EXPECT_EQ(a, expect);
}

TEST_P(NttTest, AgreesWithNativeIncludingLazyOutputs) {
  const std::uint64_t p = tab_.p;
  // Forward accepts [0, 4p): use the whole range.
  const auto in = random_below(tab_.n, 4 * p);
  auto ref = in, got = in, lazy = in;
  ntt_forward(ref.data(), tab_, Path::native);
  ntt_forward(got.data(), tab_, path_);
  ntt_forward_lazy(lazy.data(), tab_, path_);
  EXPECT_EQ(got, ref);
  for (std::size_t i = 0; i < tab_.n; ++i) {
    ASSERT_LT(lazy[i], 4 * p);
    ASSERT_EQ(lazy[i] % p, ref[i]) << "slot " << i;
  }
  // Inverse accepts [0, 2p).
  const auto ev = random_below(tab_.n, 2 * p);
  auto iref = ev, igot = ev, ilazy = ev;
  ntt_inverse(iref.data(), tab_, Path::native);
  ntt_inverse(igot.data(), tab_, path_);
  ntt_inverse_lazy(ilazy.data(), tab_, path_);
  EXPECT_EQ(igot, iref);
  for (std::size_t i = 0; i < tab_.n; ++i) {
    ASSERT_LT(ilazy[i], 2 * p);
    ASSERT_EQ(ilazy[i] % p, iref[i]) << "coefficient " << i;
  }
}

TEST_P(NttTest, InverseUndoesForward) {
  const std::uint64_t p = tab_.p;
  const auto in = random_below(tab_.n, p);
  auto a = in;
  ntt_forward_lazy(a.data(), tab_, path_);
  // The lazy forward output is in [0, 4p); reduce into the inverse's [0, 2p) input range.
  for (auto& x : a) x %= 2 * p;
  ntt_inverse(a.data(), tab_, path_);
  EXPECT_EQ(a, in);
  ntt_inverse_lazy(a.data(), tab_, path_);
  ntt_forward(a.data(), tab_, path_);
  EXPECT_EQ(a, in);
}

TEST_P(NttTest, ExtremeInputs) {
  const std::uint64_t p = tab_.p;
  std::vector<std::uint64_t> a(tab_.n, 4 * p - 1), ref(tab_.n, p - 1);
  ntt_forward(a.data(), tab_, path_);
  ntt_forward(ref.data(), tab_, Path::native);
  EXPECT_EQ(a, ref);
  std::vector<std::uint64_t> b(tab_.n, 2 * p - 1), bref(tab_.n, p - 1);
  ntt_inverse(b.data(), tab_, path_);
  ntt_inverse(bref.data(), tab_, Path::native);
  EXPECT_EQ(b, bref);
  // Inverse of the constant p−1 evaluation vector is the constant polynomial p−1.
  EXPECT_EQ(bref[0], p - 1);
  for (std::size_t i = 1; i < tab_.n; ++i) ASSERT_EQ(bref[i], 0u);
}

TEST_P(NttTest, SlotsAreEvaluationsAtDocumentedPowers) {
  const std::uint64_t p = tab_.p;
  const auto coeffs = random_below(tab_.n, p);
  auto a = coeffs;
  ntt_forward(a.data(), tab_, path_);
  for (std::size_t slot : {std::size_t{0}, std::size_t{1}, std::size_t{5}, tab_.n / 2 + 3, tab_.n - 1}) {
    const std::uint64_t x = pow_mod(tab_.psi, ntt_slot_exponent(tab_, slot), p);
    std::uint64_t acc = 0, xp = 1;
    for (std::size_t i = 0; i < tab_.n; ++i) {
      acc = add_mod(acc, mul_mod(coeffs[i], xp, p), p);
      xp = mul_mod(xp, x, p);
    }
    EXPECT_EQ(a[slot], acc) << "slot " << slot;
  }
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<Case, Path>>& info) {
  const Case c = std::get<0>(info.param);
  return std::string(path_name(std::get<1>(info.param))) + "_" + std::to_string(c.n) + "_" + std::to_string(c.p);
}

INSTANTIATE_TEST_SUITE_P(AllRingsAllPaths, NttTest,
                         ::testing::Combine(::testing::ValuesIn(kCases),
                                            ::testing::ValuesIn(available_paths())),
                         case_name);

TEST(NttTable, RootIsPrimitiveAndSmallest) {
  for (const Case& c : kCases) {
    const NttTable t = NttTable::make(c.p, c.n);
    EXPECT_EQ(pow_mod(t.psi, c.n, c.p), c.p - 1);
    // The primitive 2n-th roots are the odd powers of ψ; ψ is documented as the smallest.
    const std::uint64_t sq = mul_mod(t.psi, t.psi, c.p);
    std::uint64_t r = t.psi;
    for (std::size_t k = 1; k < c.n; ++k) {
      r = mul_mod(r, sq, c.p);
      ASSERT_GT(r, t.psi);
    }
  }
}

TEST(NttTable, TinyLengthsFallBackToNative) {
  // Shorter than a vector block: every path must still be exact (it uses the native kernel).
  for (std::size_t n : {2u, 4u, 8u}) {
    const NttTable t = NttTable::make(97, n);
    for (Path path : available_paths()) {
      auto a = random_below(n, 97), b = random_below(n, 97);
      const auto expect = test::schoolbook_negacyclic(a, b, 97);
      ntt_forward(a.data(), t, path);
      ntt_forward(b.data(), t, path);
      for (std::size_t i = 0; i < n; ++i) a[i] = mul_mod(a[i], b[i], 97);
      ntt_inverse(a.data(), t, path);
      EXPECT_EQ(a, expect) << "n=" << n << " path=" << path_name(path);
    }
  }
}

TEST(NttTable, RejectsBadModuli) {
  EXPECT_THROW(NttTable::make(268369921ULL, 1000), std::invalid_argument);
  EXPECT_THROW(NttTable::make(268369923ULL, 2048), std::invalid_argument);
  EXPECT_THROW(NttTable::make(12289ULL, 8192), std::invalid_argument);
}

#ifndef NDEBUG
// Debug builds check the documented ranges and stop at the first violation.
TEST(NttDebugChecks, OutOfRangeInputsAbort) {
  const NttTable t = NttTable::make(268369921ULL, 2048);
  std::vector<std::uint64_t> a(2048, 0);
  a[17] = 4 * t.p;
  EXPECT_DEATH(ntt_forward(a.data(), t), "range check failed");
  a[17] = 2 * t.p;
  EXPECT_DEATH(ntt_inverse(a.data(), t), "range check failed");
}
#endif

}  // namespace
}  // namespace spiralpir
