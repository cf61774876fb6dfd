// spiralpir/server.hpp — the SPIRAL server pipeline as separate stages:
//   parse_query → expand (coefficient expansion) → convert (ScalToMat + RegevToGSW)
//   → first_dimension (DB × matrix Regev, lazy reduction) → fold (external products)
//   → modswitch_encode (split modulus switching, bit-packed response).
// Each stage is a function so that SpiralStream / SpiralPack (issue 8) can replace or skip one.
// All stages take a thread count; every task writes only its own outputs, so the response is
// identical bit for bit at any thread count.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "spiralpir/automorphism.hpp"
#include "spiralpir/database.hpp"
#include "spiralpir/first_dim.hpp"
#include "spiralpir/keys.hpp"

namespace spiralpir {

template <class R>
struct RegevCt {  // scalar Regev ciphertext, coefficient domain; phase = b − s·a
  proto::Pc<R> a, b;
};

/// Test-only observer of intermediate ciphertexts (noise measurement, stage tests).
template <SpiralParams P>
struct StageObserver {
  using R = typename P::ring;
  virtual ~StageObserver() = default;
  /// after expansion: first-dimension cts (dim0) and GSW-digit cts (nu_2·t_gsw), scalar Regev
  virtual void on_expansion(const std::vector<RegevCt<R>>&, const std::vector<RegevCt<R>>&) {}
  /// after conversion: matrix Regev cts of the first dimension, GSW cts of the folds
  virtual void on_conversion(const std::vector<proto::MatN<R>>&, const std::vector<proto::MatN<R>>&) {}
  /// after the first dimension: instance-major, J cts per instance
  virtual void on_first_dimension(const std::vector<proto::MatN<R>>&) {}
  /// after fold round r: the surviving cts (instance-major, 2^(nu_2-r-1) per instance)
  virtual void on_fold(unsigned, const std::vector<proto::MatN<R>>&) {}
};

inline constexpr const char* kStageNames = "expansion,conversion,first_dimension,folding,modswitch";
inline constexpr std::size_t kNumStages = 5;

template <SpiralParams P>
struct ServerStages {
  using R = typename P::ring;
  using D = Derived<P>;
  using L = KeyLayout<P>;
  using Pc = proto::Pc<R>;
  using Pn = proto::Pn<R>;
  using MatN = proto::MatN<R>;
  static constexpr unsigned n = P::n;

  /// Parses a query (header, hash, exact length, coefficients < q): the scalar Regev ct.
  static RegevCt<R> parse_query(const std::uint8_t* buf, std::size_t len) {
    check_header<P>(buf, len, ObjectKind::query, D::query_bytes - kHeaderBytes);
    Seed seed;
    std::memcpy(seed.data(), buf + kHeaderBytes, 32);
    BitReader rd(buf + kHeaderBytes + 32, len - kHeaderBytes - 32);
    RegevCt<R> ct;
    ct.b = proto::get_poly_q<R>(rd, D::q_bits, "query");
    rd.check_padding_zero("query");
    ct.a = from_ntt(proto::uniform_from_seed<R>(seed, 0));
    return ct;
  }

  /// τ_k then key switching back to s_reg with key columns (a_j, b_j), digits of base 2^bits
  template <class KA, class KB>
  static RegevCt<R> automorph_keyswitch(const RegevCt<R>& c, std::uint64_t k, unsigned bits, unsigned t, KA&& ka,
                                        KB&& kb) {
    const Pc ta = proto::automorph_coeff<R>(c.a, k);
    Pc tb = proto::automorph_coeff<R>(c.b, k);
    std::vector<Pn>& dig = proto::scratch<R>(0, t);
    proto::decompose_ntt_into<R>(ta, bits, t, dig.data(), 1);
    Pn sa, sb;
    proto::dot_multi<R, 2>({&sa, &sb}, t, [&](std::size_t j) -> const Pn& { return dig[j]; },
                           [&](std::size_t m, std::size_t j) -> const Pn& { return m == 0 ? ka(j) : kb(j); });
    tb += from_ntt(std::move(sb));
    return RegevCt<R>{from_ntt(std::move(sa)), std::move(tb)};
  }

  /// Coefficient expansion: returns (first-dimension cts [dim0], GSW-digit cts [nu_2·t_gsw]).
  static void expand(const RegevCt<R>& query, const ExpandedPublicParams<P>& pp, unsigned threads,
                     std::vector<RegevCt<R>>& first, std::vector<RegevCt<R>>& digits) {
    const std::size_t total = std::size_t{1} << D::rounds;
    const std::size_t limit_even = 2 * D::dim0, limit_odd = 2 * D::num_gsw_digits;
    std::vector<RegevCt<R>> cur(total);
    std::vector<char> live(total, 0);
    cur[0] = query;
    live[0] = 1;
    for (unsigned r = 0; r < D::rounds; ++r) {
      const std::size_t half = std::size_t{1} << r;
      const std::uint64_t k = L::automorph_k(r);
      parallel_for(threads, half, [&](std::size_t j) {
        if (!live[j]) return;
        const bool odd = (j & 1) != 0;
        const bool use_right = (r == 0) || odd;
        if (r > 0 && odd && r >= D::rounds_right) return;  // right branch finished
        RegevCt<R> tau =
            use_right ? automorph_keyswitch(
                            cur[j], k, D::bits_exp_right, P::t_exp_right,
                            [&](std::size_t i) -> const Pn& { return pp.right_a(r, static_cast<unsigned>(i)); },
                            [&](std::size_t i) -> const Pn& { return pp.right_b(r, static_cast<unsigned>(i)); })
                      : automorph_keyswitch(
                            cur[j], k, D::bits_exp_left, P::t_exp_left,
                            [&](std::size_t i) -> const Pn& { return pp.left_a(r, static_cast<unsigned>(i)); },
                            [&](std::size_t i) -> const Pn& { return pp.left_b(r, static_cast<unsigned>(i)); });
        const std::size_t j1 = j + half;
        // descendants of j1 are ≡ j1 mod 2^(r+1); they are needed iff j1 is below its branch limit
        const bool need1 = (r == 0) ? D::num_gsw_digits > 0 : j1 < (odd ? limit_odd : limit_even);
        if (need1) {
          Pc da = cur[j].a, db = cur[j].b;
          da -= tau.a;
          db -= tau.b;
          cur[j1].a = proto::mul_monomial_inv<R>(da, half);
          cur[j1].b = proto::mul_monomial_inv<R>(db, half);
          live[j1] = 1;
        }
        cur[j].a += tau.a;
        cur[j].b += tau.b;
      });
    }
    first.assign(D::dim0, RegevCt<R>{});
    digits.assign(D::num_gsw_digits, RegevCt<R>{});
    for (std::size_t i = 0; i < D::dim0; ++i) first[i] = std::move(cur[2 * i]);
    for (std::size_t g = 0; g < D::num_gsw_digits; ++g) digits[g] = std::move(cur[2 * g + 1]);
  }

  /// ScalToMat from precomputed conv digits of a (NTT) and b (NTT): (n+1)×n matrix Regev.
  static MatN scal_to_mat(const std::vector<Pn>& dig_a, const Pn& b_ntt, const ExpandedPublicParams<P>& pp) {
    MatN out(n + 1, n);
    for (unsigned i = 0; i < n; ++i) {
      std::array<Pn*, n + 1> outs;
      for (unsigned row = 0; row <= n; ++row) outs[row] = &out.at(row, i);
      proto::dot_multi<R, n + 1>(
          outs, P::t_conv, [&](std::size_t k) -> const Pn& { return dig_a[k]; },
          [&](std::size_t m, std::size_t k) -> const Pn& {
            return m == 0 ? pp.s2m_a(i * P::t_conv + k) : pp.s2m_b(i * P::t_conv + k, static_cast<unsigned>(m - 1));
          });
      out.at(i + 1, i) += b_ntt;
    }
    return out;
  }

  /// ScalToMat on the first-dimension cts and RegevToGSW on the digit cts.
  static void convert(const std::vector<RegevCt<R>>& first, const std::vector<RegevCt<R>>& digits,
                      const ExpandedPublicParams<P>& pp, unsigned threads, std::vector<MatN>& first_mats,
                      std::vector<MatN>& gsw) {
    first_mats.assign(first.size(), MatN());
    parallel_for(threads, first.size(), [&](std::size_t i) {
      const std::vector<Pn> dig = proto::decompose_ntt<R>(first[i].a, D::bits_conv, P::t_conv);
      first_mats[i] = scal_to_mat(dig, to_ntt(first[i].b), pp);
    });
    const std::size_t cols = std::size_t{n + 1} * P::t_gsw;
    gsw.assign(P::nu_2, MatN(n + 1, cols));
    // task = one digit ct = t_gsw·... columns k of block 0 and column (i+1)·t_gsw + k of blocks 1..n
    parallel_for(threads, digits.size(), [&](std::size_t g) {
      const std::size_t f = g / P::t_gsw, k = g % P::t_gsw;
      std::vector<Pn> dig = proto::decompose_ntt<R>(digits[g].a, D::bits_conv, P::t_conv);
      const MatN m = scal_to_mat(dig, to_ntt(digits[g].b), pp);
      std::vector<Pn> dig_b = proto::decompose_ntt<R>(digits[g].b, D::bits_conv, P::t_conv);
      for (auto& x : dig_b) dig.push_back(std::move(x));
      MatN& G = gsw[f];
      std::array<Pn*, n + 1> outs;
      for (unsigned row = 0; row <= n; ++row) outs[row] = &G.at(row, k);
      proto::dot_multi<R, n + 1>(
          outs, 2 * P::t_conv, [&](std::size_t l) -> const Pn& { return dig[l]; },
          [&](std::size_t m, std::size_t l) -> const Pn& {
            return m == 0 ? pp.r2g_a(l) : pp.r2g_b(l, static_cast<unsigned>(m - 1));
          });
      for (unsigned i = 0; i < n; ++i)
        for (unsigned row = 0; row <= n; ++row) G.at(row, (i + 1) * P::t_gsw + k) = m.at(row, i);
    });
  }

  /// First dimension: out[inst·J + j] = Σ_i first_mats[i] · DB[inst][i][j].
  static std::vector<MatN> first_dimension(const std::vector<MatN>& first_mats, const Database<P>& db,
                                           unsigned threads) {
    return FirstDim<P>::run(first_mats, db, threads);
  }

  /// External product GSW ⊡ C for an (n+1)×n matrix Regev ct C.
  static MatN external_product(const MatN& gsw, const MatN& c) {
    // index (row·t_gsw + k)·n + col
    std::vector<Pn>& dig = proto::scratch<R>(1, std::size_t{n + 1} * P::t_gsw * n);
    for (unsigned row = 0; row <= n; ++row)
      for (unsigned col = 0; col < n; ++col)
        proto::decompose_ntt_into<R>(from_ntt(c.at(row, col)), D::bits_gsw, P::t_gsw,
                                     &dig[std::size_t{row} * P::t_gsw * n + col], n);
    MatN out(n + 1, n);
    const std::size_t K = std::size_t{n + 1} * P::t_gsw;
    for (unsigned col = 0; col < n; ++col) {
      std::array<Pn*, n + 1> outs;
      for (unsigned r = 0; r <= n; ++r) outs[r] = &out.at(r, col);
      proto::dot_multi<R, n + 1>(
          outs, K, [&](std::size_t x) -> const Pn& { return dig[x * n + col]; },
          [&](std::size_t m, std::size_t x) -> const Pn& { return gsw.at(m, x); });
    }
    return out;
  }

  /// Folding: nu_2 rounds; round r combines pairs (j, j + L/2) with GSW_r (bit nu_2−1−r of j).
  static void fold(std::vector<MatN>& cts, const std::vector<MatN>& gsw, unsigned threads,
                   StageObserver<P>* obs = nullptr) {
    const std::size_t J = D::dim_rest;
    for (unsigned r = 0; r < P::nu_2; ++r) {
      const std::size_t len = J >> r, halfl = len / 2;
      std::vector<MatN> next(D::instances * halfl);
      parallel_for(threads, D::instances * halfl, [&](std::size_t task) {
        const std::size_t inst = task / halfl, j = task % halfl;
        const MatN& c0 = cts[inst * len + j];
        const MatN& c1 = cts[inst * len + j + halfl];
        MatN diff = c1 - c0;
        next[task] = c0 + external_product(gsw[r], diff);
      });
      cts = std::move(next);
      if (obs) obs->on_fold(r, cts);
    }
  }

  /// Split modulus switching (row 0 → q2, rows 1..n → q1 = 4p) and bit packing.
  static std::vector<std::uint8_t> modswitch_encode(const std::vector<MatN>& finals, unsigned threads) {
    std::vector<std::uint8_t> out(D::response_bytes, 0);
    write_header<P>(out.data(), ObjectKind::response, D::response_bytes - kHeaderBytes);
    // switch in parallel (per instance), pack sequentially
    std::vector<std::vector<std::uint64_t>> vals(D::instances);
    parallel_for(threads, D::instances, [&](std::size_t inst) {
      auto& v = vals[inst];
      v.reserve(std::size_t{n + 1} * n * D::d);
      for (unsigned row = 0; row <= n; ++row)
        for (unsigned col = 0; col < n; ++col) {
          const Pc c = from_ntt(finals[inst].at(row, col));
          const std::uint64_t to = row == 0 ? D::q2 : D::q1;
          for (std::size_t z = 0; z < D::d; ++z) v.push_back(round_modswitch<R>(coeff(c, z), to));
        }
    });
    BitWriter w(out.data() + kHeaderBytes);
    for (std::size_t inst = 0; inst < D::instances; ++inst) {
      std::size_t x = 0;
      for (unsigned row = 0; row <= n; ++row)
        for (unsigned col = 0; col < n; ++col)
          for (std::size_t z = 0; z < D::d; ++z) w.put(vals[inst][x++], row == 0 ? P::q2_bits : D::q1_bits);
    }
    return out;
  }

  /// The whole answer. stage_seconds (optional) receives kNumStages timings.
  static std::vector<std::uint8_t> answer(const std::uint8_t* query, std::size_t query_len,
                                          const ExpandedPublicParams<P>& pp, const Database<P>& db, unsigned threads,
                                          double* stage_seconds = nullptr, StageObserver<P>* obs = nullptr) {
    if (!db.loaded()) throw ArgumentError("answer: no database loaded");
    using clock = std::chrono::steady_clock;
    double secs[kNumStages] = {};
    auto t0 = clock::now();
    auto lap = [&](int s) {
      const auto t1 = clock::now();
      secs[s] = std::chrono::duration<double>(t1 - t0).count();
      t0 = t1;
    };
    const RegevCt<R> q = parse_query(query, query_len);
    std::vector<RegevCt<R>> first, digits;
    expand(q, pp, threads, first, digits);
    lap(0);
    if (obs) obs->on_expansion(first, digits);
    std::vector<MatN> first_mats, gsw;
    convert(first, digits, pp, threads, first_mats, gsw);
    lap(1);
    if (obs) obs->on_conversion(first_mats, gsw);
    std::vector<MatN> cts = first_dimension(first_mats, db, threads);
    lap(2);
    if (obs) obs->on_first_dimension(cts);
    fold(cts, gsw, threads, obs);
    lap(3);
    std::vector<std::uint8_t> resp = modswitch_encode(cts, threads);
    lap(4);
    if (stage_seconds)
      for (std::size_t s = 0; s < kNumStages; ++s) stage_seconds[s] = secs[s];
    return resp;
  }
};

}  // namespace spiralpir
