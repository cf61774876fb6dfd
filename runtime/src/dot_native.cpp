// Portable dot_mac_lazy kernel: blocks of 32 slots, the M accumulator rows kept in locals.
#include "dot_kernels.hpp"

namespace spiralpir::detail {
namespace {

template <std::size_t M>
struct MacNative {
  static void run(std::uint64_t* const* acc, const std::uint64_t* const* dig, const std::uint64_t* const* key,
                  std::size_t K, std::size_t n) {
    constexpr std::size_t B = 32;  // lanes per block
    for (std::size_t z0 = 0; z0 < n; z0 += B) {
      std::uint64_t a[M][B];
      for (std::size_t m = 0; m < M; ++m)
        for (std::size_t l = 0; l < B; ++l) a[m][l] = acc[m][z0 + l];
      for (std::size_t k = 0; k < K; ++k) {
        const std::uint64_t* dk = dig[k] + z0;
        for (std::size_t m = 0; m < M; ++m) {
          const std::uint64_t* kk = key[m * K + k] + z0;
          for (std::size_t l = 0; l < B; ++l)
            a[m][l] += static_cast<std::uint64_t>(static_cast<std::uint32_t>(dk[l])) * static_cast<std::uint32_t>(kk[l]);
        }
      }
      for (std::size_t m = 0; m < M; ++m)
        for (std::size_t l = 0; l < B; ++l) acc[m][z0 + l] = a[m][l];
    }
  }
};

}  // namespace

void dot_mac_lazy_native(std::size_t m, std::uint64_t* const* acc, const std::uint64_t* const* dig,
                         const std::uint64_t* const* key, std::size_t k, std::size_t n) {
  dot_dispatch_rows<MacNative>(m, acc, dig, key, k, n);
}

}  // namespace spiralpir::detail
