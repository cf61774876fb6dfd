// dot_mac_lazy entry points: argument checks, range checks (debug builds), path selection.
#include <stdexcept>
#include <string>

#include "debug_check.hpp"
#include "dot_kernels.hpp"
#include "spiralpir/arith/dot.hpp"

namespace spiralpir {
namespace {

void mac(std::size_t m, std::uint64_t* const* acc, const std::uint64_t* const* dig, const std::uint64_t* const* key,
         std::size_t k, std::size_t n, Path path) {
  if (m < 1 || m > kDotMaxRows) throw std::invalid_argument("dot_mac_lazy: 1 to 9 rows");
  if (n % 32 != 0) throw std::invalid_argument("dot_mac_lazy: n must be a multiple of 32");
  if constexpr (detail::kDebugChecks) {
    for (std::size_t j = 0; j < k; ++j) detail::check_below(dig[j], n, 1ULL << 32, "dot_mac_lazy (digit)");
    for (std::size_t j = 0; j < m * k; ++j) detail::check_below(key[j], n, 1ULL << 32, "dot_mac_lazy (key)");
  }
  switch (path) {
#ifdef SPIRALPIR_HAVE_AVX512
    case Path::avx512:
      return detail::dot_mac_lazy_avx512(m, acc, dig, key, k, n);
#endif
    default:  // no AVX2 kernel: AVX2-only CPUs run the portable one
      return detail::dot_mac_lazy_native(m, acc, dig, key, k, n);
  }
}

}  // namespace

void dot_mac_lazy(std::size_t m, std::uint64_t* const* acc, const std::uint64_t* const* dig,
                  const std::uint64_t* const* key, std::size_t k, std::size_t n) {
  mac(m, acc, dig, key, k, n, active_path());
}

void dot_mac_lazy(std::size_t m, std::uint64_t* const* acc, const std::uint64_t* const* dig,
                  const std::uint64_t* const* key, std::size_t k, std::size_t n, Path path) {
  if (!path_available(path))
    throw std::runtime_error(std::string("spiralpir: dot path ") + path_name(path) + " is not available: " +
                             path_missing(path));
  mac(m, acc, dig, key, k, n, path);
}

}  // namespace spiralpir
