// AVX2 pointwise kernels: 4 residues per ymm, 32×32→64-bit products (p < 2^30), Barrett.
#include <immintrin.h>

#include "pointwise_kernels.hpp"

namespace spiralpir::detail {
namespace {

// x − m if x ≥ m, for lanes below 2^63: the sign of x − m picks the lane.
inline __m256i csub(__m256i x, __m256i m) {
  const __m256i d = _mm256_sub_epi64(x, m);
  return _mm256_castpd_si256(_mm256_blendv_pd(_mm256_castsi256_pd(d), _mm256_castsi256_pd(x), _mm256_castsi256_pd(d)));
}

}  // namespace

void pointwise_mul_avx2(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                        const Barrett30& br, bool accumulate) {
  const __m256i p = _mm256_set1_epi64x(static_cast<long long>(br.p));
  const __m256i mu = _mm256_set1_epi64x(static_cast<long long>(br.mu));
  const __m128i lo = _mm_cvtsi32_si128(static_cast<int>(br.shift_lo));
  const __m128i hi = _mm_cvtsi32_si128(static_cast<int>(br.shift_hi));
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
    const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i));
    __m256i x = _mm256_mul_epu32(va, vb);  // < p^2 (+ p) < 2^(2L)
    if (accumulate) x = _mm256_add_epi64(x, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(out + i)));
    const __m256i q = _mm256_srl_epi64(_mm256_mul_epu32(_mm256_srl_epi64(x, lo), mu), hi);
    __m256i r = _mm256_sub_epi64(x, _mm256_mul_epu32(q, p));  // [0, 3p)
    r = csub(csub(r, p), p);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), r);
  }
  if (i < n) pointwise_mul_native(out + i, a + i, b + i, n - i, br.p, accumulate);
}

void pointwise_mul_add_lazy_avx2(std::uint64_t* acc, const std::uint64_t* a, const std::uint64_t* b,
                                 std::size_t n) {
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
    const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i));
    const __m256i vc = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + i), _mm256_add_epi64(vc, _mm256_mul_epu32(va, vb)));
  }
  if (i < n) pointwise_mul_add_lazy_native(acc + i, a + i, b + i, n - i);
}

void reduce_words_avx2(std::uint64_t* a, std::size_t n, const Reduce32& rd) {
  const __m256i p = _mm256_set1_epi64x(static_cast<long long>(rd.p));
  const __m256i w = _mm256_set1_epi64x(static_cast<long long>(rd.w));
  const __m256i ws = _mm256_set1_epi64x(static_cast<long long>(rd.w_shoup));
  const __m256i m = _mm256_set1_epi64x(static_cast<long long>(rd.m));
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {  // every intermediate below 2^34: csub's sign test holds
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
    const __m256i h = _mm256_srli_epi64(x, 32);
    const __m256i l = _mm256_and_si256(x, _mm256_set1_epi64x(0xFFFFFFFF));
    const __m256i qh = _mm256_srli_epi64(_mm256_mul_epu32(h, ws), 32);
    const __m256i rh = _mm256_sub_epi64(_mm256_mul_epu32(h, w), _mm256_mul_epu32(qh, p));
    const __m256i ql = _mm256_srli_epi64(_mm256_mul_epu32(l, m), 32);
    const __m256i rl = _mm256_sub_epi64(l, _mm256_mul_epu32(ql, p));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(a + i), csub(_mm256_add_epi64(csub(rh, p), csub(rl, p)), p));
  }
  for (; i < n; ++i) a[i] %= rd.p;
}


// every lane below 2^63 (p < 2^62): csub's sign test holds
void split_halves_avx2(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi, std::size_t m,
                       std::size_t n, std::uint64_t p) {
  const __m256i vp = _mm256_set1_epi64x(static_cast<long long>(p));
  const __m256i zero = _mm256_setzero_si256();
  std::size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    if (hi != nullptr && j < m && j + 4 > m) {  // the block straddles the wrap-around
      split_halves_native(cur, tau, hi, m, n, p, j, j + 4);
      continue;
    }
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cur + j));
    const __m256i t = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tau + j));
    if (hi != nullptr) {
      const __m256i u = csub(_mm256_add_epi64(_mm256_sub_epi64(c, t), vp), vp);  // c − t + p ∈ [1, 2p)
      if (j >= m) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi + j - m), u);
      } else {  // p − u where u ≠ 0
        const __m256i neg = _mm256_andnot_si256(_mm256_cmpeq_epi64(u, zero), _mm256_sub_epi64(vp, u));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi + j + n - m), neg);
      }
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(cur + j), csub(_mm256_add_epi64(c, t), vp));
  }
  split_halves_native(cur, tau, hi, m, n, p, j, n);
}

void split_halves_ntt_avx2(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi,
                          const std::uint64_t* w, std::size_t n, const Barrett30& br) {
  const __m256i vp = _mm256_set1_epi64x(static_cast<long long>(br.p));
  const __m256i mu = _mm256_set1_epi64x(static_cast<long long>(br.mu));
  const __m128i lo = _mm_cvtsi32_si128(static_cast<int>(br.shift_lo));
  const __m128i sh = _mm_cvtsi32_si128(static_cast<int>(br.shift_hi));
  std::size_t j = 0;
  for (; j + 4 <= n; j += 4) {  // every lane below 2^62: csub's sign test holds
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cur + j));
    const __m256i t = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tau + j));
    if (hi != nullptr) {
      const __m256i u = csub(_mm256_add_epi64(_mm256_sub_epi64(c, t), vp), vp);  // c − t + p ∈ [1, 2p)
      const __m256i x = _mm256_mul_epu32(u, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + j)));
      const __m256i q = _mm256_srl_epi64(_mm256_mul_epu32(_mm256_srl_epi64(x, lo), mu), sh);
      const __m256i r = _mm256_sub_epi64(x, _mm256_mul_epu32(q, vp));  // [0, 3p)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi + j), csub(csub(r, vp), vp));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(cur + j), csub(_mm256_add_epi64(c, t), vp));
  }
  if (j < n) split_halves_ntt_native(cur + j, tau + j, hi != nullptr ? hi + j : nullptr, w + j, n - j, br.p);
}

void add_mod_avx2(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                  std::uint64_t p) {
  const __m256i vp = _mm256_set1_epi64x(static_cast<long long>(p));
  std::size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const __m256i s = _mm256_add_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + j)),
                                       _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + j)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), csub(s, vp));
  }
  add_mod_native(out + j, a + j, b + j, n - j, p);
}

void sub_mod_avx2(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                  std::uint64_t p) {
  const __m256i vp = _mm256_set1_epi64x(static_cast<long long>(p));
  std::size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + j));
    const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + j));
    const __m256i d = _mm256_sub_epi64(_mm256_add_epi64(x, vp), y);  // a + p − b ∈ [1, 2p)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), csub(d, vp));
  }
  sub_mod_native(out + j, a + j, b + j, n - j, p);
}

}  // namespace spiralpir::detail
