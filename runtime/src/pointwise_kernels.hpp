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

// The expansion's split of a ct residue: with u = cur − tau and cur + tau mod p (inputs in
// [0, p)), hi = x^{-m}·u negacyclic over n words (when hi is not null), then cur = cur + tau;
// words [j0, j1) only (the vector kernels hand their tails and a block straddling m to the
// native one). out = a + b mod p for the plain sum.
void split_halves_native(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi, std::size_t m,
                         std::size_t n, std::uint64_t p, std::size_t j0, std::size_t j1);
// The same split in the NTT domain (pointwise.hpp split_halves_ntt): hi = w·(cur − tau) mod p.
void split_halves_ntt_native(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi, const std::uint64_t* w,
                             std::size_t n, std::uint64_t p);
void add_mod_native(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                    std::uint64_t p);
void sub_mod_native(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                    std::uint64_t p);

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
void split_halves_avx2(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi, std::size_t m,
                       std::size_t n, std::uint64_t p);
void split_halves_ntt_avx2(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi,
                          const std::uint64_t* w, std::size_t n, const Barrett30& br);
void add_mod_avx2(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                  std::uint64_t p);
void sub_mod_avx2(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                  std::uint64_t p);
#endif
#ifdef SPIRALPIR_HAVE_AVX512
void pointwise_mul_avx512(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                          const Barrett30& br, bool accumulate);
void pointwise_mul_add_lazy_avx512(std::uint64_t* acc, const std::uint64_t* a, const std::uint64_t* b,
                                   std::size_t n);
void reduce_words_avx512(std::uint64_t* a, std::size_t n, const Reduce32& rd);
void split_halves_avx512(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi, std::size_t m,
                         std::size_t n, std::uint64_t p);
void split_halves_ntt_avx512(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi,
                          const std::uint64_t* w, std::size_t n, const Barrett30& br);
void add_mod_avx512(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                    std::uint64_t p);
void sub_mod_avx512(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                    std::uint64_t p);
#endif

}  // namespace spiralpir::detail
