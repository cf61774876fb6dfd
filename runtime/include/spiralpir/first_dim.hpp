// spiralpir/first_dim.hpp — the first-dimension hot loop: for every instance and folding index j,
// out[j] = Σ_{i < 2^nu_1} C_i · D[i][j] with C_i the (n+1)×n matrix Regev query cts and D the
// n×n plaintexts, all in NTT/CRT form (database.hpp gives the word layout).
//
// Lazy reduction: each accumulator receives n products (< (p−1)^2) per i and starts below p, so
// kChunk = Derived<P>::lazy_terms / n values of i are summed in a uint64 before reducing; the
// bound is a static_assert (lazy_terms is computed from the largest prime, see params.hpp).
// Two kernels compute the same values: AVX-512F (function-level target attribute, used only when
// path_available(Path::avx512), i.e. compiled in, supported by the CPU and not disabled by
// SPIRALPIR_DISABLE_AVX512=1) and a portable one.
#pragma once

#include <cstdint>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SPIRALPIR_FIRSTDIM_X86 1
#endif

#include "spiralpir/cpu_features.hpp"
#include "spiralpir/database.hpp"

namespace spiralpir {

template <SpiralParams P>
struct FirstDim {
  using R = typename P::ring;
  using D = Derived<P>;
  using MatN = proto::MatN<R>;
  using DB = Database<P>;
  static constexpr unsigned n = P::n;
  static constexpr std::size_t RK = std::size_t{n + 1} * n;  // query entries (r, k)
  static constexpr std::size_t NN = std::size_t{n} * n;      // plaintext entries (k, c)
  static constexpr std::size_t I = D::dim0, J = D::dim_rest, ZT = DB::ZT, NP = R::num_primes;
  static constexpr std::size_t kChunk = D::lazy_terms / n;
  static_assert(kChunk >= 1, "lazy bound: not even one i fits the accumulator");
  static_assert(kChunk * n <= D::lazy_terms, "first-dimension term count exceeds the lazy-reduction bound");

  /// Q[prime][zt][i][rk][lane] as u64 (values < p; the kernel multiplies their low 32 bits)
  static AlignedBuffer<std::uint64_t> reorient(const std::vector<MatN>& first_mats, unsigned threads) {
    AlignedBuffer<std::uint64_t> q(NP * ZT * I * RK * kLanes);
    parallel_for(threads, I, [&](std::size_t i) {
      for (unsigned r = 0; r <= n; ++r)
        for (unsigned k = 0; k < n; ++k) {
          const auto& poly = first_mats[i].at(r, k);
          for (std::size_t prime = 0; prime < NP; ++prime) {
            const std::uint64_t* src = poly.residue(prime);
            for (std::size_t zt = 0; zt < ZT; ++zt) {
              std::uint64_t* dst = q.data() + (((prime * ZT + zt) * I + i) * RK + (r * n + k)) * kLanes;
              for (std::size_t l = 0; l < kLanes; ++l) dst[l] = src[zt * kLanes + l];
            }
          }
        }
    });
    return q;
  }

  // acc[(r·n + c)·kLanes + lane] += Σ_{i in [i0,i1)} Σ_k q[i][r·n+k][lane] · w[i][k·n+c][lane]
  static void kernel_portable(std::uint64_t* acc, const std::uint64_t* q, const std::uint32_t* w, std::size_t i0,
                              std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) {
      const std::uint64_t* qi = q + i * RK * kLanes;
      const std::uint32_t* wi = w + i * NN * kLanes;
      for (unsigned r = 0; r <= n; ++r)
        for (unsigned c = 0; c < n; ++c) {
          std::uint64_t* a = acc + (r * n + c) * kLanes;
          for (unsigned k = 0; k < n; ++k) {
            const std::uint64_t* qa = qi + (r * n + k) * kLanes;
            const std::uint32_t* wb = wi + (k * n + c) * kLanes;
            for (std::size_t l = 0; l < kLanes; ++l) a[l] += qa[l] * wb[l];
          }
        }
    }
  }

#ifdef SPIRALPIR_FIRSTDIM_X86
  // GCC 12's intrinsic headers trip -Wmaybe-uninitialized on _mm512_undefined (a known false
  // positive); the masked-zero forms avoid it.
  __attribute__((target("avx512f"))) static void kernel_avx512(std::uint64_t* acc, const std::uint64_t* q,
                                                                const std::uint32_t* w, std::size_t i0,
                                                                std::size_t i1) {
    static_assert(kLanes == 8, "one zmm register = 8 slots");
    __m512i a[RK];
    for (std::size_t x = 0; x < RK; ++x) a[x] = _mm512_loadu_si512(acc + x * kLanes);
    for (std::size_t i = i0; i < i1; ++i) {
      const std::uint64_t* qi = q + i * RK * kLanes;
      const std::uint32_t* wi = w + i * NN * kLanes;
      __m512i wv[NN];
      for (std::size_t x = 0; x < NN; ++x)
        wv[x] = _mm512_maskz_cvtepu32_epi64(0xFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wi + x * kLanes)));
      for (unsigned r = 0; r <= n; ++r)
        for (unsigned k = 0; k < n; ++k) {
          const __m512i qv = _mm512_load_si512(qi + (r * n + k) * kLanes);
          for (unsigned c = 0; c < n; ++c)
            a[r * n + c] = _mm512_add_epi64(a[r * n + c], _mm512_maskz_mul_epu32(0xFF, qv, wv[k * n + c]));
        }
    }
    for (std::size_t x = 0; x < RK; ++x) _mm512_storeu_si512(acc + x * kLanes, a[x]);
  }
  /// two folding indices per pass: the query vectors are loaded once for both (half the L2
  /// traffic per multiply-accumulate)
  __attribute__((target("avx512f"))) static void kernel_avx512_x2(std::uint64_t* acc0, std::uint64_t* acc1,
                                                                   const std::uint64_t* q, const std::uint32_t* w0,
                                                                   const std::uint32_t* w1, std::size_t i0,
                                                                   std::size_t i1) {
    __m512i a0[RK], a1[RK];
    for (std::size_t x = 0; x < RK; ++x) {
      a0[x] = _mm512_loadu_si512(acc0 + x * kLanes);
      a1[x] = _mm512_loadu_si512(acc1 + x * kLanes);
    }
    for (std::size_t i = i0; i < i1; ++i) {
      const std::uint64_t* qi = q + i * RK * kLanes;
      const std::uint32_t* wi0 = w0 + i * NN * kLanes;
      const std::uint32_t* wi1 = w1 + i * NN * kLanes;
      __m512i v0[NN], v1[NN];
      for (std::size_t x = 0; x < NN; ++x) {
        v0[x] = _mm512_maskz_cvtepu32_epi64(0xFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wi0 + x * kLanes)));
        v1[x] = _mm512_maskz_cvtepu32_epi64(0xFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wi1 + x * kLanes)));
      }
      for (unsigned r = 0; r <= n; ++r)
        for (unsigned k = 0; k < n; ++k) {
          const __m512i qv = _mm512_load_si512(qi + (r * n + k) * kLanes);
          for (unsigned c = 0; c < n; ++c) {
            a0[r * n + c] = _mm512_add_epi64(a0[r * n + c], _mm512_maskz_mul_epu32(0xFF, qv, v0[k * n + c]));
            a1[r * n + c] = _mm512_add_epi64(a1[r * n + c], _mm512_maskz_mul_epu32(0xFF, qv, v1[k * n + c]));
          }
        }
    }
    for (std::size_t x = 0; x < RK; ++x) {
      _mm512_storeu_si512(acc0 + x * kLanes, a0[x]);
      _mm512_storeu_si512(acc1 + x * kLanes, a1[x]);
    }
  }
#endif

  static bool use_avx512() {
#ifdef SPIRALPIR_FIRSTDIM_X86
    static const bool ok = path_available(Path::avx512);
    return ok;
#else
    return false;
#endif
  }

  /// out[inst·J + j] for every instance and j
  static std::vector<MatN> run(const std::vector<MatN>& first_mats, const DB& db, unsigned threads) {
    const AlignedBuffer<std::uint64_t> q = reorient(first_mats, threads);
    std::vector<MatN> out(D::instances * J, MatN(n + 1, n));
    const bool avx = use_avx512();
    const std::size_t tasks = D::instances * NP * ZT;
    parallel_for(threads, tasks, [&](std::size_t task) {
      const std::size_t inst = task / (NP * ZT);
      const std::size_t prime = (task / ZT) % NP;
      const std::size_t zt = task % ZT;
      const std::uint64_t p = R::primes[prime];
      const std::uint64_t barrett = ~std::uint64_t{0} / p;  // floor((2^64-1)/p)
      const std::uint64_t* qz = q.data() + (prime * ZT + zt) * I * RK * kLanes;
      alignas(64) std::uint64_t acc[2][RK * kLanes];
      auto reduce = [&](std::uint64_t* a) {
        for (std::size_t x = 0; x < RK * kLanes; ++x) {  // Barrett: x − ⌊x·m/2^64⌋·p lies in [0, 2p)
          const std::uint64_t qt = static_cast<std::uint64_t>((static_cast<u128>(a[x]) * barrett) >> 64);
          a[x] -= qt * p;
          a[x] -= a[x] >= p ? p : 0;
        }
      };
      auto store = [&](const std::uint64_t* a, std::size_t j) {
        MatN& o = out[inst * J + j];
        for (unsigned r = 0; r <= n; ++r)
          for (unsigned c = 0; c < n; ++c) {
            std::uint64_t* dst = o.at(r, c).residue(prime) + zt * kLanes;
            for (std::size_t l = 0; l < kLanes; ++l) dst[l] = a[(r * n + c) * kLanes + l];
          }
      };
      std::size_t j = 0;
#ifdef SPIRALPIR_FIRSTDIM_X86
      if (avx) {
        for (; j + 2 <= J; j += 2) {
          const std::uint32_t* w0 = db.task_words(inst, prime, zt, j);
          const std::uint32_t* w1 = db.task_words(inst, prime, zt, j + 1);
          for (auto& x : acc[0]) x = 0;
          for (auto& x : acc[1]) x = 0;
          for (std::size_t i0 = 0; i0 < I; i0 += kChunk) {
            const std::size_t i1 = std::min(I, i0 + kChunk);
            kernel_avx512_x2(acc[0], acc[1], qz, w0, w1, i0, i1);
            reduce(acc[0]);
            reduce(acc[1]);
          }
          store(acc[0], j);
          store(acc[1], j + 1);
        }
      }
#endif
      for (; j < J; ++j) {
        const std::uint32_t* w = db.task_words(inst, prime, zt, j);
        for (auto& x : acc[0]) x = 0;
        for (std::size_t i0 = 0; i0 < I; i0 += kChunk) {
          const std::size_t i1 = std::min(I, i0 + kChunk);
#ifdef SPIRALPIR_FIRSTDIM_X86
          if (avx)
            kernel_avx512(acc[0], qz, w, i0, i1);
          else
#endif
            kernel_portable(acc[0], qz, w, i0, i1);
          reduce(acc[0]);
        }
        store(acc[0], j);
      }
    });
    (void)avx;
    return out;
  }
};

}  // namespace spiralpir
