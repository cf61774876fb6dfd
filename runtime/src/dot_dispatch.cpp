// dot_mac_lazy entry points: argument checks, range checks (debug builds), path selection.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "debug_check.hpp"
#include "dot_kernels.hpp"
#include "spiralpir/arith/dot.hpp"
#include "spiralpir/arith/pointwise.hpp"

namespace spiralpir {
namespace {

void check(std::size_t m, const std::uint64_t* const* dig, const std::uint64_t* const* key, std::size_t k,
           std::size_t n, Path path) {
  if (!path_available(path))
    throw std::runtime_error(std::string("spiralpir: dot path ") + path_name(path) + " is not available: " +
                             path_missing(path));
  if (m < 1 || m > kDotMaxRows) throw std::invalid_argument("dot_mac_lazy: 1 to 9 rows");
  if (n % 32 != 0) throw std::invalid_argument("dot_mac_lazy: n must be a multiple of 32");
  if constexpr (detail::kDebugChecks) {
    for (std::size_t j = 0; j < k; ++j) detail::check_below(dig[j], n, 1ULL << 32, "dot_mac_lazy (digit)");
    for (std::size_t j = 0; j < m * k; ++j) detail::check_below(key[j], n, 1ULL << 32, "dot_mac_lazy (key)");
  }
}

void mac(std::size_t m, std::uint64_t* const* acc, const std::uint64_t* const* dig, const std::uint64_t* const* key,
         std::size_t k, std::size_t n, Path path) {
  check(m, dig, key, k, n, path);
  switch (path) {
#ifdef SPIRALPIR_HAVE_AVX512
    case Path::avx512:
      return detail::dot_mac_lazy_avx512(m, acc, dig, key, k, n);
#endif
#ifdef SPIRALPIR_HAVE_AVX2
    case Path::avx2:
      return detail::dot_mac_lazy_avx2(m, acc, dig, key, k, n);
#endif
    default:
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
  mac(m, acc, dig, key, k, n, path);
}

void dot_mac_reduce(std::size_t m, std::uint64_t* const* acc, const std::uint64_t* const* dig,
                    const std::uint64_t* const* key, std::size_t k, std::size_t n, std::uint64_t p) {
  dot_mac_reduce(m, acc, dig, key, k, n, p, active_path());
}

void dot_mac_reduce(std::size_t m, std::uint64_t* const* acc, const std::uint64_t* const* dig,
                    const std::uint64_t* const* key, std::size_t k, std::size_t n, std::uint64_t p, Path path) {
  check(m, dig, key, k, n, path);
  if (p >= (1ULL << 32)) throw std::invalid_argument("dot_mac_reduce: p must be below 2^32");
#ifdef SPIRALPIR_HAVE_AVX512
  if (path == Path::avx512) return detail::dot_mac_reduce_avx512(m, acc, dig, key, k, n, detail::Reduce32(p));
#endif
  for (std::size_t r = 0; r < m; ++r) std::fill(acc[r], acc[r] + n, std::uint64_t{0});
  mac(m, acc, dig, key, k, n, path);
  for (std::size_t r = 0; r < m; ++r) reduce_words(acc[r], n, p, path);
}

}  // namespace spiralpir
