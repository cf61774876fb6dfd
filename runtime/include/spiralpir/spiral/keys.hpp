// spiralpir/spiral/keys.hpp — SPIRAL's keys: the client's two secrets (s_reg, and the n polys of
// s_gsw) and the public parameters (expansion, ScalToMat and RegevToGSW key-switching keys) —
// their layout, generation and parsing. The RLWE steps they are made of (secret sampling, Regev
// encryption, polynomial I/O) live in rlwe/.
//
// Conventions (FORMATS.md §4 gives the wire order):
//   * scalar Regev under s_reg: ct = (a, b), phase = b − s_reg·a.
//   * matrix Regev / GSW under s = s_gsw (n polys), S = [−s | I_n]: a column (a; b_0..b_{n−1})
//     has phase b_i − s_i·a per row i.
//   * every key column has a uniformly random `a` regenerated from the public-params seed
//     (stream id = column index) and n (or 1) rows b = a·s + e + message.
//   Expansion key of round r (automorphism τ_k, k = d/2^r + 1), digit j: phase −τ_k(s_reg)·z^j.
//   ScalToMat key, column i·t_conv + k: phase −s_reg·z^k·e_i (row i only).
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
  static constexpr std::size_t r2g_begin = s2m_begin + std::size_t{P::n} * P::t_conv;
  static constexpr std::size_t num_columns = r2g_begin + 2 * std::size_t{P::t_conv};
  static constexpr std::size_t num_b_polys =
      std::size_t{left_rounds} * P::t_exp_left + std::size_t{right_rounds} * P::t_exp_right +
      std::size_t{P::n} * (std::size_t{P::n} * P::t_conv + 2 * std::size_t{P::t_conv});
  static_assert(num_b_polys == D::pp_polys, "public-params layout disagrees with FORMATS.md");

  static std::size_t left_col(unsigned r, unsigned j) { return left_begin + std::size_t{r - 1} * P::t_exp_left + j; }
  static std::size_t right_col(unsigned r, unsigned j) { return right_begin + std::size_t{r} * P::t_exp_right + j; }
  /// number of b rows of a column
  static unsigned rows_of(std::size_t col) { return col < s2m_begin ? 1u : P::n; }
  static std::uint64_t automorph_k(unsigned r) { return D::d / (std::size_t{1} << r) + 1; }
};

/// The client's secret: s_reg (query and expansion) and s_gsw (n polys; matrix Regev and GSW).
template <SpiralParams P>
struct SecretKey {
  using R = typename P::ring;
  rlwe::Pc<R> s_reg;
  rlwe::Pn<R> s_reg_ntt;
  std::vector<rlwe::Pc<R>> s;
  std::vector<rlwe::Pn<R>> s_ntt;

  static rlwe::Pc<R> sample_secret(Csprng& rng, const GaussianSampler& g) {
    return rlwe::sample_secret<R>(rng, P::secret_dist, g, P::secret_plus, P::secret_minus);
  }

  static SecretKey generate(Csprng& rng) {
    const GaussianSampler g(P::noise_width);
    SecretKey k;
    k.s_reg = sample_secret(rng, g);
    k.s_reg_ntt = to_ntt(k.s_reg);
    for (unsigned i = 0; i < P::n; ++i) {
      k.s.push_back(sample_secret(rng, g));
      k.s_ntt.push_back(to_ntt(k.s.back()));
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

  /// Parses serialized public parameters (checks header, hash, exact length, every
  /// coefficient < q) and expands them.
  static ExpandedPublicParams parse(const std::uint8_t* buf, std::size_t len, unsigned threads = 1) {
    using D = Derived<P>;
    check_header<P>(buf, len, ObjectKind::public_params, D::public_params_bytes - kHeaderBytes);
    Seed seed;
    std::memcpy(seed.data(), buf + kHeaderBytes, 32);
    const std::uint8_t* body = buf + kHeaderBytes + 32;
    const std::size_t body_len = len - kHeaderBytes - 32;
    ExpandedPublicParams pp;
    pp.a.resize(L::num_columns);
    pp.b.resize(L::num_columns);
    // offsets of each column's first b poly in the stream
    std::vector<std::size_t> first(L::num_columns);
    std::size_t acc = 0;
    for (std::size_t c = 0; c < L::num_columns; ++c) {
      first[c] = acc;
      acc += L::rows_of(c);
    }
    const std::uint64_t poly_bits = std::uint64_t{D::d} * D::q_bits;
    parallel_for(threads, L::num_columns, [&](std::size_t c) {
      pp.a[c] = uniform_poly_ntt<R>(seed, c);
      pp.b[c].resize(L::rows_of(c));
      for (unsigned row = 0; row < L::rows_of(c); ++row) {
        const std::uint64_t bit0 = (first[c] + row) * poly_bits;
        // poly_bits is a multiple of 8 (d >= 1024), so every poly starts on a byte
        BitReader rd(body + bit0 / 8, body_len - bit0 / 8);
        pp.b[c][row] = to_ntt(rlwe::get_poly_q<R>(rd, D::q_bits, "public parameters"));
      }
    });
    // canonical encoding: padding bits after the last poly must be zero
    {
      const std::uint64_t used = acc * poly_bits;
      BitReader rd(body + used / 8, body_len - used / 8);
      if (used % 8) rd.get(static_cast<unsigned>(used % 8));
      rd.check_padding_zero("public parameters");
    }
    return pp;
  }
};

/// Generates the serialized public parameters for `sk` (client side). `noise` supplies the
/// errors; `seed` the random halves.
template <SpiralParams P>
std::vector<std::uint8_t> make_public_params(const SecretKey<P>& sk, const Seed& seed, Csprng& noise) {
  using R = typename P::ring;
  using D = Derived<P>;
  using L = KeyLayout<P>;
  const GaussianSampler g(P::noise_width);
  const u128 q = D::q;
  std::vector<std::uint8_t> out(D::public_params_bytes, 0);
  write_header<P>(out.data(), ObjectKind::public_params, D::public_params_bytes - kHeaderBytes);
  std::memcpy(out.data() + kHeaderBytes, seed.data(), 32);
  BitWriter w(out.data() + kHeaderBytes + 32);

  auto neg_pow = [&](unsigned bits, unsigned j) {  // (−z^j) mod q, z = 2^bits
    const u128 zj = pow2_mod128(bits * j, q);
    return zj == 0 ? u128{0} : q - zj;
  };
  // b = a·s + e + m for secret s (NTT), message m (NTT, may be null)
  auto emit = [&](const rlwe::Pn<R>& a, const rlwe::Pn<R>& s, const rlwe::Pn<R>* m) {
    rlwe::put_poly_q<R>(w, from_ntt(rlwe::regev_body<R>(a, s, noise, g, m)), D::q_bits);
  };

  // 1-2. expansion keys: phase −τ_k(s_reg)·z^j
  auto expansion_key = [&](unsigned r, unsigned t, unsigned bits, std::size_t col0) {
    const rlwe::Pn<R> tau = to_ntt(automorph(sk.s_reg, L::automorph_k(r)));
    for (unsigned j = 0; j < t; ++j) {
      const rlwe::Pn<R> a = uniform_poly_ntt<R>(seed, col0 + j);
      const rlwe::Pn<R> m = scalar_mul(tau, neg_pow(bits, j));
      emit(a, sk.s_reg_ntt, &m);
    }
  };
  for (unsigned r = 1; r < D::rounds; ++r) expansion_key(r, P::t_exp_left, D::bits_exp_left, L::left_col(r, 0));
  for (unsigned r = 0; r < D::rounds_right; ++r)
    expansion_key(r, P::t_exp_right, D::bits_exp_right, L::right_col(r, 0));

  // 3. ScalToMat: column i·t_conv + k, phase −s_reg·z^k·e_i
  for (unsigned i = 0; i < P::n; ++i) {
    for (unsigned k = 0; k < P::t_conv; ++k) {
      const std::size_t c = std::size_t{i} * P::t_conv + k;
      const rlwe::Pn<R> a = uniform_poly_ntt<R>(seed, L::s2m_begin + c);
      const rlwe::Pn<R> m = scalar_mul(sk.s_reg_ntt, neg_pow(D::bits_conv, k));
      for (unsigned row = 0; row < P::n; ++row) emit(a, sk.s_ntt[row], row == i ? &m : nullptr);
    }
  }
  // 4. RegevToGSW: column k: s·s_reg·z^k ; column t_conv + k: −s·z^k
  for (unsigned c = 0; c < 2 * P::t_conv; ++c) {
    const rlwe::Pn<R> a = uniform_poly_ntt<R>(seed, L::r2g_begin + c);
    const unsigned k = c % P::t_conv;
    const u128 zk = pow2_mod128(D::bits_conv * k, q);
    for (unsigned row = 0; row < P::n; ++row) {
      rlwe::Pn<R> m = c < P::t_conv ? scalar_mul(sk.s_ntt[row] * sk.s_reg_ntt, zk)
                                     : scalar_mul(sk.s_ntt[row], neg_pow(D::bits_conv, k));
      emit(a, sk.s_ntt[row], &m);
    }
  }
  return out;
}

}  // namespace spiralpir
