// AVX2 word kernel of the gadget decomposition: the portable body (gadget_kernels.hpp),
// auto-vectorised under this file's AVX2 flags (4 coefficients per ymm, 32×32-bit products).
#include "gadget_kernels.hpp"

namespace spiralpir::detail {

void gadget_words_avx2(const GadgetWordRing& ring, std::size_t n, const std::uint64_t* r0, const std::uint64_t* r1,
                       unsigned bits, unsigned t, std::uint64_t* const* outs) {
  thread_local AlignedBuffer<std::int64_t> v;
  if (v.size() < n) v = AlignedBuffer<std::int64_t>(n);
  gadget_words_body(ring, n, r0, r1, v.data(), bits, t, outs);
}

}  // namespace spiralpir::detail
