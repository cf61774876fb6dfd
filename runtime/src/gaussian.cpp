// Constant-time discrete Gaussian: a full scan of a 127-bit cumulative distribution table.
// The batch sampler scans the table for a block of samples at once (vectorised across samples:
// AVX-512 when available, portable otherwise); it consumes the random stream exactly as the
// one-at-a-time sampler does, so both give the same samples.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "spiralpir/core/cpu_features.hpp"
#include "spiralpir/arith/sample.hpp"

namespace spiralpir {
namespace {

constexpr double kTailSigmas = 14.0;
constexpr std::size_t kBlock = 64;  // samples per batch block

std::uint64_t load_le64(const std::uint8_t* b) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[i];
  return v;
}

// cnt[i] = #{e : c[e] ≤ r_i} for r_i = (rh[i]·2^64 + rl[i]) < 2^127 and c[e] = (ch[e]·2^64 + cl[e])
// < 2^127: r − c borrows iff bit 63 of rh − ch − (rl < cl) is set. No branch or address depends
// on r (constant time); the loop over i vectorises.
[[gnu::always_inline]] inline void scan_body(const std::uint64_t* rh, const std::uint64_t* rl, const std::uint64_t* ch,
                                             const std::uint64_t* cl, std::size_t entries, std::int64_t* cnt) {
  std::uint64_t acc[kBlock] = {};
  for (std::size_t e = 0; e < entries; ++e) {
    const std::uint64_t h = ch[e], l = cl[e];
    for (std::size_t i = 0; i < kBlock; ++i) {
      const std::uint64_t borrow = (rh[i] - h - static_cast<std::uint64_t>(rl[i] < l)) >> 63;
      acc[i] += 1 - borrow;
    }
  }
  for (std::size_t i = 0; i < kBlock; ++i) cnt[i] = static_cast<std::int64_t>(acc[i]);
}
void scan_native(const std::uint64_t* rh, const std::uint64_t* rl, const std::uint64_t* ch, const std::uint64_t* cl,
                 std::size_t entries, std::int64_t* cnt) {
  scan_body(rh, rl, ch, cl, entries, cnt);
}
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw"))) void scan_avx512(
    const std::uint64_t* rh, const std::uint64_t* rl, const std::uint64_t* ch, const std::uint64_t* cl,
    std::size_t entries, std::int64_t* cnt) {
  scan_body(rh, rl, ch, cl, entries, cnt);
}
#endif

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
  for (const u128 c : cdf_) {
    cdf_hi_.push_back(static_cast<std::uint64_t>(c >> 64));
    cdf_lo_.push_back(static_cast<std::uint64_t>(c));
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
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool avx512 = path_available(Path::avx512);
#endif
  std::uint8_t bytes[16 * kBlock];
  std::uint64_t rh[kBlock] = {}, rl[kBlock] = {};
  std::int64_t cnt[kBlock];
  for (std::size_t off = 0; off < out.size(); off += kBlock) {
    const std::size_t m = std::min(kBlock, out.size() - off);
    rng.fill(bytes, 16 * m);  // the bytes next_u128() would read, m times
    for (std::size_t i = 0; i < m; ++i) {
      const std::uint64_t lo = load_le64(bytes + 16 * i), hi = load_le64(bytes + 16 * i + 8);
      rh[i] = hi >> 1;  // r = (hi·2^64 + lo) >> 1, uniform in [0, 2^127)
      rl[i] = (lo >> 1) | (hi << 63);
    }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (avx512)
      scan_avx512(rh, rl, cdf_hi_.data(), cdf_lo_.data(), cdf_hi_.size(), cnt);
    else
#endif
      scan_native(rh, rl, cdf_hi_.data(), cdf_lo_.data(), cdf_hi_.size(), cnt);
    for (std::size_t i = 0; i < m; ++i) out[off + i] = cnt[i] - bound_;
  }
}

}  // namespace spiralpir
