// spiralpir/spiral/keys.hpp — SPIRAL's keys for one computation type: the client's two secrets
// (s_reg, and the n polys of s_gsw) and the layout and server view of the key columns (expansion,
// ScalToMat and RegevToGSW key-switching keys); public_params.hpp generates and parses them for
// every variant. The RLWE steps they are made of (secret sampling, Regev encryption, polynomial
// I/O) live in rlwe/.
//
// Conventions (FORMATS.md §4 gives the wire order):
//   * scalar Regev under s_reg: ct = (a, b), phase = b − s_reg·a.
//   * matrix Regev / GSW under s = s_gsw (n polys), S = [−s | I_n]: a column (a; b_0..b_{n−1})
//     has phase b_i − s_i·a per row i. At n = 1, s_gsw = s_reg: a scalar ct is then already a
//     2×1 matrix Regev ct, so ScalToMat is the identity and has no keys (RegevToGSW's key
//     encrypts s_reg² under s_reg, as a BFV relinearization key does; the expansion keys are
//     already encryptions of τ(s_reg) under s_reg).
//   * every key column has a uniformly random `a` regenerated from the public-params seed
//     (stream id = column index) and n (or 1) rows b = a·s + e + message.
//   Expansion key of round r (automorphism τ_k, k = d/2^r + 1), digit j: phase −τ_k(s_reg)·z^j.
//   ScalToMat key (n > 1), column i·t_conv + k: phase −s_reg·z^k·e_i (row i only).
//   RegevToGSW key, column k < t_conv: phase s·s_reg·z^k; column t_conv + k: phase −s·z^k.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "spiralpir/arith/automorphism.hpp"
#include "spiralpir/arith/sample.hpp"
#include "spiralpir/arith/uniform.hpp"
#include "spiralpir/core/parallel.hpp"
#include "spiralpir/rlwe/poly_io.hpp"
#include "spiralpir/rlwe/regev.hpp"
#include "spiralpir/rlwe/secret.hpp"
#include "spiralpir/rlwe/types.hpp"
#include "spiralpir/spiral/format.hpp"
#include "spiralpir/spiral/params.hpp"

namespace spiralpir {

/// Layout of the key columns in the public parameters.
template <SpiralParams P>
struct KeyLayout {
  using D = Derived<P>;
  static constexpr unsigned left_rounds = D::rounds - 1;       // rounds 1..rounds-1
  static constexpr unsigned right_rounds = D::rounds_right;    // rounds 0..rounds_right-1
  static constexpr std::size_t left_begin = 0;
  static constexpr std::size_t right_begin = left_begin + std::size_t{left_rounds} * P::t_exp_left;
  static constexpr std::size_t s2m_begin = right_begin + std::size_t{right_rounds} * P::t_exp_right;
  /// ScalToMat keys only for n > 1: at n = 1 the matrix secret is s_reg itself (SecretKey)
  static constexpr std::size_t s2m_columns = P::n > 1 ? std::size_t{P::n} * P::t_conv : 0;
  static constexpr std::size_t r2g_begin = s2m_begin + s2m_columns;
  static constexpr std::size_t num_columns = r2g_begin + 2 * std::size_t{P::t_conv};
  static constexpr std::size_t num_b_polys =
      std::size_t{left_rounds} * P::t_exp_left + std::size_t{right_rounds} * P::t_exp_right +
      std::size_t{P::n} * s2m_columns + std::size_t{P::n} * 2 * P::t_conv;
  static_assert(num_b_polys == D::pp_polys, "public-params layout disagrees with FORMATS.md");

  static std::size_t left_col(unsigned r, unsigned j) { return left_begin + std::size_t{r - 1} * P::t_exp_left + j; }
  static std::size_t right_col(unsigned r, unsigned j) { return right_begin + std::size_t{r} * P::t_exp_right + j; }
  /// number of b rows of a column
  static unsigned rows_of(std::size_t col) { return col < s2m_begin ? 1u : P::n; }
  static std::uint64_t automorph_k(unsigned r) { return D::d / (std::size_t{1} << r) + 1; }
};

/// The client's secret: s_reg (query and expansion) and s_gsw (n polys; matrix Regev and GSW).
/// Wiped on destruction (a moved-from key holds nothing).
template <SpiralParams P>
struct SecretKey {
  using R = typename P::ring;
  rlwe::Pc<R> s_reg;
  rlwe::Pn<R> s_reg_ntt;
  std::vector<rlwe::Pc<R>> s;
  std::vector<rlwe::Pn<R>> s_ntt;

  SecretKey() = default;
  SecretKey(const SecretKey&) = default;
  SecretKey(SecretKey&&) noexcept = default;
  SecretKey& operator=(const SecretKey&) = delete;  // would free the old key unwiped
  SecretKey& operator=(SecretKey&&) = delete;
  ~SecretKey() { wipe(); }
  void wipe() noexcept {
    s_reg.wipe();
    s_reg_ntt.wipe();
    for (auto& x : s) x.wipe();
    for (auto& x : s_ntt) x.wipe();
  }

  static rlwe::Pc<R> sample_secret(Csprng& rng, const GaussianSampler& g) {
    return rlwe::sample_secret<R>(rng, P::secret_dist, g, P::secret_plus, P::secret_minus);
  }

  static SecretKey generate(Csprng& rng) {
    const GaussianSampler g(P::noise_width);
    SecretKey k;
    k.s_reg = sample_secret(rng, g);  // move-assigned into zero polys: nothing unwiped is freed
    k.s_reg_ntt = to_ntt(k.s_reg);
    if constexpr (P::n == 1) {  // one secret: ScalToMat is the identity (no ScalToMat keys)
      k.s.push_back(k.s_reg);
      k.s_ntt.push_back(k.s_reg_ntt);
    } else {
      for (unsigned i = 0; i < P::n; ++i) {
        k.s.push_back(sample_secret(rng, g));
        k.s_ntt.push_back(to_ntt(k.s.back()));
      }
    }
    return k;
  }
};

/// Public parameters as the server holds them: every key column in the NTT domain.
template <SpiralParams P>
struct ExpandedPublicParams {
  using R = typename P::ring;
  using L = KeyLayout<P>;
  std::vector<rlwe::Pn<R>> a;                 // one per column
  std::vector<std::vector<rlwe::Pn<R>>> b;    // b[col][row]

  // views used by the server stages
  const rlwe::Pn<R>& left_a(unsigned r, unsigned j) const { return a[L::left_col(r, j)]; }
  const rlwe::Pn<R>& left_b(unsigned r, unsigned j) const { return b[L::left_col(r, j)][0]; }
  const rlwe::Pn<R>& right_a(unsigned r, unsigned j) const { return a[L::right_col(r, j)]; }
  const rlwe::Pn<R>& right_b(unsigned r, unsigned j) const { return b[L::right_col(r, j)][0]; }
  const rlwe::Pn<R>& s2m_a(std::size_t c) const { return a[L::s2m_begin + c]; }
  const rlwe::Pn<R>& s2m_b(std::size_t c, unsigned row) const { return b[L::s2m_begin + c][row]; }
  const rlwe::Pn<R>& r2g_a(std::size_t c) const { return a[L::r2g_begin + c]; }
  const rlwe::Pn<R>& r2g_b(std::size_t c, unsigned row) const { return b[L::r2g_begin + c][row]; }
};

}  // namespace spiralpir
