// debug_check.hpp (internal) — range checks that debug builds run and release builds drop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace spiralpir::detail {

#ifndef NDEBUG
inline constexpr bool kDebugChecks = true;
#else
inline constexpr bool kDebugChecks = false;
#endif

// Aborts (a caller broke a documented contract; continuing would compute garbage) when some
// a[i] >= bound.
inline void check_below(const std::uint64_t* a, std::size_t n, std::uint64_t bound, const char* what) {
  if constexpr (kDebugChecks) {
    for (std::size_t i = 0; i < n; ++i) {
      if (a[i] >= bound) {
        std::fprintf(stderr, "spiralpir: range check failed in %s: a[%zu] = %llu >= %llu\n", what, i,
                     static_cast<unsigned long long>(a[i]), static_cast<unsigned long long>(bound));
        std::abort();
      }
    }
  } else {
    (void)a, (void)n, (void)bound, (void)what;
  }
}

}  // namespace spiralpir::detail
