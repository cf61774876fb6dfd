// ntt_kernels.hpp (internal) — the per-path NTT kernels behind ntt.hpp's dispatch.
// Every kernel has the ranges documented in ntt.hpp; `reduce` selects the [0, p) output.
#pragma once

#include <cstddef>
#include <cstdint>

#include "spiralpir/arith/ntt.hpp"

namespace spiralpir::detail {

void ntt_forward_native(std::uint64_t* a, const NttTable& t, bool reduce);
void ntt_inverse_native(std::uint64_t* a, const NttTable& t, bool reduce);

// What the vector kernels read, as plain pointers and words. The vector files are compiled with
// ISA flags, so they must not instantiate inline functions from other headers (a Debug build
// could emit those as weak symbols with vector code that the linker then shares with scalar
// callers); this view keeps AlignedBuffer and std::array out of them.
struct NttView {
  std::uint64_t p;
  std::size_t n;
  bool ifma;  // the CPU has AVX-512 IFMA (and it is not disabled)
  const std::uint64_t *fwd, *fwd_shoup32, *fwd_shoup52, *inv, *inv_shoup32, *inv_shoup52;
  std::uint64_t n_inv, n_inv_shoup32, n_inv_shoup52, last_inv, last_inv_shoup32, last_inv_shoup52;
  const std::uint64_t *tail_fwd[3], *tail_fwd_shoup52[3], *tail_inv[3], *tail_inv_shoup52[3];
};
/// the view of a table, `ifma` from the CPU (tests flip it to reach the non-IFMA AVX-512 kernels)
NttView ntt_view(const NttTable& t);

#ifdef SPIRALPIR_HAVE_AVX2
void ntt_forward_avx2(std::uint64_t* a, const NttView& t, bool reduce);
void ntt_inverse_avx2(std::uint64_t* a, const NttView& t, bool reduce);
#endif
#ifdef SPIRALPIR_HAVE_AVX512
void ntt_forward_avx512(std::uint64_t* a, const NttView& t, bool reduce);
void ntt_inverse_avx512(std::uint64_t* a, const NttView& t, bool reduce);
#endif

}  // namespace spiralpir::detail
