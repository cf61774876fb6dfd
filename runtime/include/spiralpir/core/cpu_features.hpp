// cpu_features.hpp — which kernel path this process may run.
//
// API (namespace spiralpir):
//   enum class Path { native, avx2, avx512 }; path_name(Path) -> "native" | "avx2" | "avx512"
//   cpu_features()         what the CPU and OS support (cpuid + xgetbv), read once
//   path_compiled(Path)    the library was built with that kernel family
//   path_available(Path)   compiled, supported by this CPU/OS, and not disabled through the
//                          environment (SPIRALPIR_DISABLE_AVX512=1, SPIRALPIR_DISABLE_AVX2=1)
//   active_path()          the fastest available path (what the dispatching kernels use)
//   available_paths()      every available path, native first (tests and benchmarks loop on it)
//   path_missing(Path)     human-readable reason a path is unavailable ("" if available)
// SPIRALPIR_DISABLE_AVX512_IFMA=1 hides IFMA, so the AVX-512 path uses its vpmuludq kernels.
// A vector kernel is only ever called after path_available() said yes, so a binary never
// dies with SIGILL on an older CPU: it falls back to the next path.
#pragma once

#include <string>
#include <vector>

namespace spiralpir {

enum class Path { native = 0, avx2 = 1, avx512 = 2 };

struct CpuFeatures {
  bool avx2 = false;
  bool avx512f = false;
  bool avx512dq = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512ifma = false;
};

const char* path_name(Path path);
const CpuFeatures& cpu_features();
bool path_compiled(Path path);
bool path_available(Path path);
std::string path_missing(Path path);
Path active_path();
std::vector<Path> available_paths();

}  // namespace spiralpir
