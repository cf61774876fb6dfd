// pointwise.hpp — coefficient-wise kernels over one prime (the NTT-domain product).
//
// API (namespace spiralpir; n words, modulus p < 2^50; vector paths need p < 2^30):
//   pointwise_mul(out, a, b, n, p)         out = a·b mod p;        a, b ∈ [0, p) → out ∈ [0, p)
//   pointwise_mul_add(acc, a, b, n, p)     acc = acc + a·b mod p;  acc, a, b ∈ [0, p) → [0, p)
//   pointwise_mul_add_lazy(acc, a, b, n)   acc += a·b with no reduction (p < 2^32): the caller
//                                          bounds the number of terms by max_lazy_terms<R>()
//   reduce_words(a, n, p)                  any 64-bit words → [0, p) (vector paths: p < 2^32)
//   add_mod(out, a, b, n, p)               out = a + b mod p;       a, b ∈ [0, p), p < 2^63
//   sub_mod(out, a, b, n, p)               out = a − b mod p;       a, b ∈ [0, p), p < 2^63
//                                          (both: out may alias a or b; constant time in the words)
//   split_halves(cur, tau, hi, m, n, p)    the expansion's split of a ct residue: with
//       u = cur − tau mod p, hi = x^{-m}·u negacyclic over n words (skipped when hi is null;
//       0 ≤ m < n), then cur = cur + tau mod p; cur, tau ∈ [0, p), p < 2^63
//   split_halves_ntt(cur, tau, hi, w, n, p)   the same split in the NTT domain, where the shift
//       is a product: hi = w·(cur − tau) mod p with w the NTT of x^{-m} (skipped when hi is
//       null), then cur = cur + tau mod p; cur, tau, w ∈ [0, p), p < 2^50 (vector paths p < 2^30)
//   each also takes an explicit Path (throws if unavailable); otherwise active_path().
#pragma once

#include <cstddef>
#include <cstdint>

#include "spiralpir/core/cpu_features.hpp"

namespace spiralpir {

void pointwise_mul(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                   std::uint64_t p);
void pointwise_mul_add(std::uint64_t* acc, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                       std::uint64_t p);
void pointwise_mul_add_lazy(std::uint64_t* acc, const std::uint64_t* a, const std::uint64_t* b, std::size_t n);
void reduce_words(std::uint64_t* a, std::size_t n, std::uint64_t p);
void add_mod(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n, std::uint64_t p);
void sub_mod(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n, std::uint64_t p);
void split_halves(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi, std::size_t m, std::size_t n,
                  std::uint64_t p);
void split_halves_ntt(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi, const std::uint64_t* w,
                      std::size_t n, std::uint64_t p);

void pointwise_mul(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                   std::uint64_t p, Path path);
void pointwise_mul_add(std::uint64_t* acc, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                       std::uint64_t p, Path path);
void pointwise_mul_add_lazy(std::uint64_t* acc, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                            Path path);
void reduce_words(std::uint64_t* a, std::size_t n, std::uint64_t p, Path path);
void add_mod(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n, std::uint64_t p,
             Path path);
void sub_mod(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n, std::uint64_t p,
             Path path);
void split_halves(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi, std::size_t m, std::size_t n,
                  std::uint64_t p, Path path);
void split_halves_ntt(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi, const std::uint64_t* w,
                      std::size_t n, std::uint64_t p, Path path);

}  // namespace spiralpir
