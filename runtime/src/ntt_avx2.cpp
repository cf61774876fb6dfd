// AVX2 negacyclic NTT: 8 residues per ymm (32-bit lanes), p < 2^30, Harvey butterflies with
// 32-bit Shoup multiplication; lazy values stay below 4p < 2^32.
// The 64-bit words are packed into 32-bit lanes in place (the first half of the buffer) before
// the stages and widened back after them: half the loads, stores and multiplications per
// butterfly of 64-bit lanes, which matters most where 256-bit operations are split in two.
// Stages with t >= 8 broadcast one twiddle per group; t = 4, 2, 1 pair 128-bit halves, 64-bit
// pairs and 32-bit words of two registers, with matching twiddle permutations.
// Every memory access goes through the vector load/store intrinsics (which may alias), so
// viewing the 64-bit buffer as 32-bit lanes is well defined.
#include <immintrin.h>

#include "ntt_kernels.hpp"

namespace spiralpir::detail {
namespace {

using V = __m256i;

inline V set32(std::uint64_t v) { return _mm256_set1_epi32(static_cast<int>(v)); }
inline V load(const void* p) { return _mm256_loadu_si256(static_cast<const V*>(p)); }
inline void store(void* p, V v) { _mm256_storeu_si256(static_cast<V*>(p), v); }

// x − m when x ≥ m, for unsigned lanes with m < 2^31: otherwise x − m wraps above x.
inline V csub(V x, V m) { return _mm256_min_epu32(x, _mm256_sub_epi32(x, m)); }

// The high 32 bits of each lane's product a·b; b_odd holds b's odd lanes in the even ones.
inline V mulhi(V a, V b, V b_odd) {
  const V even = _mm256_srli_epi64(_mm256_mul_epu32(a, b), 32);
  const V odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), b_odd);
  return _mm256_blend_epi32(even, odd, 0xAA);
}

// y < 2^32, w < p < 2^30, ws = ⌊w·2^32/p⌋: y·w mod p in [0, 2p), exact in 32-bit lanes because
// the true value is below 2^32. (Forming the low products from even and odd vpmuludq instead
// of vpmulld measured 9% slower on Zen 1: the shifts and blends cost more than they save.)
inline V mul_shoup(V y, V w, V ws, V ws_odd, V p) {
  const V q = mulhi(y, ws, ws_odd);
  return _mm256_sub_epi32(_mm256_mullo_epi32(y, w), _mm256_mullo_epi32(q, p));
}

// The 64-bit words a[0, n) as 32-bit lanes in a's first n·4 bytes, in order. Block k is read
// before block k is written, and writes never reach a block not yet read.
void pack(std::uint64_t* a, std::size_t n) {
  auto* b = reinterpret_cast<std::uint32_t*>(a);
  for (std::size_t k = 0; k < n; k += 8) {
    const __m256 lo = _mm256_castsi256_ps(load(a + k)), hi = _mm256_castsi256_ps(load(a + k + 4));
    const V low_words = _mm256_castps_si256(_mm256_shuffle_ps(lo, hi, 0x88));
    store(b + k, _mm256_permute4x64_epi64(low_words, 0xd8));
  }
}

// The inverse of pack, from the last block down so that no block is overwritten before it is read.
void unpack(std::uint64_t* a, std::size_t n) {
  const auto* b = reinterpret_cast<const std::uint32_t*>(a);
  for (std::size_t k = n; k > 0;) {
    k -= 8;
    const V v = load(b + k);
    store(a + k, _mm256_cvtepu32_epi64(_mm256_castsi256_si128(v)));
    store(a + k + 4, _mm256_cvtepu32_epi64(_mm256_extracti128_si256(v, 1)));
  }
}

// Two registers hold 16 consecutive lanes; X gets the first lane of every butterfly pair of
// distance T, Y its partner. Twiddles<T> loads the groups' twiddles (64-bit table words, values
// below 2^32) in X's lane order.
template <int T>
inline void split(V v0, V v1, V& x, V& y) {
  if constexpr (T == 4) {  // groups (0 ×4, 1 ×4)
    x = _mm256_inserti128_si256(v0, _mm256_castsi256_si128(v1), 1);
    y = _mm256_inserti128_si256(v1, _mm256_extracti128_si256(v0, 1), 0);
  } else if constexpr (T == 2) {  // groups (0, 0, 2, 2, 1, 1, 3, 3)
    x = _mm256_unpacklo_epi64(v0, v1);
    y = _mm256_unpackhi_epi64(v0, v1);
  } else {  // groups (0, 1, 4, 5, 2, 3, 6, 7)
    const __m256 f0 = _mm256_castsi256_ps(v0), f1 = _mm256_castsi256_ps(v1);
    x = _mm256_castps_si256(_mm256_shuffle_ps(f0, f1, 0x88));
    y = _mm256_castps_si256(_mm256_shuffle_ps(f0, f1, 0xdd));
  }
}
template <int T>
inline void merge(V x, V y, V& v0, V& v1) {
  if constexpr (T == 4) {
    v0 = _mm256_inserti128_si256(x, _mm256_castsi256_si128(y), 1);
    v1 = _mm256_inserti128_si256(y, _mm256_extracti128_si256(x, 1), 0);
  } else if constexpr (T == 2) {
    v0 = _mm256_unpacklo_epi64(x, y);
    v1 = _mm256_unpackhi_epi64(x, y);
  } else {
    v0 = _mm256_unpacklo_epi32(x, y);
    v1 = _mm256_unpackhi_epi32(x, y);
  }
}
template <int T>
inline V twiddles(const std::uint64_t* w) {
  if constexpr (T == 4) {
    const V v = _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
    return _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2));
  } else if constexpr (T == 2) {
    return _mm256_permutevar8x32_epi32(load(w), _mm256_setr_epi32(0, 0, 4, 4, 2, 2, 6, 6));
  } else {
    const __m256 lo = _mm256_castsi256_ps(load(w)), hi = _mm256_castsi256_ps(load(w + 4));
    return _mm256_castps_si256(_mm256_shuffle_ps(lo, hi, 0x88));
  }
}
// For T = 4 and 2 both halves of every 64-bit lane hold the same twiddle.
template <int T>
inline V odd_lanes(V ws) {
  if constexpr (T == 1) return _mm256_srli_epi64(ws, 32);
  else return ws;
}

template <int T>
void forward_small(std::uint32_t* b, const NttView& tab, bool reduce) {
  const std::size_t n = tab.n, m = n / (2 * T);
  const V p = set32(tab.p), two_p = set32(2 * tab.p);
  for (std::size_t k = 0; k < n; k += 16) {
    V u, v;
    split<T>(load(b + k), load(b + k + 8), u, v);
    const std::size_t i0 = m + k / (2 * T);
    const V w = twiddles<T>(tab.fwd + i0), ws = twiddles<T>(tab.fwd_shoup32 + i0);
    u = csub(u, two_p);
    v = mul_shoup(v, w, ws, odd_lanes<T>(ws), p);
    V xo = _mm256_add_epi32(u, v);
    V yo = _mm256_sub_epi32(_mm256_add_epi32(u, two_p), v);
    if (reduce) {
      xo = csub(csub(xo, two_p), p);
      yo = csub(csub(yo, two_p), p);
    }
    V v0, v1;
    merge<T>(xo, yo, v0, v1);
    store(b + k, v0);
    store(b + k + 8, v1);
  }
}

template <int T>
void inverse_small(std::uint32_t* b, const NttView& tab) {
  const std::size_t n = tab.n, m = n / (2 * T);
  const V p = set32(tab.p), two_p = set32(2 * tab.p);
  for (std::size_t k = 0; k < n; k += 16) {
    V u, v;
    split<T>(load(b + k), load(b + k + 8), u, v);
    const std::size_t i0 = m + k / (2 * T);
    const V w = twiddles<T>(tab.inv + i0), ws = twiddles<T>(tab.inv_shoup32 + i0);
    const V xo = csub(_mm256_add_epi32(u, v), two_p);
    const V yo = mul_shoup(_mm256_sub_epi32(_mm256_add_epi32(u, two_p), v), w, ws,
                           odd_lanes<T>(ws), p);
    V v0, v1;
    merge<T>(xo, yo, v0, v1);
    store(b + k, v0);
    store(b + k + 8, v1);
  }
}

}  // namespace

void ntt_forward_avx2(std::uint64_t* a, const NttView& tab, bool reduce) {
  const std::size_t n = tab.n;
  const V p = set32(tab.p), two_p = set32(2 * tab.p);
  pack(a, n);
  auto* b = reinterpret_cast<std::uint32_t*>(a);
  for (std::size_t m = 1, t = n / 2; t >= 8; m <<= 1, t >>= 1) {
    for (std::size_t i = 0; i < m; ++i) {
      const V w = set32(tab.fwd[m + i]), ws = set32(tab.fwd_shoup32[m + i]);
      std::uint32_t* x = b + 2 * i * t;
      std::uint32_t* y = x + t;
      for (std::size_t j = 0; j < t; j += 8) {
        const V u = csub(load(x + j), two_p);
        const V v = mul_shoup(load(y + j), w, ws, ws, p);
        store(x + j, _mm256_add_epi32(u, v));
        store(y + j, _mm256_sub_epi32(_mm256_add_epi32(u, two_p), v));
      }
    }
  }
  forward_small<4>(b, tab, false);
  forward_small<2>(b, tab, false);
  forward_small<1>(b, tab, reduce);
  unpack(a, n);
}

void ntt_inverse_avx2(std::uint64_t* a, const NttView& tab, bool reduce) {
  const std::size_t n = tab.n;
  const V p = set32(tab.p), two_p = set32(2 * tab.p);
  pack(a, n);
  auto* b = reinterpret_cast<std::uint32_t*>(a);
  inverse_small<1>(b, tab);
  inverse_small<2>(b, tab);
  inverse_small<4>(b, tab);
  std::size_t t = 8;
  for (std::size_t m = n / 16; m > 1; m >>= 1, t <<= 1) {
    for (std::size_t i = 0; i < m; ++i) {
      const V w = set32(tab.inv[m + i]), ws = set32(tab.inv_shoup32[m + i]);
      std::uint32_t* x = b + 2 * i * t;
      std::uint32_t* y = x + t;
      for (std::size_t j = 0; j < t; j += 8) {
        const V u = load(x + j), v = load(y + j);
        store(x + j, csub(_mm256_add_epi32(u, v), two_p));
        store(y + j, mul_shoup(_mm256_sub_epi32(_mm256_add_epi32(u, two_p), v), w, ws, ws, p));
      }
    }
  }
  const V ni = set32(tab.n_inv), nis = set32(tab.n_inv_shoup32);
  const V li = set32(tab.last_inv), lis = set32(tab.last_inv_shoup32);
  std::uint32_t* x = b;
  std::uint32_t* y = b + t;
  for (std::size_t j = 0; j < t; j += 8) {
    const V u = load(x + j), v = load(y + j);
    V xo = mul_shoup(_mm256_add_epi32(u, v), ni, nis, nis, p);
    V yo = mul_shoup(_mm256_sub_epi32(_mm256_add_epi32(u, two_p), v), li, lis, lis, p);
    if (reduce) {
      xo = csub(xo, p);
      yo = csub(yo, p);
    }
    store(x + j, xo);
    store(y + j, yo);
  }
  unpack(a, n);
}

}  // namespace spiralpir::detail
