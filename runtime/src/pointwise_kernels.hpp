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

void pointwise_mul_native(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                          std::uint64_t p, bool accumulate);
void pointwise_mul_add_lazy_native(std::uint64_t* acc, const std::uint64_t* a, const std::uint64_t* b,
                                   std::size_t n);
#ifdef SPIRALPIR_HAVE_AVX2
void pointwise_mul_avx2(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                        const Barrett30& br, bool accumulate);
void pointwise_mul_add_lazy_avx2(std::uint64_t* acc, const std::uint64_t* a, const std::uint64_t* b,
                                 std::size_t n);
#endif
#ifdef SPIRALPIR_HAVE_AVX512
void pointwise_mul_avx512(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                          const Barrett30& br, bool accumulate);
void pointwise_mul_add_lazy_avx512(std::uint64_t* acc, const std::uint64_t* a, const std::uint64_t* b,
                                   std::size_t n);
#endif

}  // namespace spiralpir::detail
