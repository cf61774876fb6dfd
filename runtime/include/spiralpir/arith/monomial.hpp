// monomial.hpp — multiplication by a monomial x^{-m} in the coefficient domain (a negacyclic
// shift: x^d = −1), the step that separates the halves of a ciphertext in query expansion (the
// server runs it fused with the subtraction before it: pointwise.hpp's split_halves).
//
// API (namespace spiralpir; 0 <= m < d, values < p):
//   mul_monomial_inv_residue(src, dst, m, d, p)   one residue: dst = x^{-m}·src (dst ≠ src)
//   mul_monomial_inv<R>(a, m) -> PolyCoeff<R>     every residue
#pragma once

#include <cstddef>
#include <cstdint>

#include "spiralpir/arith/poly.hpp"

namespace spiralpir {

inline void mul_monomial_inv_residue(const std::uint64_t* s, std::uint64_t* o, std::size_t m, std::size_t d,
                                     std::uint64_t p) {
  for (std::size_t j = 0; j + m < d; ++j) o[j] = s[j + m];
  for (std::size_t j = d - m; j < d; ++j) {
    const std::uint64_t v = s[j + m - d];
    o[j] = ct::neg_mod(v, p);
  }
}

template <class R>
PolyCoeff<R> mul_monomial_inv(const PolyCoeff<R>& a, std::size_t m) {
  PolyCoeff<R> out;
  for (std::size_t i = 0; i < R::num_primes; ++i)
    mul_monomial_inv_residue(a.residue(i), out.residue(i), m, R::poly_len, R::primes[i]);
  return out;
}

}  // namespace spiralpir
