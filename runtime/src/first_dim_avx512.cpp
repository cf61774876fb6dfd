// AVX-512 kernels of the first dimension (spiral/first_dim.hpp describes the algorithm, the
// word layout and the lazy-reduction bounds; spiral/first_dim_kernels.hpp the entry points).
// The accumulators live in registers only if the loops over them are fully unrolled, so the
// kernel is a template over the task's shape (n, prime group width W, folding indices per block
// NB), instantiated here for every shape the parameter checks allow (n ≤ 8, W ≤ 2, NB = jblock);
// everything else (I, J, the fold interval and constants) is a runtime value.
// GCC 12's intrinsic headers trip -Wmaybe-uninitialized on _mm512_undefined (GCC bug 105593);
// the masked-zero forms below avoid it.
#include <immintrin.h>

#include <algorithm>
#include <stdexcept>

#include "spiralpir/spiral/first_dim_kernels.hpp"

namespace spiralpir {
namespace {

constexpr std::size_t kLanes = 8;  // one zmm register = 8 slots
constexpr std::uint64_t kU64Max = ~std::uint64_t{0};

/// Software prefetch of the database stream at two distances ahead of the current i: far into
/// L2 (more misses in flight than L1's fill buffers allow), then near into L1 from L2; hardware
/// prefetchers stop at 4 KiB page boundaries. StreamPack's first dimension at 2^14 × 100 KB
/// streamed 11.1 GB/s with one L1 prefetch 4 KiB ahead, 12.6–13.2 with these distances.
constexpr std::size_t kPrefetchNearBytes = 2048;
constexpr std::size_t kPrefetchFarBytes = 24576;

// the accumulator, query and database arrays below are indexed by these loops' counters: only
// fully unrolled loops keep them in registers (GCC otherwise spills them to the stack and
// reloads every accumulator on every i)
#define SPIRALPIR_UNROLL _Pragma("GCC unroll 64")

/// `dist` bytes past `at` in the stream of this piece (ending at `piece_end`) continued at `next`
/// (null: the stream ends there, and so does the prefetch)
inline const char* ahead(const std::uint32_t* at, std::size_t dist, const char* piece_end, const std::uint32_t* next) {
  const char* a = reinterpret_cast<const char*>(at) + dist;
  if (a < piece_end) return a;
  return next == nullptr ? nullptr : reinterpret_cast<const char*>(next) + (a - piece_end);
}

/// exact reduction of x < 2^64 to [0, p) (Barrett: x − ⌊x·m/2^64⌋·p lies in [0, 2p))
inline std::uint64_t reduce_exact(std::uint64_t x, std::uint64_t p, std::uint64_t barrett) {
  const std::uint64_t qt = static_cast<std::uint64_t>((static_cast<unsigned __int128>(x) * barrett) >> 64);
  x -= qt * p;
  return x >= p ? x - p : x;
}

template <unsigned N, std::size_t W, std::size_t NB>
struct Kernel {
  static constexpr std::size_t RK = std::size_t{N + 1} * N;  // query entries (r, k)
  static constexpr std::size_t NN = std::size_t{N} * N;      // plaintext entries (k, c)
  static constexpr std::size_t step = NB * NN * W * kLanes;  // u32 words per i
  static constexpr std::size_t step_bytes = step * 4;
  static constexpr std::size_t per_block = NB * RK * W * kLanes;  // accumulator words of a block

  /// the block's accumulators between memory (acc) and registers (a)
  [[gnu::always_inline]] static void load(__m512i (&a)[NB][RK][W], const std::uint64_t* acc) {
    SPIRALPIR_UNROLL
    for (std::size_t b = 0; b < NB; ++b)
      SPIRALPIR_UNROLL
      for (std::size_t x = 0; x < RK; ++x)
        SPIRALPIR_UNROLL
        for (std::size_t h = 0; h < W; ++h) a[b][x][h] = _mm512_load_si512(acc + ((b * RK + x) * W + h) * kLanes);
  }
  [[gnu::always_inline]] static void store(std::uint64_t* acc, const __m512i (&a)[NB][RK][W]) {
    SPIRALPIR_UNROLL
    for (std::size_t b = 0; b < NB; ++b)
      SPIRALPIR_UNROLL
      for (std::size_t x = 0; x < RK; ++x)
        SPIRALPIR_UNROLL
        for (std::size_t h = 0; h < W; ++h) _mm512_store_si512(acc + ((b * RK + x) * W + h) * kLanes, a[b][x][h]);
  }

  /// acc (one block of NB folding indices, in memory) += `count` values of i starting at q / w:
  /// the accumulators are loaded into registers and stored back, and folded (or reduced exactly)
  /// before any i that would take them past t.chunk values since the last fold; `since` values
  /// were added before this call. Returns the count after it (the same for every block of a
  /// pass). `next` (or null) is where the caller's stream continues after this piece: the
  /// software prefetch runs on into it.
  static std::size_t piece(const FirstDimTask& t, std::uint64_t* acc, const std::uint32_t* q, const std::uint32_t* w,
                           std::size_t count, const std::uint32_t* next, std::size_t since) {
    __m512i a[NB][RK][W];
    load(a, acc);
    __m512i cst[W];
    SPIRALPIR_UNROLL
    for (std::size_t h = 0; h < W; ++h) cst[h] = _mm512_set1_epi64(static_cast<long long>(t.fold_const[h]));
    const __m512i lo32 = _mm512_set1_epi64(0xffffffffLL);
    const char* const piece_end = reinterpret_cast<const char*>(w + count * step);
    // at most one piece ahead: the next piece (of the same length) is where the stream goes on
    const std::size_t far_dist = std::min(kPrefetchFarBytes, count * step_bytes);
    const std::size_t chunk = t.chunk;
    for (std::size_t i = 0; i < count; ++i, ++since) {
      if (since == chunk) {
        since = 0;
        if (t.fold) {
          SPIRALPIR_UNROLL
          for (std::size_t b = 0; b < NB; ++b)
            SPIRALPIR_UNROLL
            for (std::size_t x = 0; x < RK; ++x)
              SPIRALPIR_UNROLL
              for (std::size_t h = 0; h < W; ++h)
                a[b][x][h] = _mm512_add_epi64(_mm512_and_si512(a[b][x][h], lo32),
                                              _mm512_maskz_mul_epu32(0xFF, _mm512_maskz_srli_epi64(0xFF, a[b][x][h], 32), cst[h]));
        } else {  // rare primes (2^32 mod p large): exact reduction through memory
          store(acc, a);
          squeeze(t, acc);
          load(a, acc);
        }
      }
      const std::uint32_t* qi = q + i * RK * W * kLanes;
      const std::uint32_t* wi = w + i * step;
      if (const char* far = ahead(wi, far_dist, piece_end, next))
        SPIRALPIR_UNROLL
        for (std::size_t x = 0; x < step_bytes; x += 64) _mm_prefetch(far + x, _MM_HINT_T1);
      if (const char* near = ahead(wi, kPrefetchNearBytes, piece_end, next))
        SPIRALPIR_UNROLL
        for (std::size_t x = 0; x < step_bytes; x += 64) _mm_prefetch(near + x, _MM_HINT_T0);
      __m512i qv[RK][W];
      SPIRALPIR_UNROLL
      for (std::size_t x = 0; x < RK; ++x) {  // the query words are laid out like the database's
        if constexpr (W == 2) {
          qv[x][0] = _mm512_load_si512(qi + x * W * kLanes);
          qv[x][1] = _mm512_maskz_srli_epi64(0xFF, qv[x][0], 32);
        } else {
          qv[x][0] = _mm512_maskz_cvtepu32_epi64(0xFF, _mm256_load_si256(reinterpret_cast<const __m256i*>(qi + x * kLanes)));
        }
      }
      SPIRALPIR_UNROLL
      for (std::size_t b = 0; b < NB; ++b) {
        __m512i v[NN][W];
        SPIRALPIR_UNROLL
        for (std::size_t kc = 0; kc < NN; ++kc) {
          const std::uint32_t* src = wi + (b * NN + kc) * W * kLanes;
          if constexpr (W == 2) {
            v[kc][0] = _mm512_loadu_si512(src);  // a mapped file's words start 32 bytes into a page
            v[kc][1] = _mm512_maskz_srli_epi64(0xFF, v[kc][0], 32);
          } else {
            v[kc][0] = _mm512_maskz_cvtepu32_epi64(0xFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)));
          }
        }
        SPIRALPIR_UNROLL
        for (unsigned r = 0; r <= N; ++r)
          SPIRALPIR_UNROLL
          for (unsigned k = 0; k < N; ++k)
            SPIRALPIR_UNROLL
            for (unsigned c = 0; c < N; ++c)
              SPIRALPIR_UNROLL
              for (std::size_t h = 0; h < W; ++h)
                a[b][r * N + c][h] =
                    _mm512_add_epi64(a[b][r * N + c][h], _mm512_maskz_mul_epu32(0xFF, qv[r * N + k][h], v[k * N + c][h]));
      }
    }
    store(acc, a);
    return since;
  }

  /// without folding: reduce every accumulator of a block exactly
  static void squeeze(const FirstDimTask& t, std::uint64_t* acc) {
    for (std::size_t x = 0; x < NB * RK * W; ++x) {
      const std::uint64_t p = t.prime[x % W], m = kU64Max / p;
      for (std::size_t l = 0; l < kLanes; ++l) acc[x * kLanes + l] = reduce_exact(acc[x * kLanes + l], p, m);
    }
  }

  /// One task's passes: t.pass values of i at a time, every block of folding indices in turn, so
  /// the pass's query vectors stay in L1 while the blocks stream their pieces; the accumulators
  /// of all J indices wait in `accs` (L1/L2) between passes. (One block over the whole i range
  /// instead re-reads an L2-sized query slice from L2 for every block, and those misses take the
  /// L1 fill buffers the database stream needs: StreamPack's first dimension at 2^14 × 100 KB
  /// streamed 10.8 GB/s that way, 11.4 in passes.)
  static void task(const FirstDimTask& t, std::uint64_t* accs, const std::uint32_t* q,
                   const std::uint32_t* const* blocks) {
    const std::size_t I = t.I, J = t.J, pass = t.pass;
    std::fill(accs, accs + J * RK * W * kLanes, std::uint64_t{0});
    std::size_t since = 0;  // values of i added since the accumulators were last folded
    for (std::size_t i0 = 0; i0 < I; i0 += pass) {
      const std::size_t count = std::min(pass, I - i0);
      std::size_t after = since;
      for (std::size_t j0 = 0; j0 < J; j0 += NB) {
        const std::uint32_t* next = j0 + NB < J      ? blocks[j0 / NB + 1] + i0 * step
                                    : i0 + count < I ? blocks[0] + (i0 + count) * step
                                                     : nullptr;
        after = piece(t, accs + (j0 / NB) * per_block, q + i0 * RK * W * kLanes, blocks[j0 / NB] + i0 * step, count,
                      next, since);
      }
      since = after;
    }
  }
};
#undef SPIRALPIR_UNROLL

using TaskFn = void (*)(const FirstDimTask&, std::uint64_t*, const std::uint32_t*, const std::uint32_t* const*);

// NB takes the powers of two up to jblock's cap for (n, W) (a block's accumulators fit 24
// registers): (n+1)·n·W·NB ≤ 24, or NB = 1.
template <unsigned N, std::size_t W>
TaskFn pick_nb(std::size_t nb) {
  constexpr std::size_t acc = std::size_t{N + 1} * N * W;
  switch (nb) {
    case 1: return &Kernel<N, W, 1>::task;
    case 2: if constexpr (2 * acc <= 24) return &Kernel<N, W, 2>::task; else break;
    case 4: if constexpr (4 * acc <= 24) return &Kernel<N, W, 4>::task; else break;
    case 8: if constexpr (8 * acc <= 24) return &Kernel<N, W, 8>::task; else break;
    default: break;
  }
  return nullptr;
}

template <unsigned N>
TaskFn pick_w(std::size_t w, std::size_t nb) {
  return w == 2 ? pick_nb<N, 2>(nb) : w == 1 ? pick_nb<N, 1>(nb) : nullptr;
}

TaskFn pick(const FirstDimTask& t) {
  switch (t.n) {
    case 1: return pick_w<1>(t.w, t.nb);
    case 2: return pick_w<2>(t.w, t.nb);
    case 3: return pick_w<3>(t.w, t.nb);
    case 4: return pick_w<4>(t.w, t.nb);
    case 5: return pick_w<5>(t.w, t.nb);
    case 6: return pick_w<6>(t.w, t.nb);
    case 7: return pick_w<7>(t.w, t.nb);
    case 8: return pick_w<8>(t.w, t.nb);
    default: return nullptr;
  }
}

/// 8 values x mod p for vector_reducible(prime): one fold f ≤ fold_bound < 2^52 (exact as a
/// double), then the quotient estimate ⌊f·(1/p)⌋ with two roundings (relative error < 2^-52).
/// The quotient is < 2^31, a vpmuludq operand (p > 2^21). The estimate never reaches k + 1 for
/// the true quotient k: f/p ≤ k + 1 − 1/p, and the overestimate is < (f/p)·2^-52 < 1/p since
/// f < 2^52. It may fall one short (f a multiple of p, or just above one) but not two, so the
/// remainder f − q·p lies in [0, 2p): one correction r ↦ min(r, r − p) (wrapping u64).
/// (p, c = 2^32 mod p, inv = 1/p and lo32 broadcast)
inline __m512i reduce_lanes(__m512i x, __m512i p, __m512i c, __m512d inv, __m512i lo32) {
  const __m512i f = _mm512_add_epi64(_mm512_and_si512(x, lo32),
                                     _mm512_maskz_mul_epu32(0xFF, _mm512_maskz_srli_epi64(0xFF, x, 32), c));
  const __m512d est = _mm512_mul_pd(_mm512_cvtepu64_pd(f), inv);
  const __m512i q = _mm512_cvttpd_epu64(_mm512_maskz_roundscale_pd(0xFF, est, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
  const __m512i r = _mm512_sub_epi64(f, _mm512_maskz_mul_epu32(0xFF, q, p));
  return _mm512_maskz_min_epu64(0xFF, r, _mm512_sub_epi64(r, p));
}

}  // namespace

void first_dim_task_avx512(const FirstDimTask& task, std::uint64_t* accs, const std::uint32_t* q,
                           const std::uint32_t* const* blocks) {
  const TaskFn fn = pick(task);
  if (fn == nullptr) throw std::invalid_argument("first_dim_task_avx512: unsupported task shape");
  fn(task, accs, q, blocks);
}

void first_dim_reduce_store_task_avx512(const FirstDimTask& t, std::uint64_t* accs, std::uint64_t* const* dst,
                                        std::size_t count) {
  __m512i p[2], c[2];
  __m512d inv[2];
  std::uint64_t barrett[2] = {0, 0};
  for (std::size_t h = 0; h < t.w; ++h) {
    p[h] = _mm512_set1_epi64(static_cast<long long>(t.prime[h]));
    c[h] = _mm512_set1_epi64(static_cast<long long>(t.fold_const[h]));
    inv[h] = _mm512_set1_pd(1.0 / static_cast<double>(t.prime[h]));
    barrett[h] = kU64Max / t.prime[h];
  }
  const __m512i lo32 = _mm512_set1_epi64(0xffffffffLL);
  for (std::size_t e = 0; e < count; ++e) {
    const std::size_t h = t.w == 2 ? (e & 1) : 0;
    std::uint64_t* const acc = accs + e * kLanes;
    if (t.vector_reduce[h]) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(dst[e]),
                          reduce_lanes(_mm512_load_si512(acc), p[h], c[h], inv[h], lo32));
    } else {
      for (std::size_t l = 0; l < kLanes; ++l) acc[l] = reduce_exact(acc[l], t.prime[h], barrett[h]);
      _mm512_stream_si512(reinterpret_cast<__m512i*>(dst[e]), _mm512_load_si512(acc));
    }
  }
  _mm_sfence();
}

void first_dim_reduce_store_avx512(std::uint64_t* dst, const std::uint64_t* acc, std::uint64_t p,
                                   std::uint64_t fold_const) {
  _mm512_stream_si512(reinterpret_cast<__m512i*>(dst),
                      reduce_lanes(_mm512_load_si512(acc), _mm512_set1_epi64(static_cast<long long>(p)),
                                   _mm512_set1_epi64(static_cast<long long>(fold_const)),
                                   _mm512_set1_pd(1.0 / static_cast<double>(p)), _mm512_set1_epi64(0xffffffffLL)));
}

void first_dim_stream_store_avx512(std::uint64_t* dst, const std::uint64_t* src) {
  _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), _mm512_load_si512(src));
}

}  // namespace spiralpir
