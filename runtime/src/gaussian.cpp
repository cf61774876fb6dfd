// Constant-time discrete Gaussian: a full scan of a 127-bit cumulative distribution table.
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "spiralpir/sample.hpp"

namespace spiralpir {
namespace {

constexpr double kTailSigmas = 14.0;

long double rho(long double x, long double width) {
  return std::exp(-std::numbers::pi_v<long double> * x * x / (width * width));
}

}  // namespace

GaussianSampler::GaussianSampler(double width) : width_(width) {
  if (!(width > 0.0) || width > 1e6) throw std::invalid_argument("GaussianSampler: width must be in (0, 1e6]");
  bound_ = static_cast<std::int64_t>(std::ceil(kTailSigmas * sigma()));
  long double total = 0;
  for (std::int64_t x = -bound_; x <= bound_; ++x) total += rho(x, width);
  // long double carries a 64-bit mantissa: each increment is exact to 2^-64 relative.
  const long double scale = std::ldexp(1.0L, 127);
  cdf_.resize(static_cast<std::size_t>(2 * bound_));
  long double acc = 0;
  for (std::int64_t i = 0; i < 2 * bound_; ++i) {
    acc += rho(-bound_ + i, width) / total;
    long double v = acc * scale;
    if (v >= scale) v = std::nextafter(scale, 0.0L);
    cdf_[static_cast<std::size_t>(i)] = static_cast<u128>(v);
  }
}

double GaussianSampler::sigma() const noexcept { return width_ / std::sqrt(2.0 * std::numbers::pi); }

double GaussianSampler::probability(std::int64_t x) const {
  if (x < -bound_ || x > bound_) return 0.0;
  long double total = 0;
  for (std::int64_t y = -bound_; y <= bound_; ++y) total += rho(y, width_);
  return static_cast<double>(rho(x, width_) / total);
}

std::int64_t GaussianSampler::sample(Csprng& rng) const {
  const u128 r = rng.next_u128() >> 1;  // uniform in [0, 2^127)
  std::int64_t count = 0;
  for (const u128 c : cdf_) {
    // Both values are below 2^127, so bit 127 of r − c is exactly the borrow (r < c).
    count += 1 - static_cast<std::int64_t>((r - c) >> 127);
  }
  return count - bound_;
}

void GaussianSampler::sample(Csprng& rng, std::span<std::int64_t> out) const {
  for (auto& v : out) v = sample(rng);
}

}  // namespace spiralpir
