// ntt.hpp — negacyclic number-theoretic transform over one prime, three kernel paths.
//
// API (namespace spiralpir):
//   NttTable::make(p, n)       tables for Z_p[x]/(x^n + 1); ψ = the smallest primitive 2n-th
//                              root of unity mod p (canonical, so every build agrees).
//   ntt_forward(a, t)          coefficients → evaluations. input [0, 4p), output [0, p)
//   ntt_forward_lazy(a, t)     input [0, 4p), output [0, 4p)
//   ntt_inverse(a, t)          evaluations → coefficients (includes 1/n). input [0, 2p), output [0, p)
//   ntt_inverse_lazy(a, t)     input [0, 2p), output [0, 2p)
//   each also takes an explicit Path (throws std::runtime_error if that path is unavailable);
//   without it the active path is used. Debug builds (no NDEBUG) check the input and output
//   ranges and abort with a message when a caller breaks them.
//   ntt_slot_exponent(t, j)    the NTT-domain slot j holds a(ψ^e) with e = 2·bitrev(j) + 1.
// The evaluation order is bit-reversed (Cooley–Tukey forward, Gentleman–Sande inverse, Harvey's
// lazy butterflies with Shoup multiplication). Vector kernels need p < 2^30 (AVX2, and AVX-512
// without IFMA) or p < 2^50 (AVX-512 IFMA); otherwise the native kernel runs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "spiralpir/core/aligned.hpp"
#include "spiralpir/core/cpu_features.hpp"

namespace spiralpir {

struct NttTable {
  std::uint64_t p = 0;
  std::size_t n = 0;
  unsigned log_n = 0;
  std::uint64_t psi = 0;
  // Index k in [1, n): ψ^bitrev(k) (forward) and its inverse, with Shoup companions for
  // 64-bit words (⌊w·2^64/p⌋), 32-bit lanes (⌊w·2^32/p⌋) and IFMA's 52-bit limbs (⌊w·2^52/p⌋).
  AlignedBuffer<std::uint64_t> fwd, fwd_shoup, fwd_shoup32, fwd_shoup52;
  AlignedBuffer<std::uint64_t> inv, inv_shoup, inv_shoup32, inv_shoup52;
  // Last inverse stage folds in 1/n: n^{-1} and ψ^{-bitrev(1)}·n^{-1} with their companions.
  std::uint64_t n_inv = 0, n_inv_shoup = 0, n_inv_shoup32 = 0, n_inv_shoup52 = 0;
  std::uint64_t last_inv = 0, last_inv_shoup = 0, last_inv_shoup32 = 0, last_inv_shoup52 = 0;
  // Stages with butterfly distance t = 2^s, s ∈ {0, 1, 2}, one twiddle per butterfly in the
  // order the AVX-512 kernel visits them: 16-word blocks, within a block the butterflies whose
  // first word e has (e & t) == 0, ascending. Only for p < 2^50 (52-bit Shoup companions).
  std::array<AlignedBuffer<std::uint64_t>, 3> tail_fwd, tail_fwd_shoup52, tail_inv, tail_inv_shoup52;

  static NttTable make(std::uint64_t p, std::size_t n);
};

std::uint64_t ntt_slot_exponent(const NttTable& t, std::size_t slot);

void ntt_forward(std::uint64_t* a, const NttTable& t);
void ntt_forward_lazy(std::uint64_t* a, const NttTable& t);
void ntt_inverse(std::uint64_t* a, const NttTable& t);
void ntt_inverse_lazy(std::uint64_t* a, const NttTable& t);

void ntt_forward(std::uint64_t* a, const NttTable& t, Path path);
void ntt_forward_lazy(std::uint64_t* a, const NttTable& t, Path path);
void ntt_inverse(std::uint64_t* a, const NttTable& t, Path path);
void ntt_inverse_lazy(std::uint64_t* a, const NttTable& t, Path path);

// Whether `path` has a kernel for this table's prime (size limits above).
bool ntt_path_supports(Path path, const NttTable& t);

}  // namespace spiralpir
