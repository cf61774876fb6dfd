// First-dimension kernels of a library compiled without AVX-512: the entry points exist (the
// protocol headers reference them) but are never reached, since path_available(Path::avx512)
// is false; a direct call throws.
#ifndef SPIRALPIR_HAVE_AVX512
#include <stdexcept>

#include "spiralpir/spiral/first_dim_kernels.hpp"

namespace spiralpir {
namespace {
[[noreturn]] void missing() { throw std::runtime_error("spiralpir: the first-dimension AVX-512 kernels are not compiled in"); }
}  // namespace

void first_dim_task_avx512(const FirstDimTask&, std::uint64_t*, const std::uint32_t*, const std::uint32_t* const*) {
  missing();
}
void first_dim_reduce_store_task_avx512(const FirstDimTask&, std::uint64_t*, std::uint64_t* const*, std::size_t) {
  missing();
}
void first_dim_reduce_store_avx512(std::uint64_t*, const std::uint64_t*, std::uint64_t, std::uint64_t) { missing(); }
void first_dim_stream_store_avx512(std::uint64_t*, const std::uint64_t*) { missing(); }

}  // namespace spiralpir
#endif
