// gadget.hpp — signed-digit gadget decomposition G^{-1} with base z = 2^b.
//
// Digits: each coefficient, taken as its centred representative v in (−q/2, q/2], is written in
// balanced base 2^b: digits 0..t−2 lie in [−2^(b−1), 2^(b−1)), the top digit takes the rest
// (|top| ≤ 2^(b−1) + 1, since b·t ≥ ⌈log2 q⌉ is required), Σ_k digit_k · 2^(b·k) = v. A digit d
// is stored mod each p_i (a negative d as p_i + d). t = 1 is x itself (any b). Needs t ≥ 1,
// 1 ≤ b ≤ 62 when t > 1, and b·t ≥ ⌈log2 q⌉ (else std::invalid_argument). Server-side only
// (public data; not constant time).
//
// API (namespace spiralpir):
//   gadget_base_bits<R>(t)                      ⌈log2(q) / t⌉: the rule z = 2^⌈log2 q / t⌉
//   gadget_digits(v, b, t, out) / gadget_digit(v, b, t, j)   the digits of one signed value
//   gadget_decompose<R>(x, b, t)                -> std::vector<PolyCoeff<R>> (t digits)
//   gadget_decompose_residues<R>(x, b, t, i0, i1, out)   residues [i0, i1) only: digit k mod p_i
//                                               is written to out(k, i) (poly_len words)
//   gadget_decompose_ntt<R>(x, b, t)            -> std::vector<PolyNtt<R>>, digits in the NTT domain
//   gadget_decompose_ntt_into<R>(x, b, t, out0, stride)   the same into out0[k·stride] (no allocation)
//   gadget_decompose_residue_ntt<R>(x, b, t, i, outs)     residue i of that, digit k into outs[k]
//   gadget_recompose<R>(digits, b)              Σ_j digit_j · 2^(b·j) (for tests and keys)
//   gadget_decompose_words(ring, n, r0, r1, b, t, outs [, Path])   the vector kernel behind rings of
//       one or two primes below 2^32 with q < 2^62 (GadgetWordRing::of<R>()): residues r0 (first
//       prime) and r1 (last prime) in, digit k mod the first prime to outs[2k] and mod the last
//       prime to outs[2k+1] (a null pointer skips that prime). Other rings use the scalar path.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "spiralpir/arith/crt.hpp"
#include "spiralpir/arith/modarith.hpp"
#include "spiralpir/arith/ntt.hpp"
#include "spiralpir/arith/poly.hpp"
#include "spiralpir/arith/ring.hpp"
#include "spiralpir/arith/tables.hpp"
#include "spiralpir/core/cpu_features.hpp"

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

/// The constants of the word kernel for a ring of one or two primes p0, p1 < 2^32 (p1 = p0 for
/// one prime), q < 2^62: w = p0^{-1} mod p1 and its 32-bit Shoup companion, and m1 = ⌊2^32/p1⌋
/// to reduce a residue mod p0 into [0, p1) by Barrett (p0 may be several times p1).
/// Digits reach |d| ≤ 2^(bits−1) + 1; the kernel reduces them mod each prime with one
/// correction while that is at most the smaller prime, with two while it is below twice it.
struct GadgetWordRing {
  std::uint64_t p0 = 0, p1 = 0, q = 0, w = 0, w_shoup = 0, m1 = 0;
  bool two_primes = false;

  enum class Reach { narrow, wide, too_wide };
  constexpr Reach reach(unsigned bits) const {
    const std::uint64_t p_min = p0 < p1 ? p0 : p1;
    const std::uint64_t top = (std::uint64_t{1} << (bits - 1)) + 1;  // bits in [1, 62]
    return top <= p_min ? Reach::narrow : top < 2 * p_min ? Reach::wide : Reach::too_wide;
  }

  template <class R>
  static constexpr bool fits() {
    return (R::num_primes == 1 || R::num_primes == 2) && max_prime<R>() < (1ULL << 32) &&
           modulus<R>() < (u128{1} << 62);
  }
  template <class R>
  static constexpr GadgetWordRing of() {
    static_assert(fits<R>());
    GadgetWordRing g;
    g.p0 = R::primes[0];
    g.p1 = R::primes[R::num_primes - 1];
    g.q = static_cast<std::uint64_t>(modulus<R>());
    g.two_primes = R::num_primes == 2;
    if (g.two_primes) {
      g.w = inv_mod(g.p0 % g.p1, g.p1);
      g.w_shoup = static_cast<std::uint64_t>((static_cast<u128>(g.w) << 32) / g.p1);  // < 2^32
      g.m1 = (std::uint64_t{1} << 32) / g.p1;
    }
    return g;
  }
};

void gadget_decompose_words(const GadgetWordRing& ring, std::size_t n, const std::uint64_t* r0,
                            const std::uint64_t* r1, unsigned base_bits, unsigned t, std::uint64_t* const* outs);
void gadget_decompose_words(const GadgetWordRing& ring, std::size_t n, const std::uint64_t* r0,
                            const std::uint64_t* r1, unsigned base_bits, unsigned t, std::uint64_t* const* outs,
                            Path path);

namespace detail {
inline void gadget_check(unsigned base_bits, unsigned t, u128 q) {
  if (t == 0 || base_bits == 0 || (t > 1 && base_bits > 62) || std::uint64_t{base_bits} * t < bit_length(q - 1))
    throw std::invalid_argument("gadget decomposition: need t >= 1, 1 <= base bits <= 62 and bits·t >= log2 q");
}
}  // namespace detail

template <class R, class Out>
void gadget_decompose_residues(const PolyCoeff<R>& x, unsigned bits, unsigned t, std::size_t i0, std::size_t i1,
                               Out&& out) {
  constexpr std::size_t d = R::poly_len, np = R::num_primes;
  detail::gadget_check(bits, t, modulus<R>());
  if (i0 >= i1 || i1 > np) throw std::invalid_argument("gadget_decompose_residues: bad residue range");
  if (t == 1) {  // the "decomposition" is x itself
    for (std::size_t i = i0; i < i1; ++i) std::copy(x.residue(i), x.residue(i) + d, out(0u, i));
    return;
  }
  if constexpr (GadgetWordRing::fits<R>()) {
    static constexpr GadgetWordRing ring = GadgetWordRing::of<R>();
    if (ring.reach(bits) != GadgetWordRing::Reach::too_wide) {
      std::vector<std::uint64_t*> outs(2 * t, nullptr);
      for (unsigned k = 0; k < t; ++k) {
        if (i0 == 0) outs[2 * k] = out(k, std::size_t{0});
        if (i1 == np && np == 2) outs[2 * k + 1] = out(k, np - 1);
      }
      gadget_decompose_words(ring, d, x.residue(0), x.residue(np - 1), bits, t, outs.data());
      return;
    }
  }
  {
    // scalar path: each coefficient by Garner's CRT, its digits in int64 when q < 2^62 (every
    // intermediate fits), else through gadget_digits in 128 bits
    // The output rows, looked up once: through `out` every store would reload them (the
    // compiler cannot prove a store does not change the polynomials' pointers).
    std::vector<std::uint64_t*> rows(std::size_t{t} * np, nullptr);
    for (unsigned k = 0; k < t; ++k)
      for (std::size_t i = i0; i < i1; ++i) rows[std::size_t{k} * np + i] = out(k, i);
    auto store = [&](unsigned k, std::size_t z, std::int64_t dg) {
      for (std::size_t i = i0; i < i1; ++i) {
        const std::int64_t p = static_cast<std::int64_t>(R::primes[i]);
        std::int64_t m = dg;
        if (m >= p || m <= -p) m %= p;  // only for very wide digits (base > p_i)
        rows[std::size_t{k} * np + i][z] = static_cast<std::uint64_t>(m + (m < 0 ? p : 0));
      }
    };
    std::uint64_t r[np];
    std::vector<std::int64_t> dg(t);
    for (std::size_t z = 0; z < d; ++z) {
      for (std::size_t i = 0; i < np; ++i) r[i] = x(i, z);
      const u128 xv = crt_compose<R>(r);
      if constexpr (modulus<R>() < (u128{1} << 62)) {
        constexpr std::int64_t q = static_cast<std::int64_t>(modulus<R>());
        std::int64_t v = static_cast<std::int64_t>(xv);
        v -= v > q / 2 ? q : 0;
        const std::int64_t base = std::int64_t{1} << bits, half = base >> 1, mask = base - 1;
        for (unsigned k = 0; k + 1 < t; ++k) {
          std::int64_t digit = v & mask;
          digit -= digit >= half ? base : 0;
          v = (v - digit) >> bits;
          store(k, z, digit);
        }
        store(t - 1, z, v);
      } else {
        gadget_digits(centered_lift<R>(xv), bits, t, dg.data());
        for (unsigned k = 0; k < t; ++k) store(k, z, dg[k]);
      }
    }
  }
}

template <class R>
std::vector<PolyCoeff<R>> gadget_decompose(const PolyCoeff<R>& x, unsigned bits, unsigned t) {
  detail::gadget_check(bits, t, modulus<R>());
  std::vector<PolyCoeff<R>> out(t);
  gadget_decompose_residues<R>(x, bits, t, 0, R::num_primes,
                               [&](unsigned k, std::size_t i) { return out[k].residue(i); });
  return out;
}

template <class R>
void gadget_decompose_ntt_into(const PolyCoeff<R>& x, unsigned bits, unsigned t, PolyNtt<R>* out0,
                               std::size_t stride) {
  constexpr std::size_t np = R::num_primes;
  gadget_decompose_residues<R>(x, bits, t, 0, np,
                               [&](unsigned k, std::size_t i) { return out0[std::size_t{k} * stride].residue(i); });
  const auto& tb = tables<R>();
  for (unsigned k = 0; k < t; ++k)
    for (std::size_t i = 0; i < np; ++i) ntt_forward(out0[std::size_t{k} * stride].residue(i), tb.ntt[i]);
}

template <class R>
void gadget_decompose_residue_ntt(const PolyCoeff<R>& x, unsigned bits, unsigned t, std::size_t prime,
                                  std::uint64_t* const* outs) {
  gadget_decompose_residues<R>(x, bits, t, prime, prime + 1, [&](unsigned k, std::size_t) { return outs[k]; });
  const auto& tb = tables<R>();
  for (unsigned k = 0; k < t; ++k) ntt_forward(outs[k], tb.ntt[prime]);
}

template <class R>
std::vector<PolyNtt<R>> gadget_decompose_ntt(const PolyCoeff<R>& x, unsigned bits, unsigned t) {
  std::vector<PolyNtt<R>> out(t);
  gadget_decompose_ntt_into<R>(x, bits, t, out.data(), 1);
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
