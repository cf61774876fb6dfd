// reduce32_avx512.hpp (internal) — Reduce32 (pointwise_kernels.hpp) on 8 lanes: any 64-bit
// words mod p < 2^32, for the AVX-512 translation units only.
#pragma once

// GCC 12's unmasked AVX-512 intrinsics trip -Wmaybe-uninitialized once inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "pointwise_kernels.hpp"

namespace spiralpir::detail {

struct Reduce32Avx512 {
  __m512i p, w, ws, m;
  explicit Reduce32Avx512(const Reduce32& rd)
      : p(_mm512_set1_epi64(static_cast<long long>(rd.p))),
        w(_mm512_set1_epi64(static_cast<long long>(rd.w))),
        ws(_mm512_set1_epi64(static_cast<long long>(rd.w_shoup))),
        m(_mm512_set1_epi64(static_cast<long long>(rd.m))) {}

  __m512i csub(__m512i x) const { return _mm512_min_epu64(x, _mm512_sub_epi64(x, p)); }  // x − p wraps above x

  __m512i operator()(__m512i x) const {
    const __m512i h = _mm512_srli_epi64(x, 32);
    const __m512i l = _mm512_and_si512(x, _mm512_set1_epi64(0xFFFFFFFF));
    const __m512i qh = _mm512_srli_epi64(_mm512_mul_epu32(h, ws), 32);
    const __m512i rh = _mm512_sub_epi64(_mm512_mul_epu32(h, w), _mm512_mul_epu32(qh, p));  // [0, 2p)
    const __m512i ql = _mm512_srli_epi64(_mm512_mul_epu32(l, m), 32);
    const __m512i rl = _mm512_sub_epi64(l, _mm512_mul_epu32(ql, p));  // [0, 2p)
    return csub(_mm512_add_epi64(csub(rh), csub(rl)));
  }
};

}  // namespace spiralpir::detail
