// gadget_kernels.hpp (internal) — the word kernel of the gadget decomposition (gadget.hpp):
// one body, compiled once per path by the files that include it with their own flags.
#pragma once

#include <cstddef>
#include <cstdint>

#include "spiralpir/arith/gadget.hpp"

namespace spiralpir::detail {

void gadget_words_native(const GadgetWordRing& ring, std::size_t n, const std::uint64_t* r0, const std::uint64_t* r1,
                         unsigned bits, unsigned t, std::uint64_t* const* outs);
#ifdef SPIRALPIR_HAVE_AVX2
void gadget_words_avx2(const GadgetWordRing& ring, std::size_t n, const std::uint64_t* r0, const std::uint64_t* r1,
                       unsigned bits, unsigned t, std::uint64_t* const* outs);
#endif
#ifdef SPIRALPIR_HAVE_AVX512
void gadget_words_avx512(const GadgetWordRing& ring, std::size_t n, const std::uint64_t* r0, const std::uint64_t* r1,
                         unsigned bits, unsigned t, std::uint64_t* const* outs);
#endif

// Centred values v[z] ∈ (−q/2, q/2] of a coefficient-domain polynomial: Garner's CRT with a 32-bit
// Shoup multiplication, so everything fits int64 and the loop vectorises (32×32-bit products).
template <bool TwoPrimes>
[[gnu::always_inline]] inline void gadget_centered(const GadgetWordRing& g, std::size_t n, const std::uint64_t* r0,
                                                   const std::uint64_t* r1, std::int64_t* v) {
  const std::uint64_t q = g.q, half_q = g.q / 2;
  if constexpr (!TwoPrimes) {
    for (std::size_t z = 0; z < n; ++z) {
      const std::uint64_t x = r0[z];
      v[z] = static_cast<std::int64_t>(x) - (x > half_q ? static_cast<std::int64_t>(q) : 0);
    }
  } else {
    const std::uint64_t p0 = g.p0, p1 = g.p1, w = g.w, ws = g.w_shoup, m1 = g.m1;
    for (std::size_t z = 0; z < n; ++z) {
      const std::uint64_t a = r0[z], b = r1[z];
      // a mod p1: the Barrett quotient ⌊a·m1/2^32⌋ is ⌊a/p1⌋ or one less (a < 2^32)
      std::uint64_t am = a - ((a * m1) >> 32) * p1;
      am = am >= p1 ? am - p1 : am;
      const std::uint64_t t = b >= am ? b - am : b + p1 - am;  // (r1 − r0) mod p1, < 2^32
      const std::uint64_t qh = (t * ws) >> 32;
      std::uint64_t k = t * w - qh * p1;  // in [0, 2p1)
      k = k >= p1 ? k - p1 : k;
      const std::uint64_t x = a + p0 * k;  // < q
      v[z] = static_cast<std::int64_t>(x) - (x > half_q ? static_cast<std::int64_t>(q) : 0);
    }
  }
}

// A digit |dg| ≤ p (|dg| < 2p when Wide) as a residue in [0, p).
template <bool Wide>
[[gnu::always_inline]] inline std::uint64_t digit_residue(std::int64_t dg, std::int64_t p) {
  std::int64_t m = dg + (dg < 0 ? p : 0);
  if constexpr (Wide) {
    m += m < 0 ? p : 0;
    m -= m >= p ? p : 0;
  }
  return static_cast<std::uint64_t>(m);
}

// One digit of every coefficient (v updated in place), stored mod p0 into o0 (W0) and mod p1
// into o1 (W1); the last digit is what remains of v.
template <bool W0, bool W1, bool Wide>
[[gnu::always_inline]] inline void gadget_digit_words(const GadgetWordRing& g, std::size_t n, std::int64_t* v,
                                                      unsigned bits, bool last, std::uint64_t* o0, std::uint64_t* o1) {
  const std::int64_t p0 = static_cast<std::int64_t>(g.p0), p1 = static_cast<std::int64_t>(g.p1);
  const std::int64_t base = std::int64_t{1} << bits, half = base >> 1, mask = base - 1;
  if (last) {
    for (std::size_t z = 0; z < n; ++z) {
      const std::int64_t dg = v[z];
      if constexpr (W0) o0[z] = digit_residue<Wide>(dg, p0);
      if constexpr (W1) o1[z] = digit_residue<Wide>(dg, p1);
    }
    return;
  }
  for (std::size_t z = 0; z < n; ++z) {
    std::int64_t dg = v[z] & mask;
    dg -= dg >= half ? base : 0;
    v[z] = (v[z] - dg) >> bits;
    if constexpr (W0) o0[z] = digit_residue<Wide>(dg, p0);
    if constexpr (W1) o1[z] = digit_residue<Wide>(dg, p1);
  }
}

template <bool TwoPrimes, bool W0, bool W1, bool Wide>
[[gnu::always_inline]] inline void gadget_words_shape(const GadgetWordRing& g, std::size_t n, const std::uint64_t* r0,
                                                      const std::uint64_t* r1, std::int64_t* v, unsigned bits,
                                                      unsigned t, std::uint64_t* const* outs) {
  gadget_centered<TwoPrimes>(g, n, r0, r1, v);
  for (unsigned k = 0; k < t; ++k)
    gadget_digit_words<W0, W1, Wide>(g, n, v, bits, k + 1 == t, outs[2 * k], outs[2 * k + 1]);
}

template <bool Wide>
[[gnu::always_inline]] inline void gadget_words_reach(const GadgetWordRing& g, std::size_t n, const std::uint64_t* r0,
                                                      const std::uint64_t* r1, std::int64_t* v, unsigned bits,
                                                      unsigned t, std::uint64_t* const* outs) {
  const bool w0 = outs[0] != nullptr, w1 = g.two_primes && outs[1] != nullptr;
  if (!g.two_primes)
    gadget_words_shape<false, true, false, Wide>(g, n, r0, r1, v, bits, t, outs);
  else if (w0 && w1)
    gadget_words_shape<true, true, true, Wide>(g, n, r0, r1, v, bits, t, outs);
  else if (w0)
    gadget_words_shape<true, true, false, Wide>(g, n, r0, r1, v, bits, t, outs);
  else
    gadget_words_shape<true, false, true, Wide>(g, n, r0, r1, v, bits, t, outs);
}

// The whole kernel: picks the shape (one or two primes; which primes are written; how far the
// digits reach, checked by the caller) once.
[[gnu::always_inline]] inline void gadget_words_body(const GadgetWordRing& g, std::size_t n, const std::uint64_t* r0,
                                                     const std::uint64_t* r1, std::int64_t* v, unsigned bits,
                                                     unsigned t, std::uint64_t* const* outs) {
  if (g.reach(bits) == GadgetWordRing::Reach::narrow)
    gadget_words_reach<false>(g, n, r0, r1, v, bits, t, outs);
  else
    gadget_words_reach<true>(g, n, r0, r1, v, bits, t, outs);
}

}  // namespace spiralpir::detail
