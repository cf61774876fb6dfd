// AVX-512 dot_mac_lazy kernel: explicit vpmuludq (the compiler would otherwise emit the slow
// 64-bit vpmullq for the 32×32-bit products), 4 zmm = 32 slots per block, M rows in registers.
// GCC 12's intrinsic headers trip -Wmaybe-uninitialized (GCC bug 105593) on the unmasked forms;
// the masked-zero multiply sidesteps it.
#include <immintrin.h>

#include "dot_kernels.hpp"
#include "reduce32_avx512.hpp"

namespace spiralpir::detail {
namespace {

template <std::size_t M>
struct MacAvx512 {
  static void run(std::uint64_t* const* acc, const std::uint64_t* const* dig, const std::uint64_t* const* key,
                  std::size_t K, std::size_t n) {
    constexpr std::size_t U = 4;  // zmm per block: 32 lanes
    for (std::size_t z0 = 0; z0 < n; z0 += 8 * U) {
      __m512i a[M][U];
      for (std::size_t m = 0; m < M; ++m)
        for (std::size_t u = 0; u < U; ++u) a[m][u] = _mm512_loadu_si512(acc[m] + z0 + 8 * u);
      for (std::size_t k = 0; k < K; ++k) {
        const std::uint64_t* dk = dig[k] + z0;
        __m512i dv[U];
        for (std::size_t u = 0; u < U; ++u) dv[u] = _mm512_loadu_si512(dk + 8 * u);
        for (std::size_t m = 0; m < M; ++m) {
          const std::uint64_t* kk = key[m * K + k] + z0;
          for (std::size_t u = 0; u < U; ++u)
            a[m][u] = _mm512_add_epi64(a[m][u], _mm512_maskz_mul_epu32(0xFF, dv[u], _mm512_loadu_si512(kk + 8 * u)));
        }
      }
      for (std::size_t m = 0; m < M; ++m)
        for (std::size_t u = 0; u < U; ++u) _mm512_storeu_si512(acc[m] + z0 + 8 * u, a[m][u]);
    }
  }
};

// The same from zero accumulators, reduced mod p before the one store (no fill, load, or
// second pass over the outputs).
template <std::size_t M>
struct MacReduceAvx512 {
  static void run(std::uint64_t* const* acc, const std::uint64_t* const* dig, const std::uint64_t* const* key,
                  std::size_t K, std::size_t n, const Reduce32& rd) {
    constexpr std::size_t U = 4;
    const Reduce32Avx512 red(rd);
    for (std::size_t z0 = 0; z0 < n; z0 += 8 * U) {
      __m512i a[M][U];
      for (std::size_t m = 0; m < M; ++m)
        for (std::size_t u = 0; u < U; ++u) a[m][u] = _mm512_setzero_si512();
      for (std::size_t k = 0; k < K; ++k) {
        const std::uint64_t* dk = dig[k] + z0;
        __m512i dv[U];
        for (std::size_t u = 0; u < U; ++u) dv[u] = _mm512_loadu_si512(dk + 8 * u);
        for (std::size_t m = 0; m < M; ++m) {
          const std::uint64_t* kk = key[m * K + k] + z0;
          for (std::size_t u = 0; u < U; ++u)
            a[m][u] = _mm512_add_epi64(a[m][u], _mm512_maskz_mul_epu32(0xFF, dv[u], _mm512_loadu_si512(kk + 8 * u)));
        }
      }
      for (std::size_t m = 0; m < M; ++m)
        for (std::size_t u = 0; u < U; ++u) _mm512_storeu_si512(acc[m] + z0 + 8 * u, red(a[m][u]));
    }
  }
};

}  // namespace

void dot_mac_lazy_avx512(std::size_t m, std::uint64_t* const* acc, const std::uint64_t* const* dig,
                         const std::uint64_t* const* key, std::size_t k, std::size_t n) {
  dot_dispatch_rows<MacAvx512>(m, acc, dig, key, k, n);
}

void dot_mac_reduce_avx512(std::size_t m, std::uint64_t* const* acc, const std::uint64_t* const* dig,
                           const std::uint64_t* const* key, std::size_t k, std::size_t n, const Reduce32& rd) {
  dot_dispatch_rows<MacReduceAvx512>(m, acc, dig, key, k, n, rd);
}

}  // namespace spiralpir::detail
