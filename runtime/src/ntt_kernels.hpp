// ntt_kernels.hpp (internal) — the per-path NTT kernels behind ntt.hpp's dispatch.
// Every kernel has the ranges documented in ntt.hpp; `reduce` selects the [0, p) output.
#pragma once

#include <cstdint>

#include "spiralpir/ntt.hpp"

namespace spiralpir::detail {

void ntt_forward_native(std::uint64_t* a, const NttTable& t, bool reduce);
void ntt_inverse_native(std::uint64_t* a, const NttTable& t, bool reduce);

#ifdef SPIRALPIR_HAVE_AVX2
void ntt_forward_avx2(std::uint64_t* a, const NttTable& t, bool reduce);
void ntt_inverse_avx2(std::uint64_t* a, const NttTable& t, bool reduce);
#endif
#ifdef SPIRALPIR_HAVE_AVX512
void ntt_forward_avx512(std::uint64_t* a, const NttTable& t, bool reduce);
void ntt_inverse_avx512(std::uint64_t* a, const NttTable& t, bool reduce);
#endif

}  // namespace spiralpir::detail
