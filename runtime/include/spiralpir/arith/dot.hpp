// dot.hpp — lazy dot products of NTT-domain polynomials: the inner loop of key switching and of
// the external product (Σ_k digit_k · key_k over up to 9 keys sharing one pass over the digits).
//
// API (namespace spiralpir; words are residues < 2^32, n a multiple of 32):
//   dot_mac_lazy(m, acc, dig, key, k, n [, Path])
//       acc[r][z] += Σ_{j<k} dig[j][z] · key[r·k + j][z] for r < m (1 ≤ m ≤ kDotMaxRows), z < n,
//       unreduced: the caller bounds k by max_lazy_terms<R>() per call. A vector path the CPU
//       lacks throws (explicit Path) or is skipped (active_path()).
//   dot_mac_reduce(m, acc, dig, key, k, n, p [, Path])
//       acc[r][z] = Σ_{j<k} dig[j][z] · key[r·k + j][z] mod p (acc not read; p < 2^32, k within
//       the lazy bound): the AVX-512 kernel reduces in registers before its one store
//   dot_residue<R, M>(i, acc, K, dig, key)   one residue (prime i) of M fused dot products,
//       acc[m] = Σ_{k<K} dig[k] · key[m·K + k] mod p_i: inputs < p_i, outputs in [0, p_i)
//       (reduced every max_lazy_terms<R>() terms and at the end, whatever the summation order)
//   dot_multi<R, M>(outs, K, dig, key)       every residue: *outs[m] = Σ_k dig(k) · key(m, k)
//   dot<R>(out, K, a, b)                     out = Σ_k a(k) · b(k)
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "spiralpir/arith/pointwise.hpp"
#include "spiralpir/arith/poly.hpp"
#include "spiralpir/arith/ring.hpp"
#include "spiralpir/core/cpu_features.hpp"

namespace spiralpir {

/// most products sharing one pass over the digits: (n + 1) rows of a matrix Regev ct, n <= 8
inline constexpr std::size_t kDotMaxRows = 9;

void dot_mac_lazy(std::size_t m, std::uint64_t* const* acc, const std::uint64_t* const* dig,
                  const std::uint64_t* const* key, std::size_t k, std::size_t n);
void dot_mac_lazy(std::size_t m, std::uint64_t* const* acc, const std::uint64_t* const* dig,
                  const std::uint64_t* const* key, std::size_t k, std::size_t n, Path path);
void dot_mac_reduce(std::size_t m, std::uint64_t* const* acc, const std::uint64_t* const* dig,
                    const std::uint64_t* const* key, std::size_t k, std::size_t n, std::uint64_t p);
void dot_mac_reduce(std::size_t m, std::uint64_t* const* acc, const std::uint64_t* const* dig,
                    const std::uint64_t* const* key, std::size_t k, std::size_t n, std::uint64_t p, Path path);

template <class R, std::size_t M>
void dot_residue(std::size_t i, std::uint64_t* const* acc, std::size_t K, const std::uint64_t* const* dig,
                 const std::uint64_t* const* key) {
  constexpr std::size_t lazy = max_lazy_terms<R>();
  static_assert(M >= 1 && M <= kDotMaxRows, "dot_residue: 1 to kDotMaxRows products");
  static_assert(lazy >= 1, "ring primes too large for lazy accumulation");
  static_assert(R::poly_len % 32 == 0);
  static_assert(max_prime<R>() < (1ULL << 32), "the fused dot kernel multiplies 32-bit residues");
  if (K <= lazy) {  // one chunk: summed and reduced in one pass
    dot_mac_reduce(M, acc, dig, key, K, R::poly_len, R::primes[i]);
    return;
  }
  for (std::size_t m = 0; m < M; ++m) std::fill(acc[m], acc[m] + R::poly_len, std::uint64_t{0});
  std::vector<const std::uint64_t*> kc;
  for (std::size_t k0 = 0; k0 < K; k0 += lazy) {
    const std::size_t kn = std::min(lazy, K - k0);
    const std::uint64_t* const* kb = key;
    if (kn != K) {  // regroup the keys of this chunk as [m·kn + k]
      kc.resize(M * kn);
      for (std::size_t m = 0; m < M; ++m)
        for (std::size_t k = 0; k < kn; ++k) kc[m * kn + k] = key[m * K + k0 + k];
      kb = kc.data();
    }
    dot_mac_lazy(M, acc, dig + k0, kb, kn, R::poly_len);
    for (std::size_t m = 0; m < M; ++m) reduce_words(acc[m], R::poly_len, R::primes[i]);
  }
}

template <class R, std::size_t M, class FD, class FK>
void dot_multi(const std::array<PolyNtt<R>*, M>& outs, std::size_t K, FD&& dig, FK&& key) {
  std::vector<const std::uint64_t*> dp(K), kp(M * K);
  for (std::size_t i = 0; i < R::num_primes; ++i) {
    std::uint64_t* acc[M];
    for (std::size_t m = 0; m < M; ++m) acc[m] = outs[m]->residue(i);
    for (std::size_t k = 0; k < K; ++k) {
      dp[k] = dig(k).residue(i);
      for (std::size_t m = 0; m < M; ++m) kp[m * K + k] = key(m, k).residue(i);
    }
    dot_residue<R, M>(i, acc, K, dp.data(), kp.data());
  }
}

template <class R, class FA, class FB>
void dot(PolyNtt<R>& out, std::size_t K, FA&& a, FB&& b) {
  dot_multi<R, 1>({&out}, K, a, [&](std::size_t, std::size_t k) -> decltype(auto) { return b(k); });
}

}  // namespace spiralpir
