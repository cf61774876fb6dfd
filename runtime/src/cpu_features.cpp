// Run-time CPU detection (cpuid + xgetbv) and the environment switches that force fallbacks.
#include "spiralpir/core/cpu_features.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define SPIRALPIR_X86 1
#endif

namespace spiralpir {
namespace {

#ifdef SPIRALPIR_X86
std::uint64_t read_xcr0() {
  std::uint32_t lo = 0, hi = 0;
  // xgetbv is only legal when the OS has set CR4.OSXSAVE, which the caller checks first.
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}
#endif

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

CpuFeatures detect() {
  CpuFeatures f;
#ifdef SPIRALPIR_X86
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
  if (!osxsave || !avx) return f;
  const std::uint64_t xcr0 = read_xcr0();
  const bool os_ymm = (xcr0 & 0x6) == 0x6;            // SSE + AVX state saved by the OS
  const bool os_zmm = (xcr0 & 0xe6) == 0xe6;          // plus opmask and both zmm halves
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = os_ymm && ((b >> 5) & 1);
  f.avx512f = os_zmm && ((b >> 16) & 1);
  f.avx512dq = f.avx512f && ((b >> 17) & 1);
  // SPIRALPIR_DISABLE_AVX512_IFMA=1 lets tests reach the non-IFMA AVX-512 kernels.
  f.avx512ifma = f.avx512f && ((b >> 21) & 1) && !env_set("SPIRALPIR_DISABLE_AVX512_IFMA");
  f.avx512bw = f.avx512f && ((b >> 30) & 1);
  f.avx512vl = f.avx512f && ((b >> 31) & 1);
#endif
  return f;
}


}  // namespace

const char* path_name(Path path) {
  switch (path) {
    case Path::avx512:
      return "avx512";
    case Path::avx2:
      return "avx2";
    default:
      return "native";
  }
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

bool path_compiled(Path path) {
  switch (path) {
    case Path::avx512:
#ifdef SPIRALPIR_HAVE_AVX512
      return true;
#else
      return false;
#endif
    case Path::avx2:
#ifdef SPIRALPIR_HAVE_AVX2
      return true;
#else
      return false;
#endif
    default:
      return true;
  }
}

std::string path_missing(Path path) {
  if (!path_compiled(path))
    return std::string("this build of the runtime was compiled without the ") + path_name(path) + " kernels";
  const CpuFeatures& f = cpu_features();
  if (path == Path::avx512) {
    if (!(f.avx512f && f.avx512dq && f.avx512bw && f.avx512vl))
      return "the CPU (or OS) lacks AVX-512 F/DQ/BW/VL";
    if (env_set("SPIRALPIR_DISABLE_AVX512")) return "disabled by SPIRALPIR_DISABLE_AVX512";
  }
  if (path == Path::avx2) {
    if (!f.avx2) return "the CPU (or OS) lacks AVX2";
    if (env_set("SPIRALPIR_DISABLE_AVX2")) return "disabled by SPIRALPIR_DISABLE_AVX2";
  }
  return "";
}

bool path_available(Path path) {
  static const bool avail[3] = {true, path_missing(Path::avx2).empty(), path_missing(Path::avx512).empty()};
  return avail[static_cast<int>(path)];
}

Path active_path() {
  static const Path p = path_available(Path::avx512) ? Path::avx512
                        : path_available(Path::avx2) ? Path::avx2
                                                     : Path::native;
  return p;
}

std::vector<Path> available_paths() {
  std::vector<Path> v;
  for (Path p : {Path::native, Path::avx2, Path::avx512})
    if (path_available(p)) v.push_back(p);
  return v;
}

}  // namespace spiralpir
