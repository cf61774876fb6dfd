// Samplers: the discrete Gaussian's table against an independent 600-bit computation, its
// symmetry and chi-square goodness of fit; exact sparse-ternary weights.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "gaussian_reference.hpp"
#include "spiralpir/arith/sample.hpp"
#include "test_rings.hpp"

namespace spiralpir {
namespace {

// Upper critical value of χ²(df) at tail probability 1e−6 (Wilson–Hilferty; z = 4.753).
double chi2_critical(double df) {
  const double z = 4.753, h = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - h + z * std::sqrt(h), 3.0);
}

struct Fit {
  double chi2, critical;
};

// Bins: each value with expected count ≥ 20 on its own, the two tails merged into one bin each.
Fit gaussian_fit(const GaussianSampler& target, const std::vector<std::int64_t>& samples) {
  const double n = static_cast<double>(samples.size());
  std::int64_t c = 0;
  while (n * target.probability(c + 1) >= 20) ++c;
  std::map<std::int64_t, double> observed;
  for (std::int64_t x : samples) observed[std::max(-c - 1, std::min(c + 1, x))] += 1;
  double tail = 0;
  for (std::int64_t x = c + 1; x <= target.tail_bound(); ++x) tail += target.probability(x);
  double chi2 = 0;
  for (std::int64_t x = -c - 1; x <= c + 1; ++x) {
    const double e = n * (std::abs(x) == c + 1 ? tail : target.probability(x));
    const double o = observed[x];
    chi2 += (o - e) * (o - e) / e;
  }
  return {chi2, chi2_critical(static_cast<double>(2 * c + 2))};
}

TEST(Gaussian, TableEqualsAnIndependent600BitComputation) {
  // gaussian_reference.hpp: mpmath at 600 bits, rounded once to 127 bits; the runtime computes
  // in double-quad arithmetic. Every entry must be the same integer.
  for (const auto& ref : test::gaussian_reference()) {
    const GaussianSampler g(ref.width);
    ASSERT_EQ(g.tail_bound(), ref.bound) << "width " << ref.width;
    const auto t = g.table();
    ASSERT_EQ(t.size(), 2 * ref.left.size());
    for (std::size_t i = 0; i < ref.left.size(); ++i) {
      const u128 want = (static_cast<u128>(ref.left[i].first) << 64) | ref.left[i].second;
      EXPECT_TRUE(t[i] == want) << "width " << ref.width << " entry " << i;
    }
  }
}

TEST(Gaussian, TableIsSymmetricMonotoneAnd127Bit) {
  const u128 one = u128{1} << 127;
  for (double w : {0.3, 1.0, 3.2, 6.4, 6.6, 16.0, 40.0, 1000.0}) {
    const GaussianSampler g(w);
    const auto t = g.table();
    const auto b = static_cast<std::size_t>(g.tail_bound());
    ASSERT_EQ(t.size(), 2 * b);
    for (std::size_t i = 0; i < t.size(); ++i) {
      EXPECT_TRUE(t[i] + t[t.size() - 1 - i] == one) << "P(x) = P(-x) fails, width " << w << " entry " << i;
      if (i > 0) {
        EXPECT_TRUE(t[i - 1] <= t[i]) << "width " << w << " entry " << i;
      }
      if (i < b) {
        EXPECT_TRUE(t[i] < (one >> 1)) << "left half below 1/2, width " << w;
      }
    }
    for (std::int64_t x = 0; x <= g.tail_bound(); ++x) EXPECT_EQ(g.probability(x), g.probability(-x));
  }
}

TEST(Gaussian, TailIsSampledWithItsTrueProbability) {
  // width 6.4: P(x) for x = 24..30 lies between 2^-66 and 2^-102; a 64-bit accumulation of the
  // table made these exactly 0. Each must be the table's difference of entries, not 0, and
  // agree with the target to 2^-120 absolute.
  const GaussianSampler g(6.4);
  const auto t = g.table();
  const std::int64_t b = g.tail_bound();
  for (std::int64_t x = 24; x <= 30; ++x) {
    const std::size_t i = static_cast<std::size_t>(-x + b);  // entry of P(X ≤ −x)
    const u128 mass = t[i] - t[i - 1];                       // 2^127 · P(X = −x)
    EXPECT_TRUE(mass > 0) << x;
    const double p = std::ldexp(static_cast<double>(mass), -127);
    EXPECT_NEAR(p, g.probability(-x), std::ldexp(1.0, -120)) << x;
    EXPECT_NEAR(p / g.probability(-x), 1.0, 1e-6) << x;
  }
}

TEST(Gaussian, ChiSquareFitOnAMillionSamples) {
  const GaussianSampler g(6.4);  // SPIRAL's width; σ = 6.4/√(2π) ≈ 2.553
  EXPECT_NEAR(g.sigma(), 2.5532, 1e-4);
  EXPECT_GE(g.tail_bound(), 14 * 2.55);
  Csprng rng(Seed{}, 42);
  std::vector<std::int64_t> s(1'000'000);
  g.sample(rng, s);
  const Fit f = gaussian_fit(g, s);
  EXPECT_LT(f.chi2, f.critical) << "chi2=" << f.chi2;
  double sum = 0, sq = 0;
  for (auto x : s) {
    ASSERT_LE(std::abs(x), g.tail_bound());
    sum += static_cast<double>(x);
    sq += static_cast<double>(x) * static_cast<double>(x);
  }
  const double mean = sum / s.size(), var = sq / s.size() - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(var / (g.sigma() * g.sigma()), 1.0, 0.01);
}

TEST(Gaussian, ChiSquareDetectsAWrongWidth) {
  // The test above has power: 3% too wide a sampler is rejected.
  const GaussianSampler target(6.4), wrong(6.6);
  Csprng rng(Seed{}, 43);
  std::vector<std::int64_t> s(1'000'000);
  wrong.sample(rng, s);
  const Fit f = gaussian_fit(target, s);
  EXPECT_GT(f.chi2, f.critical);
}

TEST(Gaussian, OtherWidthsAndBadInput) {
  for (double w : {1.0, 3.2, 16.0}) {
    const GaussianSampler g(w);
    Csprng rng(Seed{}, 44);
    std::vector<std::int64_t> s(200'000);
    g.sample(rng, s);
    const Fit f = gaussian_fit(g, s);
    EXPECT_LT(f.chi2, f.critical) << "width " << w;
  }
  EXPECT_THROW(GaussianSampler(0.0), std::invalid_argument);
  EXPECT_THROW(GaussianSampler(-1.0), std::invalid_argument);
}

TEST(Ternary, UniformThirds) {
  Csprng rng(Seed{}, 45);
  std::vector<std::int64_t> s(300'000);
  sample_ternary(rng, s);
  std::map<std::int64_t, int> c;
  for (auto x : s) c[x]++;
  ASSERT_EQ(c.size(), 3u);
  for (std::int64_t v : {-1, 0, 1}) EXPECT_NEAR(c[v], 100'000, 6 * std::sqrt(100'000.0 * 2 / 3)) << v;
}

TEST(SparseTernary, ExactWeights) {
  Csprng rng(Seed{}, 46);
  std::vector<std::int64_t> s(2048);
  for (auto [plus, minus] : std::vector<std::pair<std::size_t, std::size_t>>{
           {256, 256}, {0, 0}, {2048, 0}, {1, 2047}, {100, 37}, {0, 64}}) {
    sample_sparse_ternary(rng, s, plus, minus);
    std::size_t np = 0, nm = 0, nz = 0;
    for (auto x : s) (x == 1 ? np : (x == -1 ? nm : nz))++;
    EXPECT_EQ(np, plus);
    EXPECT_EQ(nm, minus);
    EXPECT_EQ(nz, s.size() - plus - minus);
  }
  EXPECT_THROW(sample_sparse_ternary(rng, s, 2000, 100), std::invalid_argument);
  std::vector<std::int64_t> odd(1000);
  EXPECT_THROW(sample_sparse_ternary(rng, odd, 1, 1), std::invalid_argument);
}

TEST(SparseTernary, PositionsAreUniform) {
  Csprng rng(Seed{}, 47);
  const int trials = 4000;
  std::vector<std::int64_t> s(64);
  std::vector<double> plus_at(64), minus_at(64);
  for (int t = 0; t < trials; ++t) {
    sample_sparse_ternary(rng, s, 8, 8);
    for (std::size_t i = 0; i < s.size(); ++i) {
      plus_at[i] += s[i] == 1;
      minus_at[i] += s[i] == -1;
    }
  }
  const double e = trials * 8.0 / 64.0;
  double chi2p = 0, chi2m = 0;
  for (std::size_t i = 0; i < 64; ++i) {
    chi2p += (plus_at[i] - e) * (plus_at[i] - e) / e;
    chi2m += (minus_at[i] - e) * (minus_at[i] - e) / e;
  }
  EXPECT_LT(chi2p, chi2_critical(63));
  EXPECT_LT(chi2m, chi2_critical(63));
}

TEST(SecretPolys, LandInTheRing) {
  using R = test::Ring2048;
  Csprng rng(Seed{}, 48);
  const auto s = sparse_ternary_poly<R>(rng, 256, 256);
  int plus = 0, minus = 0;
  for (std::size_t j = 0; j < R::poly_len; ++j) {
    const i128 v = centered_coeff(s, j);
    plus += v == 1;
    minus += v == -1;
    ASSERT_TRUE(v >= -1 && v <= 1);
  }
  EXPECT_EQ(plus, 256);
  EXPECT_EQ(minus, 256);
  const auto e = gaussian_poly<R>(rng, GaussianSampler(6.4));
  for (std::size_t j = 0; j < R::poly_len; ++j) {
    const i128 v = centered_coeff(e, j);
    ASSERT_TRUE(v >= -40 && v <= 40);
  }
}

TEST(Gaussian, BatchSamplesEqualOneAtATime) {
  // the vectorised batch scan consumes the stream exactly like sample(rng) and agrees with it
  for (double w : {6.4, 1.0, 40.0}) {
    const GaussianSampler g(w);
    for (std::size_t n : {std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{1000}}) {
      Csprng a(Seed{}, 45), b(Seed{}, 45);
      std::vector<std::int64_t> batch(n);
      g.sample(a, batch);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(batch[i], g.sample(b)) << "width " << w << " sample " << i;
      EXPECT_EQ(a.next_u64(), b.next_u64()) << "streams diverged";
    }
  }
}

}  // namespace
}  // namespace spiralpir
