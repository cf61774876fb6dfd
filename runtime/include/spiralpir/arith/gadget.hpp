// gadget.hpp — signed-digit gadget decomposition G^{-1} with base z = 2^b.
//
// API (namespace spiralpir):
//   gadget_base_bits<R>(t)                  ⌈log2(q) / t⌉: the rule z = 2^⌈log2 q / t⌉ (z^t ≥ q)
//   gadget_decompose<R>(x, base_bits, t)    -> std::vector<PolyCoeff<R>> of length t with
//       Σ_j digit_j · 2^(b·j) ≡ x (mod q), coefficient-wise. Each coefficient, taken as its
//       centred representative in (−q/2, q/2], is written in balanced base 2^b: digits 0..t−2
//       lie in [−2^(b−1), 2^(b−1)); the top digit takes the rest (|top| ≤ 2^(b−1) + 1 when
//       2^(b·t) ≥ q, larger if t·b is too small; it must fit 62 bits).
//       Digits are stored mod each p_i (a negative digit d as p_i + d).
//   gadget_recompose<R>(digits, base_bits)  -> Σ_j digit_j · 2^(b·j) (for tests and keys)
//   gadget_digit(v, base_bits, t, j)        digit j of a signed 128-bit value (scalar form)
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "spiralpir/arith/modarith.hpp"
#include "spiralpir/arith/poly.hpp"
#include "spiralpir/arith/ring.hpp"

namespace spiralpir {

template <class R>
constexpr unsigned gadget_base_bits(unsigned t) {
  const unsigned bits = bit_length(modulus<R>() - 1);  // ⌈log2 q⌉ since q is not a power of two
  return (bits + t - 1) / t;
}

// Writes the t balanced digits of the signed value v into out[0..t): digits 0..t−2 in
// [−2^(b−1), 2^(b−1)), the top digit is what remains (|top| ≤ 2^(b−1) + 1 when 2^(b·t) ≥ 2|v|).
inline void gadget_digits(i128 v, unsigned base_bits, unsigned t, std::int64_t* out) {
  const i128 base = static_cast<i128>(1) << base_bits;
  const i128 half = base >> 1;
  for (unsigned j = 0; j + 1 < t; ++j) {
    i128 d = v & (base - 1);  // v mod base in [0, base), also for negative v (two's complement)
    if (d >= half) d -= base;
    out[j] = static_cast<std::int64_t>(d);
    v = (v - d) >> base_bits;  // exact division
  }
  out[t - 1] = static_cast<std::int64_t>(v);
}

inline std::int64_t gadget_digit(i128 x, unsigned base_bits, unsigned t, unsigned j) {
  std::vector<std::int64_t> d(t);
  gadget_digits(x, base_bits, t, d.data());
  return d[j];
}

template <class R>
std::vector<PolyCoeff<R>> gadget_decompose(const PolyCoeff<R>& x, unsigned base_bits, unsigned t) {
  if (t == 0 || base_bits == 0 || base_bits > 62)
    throw std::invalid_argument("gadget_decompose: need t >= 1 and 1 <= base_bits <= 62");
  if (static_cast<std::uint64_t>(base_bits) * (t - 1) >= 128 + 62)
    throw std::invalid_argument("gadget_decompose: t·base_bits is far beyond log2(q)");
  std::vector<PolyCoeff<R>> out(t);
  std::vector<std::int64_t> d(t);
  for (std::size_t j = 0; j < R::poly_len; ++j) {
    // Decompose the centred representative: |v| ≤ q/2 keeps the top digit balanced too.
    const i128 v = centered_coeff(x, j);
    const i128 mag = v < 0 ? -v : v;
    if (base_bits * (t - 1) < 128 && (mag >> (base_bits * (t - 1))) >> 61 != 0)
      throw std::invalid_argument("gadget_decompose: top digit exceeds 62 bits (t·base_bits too small)");
    gadget_digits(v, base_bits, t, d.data());
    for (unsigned k = 0; k < t; ++k) {
      for (std::size_t i = 0; i < R::num_primes; ++i) {
        const std::uint64_t p = R::primes[i];
        const std::int64_t dk = d[k];
        const std::uint64_t mag = dk < 0 ? 0 - static_cast<std::uint64_t>(dk) : static_cast<std::uint64_t>(dk);
        const std::uint64_t m = mag % p;
        out[k](i, j) = (dk < 0 && m != 0) ? p - m : m;
      }
    }
  }
  return out;
}

template <class P>
P gadget_recompose(const std::vector<P>& digits, unsigned base_bits) {
  using R = typename P::ring;
  const u128 q = modulus<R>();
  P acc;
  u128 scale = 1;  // 2^(b·j) mod q
  for (const P& d : digits) {
    acc += scalar_mul(d, scale);
    for (unsigned s = 0; s < base_bits; ++s) scale = add_mod128(scale, scale, q);
  }
  return acc;
}

}  // namespace spiralpir
