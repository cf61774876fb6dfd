// AVX2 negacyclic NTT: 4 residues per ymm (64-bit lanes), p < 2^30, Harvey butterflies with
// 32-bit Shoup multiplication (vpmuludq); lazy values stay below 4p < 2^32.
// Stages with t >= 4 broadcast one twiddle per group; t = 2 pairs 128-bit halves of two
// registers, t = 1 pairs their 64-bit words (unpack), with matching twiddle permutations.
#include <immintrin.h>

#include "ntt_kernels.hpp"

namespace spiralpir::detail {
namespace {

inline __m256i bcast(std::uint64_t v) { return _mm256_set1_epi64x(static_cast<long long>(v)); }
inline __m256i load(const std::uint64_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline void store(std::uint64_t* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }

// x − m when x ≥ m, for lanes below 2^63: the sign bit of x − m selects x.
inline __m256i csub(__m256i x, __m256i m) {
  const __m256i d = _mm256_sub_epi64(x, m);
  return _mm256_castpd_si256(
      _mm256_blendv_pd(_mm256_castsi256_pd(d), _mm256_castsi256_pd(x), _mm256_castsi256_pd(d)));
}

// y < 2^32, w < p < 2^30, ws = ⌊w·2^32/p⌋: y·w mod p in [0, 2p).
inline __m256i mul_shoup(__m256i y, __m256i w, __m256i ws, __m256i p) {
  const __m256i q = _mm256_srli_epi64(_mm256_mul_epu32(y, ws), 32);
  return _mm256_sub_epi64(_mm256_mul_epu32(y, w), _mm256_mul_epu32(q, p));
}

// Split two registers holding 8 consecutive words into X (first halves of each butterfly
// pair) and Y, for t = 2 or 1, and merge them back. For t = 1 the lane order of X and Y is
// (0, 2, 1, 3) within the block, so twiddles are permuted the same way.
template <int T>
inline void split(__m256i v0, __m256i v1, __m256i& x, __m256i& y) {
  if constexpr (T == 2) {
    x = _mm256_permute2x128_si256(v0, v1, 0x20);
    y = _mm256_permute2x128_si256(v0, v1, 0x31);
  } else {
    x = _mm256_unpacklo_epi64(v0, v1);
    y = _mm256_unpackhi_epi64(v0, v1);
  }
}
template <int T>
inline void merge(__m256i x, __m256i y, __m256i& v0, __m256i& v1) {
  if constexpr (T == 2) {
    v0 = _mm256_permute2x128_si256(x, y, 0x20);
    v1 = _mm256_permute2x128_si256(x, y, 0x31);
  } else {
    v0 = _mm256_unpacklo_epi64(x, y);
    v1 = _mm256_unpackhi_epi64(x, y);
  }
}
template <int T>
inline __m256i twiddles(const std::uint64_t* w) {
  const __m256i v = load(w);
  if constexpr (T == 2)
    return _mm256_permute4x64_epi64(v, 0x50);  // groups (0, 0, 1, 1)
  else
    return _mm256_permute4x64_epi64(v, 0xd8);  // groups (0, 2, 1, 3)
}

template <int T>
void forward_small(std::uint64_t* a, const NttView& tab, bool reduce) {
  const std::size_t n = tab.n, m = n / (2 * T);
  const __m256i p = bcast(tab.p), two_p = bcast(2 * tab.p);
  for (std::size_t k = 0; k < n; k += 8) {
    __m256i u, v;
    split<T>(load(a + k), load(a + k + 4), u, v);
    const std::size_t i0 = m + k / (2 * T);
    const __m256i w = twiddles<T>(tab.fwd + i0), ws = twiddles<T>(tab.fwd_shoup32 + i0);
    u = csub(u, two_p);
    v = mul_shoup(v, w, ws, p);
    __m256i xo = _mm256_add_epi64(u, v);
    __m256i yo = _mm256_sub_epi64(_mm256_add_epi64(u, two_p), v);
    if (reduce) {
      xo = csub(csub(xo, two_p), p);
      yo = csub(csub(yo, two_p), p);
    }
    __m256i v0, v1;
    merge<T>(xo, yo, v0, v1);
    store(a + k, v0);
    store(a + k + 4, v1);
  }
}

template <int T>
void inverse_small(std::uint64_t* a, const NttView& tab) {
  const std::size_t n = tab.n, m = n / (2 * T);
  const __m256i p = bcast(tab.p), two_p = bcast(2 * tab.p);
  for (std::size_t k = 0; k < n; k += 8) {
    __m256i u, v;
    split<T>(load(a + k), load(a + k + 4), u, v);
    const std::size_t i0 = m + k / (2 * T);
    const __m256i w = twiddles<T>(tab.inv + i0), ws = twiddles<T>(tab.inv_shoup32 + i0);
    const __m256i xo = csub(_mm256_add_epi64(u, v), two_p);
    const __m256i yo = mul_shoup(_mm256_sub_epi64(_mm256_add_epi64(u, two_p), v), w, ws, p);
    __m256i v0, v1;
    merge<T>(xo, yo, v0, v1);
    store(a + k, v0);
    store(a + k + 4, v1);
  }
}

}  // namespace

void ntt_forward_avx2(std::uint64_t* a, const NttView& tab, bool reduce) {
  const std::size_t n = tab.n;
  const __m256i p = bcast(tab.p), two_p = bcast(2 * tab.p);
  for (std::size_t m = 1, t = n / 2; t >= 4; m <<= 1, t >>= 1) {
    for (std::size_t i = 0; i < m; ++i) {
      const __m256i w = bcast(tab.fwd[m + i]), ws = bcast(tab.fwd_shoup32[m + i]);
      std::uint64_t* x = a + 2 * i * t;
      std::uint64_t* y = x + t;
      for (std::size_t j = 0; j < t; j += 4) {
        const __m256i u = csub(load(x + j), two_p);
        const __m256i v = mul_shoup(load(y + j), w, ws, p);
        store(x + j, _mm256_add_epi64(u, v));
        store(y + j, _mm256_sub_epi64(_mm256_add_epi64(u, two_p), v));
      }
    }
  }
  forward_small<2>(a, tab, false);
  forward_small<1>(a, tab, reduce);
}

void ntt_inverse_avx2(std::uint64_t* a, const NttView& tab, bool reduce) {
  const std::size_t n = tab.n;
  const __m256i p = bcast(tab.p), two_p = bcast(2 * tab.p);
  inverse_small<1>(a, tab);
  inverse_small<2>(a, tab);
  std::size_t t = 4;
  for (std::size_t m = n / 8; m > 1; m >>= 1, t <<= 1) {
    for (std::size_t i = 0; i < m; ++i) {
      const __m256i w = bcast(tab.inv[m + i]), ws = bcast(tab.inv_shoup32[m + i]);
      std::uint64_t* x = a + 2 * i * t;
      std::uint64_t* y = x + t;
      for (std::size_t j = 0; j < t; j += 4) {
        const __m256i u = load(x + j), v = load(y + j);
        store(x + j, csub(_mm256_add_epi64(u, v), two_p));
        store(y + j, mul_shoup(_mm256_sub_epi64(_mm256_add_epi64(u, two_p), v), w, ws, p));
      }
    }
  }
  const __m256i ni = bcast(tab.n_inv), nis = bcast(tab.n_inv_shoup32);
  const __m256i li = bcast(tab.last_inv), lis = bcast(tab.last_inv_shoup32);
  std::uint64_t* x = a;
  std::uint64_t* y = a + t;
  for (std::size_t j = 0; j < t; j += 4) {
    const __m256i u = load(x + j), v = load(y + j);
    __m256i xo = mul_shoup(_mm256_add_epi64(u, v), ni, nis, p);
    __m256i yo = mul_shoup(_mm256_sub_epi64(_mm256_add_epi64(u, two_p), v), li, lis, p);
    if (reduce) {
      xo = csub(xo, p);
      yo = csub(yo, p);
    }
    store(x + j, xo);
    store(y + j, yo);
  }
}

}  // namespace spiralpir::detail
