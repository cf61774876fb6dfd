// AVX-512 negacyclic NTT: 8 residues per zmm (64-bit lanes). Three kernels:
//   lazy IFMA (p·n < 2^51, CPU with IFMA): lanes hold values only mod 2^52, no conditional
//     subtractions (see LazyIfma); radix-4 passes for t >= 8, the t = 4, 2, 1 stages fused.
//   Harvey + IFMA (p < 2^50): 52-bit Shoup multiplication, values kept below 4p.
//   Harvey + vpmuludq (p < 2^30, no IFMA): 32-bit Shoup multiplication, values below 4p < 2^32.
// In the Harvey kernels the last three forward stages (first three inverse ones, t = 4, 2, 1)
// pair lanes inside two registers with vpermt2q and fetch one twiddle per group with vpermq.
// GCC 12's AVX-512 intrinsic headers build their pass-through operands from
// _mm512_undefined_*(), which trips -Wmaybe-uninitialized (GCC bug 105593) once inlined here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>


#include "ntt_kernels.hpp"

namespace spiralpir::detail {
namespace {

struct MulEpu32 {
  // y < 2^32, w < p < 2^30, ws = ⌊w·2^32/p⌋: result y·w mod p in [0, 2p).
  static __m512i mul(__m512i y, __m512i w, __m512i ws, __m512i p) {
    const __m512i q = _mm512_srli_epi64(_mm512_mul_epu32(y, ws), 32);
    return _mm512_sub_epi64(_mm512_mul_epu32(y, w), _mm512_mul_epu32(q, p));
  }
  static const std::uint64_t* fwd_shoup(const NttView& t) { return t.fwd_shoup32; }
  static const std::uint64_t* inv_shoup(const NttView& t) { return t.inv_shoup32; }
  static std::uint64_t n_inv_shoup(const NttView& t) { return t.n_inv_shoup32; }
  static std::uint64_t last_inv_shoup(const NttView& t) { return t.last_inv_shoup32; }
};

struct MulIfma {
  // y < 2^52, w < p < 2^50, ws = ⌊w·2^52/p⌋: y·w − q·p ∈ [0, 2p) is exact modulo 2^52.
  static __m512i mul(__m512i y, __m512i w, __m512i ws, __m512i p) {
    const __m512i zero = _mm512_setzero_si512();
    const __m512i q = _mm512_madd52hi_epu64(zero, y, ws);
    const __m512i r = _mm512_sub_epi64(_mm512_madd52lo_epu64(zero, y, w), _mm512_madd52lo_epu64(zero, q, p));
    return _mm512_and_si512(r, _mm512_set1_epi64((1LL << 52) - 1));
  }
  static const std::uint64_t* fwd_shoup(const NttView& t) { return t.fwd_shoup52; }
  static const std::uint64_t* inv_shoup(const NttView& t) { return t.inv_shoup52; }
  static std::uint64_t n_inv_shoup(const NttView& t) { return t.n_inv_shoup52; }
  static std::uint64_t last_inv_shoup(const NttView& t) { return t.last_inv_shoup52; }
};

inline __m512i bcast(std::uint64_t v) { return _mm512_set1_epi64(static_cast<long long>(v)); }
inline __m512i load(const std::uint64_t* p) { return _mm512_loadu_si512(p); }
inline void store(std::uint64_t* p, __m512i v) { _mm512_storeu_si512(p, v); }
// x − m when x ≥ m (x < 2m): below m the difference wraps above x, so min picks x.
inline __m512i csub(__m512i x, __m512i m) { return _mm512_min_epu64(x, _mm512_sub_epi64(x, m)); }

// Lane shuffles for a 16-word block at butterfly distance t ∈ {1, 2, 4}.
struct Shuffle {
  std::uint64_t x[8], y[8], w[8], out0[8], out1[8];
};

constexpr Shuffle make_shuffle(unsigned t) {
  Shuffle s{};
  unsigned l = 0;
  for (unsigned e = 0; e < 16; ++e) {
    if ((e & t) != 0) continue;
    s.x[l] = e;
    s.y[l] = e + t;
    s.w[l] = e / (2 * t);
    ++l;
  }
  for (unsigned l2 = 0; l2 < 8; ++l2) {
    const unsigned ex = static_cast<unsigned>(s.x[l2]), ey = ex + t;
    (ex < 8 ? s.out0[ex] : s.out1[ex - 8]) = l2;
    (ey < 8 ? s.out0[ey] : s.out1[ey - 8]) = 8 + l2;
  }
  return s;
}

constexpr Shuffle kShuffles[3] = {make_shuffle(1), make_shuffle(2), make_shuffle(4)};

// Moving a block held as (X, Y) for distance a straight into the (X, Y) layout for distance b,
// without going back to natural order: two vpermt2q instead of four.
struct Transition {
  std::uint64_t x[8], y[8];
};

constexpr Transition make_transition(unsigned a, unsigned b) {
  const Shuffle from = make_shuffle(a), to = make_shuffle(b);
  auto where = [&](std::uint64_t pos) -> std::uint64_t {
    for (unsigned l = 0; l < 8; ++l) {
      if (from.x[l] == pos) return l;
      if (from.y[l] == pos) return 8 + l;
    }
    return 0;
  };
  Transition t{};
  for (unsigned l = 0; l < 8; ++l) {
    t.x[l] = where(to.x[l]);
    t.y[l] = where(to.y[l]);
  }
  return t;
}

constexpr Transition k4to2 = make_transition(4, 2), k2to1 = make_transition(2, 1);
constexpr Transition k1to2 = make_transition(1, 2), k2to4 = make_transition(2, 4);

inline void transition(__m512i& x, __m512i& y, const Transition& t) {
  const __m512i nx = _mm512_permutex2var_epi64(x, _mm512_loadu_si512(t.x), y);
  y = _mm512_permutex2var_epi64(x, _mm512_loadu_si512(t.y), y);
  x = nx;
}

struct ShuffleRegs {
  __m512i x, y, w, out0, out1;
  explicit ShuffleRegs(const Shuffle& s)
      : x(_mm512_loadu_si512(s.x)),
        y(_mm512_loadu_si512(s.y)),
        w(_mm512_loadu_si512(s.w)),
        out0(_mm512_loadu_si512(s.out0)),
        out1(_mm512_loadu_si512(s.out1)) {}
};

template <class M>
void forward(std::uint64_t* a, const NttView& tab, bool reduce) {
  const std::size_t n = tab.n;
  const __m512i p = bcast(tab.p), two_p = bcast(2 * tab.p);
  const std::uint64_t* W = tab.fwd;
  const std::uint64_t* WS = M::fwd_shoup(tab);
  // Stages with t >= 8.
  for (std::size_t m = 1, t = n / 2; t >= 8; m <<= 1, t >>= 1) {
    for (std::size_t i = 0; i < m; ++i) {
      const __m512i w = bcast(W[m + i]), ws = bcast(WS[m + i]);
      std::uint64_t* x = a + 2 * i * t;
      std::uint64_t* y = x + t;
      for (std::size_t j = 0; j < t; j += 8) {
        const __m512i u = csub(load(x + j), two_p);
        const __m512i v = M::mul(load(y + j), w, ws, p);
        store(x + j, _mm512_add_epi64(u, v));
        store(y + j, _mm512_sub_epi64(_mm512_add_epi64(u, two_p), v));
      }
    }
  }
  // t = 4, 2, 1.
  for (int s = 2; s >= 0; --s) {
    const std::size_t t = std::size_t{1} << s, m = n / (2 * t);
    const ShuffleRegs sh(kShuffles[s]);
    const bool last = (t == 1) && reduce;
    for (std::size_t k = 0; k < n; k += 16) {
      const __m512i v0 = load(a + k), v1 = load(a + k + 8);
      const std::size_t i0 = m + k / (2 * t);
      const __m512i w = _mm512_permutexvar_epi64(sh.w, load(W + i0));
      const __m512i ws = _mm512_permutexvar_epi64(sh.w, load(WS + i0));
      const __m512i u = csub(_mm512_permutex2var_epi64(v0, sh.x, v1), two_p);
      const __m512i v = M::mul(_mm512_permutex2var_epi64(v0, sh.y, v1), w, ws, p);
      __m512i xo = _mm512_add_epi64(u, v);
      __m512i yo = _mm512_sub_epi64(_mm512_add_epi64(u, two_p), v);
      if (last) {
        xo = csub(csub(xo, two_p), p);
        yo = csub(csub(yo, two_p), p);
      }
      store(a + k, _mm512_permutex2var_epi64(xo, sh.out0, yo));
      store(a + k + 8, _mm512_permutex2var_epi64(xo, sh.out1, yo));
    }
  }
}

template <class M>
void inverse(std::uint64_t* a, const NttView& tab, bool reduce) {
  const std::size_t n = tab.n;
  const __m512i p = bcast(tab.p), two_p = bcast(2 * tab.p);
  const std::uint64_t* W = tab.inv;
  const std::uint64_t* WS = M::inv_shoup(tab);
  // t = 1, 2, 4.
  for (int s = 0; s <= 2; ++s) {
    const std::size_t t = std::size_t{1} << s, m = n / (2 * t);
    const ShuffleRegs sh(kShuffles[s]);
    for (std::size_t k = 0; k < n; k += 16) {
      const __m512i v0 = load(a + k), v1 = load(a + k + 8);
      const std::size_t i0 = m + k / (2 * t);
      const __m512i w = _mm512_permutexvar_epi64(sh.w, load(W + i0));
      const __m512i ws = _mm512_permutexvar_epi64(sh.w, load(WS + i0));
      const __m512i u = _mm512_permutex2var_epi64(v0, sh.x, v1);
      const __m512i v = _mm512_permutex2var_epi64(v0, sh.y, v1);
      const __m512i xo = csub(_mm512_add_epi64(u, v), two_p);
      const __m512i yo = M::mul(_mm512_sub_epi64(_mm512_add_epi64(u, two_p), v), w, ws, p);
      store(a + k, _mm512_permutex2var_epi64(xo, sh.out0, yo));
      store(a + k + 8, _mm512_permutex2var_epi64(xo, sh.out1, yo));
    }
  }
  // t >= 8 while more than one group remains.
  std::size_t t = 8;
  for (std::size_t m = n / 16; m > 1; m >>= 1, t <<= 1) {
    for (std::size_t i = 0; i < m; ++i) {
      const __m512i w = bcast(W[m + i]), ws = bcast(WS[m + i]);
      std::uint64_t* x = a + 2 * i * t;
      std::uint64_t* y = x + t;
      for (std::size_t j = 0; j < t; j += 8) {
        const __m512i u = load(x + j), v = load(y + j);
        store(x + j, csub(_mm512_add_epi64(u, v), two_p));
        store(y + j, M::mul(_mm512_sub_epi64(_mm512_add_epi64(u, two_p), v), w, ws, p));
      }
    }
  }
  // Last stage with 1/n folded in.
  const __m512i ni = bcast(tab.n_inv), nis = bcast(M::n_inv_shoup(tab));
  const __m512i li = bcast(tab.last_inv), lis = bcast(M::last_inv_shoup(tab));
  std::uint64_t* x = a;
  std::uint64_t* y = a + t;
  for (std::size_t j = 0; j < t; j += 8) {
    const __m512i u = load(x + j), v = load(y + j);
    __m512i xo = M::mul(_mm512_add_epi64(u, v), ni, nis, p);
    __m512i yo = M::mul(_mm512_sub_epi64(_mm512_add_epi64(u, two_p), v), li, lis, p);
    if (reduce) {
      xo = csub(xo, p);
      yo = csub(yo, p);
    }
    store(x + j, xo);
    store(y + j, yo);
  }
}

// ---- IFMA, fully lazy (p·n < 2^51) -------------------------------------------------------------
// vpmadd52{lo,hi}uq read only the low 52 bits of their operands, so a lane may hold any value
// congruent to the true one mod 2^52 as long as the true value is below 2^52. The butterflies
// then need no conditional subtractions and no masks: the true values grow by at most 2p per
// forward stage (< (4 + 2·13)p < 2^35) and double per inverse stage (< 2^14·2p < 2^45), and are
// only normalised at the end. Per 8 butterflies: 3 IFMA + 3 add/sub.
struct LazyIfma {
  __m512i p, two_p, neg_p, mask52;
  explicit LazyIfma(std::uint64_t prime)
      : p(bcast(prime)), two_p(bcast(2 * prime)), neg_p(bcast((1ULL << 52) - prime)), mask52(bcast((1ULL << 52) - 1)) {}
  // ≡ y·w − ⌊y·ws/2^52⌋·p (mod 2^52); the true value is in [0, 2p).
  __m512i mul(__m512i y, __m512i w, __m512i ws) const {
    const __m512i zero = _mm512_setzero_si512();
    const __m512i q = _mm512_madd52hi_epu64(zero, y, ws);
    return _mm512_madd52lo_epu64(_mm512_madd52lo_epu64(zero, y, w), q, neg_p);
  }
  // True value of a lane, reduced from [0, 2^52) to [0, 2p) with one Shoup quotient (w = 1).
  __m512i normalise(__m512i x, __m512i one_shoup) const {
    const __m512i t = _mm512_and_si512(x, mask52);
    const __m512i q = _mm512_madd52hi_epu64(_mm512_setzero_si512(), t, one_shoup);
    return _mm512_and_si512(_mm512_madd52lo_epu64(t, q, neg_p), mask52);
  }
};

void forward_lazy_ifma(std::uint64_t* a, const NttView& tab, bool reduce) {
  const std::size_t n = tab.n;
  const LazyIfma k(tab.p);
  const std::uint64_t* W = tab.fwd;
  const std::uint64_t* WS = tab.fwd_shoup52;
  // Stages with t >= 8, two at a time (radix 4: half the loads and stores), then one left over.
  std::size_t m = 1, t = n / 2;
  auto bfly = [&](__m512i& x, __m512i& y, __m512i w, __m512i ws) {
    const __m512i v = k.mul(y, w, ws);
    y = _mm512_sub_epi64(_mm512_add_epi64(x, k.two_p), v);
    x = _mm512_add_epi64(x, v);
  };
  for (; t >= 16; m <<= 2, t >>= 2) {
    const std::size_t h = t / 2;
    for (std::size_t i = 0; i < m; ++i) {
      const __m512i w1 = bcast(W[m + i]), ws1 = bcast(WS[m + i]);
      const __m512i w2 = bcast(W[2 * m + 2 * i]), ws2 = bcast(WS[2 * m + 2 * i]);
      const __m512i w3 = bcast(W[2 * m + 2 * i + 1]), ws3 = bcast(WS[2 * m + 2 * i + 1]);
      std::uint64_t* base = a + 2 * i * t;
      for (std::size_t j = 0; j < h; j += 8) {
        __m512i x0 = load(base + j), x1 = load(base + j + h), x2 = load(base + j + t), x3 = load(base + j + t + h);
        bfly(x0, x2, w1, ws1);
        bfly(x1, x3, w1, ws1);
        bfly(x0, x1, w2, ws2);
        bfly(x2, x3, w3, ws3);
        store(base + j, x0);
        store(base + j + h, x1);
        store(base + j + t, x2);
        store(base + j + t + h, x3);
      }
    }
  }
  for (; t >= 8; m <<= 1, t >>= 1) {
    for (std::size_t i = 0; i < m; ++i) {
      const __m512i w = bcast(W[m + i]), ws = bcast(WS[m + i]);
      std::uint64_t* x = a + 2 * i * t;
      std::uint64_t* y = x + t;
      for (std::size_t j = 0; j < t; j += 8) {
        __m512i u = load(x + j), v = load(y + j);
        bfly(u, v, w, ws);
        store(x + j, u);
        store(y + j, v);
      }
    }
  }
  // t = 4, 2, 1 fused: each 16-word block stays in two registers for all three stages.
  const __m512i one_shoup = bcast((1ULL << 52) / tab.p);
  const Shuffle& first = kShuffles[2];
  const Shuffle& last = kShuffles[0];
  const __m512i in_x = _mm512_loadu_si512(first.x), in_y = _mm512_loadu_si512(first.y);
  const __m512i out0 = _mm512_loadu_si512(last.out0), out1 = _mm512_loadu_si512(last.out1);
  for (std::size_t b = 0; b < n; b += 16) {
    const __m512i v0 = load(a + b), v1 = load(a + b + 8);
    __m512i x = _mm512_permutex2var_epi64(v0, in_x, v1);
    __m512i y = _mm512_permutex2var_epi64(v0, in_y, v1);
    for (int s = 2; s >= 0; --s) {
      const __m512i v = k.mul(y, load(tab.tail_fwd[s] + b / 2), load(tab.tail_fwd_shoup52[s] + b / 2));
      y = _mm512_sub_epi64(_mm512_add_epi64(x, k.two_p), v);
      x = _mm512_add_epi64(x, v);
      if (s == 2) transition(x, y, k4to2);
      if (s == 1) transition(x, y, k2to1);
    }
    // Back to true values in [0, 2p), then [0, p) if asked.
    x = k.normalise(x, one_shoup);
    y = k.normalise(y, one_shoup);
    if (reduce) {
      x = csub(x, k.p);
      y = csub(y, k.p);
    }
    store(a + b, _mm512_permutex2var_epi64(x, out0, y));
    store(a + b + 8, _mm512_permutex2var_epi64(x, out1, y));
  }
}

void inverse_lazy_ifma(std::uint64_t* a, const NttView& tab, bool reduce) {
  const std::size_t n = tab.n;
  const LazyIfma k(tab.p);
  const std::uint64_t* W = tab.inv;
  const std::uint64_t* WS = tab.inv_shoup52;
  // Every value is below `bound` (a multiple of p) before a stage; adding it keeps x − y ≥ 0.
  std::uint64_t bound = 2 * tab.p;
  // t = 1, 2, 4 fused: each 16-word block stays in two registers for all three stages.
  {
    const Shuffle& first = kShuffles[0];
    const Shuffle& last = kShuffles[2];
    const __m512i in_x = _mm512_loadu_si512(first.x), in_y = _mm512_loadu_si512(first.y);
    const __m512i out0 = _mm512_loadu_si512(last.out0), out1 = _mm512_loadu_si512(last.out1);
    const __m512i c0 = bcast(bound), c1 = bcast(2 * bound), c2 = bcast(4 * bound);
    for (std::size_t b = 0; b < n; b += 16) {
      const __m512i v0 = load(a + b), v1 = load(a + b + 8);
      __m512i x = _mm512_permutex2var_epi64(v0, in_x, v1);
      __m512i y = _mm512_permutex2var_epi64(v0, in_y, v1);
      for (int s = 0; s <= 2; ++s) {
        const __m512i c = s == 0 ? c0 : (s == 1 ? c1 : c2);
        const __m512i d = _mm512_sub_epi64(_mm512_add_epi64(x, c), y);
        x = _mm512_add_epi64(x, y);
        y = k.mul(d, load(tab.tail_inv[s] + b / 2), load(tab.tail_inv_shoup52[s] + b / 2));
        if (s == 0) transition(x, y, k1to2);
        if (s == 1) transition(x, y, k2to4);
      }
      store(a + b, _mm512_permutex2var_epi64(x, out0, y));
      store(a + b + 8, _mm512_permutex2var_epi64(x, out1, y));
    }
    bound <<= 3;
  }
  // Stages with t >= 8 while more than one group remains: two at a time (radix 4), then one.
  auto bfly = [&](__m512i& x, __m512i& y, __m512i c, __m512i w, __m512i ws) {
    const __m512i d = _mm512_sub_epi64(_mm512_add_epi64(x, c), y);
    x = _mm512_add_epi64(x, y);
    y = k.mul(d, w, ws);
  };
  std::size_t t = 8, m = n / 16;
  for (; m >= 4; m >>= 2, t <<= 2, bound <<= 2) {
    const __m512i c1 = bcast(bound), c2 = bcast(2 * bound);
    for (std::size_t i = 0; i < m / 2; ++i) {
      const __m512i w1 = bcast(W[m + 2 * i]), ws1 = bcast(WS[m + 2 * i]);
      const __m512i w2 = bcast(W[m + 2 * i + 1]), ws2 = bcast(WS[m + 2 * i + 1]);
      const __m512i w3 = bcast(W[m / 2 + i]), ws3 = bcast(WS[m / 2 + i]);
      std::uint64_t* base = a + 4 * i * t;
      for (std::size_t j = 0; j < t; j += 8) {
        __m512i x0 = load(base + j), x1 = load(base + j + t), x2 = load(base + j + 2 * t), x3 = load(base + j + 3 * t);
        bfly(x0, x1, c1, w1, ws1);
        bfly(x2, x3, c1, w2, ws2);
        bfly(x0, x2, c2, w3, ws3);
        bfly(x1, x3, c2, w3, ws3);
        store(base + j, x0);
        store(base + j + t, x1);
        store(base + j + 2 * t, x2);
        store(base + j + 3 * t, x3);
      }
    }
  }
  for (; m > 1; m >>= 1, t <<= 1, bound <<= 1) {
    const __m512i c = bcast(bound);
    for (std::size_t i = 0; i < m; ++i) {
      const __m512i w = bcast(W[m + i]), ws = bcast(WS[m + i]);
      std::uint64_t* x = a + 2 * i * t;
      std::uint64_t* y = x + t;
      for (std::size_t j = 0; j < t; j += 8) {
        __m512i u = load(x + j), v = load(y + j);
        bfly(u, v, c, w, ws);
        store(x + j, u);
        store(y + j, v);
      }
    }
  }
  const __m512i ni = bcast(tab.n_inv), nis = bcast(tab.n_inv_shoup52);
  const __m512i li = bcast(tab.last_inv), lis = bcast(tab.last_inv_shoup52);
  const __m512i c = bcast(bound);
  std::uint64_t* x = a;
  std::uint64_t* y = a + t;
  for (std::size_t j = 0; j < t; j += 8) {
    const __m512i u = load(x + j), v = load(y + j);
    __m512i xo = _mm512_and_si512(k.mul(_mm512_add_epi64(u, v), ni, nis), k.mask52);
    __m512i yo = _mm512_and_si512(k.mul(_mm512_sub_epi64(_mm512_add_epi64(u, c), v), li, lis), k.mask52);
    if (reduce) {
      xo = csub(xo, k.p);
      yo = csub(yo, k.p);
    }
    store(x + j, xo);
    store(y + j, yo);
  }
}

// The lazy IFMA kernels need every true value below 2^52: forward values stay below
// (4 + 2·log2 n)·p ≤ 30p, inverse ones below 2p·n.
bool lazy_ifma_fits(const NttView& t) {
  return t.ifma && t.p < (1ULL << 47) && t.p * t.n < (1ULL << 51);
}

}  // namespace

void ntt_forward_avx512(std::uint64_t* a, const NttView& t, bool reduce) {
  if (lazy_ifma_fits(t))
    forward_lazy_ifma(a, t, reduce);
  else if (t.p < (1ULL << 30))
    forward<MulEpu32>(a, t, reduce);
  else
    forward<MulIfma>(a, t, reduce);
}

void ntt_inverse_avx512(std::uint64_t* a, const NttView& t, bool reduce) {
  if (lazy_ifma_fits(t))
    inverse_lazy_ifma(a, t, reduce);
  else if (t.p < (1ULL << 30))
    inverse<MulEpu32>(a, t, reduce);
  else
    inverse<MulIfma>(a, t, reduce);
}

}  // namespace spiralpir::detail
