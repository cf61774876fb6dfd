// AVX-512 pointwise kernels: 8 residues per zmm, 32×32→64-bit products (p < 2^30), Barrett.
// GCC 12's AVX-512 intrinsic headers build their pass-through operands from
// _mm512_undefined_*(), which trips -Wmaybe-uninitialized (GCC bug 105593) once inlined here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "pointwise_kernels.hpp"
#include "reduce32_avx512.hpp"

namespace spiralpir::detail {

void pointwise_mul_avx512(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                          const Barrett30& br, bool accumulate) {
  const __m512i p = _mm512_set1_epi64(static_cast<long long>(br.p));
  const __m512i mu = _mm512_set1_epi64(static_cast<long long>(br.mu));
  const unsigned lo = br.shift_lo, hi = br.shift_hi;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m512i va = _mm512_loadu_si512(a + i);
    const __m512i vb = _mm512_loadu_si512(b + i);
    __m512i x = _mm512_mul_epu32(va, vb);  // < p^2 (+ p) < 2^(2L)
    if (accumulate) x = _mm512_add_epi64(x, _mm512_loadu_si512(out + i));
    const __m512i q = _mm512_srli_epi64(_mm512_mul_epu32(_mm512_srli_epi64(x, lo), mu), hi);
    __m512i r = _mm512_sub_epi64(x, _mm512_mul_epu32(q, p));  // [0, 3p)
    r = _mm512_min_epu64(r, _mm512_sub_epi64(r, p));            // wraps high when r < p
    r = _mm512_min_epu64(r, _mm512_sub_epi64(r, p));
    _mm512_storeu_si512(out + i, r);
  }
  if (i < n) pointwise_mul_native(out + i, a + i, b + i, n - i, br.p, accumulate);
}

void pointwise_mul_add_lazy_avx512(std::uint64_t* acc, const std::uint64_t* a, const std::uint64_t* b,
                                   std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m512i prod = _mm512_mul_epu32(_mm512_loadu_si512(a + i), _mm512_loadu_si512(b + i));
    _mm512_storeu_si512(acc + i, _mm512_add_epi64(_mm512_loadu_si512(acc + i), prod));
  }
  if (i < n) pointwise_mul_add_lazy_native(acc + i, a + i, b + i, n - i);
}

void reduce_words_avx512(std::uint64_t* a, std::size_t n, const Reduce32& rd) {
  const Reduce32Avx512 red(rd);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm512_storeu_si512(a + i, red(_mm512_loadu_si512(a + i)));
  for (; i < n; ++i) a[i] %= rd.p;
}

void split_halves_avx512(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi, std::size_t m,
                         std::size_t n, std::uint64_t p) {
  const __m512i vp = _mm512_set1_epi64(static_cast<long long>(p));
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    if (hi != nullptr && j < m && j + 8 > m) {  // the block straddles the wrap-around
      split_halves_native(cur, tau, hi, m, n, p, j, j + 8);
      continue;
    }
    const __m512i c = _mm512_loadu_si512(cur + j), t = _mm512_loadu_si512(tau + j);
    if (hi != nullptr) {
      const __m512i d = _mm512_sub_epi64(c, t);
      const __m512i u = _mm512_min_epu64(d, _mm512_add_epi64(d, vp));  // c < t: d wraps above d + p
      if (j >= m)
        _mm512_storeu_si512(hi + j - m, u);
      else  // p − u where u ≠ 0
        _mm512_storeu_si512(hi + j + n - m, _mm512_maskz_sub_epi64(_mm512_test_epi64_mask(u, u), vp, u));
    }
    const __m512i s = _mm512_add_epi64(c, t);
    _mm512_storeu_si512(cur + j, _mm512_min_epu64(s, _mm512_sub_epi64(s, vp)));
  }
  split_halves_native(cur, tau, hi, m, n, p, j, n);
}

void split_halves_ntt_avx512(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi,
                            const std::uint64_t* w, std::size_t n, const Barrett30& br) {
  const __m512i vp = _mm512_set1_epi64(static_cast<long long>(br.p));
  const __m512i mu = _mm512_set1_epi64(static_cast<long long>(br.mu));
  const unsigned lo = br.shift_lo, sh = br.shift_hi;
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m512i c = _mm512_loadu_si512(cur + j), t = _mm512_loadu_si512(tau + j);
    if (hi != nullptr) {
      const __m512i d = _mm512_sub_epi64(c, t);
      const __m512i u = _mm512_min_epu64(d, _mm512_add_epi64(d, vp));  // c < t: d wraps above d + p
      const __m512i x = _mm512_mul_epu32(u, _mm512_loadu_si512(w + j));  // < p^2 < 2^(2L)
      const __m512i q = _mm512_srli_epi64(_mm512_mul_epu32(_mm512_srli_epi64(x, lo), mu), sh);
      __m512i r = _mm512_sub_epi64(x, _mm512_mul_epu32(q, vp));  // [0, 3p)
      r = _mm512_min_epu64(r, _mm512_sub_epi64(r, vp));
      _mm512_storeu_si512(hi + j, _mm512_min_epu64(r, _mm512_sub_epi64(r, vp)));
    }
    const __m512i s = _mm512_add_epi64(c, t);
    _mm512_storeu_si512(cur + j, _mm512_min_epu64(s, _mm512_sub_epi64(s, vp)));
  }
  if (j < n) split_halves_ntt_native(cur + j, tau + j, hi != nullptr ? hi + j : nullptr, w + j, n - j, br.p);
}

void add_mod_avx512(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                    std::uint64_t p) {
  const __m512i vp = _mm512_set1_epi64(static_cast<long long>(p));
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m512i s = _mm512_add_epi64(_mm512_loadu_si512(a + j), _mm512_loadu_si512(b + j));
    _mm512_storeu_si512(out + j, _mm512_min_epu64(s, _mm512_sub_epi64(s, vp)));
  }
  add_mod_native(out + j, a + j, b + j, n - j, p);
}

void sub_mod_avx512(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                    std::uint64_t p) {
  const __m512i vp = _mm512_set1_epi64(static_cast<long long>(p));
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m512i d = _mm512_sub_epi64(_mm512_add_epi64(_mm512_loadu_si512(a + j), vp), _mm512_loadu_si512(b + j));
    _mm512_storeu_si512(out + j, _mm512_min_epu64(d, _mm512_sub_epi64(d, vp)));  // [1, 2p) → [0, p)
  }
  sub_mod_native(out + j, a + j, b + j, n - j, p);
}

}  // namespace spiralpir::detail
