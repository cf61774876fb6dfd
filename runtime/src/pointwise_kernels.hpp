// pointwise_kernels.hpp (internal) — per-path pointwise kernels behind pointwise.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spiralpir::detail {

// Barrett constants for products of two residues below p < 2^30: with L = bit_length(p),
// q̂ = ((x >> (L−1)) · μ) >> (L+1), μ = ⌊2^(2L)/p⌋, undershoots ⌊x/p⌋ by at most 2.
struct Barrett30 {
  std::uint64_t p, mu;
  unsigned shift_lo, shift_hi;
  explicit Barrett30(std::uint64_t modulus);
};

// Constants to reduce any 64-bit word x = h·2^32 + l mod p < 2^32 in 32×32-bit products:
// h·2^32 by Shoup (w = 2^32 mod p, w_shoup = ⌊w·2^32/p⌋, remainder in [0, 2p)) and l by Barrett
// (m = ⌊2^32/p⌋, quotient short by at most 1, remainder in [0, 2p)); three conditional
// subtractions bring the sum into [0, p).
struct Reduce32 {
  std::uint64_t p, w, w_shoup, m;
  explicit Reduce32(std::uint64_t modulus);
};

void pointwise_mul_native(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                          std::uint64_t p, bool accumulate);
void pointwise_mul_add_lazy_native(std::uint64_t* acc, const std::uint64_t* a, const std::uint64_t* b,
                                   std::size_t n);
#ifdef SPIRALPIR_HAVE_AVX2
void pointwise_mul_avx2(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                        const Barrett30& br, bool accumulate);
void pointwise_mul_add_lazy_avx2(std::uint64_t* acc, const std::uint64_t* a, const std::uint64_t* b,
                                 std::size_t n);
void reduce_words_avx2(std::uint64_t* a, std::size_t n, const Reduce32& rd);
#endif
#ifdef SPIRALPIR_HAVE_AVX512
void pointwise_mul_avx512(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                          const Barrett30& br, bool accumulate);
void pointwise_mul_add_lazy_avx512(std::uint64_t* acc, const std::uint64_t* a, const std::uint64_t* b,
                                   std::size_t n);
void reduce_words_avx512(std::uint64_t* a, std::size_t n, const Reduce32& rd);
#endif

}  // namespace spiralpir::detail
