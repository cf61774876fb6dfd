// spiralpir/core/heap.hpp — keep freed heap memory in the process from one answer to the next.
//
// An answer allocates and frees hundreds of MB of ciphertexts (thousands of 16–64 KiB
// polynomials). glibc by default gives the free top of a heap back to the kernel and serves
// large blocks from fresh mappings, so the next answer faults every page in again, each one
// zeroed by the kernel and serialised on the address-space lock across threads: about 21,000
// page faults and 35 ms of a 500 ms answer at 2^20 × 256 B (spiralpir_thread_scaling). A server
// answers query after query, so it keeps the memory instead: its resident size stays at the
// peak of one answer, which it needs again for the next one.
//
// Process-wide (malloc's settings are), once, when the first Server is constructed; set
// SPIRALPIR_RETAIN_HEAP=0 to keep glibc's defaults. A no-op outside glibc.
#pragma once

#include <cstdlib>
#include <cstring>
#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace spiralpir {

/// the freed top of a heap kept before glibc trims it (and the largest block served from the heap)
inline constexpr int kRetainedHeapBytes = 1 << 30;
inline constexpr int kLargestHeapBlock = 32 << 20;  // glibc's upper limit for M_MMAP_THRESHOLD

/// true if this process keeps freed memory (called by Server's constructors)
inline bool retain_heap_between_answers() {
  static bool retained = false;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* env = std::getenv("SPIRALPIR_RETAIN_HEAP");
    if (env != nullptr && std::strcmp(env, "0") == 0) return;
#if defined(__GLIBC__)
    // both calls: a fixed mmap threshold also stops glibc from adapting the trim threshold
    retained = mallopt(M_MMAP_THRESHOLD, kLargestHeapBlock) == 1 && mallopt(M_TRIM_THRESHOLD, kRetainedHeapBytes) == 1;
#endif
  });
  return retained;
}

}  // namespace spiralpir
