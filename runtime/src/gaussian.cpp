// Constant-time discrete Gaussian: a full scan of a 127-bit cumulative distribution table.
// The batch sampler scans the table for a block of samples at once (vectorised across samples:
// AVX-512 when available, portable otherwise); it consumes the random stream exactly as the
// one-at-a-time sampler does, so both give the same samples.
//
// The table is exact to the last of its 127 bits: the probabilities are computed in double-quad
// arithmetic (an unevaluated sum of two __float128, about 224 bits; soft-float from libgcc, no
// libquadmath), each cumulative value is rounded once to 127 bits, and only the left half is
// computed: the right half is 2^127 minus its mirror entry, so P(x) = P(−x) holds exactly.
// Tables are built once per width and shared (a query builds a sampler every time).
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
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

using f128 = __float128;

// Double-quad numbers: hi + lo with |lo| ≤ ulp(hi)/2 (the double-double algorithms of Dekker
// and Knuth, on binary128). Error-free transforms: two_sum, two_prod (Veltkamp split: 113 bits
// = two halves of at most 56 bits, whose products are exact).
struct DQ {
  f128 hi = 0, lo = 0;
};

DQ quick_two_sum(f128 a, f128 b) {
  const f128 s = a + b;
  return {s, b - (s - a)};
}
DQ two_sum(f128 a, f128 b) {
  const f128 s = a + b, bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}
DQ split(f128 a) {
  const f128 t = (static_cast<f128>(1ULL << 57) + 1) * a;
  const f128 hi = t - (t - a);
  return {hi, a - hi};
}
DQ two_prod(f128 a, f128 b) {
  const f128 p = a * b;
  const DQ x = split(a), y = split(b);
  return {p, ((x.hi * y.hi - p) + x.hi * y.lo + x.lo * y.hi) + x.lo * y.lo};
}
DQ operator+(DQ a, DQ b) {
  DQ s = two_sum(a.hi, b.hi);
  const DQ t = two_sum(a.lo, b.lo);
  s = quick_two_sum(s.hi, s.lo + t.hi);
  return quick_two_sum(s.hi, s.lo + t.lo);
}
DQ operator-(DQ a) { return {-a.hi, -a.lo}; }
DQ operator-(DQ a, DQ b) { return a + -b; }
DQ operator*(DQ a, DQ b) {
  const DQ p = two_prod(a.hi, b.hi);
  return quick_two_sum(p.hi, p.lo + (a.hi * b.lo + a.lo * b.hi));
}
DQ operator/(DQ a, DQ b) {  // three correction steps: each adds about 113 bits
  const f128 q1 = a.hi / b.hi;
  DQ r = a - b * DQ{q1, 0};
  const f128 q2 = r.hi / b.hi;
  r = r - b * DQ{q2, 0};
  const f128 q3 = r.hi / b.hi;
  return DQ{q1, 0} + DQ{q2, 0} + DQ{q3, 0};
}
DQ dq(double d) { return {d, 0}; }
DQ scale2(DQ a, int k) {  // a · 2^k, exact barring underflow
  while (k != 0) {
    const int step = std::clamp(k, -1000, 1000);
    const f128 f = std::ldexp(1.0, step);
    a = {a.hi * f, a.lo * f};
    k -= step;
  }
  return a;
}

// π and ln 2 to about 270 bits: sums of five doubles (from mpmath at 400 bits).
DQ sum_of(std::initializer_list<double> parts) {
  DQ s;
  for (const double d : parts) s = s + dq(d);
  return s;
}
const DQ& pi_dq() {
  static const DQ v = sum_of({0x1.921fb54442d18p+1, 0x1.1a62633145c07p-53, -0x1.f1976b7ed8fbcp-109,
                              0x1.4cf98e804177dp-163, 0x1.31d89cd9128a5p-217});
  return v;
}
const DQ& ln2_dq() {
  static const DQ v = sum_of({0x1.62e42fefa39efp-1, 0x1.abc9e3b39803fp-56, 0x1.7b57a079a1934p-111,
                              -0x1.ace93a4ebe5d1p-165, -0x1.23a2a82ea0c24p-219});
  return v;
}

// exp(y) for y ≤ 0: y = k·ln 2 + r, |r| ≤ ln 2 / 2; exp(r / 2^12) by its Taylor series (18 terms:
// the remainder is below 2^-270), squared 12 times, scaled by 2^k.
DQ exp_dq(DQ y) {
  if (y.hi < -20000) return {};  // below 2^-28000: zero at any precision the table keeps
  const double k = std::nearbyint(static_cast<double>(y.hi / ln2_dq().hi));
  const DQ r = scale2(y - dq(k) * ln2_dq(), -12);
  DQ s = dq(1);
  for (int n = 18; n >= 1; --n) s = dq(1) + r * s / dq(n);
  for (int i = 0; i < 12; ++i) s = s * s;
  return scale2(s, static_cast<int>(k));
}

// round(v · 2^127) for v in [0, 1].
u128 to_fixed127(DQ v) {
  const DQ a = scale2(v, 127);
  const u128 whole = static_cast<u128>(a.hi);  // a.hi ≥ 0; its integer part is exact in f128
  const f128 frac = (a.hi - static_cast<f128>(whole)) + a.lo + static_cast<f128>(0.5);
  i128 adj = static_cast<i128>(frac);  // toward zero; make it a floor
  if (static_cast<f128>(adj) > frac) --adj;
  return static_cast<u128>(static_cast<i128>(whole) + adj);
}

}  // namespace

struct GaussianSampler::Table {
  std::vector<u128> cdf;                         // cdf[i] = 2^127 · P(X ≤ −bound + i), i ∈ [0, 2·bound)
  std::vector<std::uint64_t> cdf_hi, cdf_lo;     // the same as 64-bit halves (batch sampler)
  std::vector<double> prob;                      // prob[x + bound] = P(X = x), the exact target
};

std::shared_ptr<const GaussianSampler::Table> GaussianSampler::make_table(double width, std::int64_t bound) {
  // rho[x] = exp(−π x²/s²) for x ∈ [0, bound], by rho[x+1] = rho[x] · q^(2x+1), q = exp(−π/s²):
  // two products per entry; the relative error stays below bound²·2^-220.
  const DQ s2 = dq(width) * dq(width);  // exact
  const DQ q = exp_dq(-(pi_dq() / s2));
  const auto n = static_cast<std::size_t>(bound);
  std::vector<DQ> rho(n + 1);
  rho[0] = dq(1);
  DQ step = q;  // q^(2x+1)
  const DQ q2 = q * q;
  for (std::size_t x = 0; x < n; ++x) {
    rho[x + 1] = rho[x] * step;
    step = step * q2;
  }
  DQ half;  // Σ_{x=1..bound} rho[x], smallest first
  for (std::size_t x = n; x >= 1; --x) half = half + rho[x];
  const DQ total = dq(1) + half + half;

  auto t = std::make_shared<Table>();
  t->cdf.resize(2 * n);
  DQ tail;  // Σ_{y=bound−i..bound} rho[y] = total · P(X ≤ −bound + i)
  for (std::size_t i = 0; i < n; ++i) {
    tail = tail + rho[n - i];
    t->cdf[i] = to_fixed127(tail / total);
    t->cdf[2 * n - 1 - i] = (u128{1} << 127) - t->cdf[i];  // P(X ≤ x) = 1 − P(X ≤ −x − 1)
  }
  for (const u128 c : t->cdf) {
    t->cdf_hi.push_back(static_cast<std::uint64_t>(c >> 64));
    t->cdf_lo.push_back(static_cast<std::uint64_t>(c));
  }
  t->prob.resize(2 * n + 1);
  for (std::size_t x = 0; x <= n; ++x) {
    const DQ p = rho[x] / total;
    t->prob[n + x] = t->prob[n - x] = static_cast<double>(p.hi);
  }
  return t;
}

GaussianSampler::GaussianSampler(double width) : width_(width) {
  if (!(width > 0.0) || width > 1e6) throw std::invalid_argument("GaussianSampler: width must be in (0, 1e6]");
  bound_ = static_cast<std::int64_t>(std::ceil(kTailSigmas * sigma()));
  static std::mutex mu;
  static std::map<double, std::shared_ptr<const Table>> cache;  // a handful of widths per process
  std::lock_guard<std::mutex> g(mu);
  auto& slot = cache[width];
  if (!slot) slot = make_table(width, bound_);
  table_ = slot;
}

double GaussianSampler::sigma() const noexcept { return width_ / std::sqrt(2.0 * std::numbers::pi); }

double GaussianSampler::probability(std::int64_t x) const {
  if (x < -bound_ || x > bound_) return 0.0;
  return table_->prob[static_cast<std::size_t>(x + bound_)];
}

std::span<const u128> GaussianSampler::table() const noexcept { return table_->cdf; }

std::int64_t GaussianSampler::sample(Csprng& rng) const {
  const u128 r = rng.next_u128() >> 1;  // uniform in [0, 2^127)
  std::int64_t count = 0;
  for (const u128 c : table_->cdf) {
    // r < 2^127 and c ≤ 2^127 (the last entry is 2^127 when the first rounds to 0), so bit 127
    // of r − c is exactly the borrow (r < c); the batch scan's 64-bit form holds likewise.
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
      scan_avx512(rh, rl, table_->cdf_hi.data(), table_->cdf_lo.data(), table_->cdf_hi.size(), cnt);
    else
#endif
      scan_native(rh, rl, table_->cdf_hi.data(), table_->cdf_lo.data(), table_->cdf_hi.size(), cnt);
    for (std::size_t i = 0; i < m; ++i) out[off + i] = cnt[i] - bound_;
  }
  secure_wipe(bytes, sizeof bytes);  // the samples' randomness
  secure_wipe(rh, sizeof rh);
  secure_wipe(rl, sizeof rl);
  secure_wipe(cnt, sizeof cnt);
}

}  // namespace spiralpir
