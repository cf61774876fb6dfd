// spiralpir/spiral/public_params.hpp — the public parameters of every variant: their columns in
// wire order (FORMATS.md §4 and §7), generation on the client, parsing on the server, and the
// shared handle PublicParams<P> a server keeps per client.
//
// Sections, in wire order (each column: a random row regenerated from the seed, stream id = its
// index in C's KeyLayout, or after them for packing; then its b rows):
//   expansion   C's expansion keys (not for stream: the client uploads what expansion makes)
//   conversion  C's ScalToMat and RegevToGSW keys (keys.hpp gives their phases)
//   packing     pack only: W_r, column r·t_conv + k, n rows; row i has phase [i = r]·(−s_c·z^k)
//               under the packing target s̃_i (s_c: the n = 1 computation secret)
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "spiralpir/rlwe/regev.hpp"
#include "spiralpir/spiral/keys.hpp"
#include "spiralpir/spiral/variant.hpp"

namespace spiralpir {

/// The column list of P's public parameters.
template <SpiralParams P>
struct KeyColumns {
  using V = VariantOf<P>;
  using C = typename V::Comp;
  using LC = KeyLayout<C>;
  static constexpr unsigned n = P::n;
  /// seed stream of packing column c (after every column of C's layout)
  static constexpr std::size_t pack_begin = LC::num_columns;
  static constexpr std::size_t pack_columns = V::pack ? std::size_t{n} * P::t_conv : 0;

  struct Column {
    std::size_t stream;  // seed stream of its random row; also its index into C's layout (< pack_begin)
    unsigned rows;
  };
  static std::vector<Column> columns() {
    std::vector<Column> cols;
    if constexpr (!V::stream)
      for (std::size_t c = 0; c < LC::s2m_begin; ++c) cols.push_back({c, 1});
    for (std::size_t c = LC::s2m_begin; c < LC::num_columns; ++c) cols.push_back({c, C::n});
    for (std::size_t c = 0; c < pack_columns; ++c) cols.push_back({pack_begin + c, n});
    return cols;
  }
};

/// Server view of P's public parameters (NTT domain).
template <SpiralParams P>
struct PublicKeys {
  using K = KeyColumns<P>;
  using C = typename K::C;
  using R = typename P::ring;
  using Pn = rlwe::Pn<R>;
  ExpandedPublicParams<C> comp;         // C's key columns (expansion columns empty for stream)
  std::vector<Pn> pack_a;               // packing column c = r·t_conv + k: random row
  std::vector<std::vector<Pn>> pack_b;  // [c][row], n rows

  /// Parses serialized public parameters (checks header, hash, exact length, every coefficient
  /// < q, zero padding) into the NTT domain.
  static PublicKeys parse(const std::uint8_t* buf, std::size_t len, unsigned threads) {
    using D = Derived<P>;
    check_header<P>(buf, len, ObjectKind::public_params, D::public_params_bytes - kHeaderBytes);
    Seed seed;
    std::memcpy(seed.data(), buf + kHeaderBytes, 32);
    const std::uint8_t* body = buf + kHeaderBytes + 32;
    const std::size_t body_len = len - kHeaderBytes - 32;
    const auto cols = K::columns();
    std::vector<std::size_t> first(cols.size());  // each column's first b poly in the stream
    std::size_t acc = 0;
    for (std::size_t c = 0; c < cols.size(); ++c) {
      first[c] = acc;
      acc += cols[c].rows;
    }
    static_assert(std::uint64_t{D::d} * D::q_bits % 8 == 0, "polynomials start on a byte boundary");
    if (acc != D::pp_polys) throw std::logic_error("public-params layout disagrees with FORMATS.md");
    PublicKeys pp;
    pp.comp.a.resize(K::LC::num_columns);
    pp.comp.b.resize(K::LC::num_columns);
    pp.pack_a.resize(K::pack_columns);
    pp.pack_b.resize(K::pack_columns);
    const std::uint64_t poly_bits = std::uint64_t{D::d} * D::q_bits;
    parallel_for(threads, cols.size(), [&](std::size_t x) {
      const auto& col = cols[x];
      const bool packing = col.stream >= K::pack_begin;
      Pn& a = packing ? pp.pack_a[col.stream - K::pack_begin] : pp.comp.a[col.stream];
      std::vector<Pn>& b = packing ? pp.pack_b[col.stream - K::pack_begin] : pp.comp.b[col.stream];
      a = uniform_poly_ntt<R>(seed, col.stream);
      b.resize(col.rows);
      for (unsigned row = 0; row < col.rows; ++row) {
        const std::uint64_t bit0 = (first[x] + row) * poly_bits;
        BitReader rd(body + bit0 / 8, body_len - bit0 / 8);
        b[row] = to_ntt(rlwe::get_poly_q<R>(rd, D::q_bits, "public parameters"));
      }
    });
    const std::uint64_t used = acc * poly_bits;
    BitReader rd(body + used / 8, body_len - used / 8);
    rd.check_padding_zero("public parameters");
    return pp;
  }

  /// Serialized public parameters (client side) for the computation secret `sk` and, for pack,
  /// the packing target `target`. `noise` supplies the errors (in wire order), `seed` the random
  /// rows. Constant time in the secrets and the noise; the secret-bearing messages are wiped.
  static std::vector<std::uint8_t> generate(const SecretKey<C>& sk, const SecretKey<P>* target, const Seed& seed,
                                            Csprng& noise) {
    using D = Derived<P>;
    using DC = Derived<C>;
    using LC = typename K::LC;
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
    auto emit = [&](const Pn& a, const Pn& s, const Pn* m) {
      rlwe::put_poly_q<R>(w, from_ntt(rlwe::regev_body<R>(a, s, noise, g, m)), D::q_bits);
    };
    if constexpr (!K::V::stream) {
      // expansion keys: phase −τ_k(s_reg)·z^j
      auto expansion_key = [&](unsigned r, unsigned t, unsigned bits, std::size_t col0) {
        Pn tau = to_ntt(automorph(sk.s_reg, LC::automorph_k(r)));
        for (unsigned j = 0; j < t; ++j) {
          Pn m = scalar_mul(tau, neg_pow(bits, j));
          emit(uniform_poly_ntt<R>(seed, col0 + j), sk.s_reg_ntt, &m);
          m.wipe();
        }
        tau.wipe();
      };
      for (unsigned r = 1; r < DC::rounds; ++r) expansion_key(r, P::t_exp_left, DC::bits_exp_left, LC::left_col(r, 0));
      for (unsigned r = 0; r < DC::rounds_right; ++r)
        expansion_key(r, P::t_exp_right, DC::bits_exp_right, LC::right_col(r, 0));
    }
    // ScalToMat (n > 1): column i·t_conv + k, phase −s_reg·z^k·e_i
    for (unsigned i = 0; i < (C::n > 1 ? C::n : 0); ++i)
      for (unsigned k = 0; k < P::t_conv; ++k) {
        const Pn a = uniform_poly_ntt<R>(seed, LC::s2m_begin + std::size_t{i} * P::t_conv + k);
        Pn m = scalar_mul(sk.s_reg_ntt, neg_pow(DC::bits_conv, k));
        for (unsigned row = 0; row < C::n; ++row) emit(a, sk.s_ntt[row], row == i ? &m : nullptr);
        m.wipe();
      }
    // RegevToGSW: column k: s·s_reg·z^k ; column t_conv + k: −s·z^k
    for (unsigned c = 0; c < 2 * P::t_conv; ++c) {
      const Pn a = uniform_poly_ntt<R>(seed, LC::r2g_begin + c);
      const unsigned k = c % P::t_conv;
      const u128 zk = pow2_mod128(DC::bits_conv * k, q);
      for (unsigned row = 0; row < C::n; ++row) {
        Pn m = c < P::t_conv ? scalar_mul(sk.s_ntt[row] * sk.s_reg_ntt, zk)
                             : scalar_mul(sk.s_ntt[row], neg_pow(DC::bits_conv, k));
        emit(a, sk.s_ntt[row], &m);
        m.wipe();
      }
    }
    if constexpr (K::V::pack) {
      for (unsigned r = 0; r < P::n; ++r)
        for (unsigned k = 0; k < P::t_conv; ++k) {
          const Pn a = uniform_poly_ntt<R>(seed, K::pack_begin + std::size_t{r} * P::t_conv + k);
          Pn m = scalar_mul(sk.s_ntt[0], neg_pow(D::bits_conv, k));
          for (unsigned row = 0; row < P::n; ++row) emit(a, target->s_ntt[row], row == r ? &m : nullptr);
          m.wipe();
        }
    }
    return out;
  }
};

/// A client's public parameters on the server: parsed once, shared by the prepared queries that
/// need them (pack: the packing keys).
template <SpiralParams P>
class PublicParams {
 public:
  static PublicParams load(const std::uint8_t* buf, std::size_t len, unsigned threads = 1) {
    PublicParams p;
    p.pp_ = std::make_shared<const PublicKeys<P>>(PublicKeys<P>::parse(buf, len, resolve_threads(threads)));
    return p;
  }
  const PublicKeys<P>& keys() const { return *pp_; }
  const std::shared_ptr<const PublicKeys<P>>& shared() const { return pp_; }

 private:
  std::shared_ptr<const PublicKeys<P>> pp_;
};

}  // namespace spiralpir
