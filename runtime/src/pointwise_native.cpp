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

void split_halves_native(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi, std::size_t m,
                         std::size_t n, std::uint64_t p, std::size_t j0, std::size_t j1) {
  for (std::size_t j = j0; j < j1; ++j) {
    if (hi != nullptr) {
      const std::uint64_t u = ct::sub_mod(cur[j], tau[j], p);
      if (j >= m)
        hi[j - m] = u;
      else
        hi[j + n - m] = ct::neg_mod(u, p);  // x^(j−m) = −x^(j−m+n)
    }
    cur[j] = ct::add_mod(cur[j], tau[j], p);
  }
}

void split_halves_ntt_native(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi, const std::uint64_t* w,
                             std::size_t n, std::uint64_t p) {
  if (hi != nullptr) {
    for (std::size_t j = 0; j < n; ++j) hi[j] = ct::sub_mod(cur[j], tau[j], p);
    pointwise_mul_native(hi, hi, w, n, p, false);
  }
  for (std::size_t j = 0; j < n; ++j) cur[j] = ct::add_mod(cur[j], tau[j], p);
}

void add_mod_native(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                    std::uint64_t p) {
  for (std::size_t j = 0; j < n; ++j) out[j] = ct::add_mod(a[j], b[j], p);
}

void sub_mod_native(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                    std::uint64_t p) {
  for (std::size_t j = 0; j < n; ++j) out[j] = ct::sub_mod(a[j], b[j], p);
}

}  // namespace spiralpir::detail
