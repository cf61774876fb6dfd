// sample.hpp — secret and noise distributions, sampled in constant time.
//
// API (namespace spiralpir):
//   class GaussianSampler(double width)   discrete Gaussian D_{Z,s}: P(x) ∝ exp(−π x² / s²),
//                                         σ = s/√(2π); support cut at |x| ≤ tail_bound() =
//                                         ⌈14σ⌉ (mass beyond < 2^-140). Cumulative table in
//                                         127-bit fixed point, each entry the exact value
//                                         rounded once (computed with ~224-bit arithmetic),
//                                         symmetric by construction; built once per width and
//                                         shared. sample() scans the whole table with
//                                         branch-free compares (constant time).
//     width(), sigma(), tail_bound(), probability(x) (the normalised target to double
//     precision, for tests), table() (the 2·tail_bound() cumulative entries, for tests)
//     sample(Csprng&) -> int64_t;  sample(Csprng&, std::span<int64_t>) (batch: same samples as
//                                         repeated sample(Csprng&), the scan vectorised)
//   sample_ternary(Csprng&, std::span<int64_t>)          uniform in {−1, 0, 1} (bias < 2^-64)
//   sample_sparse_ternary(Csprng&, std::span<int64_t>, plus, minus)
//                                         exactly `plus` +1s and `minus` −1s at uniformly random
//                                         positions (random keys + a bitonic sorting network:
//                                         no branch or address depends on the secret). The span
//                                         length must be a power of two.
//   gaussian_poly<R>(Csprng&, const GaussianSampler&), ternary_poly<R>(Csprng&),
//   sparse_ternary_poly<R>(Csprng&, plus, minus)          -> PolyCoeff<R> (the integer
//                                         coefficients are wiped; the caller wipes the result)
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "spiralpir/arith/modarith.hpp"
#include "spiralpir/arith/poly.hpp"
#include "spiralpir/arith/random.hpp"

namespace spiralpir {

class GaussianSampler {
 public:
  explicit GaussianSampler(double width);

  double width() const noexcept { return width_; }
  double sigma() const noexcept;
  std::int64_t tail_bound() const noexcept { return bound_; }
  double probability(std::int64_t x) const;

  std::span<const u128> table() const noexcept;  // [i] = 2^127 · P(X ≤ −tail_bound() + i)

  std::int64_t sample(Csprng& rng) const;
  void sample(Csprng& rng, std::span<std::int64_t> out) const;

 private:
  struct Table;
  static std::shared_ptr<const Table> make_table(double width, std::int64_t bound);

  double width_;
  std::int64_t bound_;
  std::shared_ptr<const Table> table_;
};

void sample_ternary(Csprng& rng, std::span<std::int64_t> out);
void sample_sparse_ternary(Csprng& rng, std::span<std::int64_t> out, std::size_t plus, std::size_t minus);

template <class R>
PolyCoeff<R> gaussian_poly(Csprng& rng, const GaussianSampler& g) {
  SecretVector<std::int64_t> c(R::poly_len);
  g.sample(rng, c);
  return PolyCoeff<R>::from_signed(c);
}

template <class R>
PolyCoeff<R> ternary_poly(Csprng& rng) {
  SecretVector<std::int64_t> c(R::poly_len);
  sample_ternary(rng, c);
  return PolyCoeff<R>::from_signed(c);
}

template <class R>
PolyCoeff<R> sparse_ternary_poly(Csprng& rng, std::size_t plus, std::size_t minus) {
  SecretVector<std::int64_t> c(R::poly_len);
  sample_sparse_ternary(rng, c, plus, minus);
  return PolyCoeff<R>::from_signed(c);
}

}  // namespace spiralpir
