// Portable pointwise kernels (any p < 2^50: products are formed in 128 bits when needed).
#include "pointwise_kernels.hpp"
#include "spiralpir/arith/modarith.hpp"

namespace spiralpir::detail {

Barrett30::Barrett30(std::uint64_t modulus) : p(modulus) {
  const unsigned L = bit_length(modulus);
  shift_lo = L - 1;
  shift_hi = L + 1;
  mu = static_cast<std::uint64_t>((static_cast<u128>(1) << (2 * L)) / modulus);
}

Reduce32::Reduce32(std::uint64_t modulus) : p(modulus) {
  w = (std::uint64_t{1} << 32) % modulus;
  w_shoup = (w << 32) / modulus;
  m = (std::uint64_t{1} << 32) / modulus;
}

void pointwise_mul_native(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                          std::uint64_t p, bool accumulate) {
  if (p < (1ULL << 32)) {
    // a·b + acc < p^2 + p < 2^64: a single-word Barrett reduction suffices.
    const Barrett64 br(p);
    for (std::size_t i = 0; i < n; ++i) out[i] = br.reduce(a[i] * b[i] + (accumulate ? out[i] : 0));
    return;
  }
  const Barrett128 br(p);
  for (std::size_t i = 0; i < n; ++i) {
    u128 x = static_cast<u128>(a[i]) * b[i];
    if (accumulate) x += out[i];
    out[i] = br.reduce(x);
  }
}

void pointwise_mul_add_lazy_native(std::uint64_t* acc, const std::uint64_t* a, const std::uint64_t* b,
                                   std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) acc[i] += a[i] * b[i];
}

}  // namespace spiralpir::detail
