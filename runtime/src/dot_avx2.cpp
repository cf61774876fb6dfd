// AVX2 dot_mac_lazy kernel: explicit vpmuludq (AVX2 has no 64-bit multiply for the compiler to
// use), U ymm = 4·U slots per block, the M rows' accumulators in registers: U shrinks as M grows
// so that M·U accumulators and U digit vectors fit the 16 ymm registers.
#include <immintrin.h>

#include "dot_kernels.hpp"

namespace spiralpir::detail {
namespace {

template <std::size_t M>
struct MacAvx2 {
  static constexpr std::size_t U = M <= 2 ? 4 : M <= 5 ? 2 : 1;
  static void run(std::uint64_t* const* acc, const std::uint64_t* const* dig, const std::uint64_t* const* key,
                  std::size_t K, std::size_t n) {
    const auto load = [](const std::uint64_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); };
    for (std::size_t z0 = 0; z0 < n; z0 += 4 * U) {
      __m256i a[M][U];
      for (std::size_t m = 0; m < M; ++m)
        for (std::size_t u = 0; u < U; ++u) a[m][u] = load(acc[m] + z0 + 4 * u);
      for (std::size_t k = 0; k < K; ++k) {
        const std::uint64_t* dk = dig[k] + z0;
        __m256i dv[U];
        for (std::size_t u = 0; u < U; ++u) dv[u] = load(dk + 4 * u);
        for (std::size_t m = 0; m < M; ++m) {
          const std::uint64_t* kk = key[m * K + k] + z0;
          for (std::size_t u = 0; u < U; ++u)
            a[m][u] = _mm256_add_epi64(a[m][u], _mm256_mul_epu32(dv[u], load(kk + 4 * u)));
        }
      }
      for (std::size_t m = 0; m < M; ++m)
        for (std::size_t u = 0; u < U; ++u)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc[m] + z0 + 4 * u), a[m][u]);
    }
  }
};

}  // namespace

void dot_mac_lazy_avx2(std::size_t m, std::uint64_t* const* acc, const std::uint64_t* const* dig,
                       const std::uint64_t* const* key, std::size_t k, std::size_t n) {
  dot_dispatch_rows<MacAvx2>(m, acc, dig, key, k, n);
}

}  // namespace spiralpir::detail
