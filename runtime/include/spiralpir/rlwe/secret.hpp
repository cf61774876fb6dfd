// spiralpir/rlwe/secret.hpp — RLWE secret keys: which distribution a secret polynomial is drawn
// from, and the draw.
//   SecretDist {gaussian, ternary, sparse_ternary}, secret_dist_name(d)   (namespace spiralpir:
//       the parameter vocabulary generated code writes)
//   rlwe::sample_secret<R>(rng, dist, g, plus, minus) -> Pc<R>   Gaussian (sampler g), uniform
//       ternary, or sparse ternary with exactly `plus` +1 and `minus` −1 coefficients
#pragma once

#include <cstdint>

#include "spiralpir/arith/random.hpp"
#include "spiralpir/arith/sample.hpp"
#include "spiralpir/rlwe/types.hpp"

namespace spiralpir {

/// Distribution of the secret key polynomials.
enum class SecretDist : std::uint8_t { gaussian = 0, ternary = 1, sparse_ternary = 2 };

constexpr const char* secret_dist_name(SecretDist s) {
  switch (s) {
    case SecretDist::gaussian: return "gaussian";
    case SecretDist::ternary: return "ternary";
    case SecretDist::sparse_ternary: return "sparse_ternary";
  }
  return "?";
}

namespace rlwe {

template <class R>
Pc<R> sample_secret(Csprng& rng, SecretDist dist, const GaussianSampler& g, unsigned plus, unsigned minus) {
  switch (dist) {
    case SecretDist::ternary: return ternary_poly<R>(rng);
    case SecretDist::sparse_ternary: return sparse_ternary_poly<R>(rng, plus, minus);
    case SecretDist::gaussian: break;
  }
  return gaussian_poly<R>(rng, g);
}

}  // namespace rlwe
}  // namespace spiralpir
