// uniform.hpp — uniform polynomials of R_q, fresh or expanded deterministically from a seed.
//
// API (namespace spiralpir):
//   uniform_poly_ntt<R>(const Seed& seed, uint64_t stream_id) -> PolyNtt<R>
//       deterministic: residue i, slot j = the next Csprng(seed, stream_id).uniform_mod(p_i),
//       residue-major. Uniform residues are a uniform element of R_q (CRT), in either domain, so
//       this is the "a" half of seed-compressed ciphertexts and keys.
//   uniform_poly_ntt<R>(Csprng& rng), uniform_poly_coeff<R>(Csprng& rng)   same from a stream
#pragma once

#include <cstdint>

#include "spiralpir/arith/poly.hpp"
#include "spiralpir/arith/random.hpp"

namespace spiralpir {

namespace detail {
template <class P>
void fill_uniform(P& out, Csprng& rng) {
  using R = typename P::ring;
  for (std::size_t i = 0; i < R::num_primes; ++i) {
    rng.uniform_mod_fill(out.residue(i), R::poly_len, R::primes[i]);
  }
}
}  // namespace detail

template <class R>
PolyNtt<R> uniform_poly_ntt(Csprng& rng) {
  PolyNtt<R> out;
  detail::fill_uniform(out, rng);
  return out;
}

template <class R>
PolyCoeff<R> uniform_poly_coeff(Csprng& rng) {
  PolyCoeff<R> out;
  detail::fill_uniform(out, rng);
  return out;
}

template <class R>
PolyNtt<R> uniform_poly_ntt(const Seed& seed, std::uint64_t stream_id) {
  Csprng rng(seed, stream_id);
  return uniform_poly_ntt<R>(rng);
}

}  // namespace spiralpir
