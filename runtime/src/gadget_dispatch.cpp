// gadget_decompose_words entry points: argument checks, range checks (debug builds), path selection.
#include <stdexcept>
#include <string>

#include "debug_check.hpp"
#include "gadget_kernels.hpp"

namespace spiralpir {
namespace {

void words(const GadgetWordRing& ring, std::size_t n, const std::uint64_t* r0, const std::uint64_t* r1,
           unsigned bits, unsigned t, std::uint64_t* const* outs, Path path) {
  if (t < 2 || bits == 0 || bits > 62) throw std::invalid_argument("gadget_decompose_words: need t >= 2, 1 <= bits <= 62");
  if (std::uint64_t{bits} * t < bit_length(ring.q - 1))
    throw std::invalid_argument("gadget_decompose_words: bits·t < log2 q");
  if (ring.reach(bits) == GadgetWordRing::Reach::too_wide)
    throw std::invalid_argument("gadget_decompose_words: digits of " + std::to_string(bits) +
                                " bits reach twice the smaller prime");
  if (outs[0] == nullptr && (!ring.two_primes || outs[1] == nullptr))
    throw std::invalid_argument("gadget_decompose_words: no output residue");
  detail::check_below(r0, n, ring.p0, "gadget_decompose_words (r0)");
  if (ring.two_primes) detail::check_below(r1, n, ring.p1, "gadget_decompose_words (r1)");
  switch (path) {
#ifdef SPIRALPIR_HAVE_AVX512
    case Path::avx512:
      return detail::gadget_words_avx512(ring, n, r0, r1, bits, t, outs);
#endif
#ifdef SPIRALPIR_HAVE_AVX2
    case Path::avx2:
      return detail::gadget_words_avx2(ring, n, r0, r1, bits, t, outs);
#endif
    default:
      return detail::gadget_words_native(ring, n, r0, r1, bits, t, outs);
  }
}

}  // namespace

void gadget_decompose_words(const GadgetWordRing& ring, std::size_t n, const std::uint64_t* r0,
                            const std::uint64_t* r1, unsigned base_bits, unsigned t, std::uint64_t* const* outs) {
  words(ring, n, r0, r1, base_bits, t, outs, active_path());
}

void gadget_decompose_words(const GadgetWordRing& ring, std::size_t n, const std::uint64_t* r0,
                            const std::uint64_t* r1, unsigned base_bits, unsigned t, std::uint64_t* const* outs,
                            Path path) {
  if (!path_available(path))
    throw std::runtime_error(std::string("spiralpir: gadget path ") + path_name(path) + " is not available: " +
                             path_missing(path));
  words(ring, n, r0, r1, base_bits, t, outs, path);
}

}  // namespace spiralpir
