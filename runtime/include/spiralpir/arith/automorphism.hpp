// automorphism.hpp — the ring automorphisms τ_k: a(x) ↦ a(x^k) for odd k (mod 2·poly_len).
//
// API (namespace spiralpir):
//   automorph(const PolyCoeff<R>& a, k) -> PolyCoeff<R>: coefficient j moves to j·k mod 2d,
//                                          negated when that index lands in [d, 2d) (x^d = −1).
//   automorph(const PolyNtt<R>& a, k)   -> PolyNtt<R>: a permutation of slots. Slot j holds
//                                          a(ψ^e_j), e_j = 2·bitrev(j)+1, so the result's slot j
//                                          is the input's slot holding ψ^(k·e_j mod 2d).
//   automorph_ntt_permutation<R>(k)     -> that permutation (out[j] = in[perm[j]])
// Throws std::invalid_argument for even k.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "spiralpir/arith/ntt.hpp"
#include "spiralpir/arith/poly.hpp"
#include "spiralpir/arith/tables.hpp"

namespace spiralpir {

namespace detail {
inline std::size_t bitrev(std::size_t x, unsigned bits) {
  std::size_t r = 0;
  for (unsigned i = 0; i < bits; ++i) {
    r = (r << 1) | (x & 1);
    x >>= 1;
  }
  return r;
}
inline void check_odd(std::uint64_t k) {
  if ((k & 1) == 0) throw std::invalid_argument("automorphism x -> x^k needs an odd k");
}
}  // namespace detail

template <class R>
PolyCoeff<R> automorph(const PolyCoeff<R>& a, std::uint64_t k) {
  detail::check_odd(k);
  constexpr std::size_t d = R::poly_len;
  const std::uint64_t kk = k % (2 * d);
  PolyCoeff<R> out;
  for (std::size_t i = 0; i < R::num_primes; ++i) {
    const std::uint64_t p = R::primes[i];
    const std::uint64_t* src = a.residue(i);
    std::uint64_t* dst = out.residue(i);
    for (std::size_t j = 0; j < d; ++j) {
      const std::size_t e = static_cast<std::size_t>((j * kk) % (2 * d));
      const std::uint64_t v = src[j];
      if (e < d)
        dst[e] = v;
      else
        dst[e - d] = v == 0 ? 0 : p - v;
    }
  }
  return out;
}

template <class R>
std::vector<std::uint32_t> automorph_ntt_permutation(std::uint64_t k) {
  detail::check_odd(k);
  constexpr std::size_t d = R::poly_len;
  constexpr unsigned bits = R::log2_poly_len;
  std::vector<std::uint32_t> perm(d);
  for (std::size_t j = 0; j < d; ++j) {
    const std::uint64_t e = (2 * detail::bitrev(j, bits) + 1) * (k % (2 * d)) % (2 * d);
    perm[j] = static_cast<std::uint32_t>(detail::bitrev(static_cast<std::size_t>((e - 1) / 2), bits));
  }
  return perm;
}

template <class R>
PolyNtt<R> automorph(const PolyNtt<R>& a, std::uint64_t k) {
  const std::vector<std::uint32_t> perm = automorph_ntt_permutation<R>(k);
  PolyNtt<R> out;
  for (std::size_t i = 0; i < R::num_primes; ++i) {
    const std::uint64_t* src = a.residue(i);
    std::uint64_t* dst = out.residue(i);
    for (std::size_t j = 0; j < R::poly_len; ++j) dst[j] = src[perm[j]];
  }
  return out;
}

}  // namespace spiralpir
