// dot_kernels.hpp (internal) — per-path kernels of dot_mac_lazy (dot.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "pointwise_kernels.hpp"

namespace spiralpir::detail {

void dot_mac_lazy_native(std::size_t m, std::uint64_t* const* acc, const std::uint64_t* const* dig,
                         const std::uint64_t* const* key, std::size_t k, std::size_t n);
#ifdef SPIRALPIR_HAVE_AVX2
void dot_mac_lazy_avx2(std::size_t m, std::uint64_t* const* acc, const std::uint64_t* const* dig,
                       const std::uint64_t* const* key, std::size_t k, std::size_t n);
#endif
#ifdef SPIRALPIR_HAVE_AVX512
void dot_mac_lazy_avx512(std::size_t m, std::uint64_t* const* acc, const std::uint64_t* const* dig,
                         const std::uint64_t* const* key, std::size_t k, std::size_t n);
/// acc[r] = Σ_j dig[j] · key[r·k + j] mod rd.p, the sums below 2^64 (acc is not read)
void dot_mac_reduce_avx512(std::size_t m, std::uint64_t* const* acc, const std::uint64_t* const* dig,
                           const std::uint64_t* const* key, std::size_t k, std::size_t n, const Reduce32& rd);
#endif

// The row count is a template argument inside the kernels (their accumulators live in registers),
// instantiated for every m in [1, 9].
template <template <std::size_t> class Kernel, class... Args>
void dot_dispatch_rows(std::size_t m, Args... args) {
  switch (m) {
    case 1: return Kernel<1>::run(args...);
    case 2: return Kernel<2>::run(args...);
    case 3: return Kernel<3>::run(args...);
    case 4: return Kernel<4>::run(args...);
    case 5: return Kernel<5>::run(args...);
    case 6: return Kernel<6>::run(args...);
    case 7: return Kernel<7>::run(args...);
    case 8: return Kernel<8>::run(args...);
    default: return Kernel<9>::run(args...);
  }
}

}  // namespace spiralpir::detail
