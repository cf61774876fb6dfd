// spiralpir/spiral/stages.hpp — the SPIRAL server's named steps over one computation type P:
//   parse_query → expand (coefficient expansion) → convert (ScalToMat + RegevToGSW)
//   → first_dimension (DB × matrix Regev, lazy reduction) → fold (external products)
//   → modswitch_encode (split modulus switching, bit-packed response).
// Server<P> (server.hpp) composes them once for every variant; a variant skips or adds a step
// (stream: no expansion; pack: packing.hpp before the modulus switching).
// All steps take a thread count; every task writes only its own outputs, so the response is
// identical bit for bit at any thread count.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spiralpir/arith/automorphism.hpp"
#include "spiralpir/arith/dot.hpp"
#include "spiralpir/arith/gadget.hpp"
#include "spiralpir/rlwe/scratch.hpp"
#include "spiralpir/spiral/database.hpp"
#include "spiralpir/spiral/first_dim.hpp"
#include "spiralpir/spiral/keys.hpp"

namespace spiralpir {

/// Scalar Regev ciphertext, phase = b − s·a: a in the coefficient domain (the expansion and
/// conversion decompose it), b in the NTT domain (the expansion only permutes, adds and scales
/// it, and ScalToMat adds it as it is: kept there, it is never transformed back and forth).
template <class R>
struct RegevCt {
  rlwe::Pc<R> a;
  rlwe::Pn<R> b;
};

/// Test-only observer of intermediate ciphertexts (noise measurement, stage tests).
template <SpiralParams P>
struct StageObserver {
  using R = typename P::ring;
  virtual ~StageObserver() = default;
  /// after expansion: first-dimension cts (dim0) and GSW-digit cts (nu_2·t_gsw), scalar Regev
  virtual void on_expansion(const std::vector<RegevCt<R>>&, const std::vector<RegevCt<R>>&) {}
  /// after conversion: matrix Regev cts of the first dimension, GSW cts of the folds
  virtual void on_conversion(const std::vector<rlwe::MatN<R>>&, const std::vector<rlwe::MatN<R>>&) {}
  /// whether on_conversion reads the first-dimension matrices; false: it gets none, and the
  /// conversion tiles each matrix as it is computed instead of keeping them all
  virtual bool needs_first_matrices() const { return true; }
  /// after the first dimension: instance-major, J cts per instance
  virtual void on_first_dimension(const std::vector<rlwe::MatN<R>>&) {}
  /// after fold round r: the surviving cts (instance-major, 2^(nu_2-r-1) per instance)
  virtual void on_fold(unsigned, const std::vector<rlwe::MatN<R>>&) {}
};

/// The share of a query's preparation one of 2^bits parts computes (shard.hpp's split
/// preparation): the first-dimension cts i ≡ part and the GSW digit cts g ≡ part (mod 2^bits).
/// Expansion round r turns ct j (< 2^r) into j and j + 2^r, so from round bits + 1 on, ct j is
/// the ancestor of exactly the outputs ≡ j (mod 2^(bits+1)): first-dimension output i sits at
/// 2i, digit g at 2g + 1, so part s keeps the cts j ≡ 2s, 2s + 1 there (rounds 0 .. bits, 2^(bits+1)
/// − 1 key switches, are every part's). bits = 0: the whole preparation.
struct QuerySplit {
  unsigned bits = 0, part = 0;
  bool owns(std::size_t x) const { return (x & ((std::size_t{1} << bits) - 1)) == part; }
  /// whether expansion round r computes ct j
  bool expands(unsigned r, std::size_t j) const {
    return r <= bits || ((j & ((std::size_t{2} << bits) - 1)) >> 1) == part;
  }
};

inline constexpr const char* kStageNames = "expansion,conversion,first_dimension,folding,modswitch";
inline constexpr std::size_t kNumStages = 5;

template <SpiralParams P>
struct ServerStages {
  using R = typename P::ring;
  using D = Derived<P>;
  using L = KeyLayout<P>;
  using Pc = rlwe::Pc<R>;
  using Pn = rlwe::Pn<R>;
  using MatN = rlwe::MatN<R>;
  static constexpr unsigned n = P::n;

  /// Parses a query (header, hash, exact length, coefficients < q): the scalar Regev ct.
  static RegevCt<R> parse_query(const std::uint8_t* buf, std::size_t len) {
    check_header<P>(buf, len, ObjectKind::query, D::query_bytes - kHeaderBytes);
    Seed seed;
    std::memcpy(seed.data(), buf + kHeaderBytes, 32);
    BitReader rd(buf + kHeaderBytes + 32, len - kHeaderBytes - 32);
    RegevCt<R> ct;
    ct.b = to_ntt(rlwe::get_poly_q<R>(rd, D::q_bits, "query"));
    rd.check_padding_zero("query");
    ct.a = from_ntt(uniform_poly_ntt<R>(seed, 0));
    return ct;
  }

  /// Per expansion round r: τ_k on the NTT domain as a slot permutation (k = automorph_k(r)),
  /// and the NTT of x^{-2^r}, by which the split of the b halves multiplies.
  struct ExpandTables {
    std::vector<std::vector<std::uint32_t>> perm;
    std::vector<Pn> shift;
  };
  static const ExpandTables& expand_tables() {
    static const ExpandTables tables = [] {
      ExpandTables x;
      for (unsigned r = 0; r < D::rounds; ++r) {
        x.perm.push_back(automorph_ntt_permutation<R>(L::automorph_k(r)));
        Pc m;  // x^{-h} = −x^{d−h}
        for (std::size_t i = 0; i < R::num_primes; ++i) m(i, R::poly_len - (std::size_t{1} << r)) = R::primes[i] - 1;
        x.shift.push_back(to_ntt(std::move(m)));
      }
      return x;
    }();
    return tables;
  }

  /// Residue i of the expansion step for one ct c: with dig[0..t) = residue i of the digits of
  /// base 2^bits of ta = τ_k(c.a) (coefficients; transformed in place), tau = τ_k(c) key-switched
  /// back to s_reg with key columns (ka(j), kb(j)); then, residue i only, hi = x^{-half}·(c − tau)
  /// (when hi_a != nullptr) and c += tau. b stays in the NTT domain: τ_k is the slot permutation
  /// `perm` there and x^{-half} the product with `shift`. Every write is to residue i (and dig),
  /// so the residues of one ct are independent tasks.
  template <class KA, class KB>
  static void expand_step_residue(std::uint64_t* const* dig, Pc& c_a, Pn& c_b, unsigned t,
                                  std::size_t i, KA&& ka, KB&& kb, std::size_t half, std::uint64_t* hi_a,
                                  std::uint64_t* hi_b, const std::uint32_t* perm, const Pn& shift) {
    constexpr std::size_t d = R::poly_len;
    const std::uint64_t p = R::primes[i];
    std::uint64_t* const sa = rlwe::scratch_words(0, 3 * d);  // τ_k(c.a) switched: the new a
    std::uint64_t* const sb = sa + d;                          // τ_k(c.b) + key-switch part: the new b
    std::uint64_t* const tmp = sb + d;
    std::vector<const std::uint64_t*> ptr(3 * std::size_t{t});  // digits, then [m·t + j] keys
    const auto& tb = tables<R>();
    for (unsigned j = 0; j < t; ++j) {
      ntt_forward(dig[j], tb.ntt[i]);
      ptr[j] = dig[j];
      ptr[t + j] = ka(j).residue(i);
      ptr[2 * std::size_t{t} + j] = kb(j).residue(i);
    }
    std::uint64_t* acc[2] = {sa, sb};
    dot_residue<R, 2>(i, acc, t, ptr.data(), ptr.data() + t);
    ntt_inverse(sa, tb.ntt[i]);  // the next round decomposes a: coefficients
    automorph_ntt_residue(c_b.residue(i), tmp, perm, d);  // a plain gather, then the vector sum
    add_mod(sb, sb, tmp, d, p);
    split_halves(c_a.residue(i), sa, hi_a, half, d, p);
    split_halves_ntt(c_b.residue(i), sb, hi_b, shift.residue(i), d, p);
  }

  /// Coefficient expansion: returns (first-dimension cts [buckets·dim0], GSW-digit cts
  /// [buckets·nu_2·t_gsw]), bucket g's at [g·dim0, (g+1)·dim0) and [g·digits, (g+1)·digits)
  /// (buckets ≤ D::query_buckets; 1 = the first bucket only, the plain query). With one bucket
  /// the cts of rows ≥ D::rows_stored are zero (not expanded: the first dimension skips them).
  /// Round r turns each live ct j < 2^r into j and j + 2^r, the right-gadget cts (t_exp_right
  /// digits, the costly ones) first. Tasks are (ct, residue) pairs while a round has fewer than
  /// two cts per thread (the early rounds have only 1, 2, 4: splitting by residue keeps every
  /// thread busy there) or with three or more primes, else whole cts, which decompose once for
  /// both residues.
  /// `split`: only its share (the other outputs are left empty); every ct computed is the same.
  static void expand(const RegevCt<R>& query, const ExpandedPublicParams<P>& pp, unsigned threads,
                     std::vector<RegevCt<R>>& first, std::vector<RegevCt<R>>& digits, unsigned buckets = 1,
                     QuerySplit split = {}) {
    constexpr std::size_t np = R::num_primes;
    if (buckets < 1 || buckets > D::query_buckets)
      throw ArgumentError("expand: " + std::to_string(buckets) + " buckets, these parameters pack 1 to " +
                          std::to_string(D::query_buckets));
    const std::size_t n_first = buckets * D::dim0, n_digits = buckets * D::num_gsw_digits;
    const std::size_t total = std::size_t{1} << D::rounds;
    // one bucket: no selector for the rows past the stored ones (their plaintexts are zero), so
    // those leaves of the even branch are never computed and come out as zero cts
    const std::size_t limit_even = 2 * (buckets == 1 ? std::size_t{D::rows_stored} : n_first), limit_odd = 2 * n_digits;
    // cts are allocated when they become live, by the tasks (no serial allocation of them all)
    std::vector<std::optional<RegevCt<R>>> cur(total);
    std::vector<char> live(total, 0);
    cur[0] = query;
    live[0] = 1;
    const ExpandTables& xt = expand_tables();
    std::vector<std::optional<Pc>> ta;  // τ_k(cur[j].a) of this round's cts (read by every residue's task)
    std::vector<std::size_t> order;
    for (unsigned r = 0; r < D::rounds; ++r) {
      const std::size_t half = std::size_t{1} << r;
      const std::uint64_t k = L::automorph_k(r);
      auto uses_right = [&](std::size_t j) { return r == 0 || (j & 1) != 0; };
      order.clear();
      for (int right = 1; right >= 0; --right)
        for (std::size_t j = 0; j < half; ++j) {
          if (!live[j] || uses_right(j) != (right == 1)) continue;
          if (r > 0 && (j & 1) != 0 && r >= D::rounds_right) continue;  // right branch finished
          if (!split.expands(r, j)) continue;
          order.push_back(j);
        }
      // descendants of j + half are ≡ j + half mod 2^(r+1); needed iff below their branch limit
      auto needs_hi = [&](std::size_t j) {
        return (r == 0) ? n_digits > 0 : j + half < ((j & 1) != 0 ? limit_odd : limit_even);
      };
      if (ta.size() < order.size()) ta.resize(order.size());
      parallel_for(threads, order.size(), [&](std::size_t x) {
        const std::size_t j = order[x];
        if (!ta[x]) ta[x].emplace();
        for (std::size_t i = 0; i < np; ++i)
          automorph_residue(cur[j]->a.residue(i), ta[x]->residue(i), k, R::poly_len, R::primes[i]);
        if (needs_hi(j)) {  // every residue's step writes the whole of it
          cur[j + half].emplace(RegevCt<R>{Pc::uninitialised(), Pn::uninitialised()});
          live[j + half] = 1;
        }
      });
      // one key-switch step of ct order[x] on residue i, the digits of residue i in dig[i·t ..]
      auto step = [&](std::size_t x, std::size_t i, std::uint64_t* const* dig) {
        const std::size_t j = order[x];
        RegevCt<R>& c = *cur[j];
        const bool hi = needs_hi(j);
        std::uint64_t* hi_a = hi ? cur[j + half]->a.residue(i) : nullptr;
        std::uint64_t* hi_b = hi ? cur[j + half]->b.residue(i) : nullptr;
        if (uses_right(j))
          expand_step_residue(
              dig + i * P::t_exp_right, c.a, c.b, P::t_exp_right, i,
              [&](unsigned c0) -> const Pn& { return pp.right_a(r, c0); },
              [&](unsigned c0) -> const Pn& { return pp.right_b(r, c0); }, half, hi_a, hi_b, xt.perm[r].data(),
              xt.shift[r]);
        else
          expand_step_residue(
              dig + i * P::t_exp_left, c.a, c.b, P::t_exp_left, i,
              [&](unsigned c0) -> const Pn& { return pp.left_a(r, c0); },
              [&](unsigned c0) -> const Pn& { return pp.left_b(r, c0); }, half, hi_a, hi_b, xt.perm[r].data(),
              xt.shift[r]);
      };
      // digits of residues [i0, i1) of ct order[x], residue i's at dig[i·t ..] (scratch slot 1)
      auto decompose = [&](std::size_t x, std::size_t i0, std::size_t i1, std::vector<std::uint64_t*>& dig) {
        const bool right = uses_right(order[x]);
        const unsigned t = right ? P::t_exp_right : P::t_exp_left;
        std::uint64_t* const buf = rlwe::scratch_words(1, std::size_t{t} * (i1 - i0) * R::poly_len);
        dig.assign(std::size_t{t} * np, nullptr);
        for (std::size_t i = i0; i < i1; ++i)
          for (unsigned y = 0; y < t; ++y)
            dig[i * t + y] = buf + ((i - i0) * t + y) * R::poly_len;
        gadget_decompose_residues<R>(*ta[x], right ? D::bits_exp_right : D::bits_exp_left, t, i0, i1,
                                     [&](unsigned y, std::size_t i) { return dig[i * t + y]; });
      };
      if (np == 2 && order.size() >= 2 * std::size_t{threads}) {
        // enough cts to keep every thread busy: one task per ct, which decomposes once for both
        // residues (the digits of both come from one pass over the CRT composition). Not for
        // three or more primes: their wide digits of every residue at once (t·L·d words, 2.2 MB
        // at t = 45) overflow the core's cache, and the expansion of 2^18 x 30 KB ran 1.55x slower
        parallel_for(threads, order.size(), [&](std::size_t x) {
          thread_local std::vector<std::uint64_t*> dig;
          decompose(x, 0, np, dig);
          for (std::size_t i = 0; i < np; ++i) step(x, i, dig.data());
        });
      } else {
        parallel_for(threads, order.size() * np, [&](std::size_t task) {
          const std::size_t x = task / np, i = task % np;
          thread_local std::vector<std::uint64_t*> dig;
          decompose(x, i, i + 1, dig);
          step(x, i, dig.data());
        });
      }
    }
    first.clear();
    digits.clear();
    first.reserve(n_first);
    digits.reserve(n_digits);
    auto take = [&](std::size_t x) { return cur[x] ? std::move(*cur[x]) : RegevCt<R>{}; };
    for (std::size_t i = 0; i < n_first; ++i) first.push_back(take(2 * i));
    for (std::size_t g = 0; g < n_digits; ++g) digits.push_back(take(2 * g + 1));
  }

  /// ScalToMat (n > 1) from precomputed conv digits of a (NTT, dig_a[0..t_conv)) and b: column
  /// i < n of the (n+1)×n matrix Regev ct is written to column col(i) of out.
  template <class Col>
  static void scal_to_mat_into(const Pn* dig_a, const Pn& b_ntt, const ExpandedPublicParams<P>& pp, MatN& out,
                               Col&& col) {
    for (unsigned i = 0; i < n; ++i) {
      const std::size_t c = col(i);
      std::array<Pn*, n + 1> outs;
      for (unsigned row = 0; row <= n; ++row) outs[row] = &out.at(row, c);
      dot_multi<R, n + 1>(
          outs, P::t_conv, [&](std::size_t k) -> const Pn& { return dig_a[k]; },
          [&](std::size_t m, std::size_t k) -> const Pn& {
            return m == 0 ? pp.s2m_a(i * P::t_conv + k) : pp.s2m_b(i * P::t_conv + k, static_cast<unsigned>(m - 1));
          });
      out.at(i + 1, c) += b_ntt;
    }
  }

  /// ScalToMat at n = 1: the matrix secret [−s | 1] is [−s_reg | 1] (keys.hpp), so the scalar
  /// ct (a, b) is already the 2×1 matrix Regev ct (a; b): column c of out, a in the NTT domain.
  static void scal_to_mat_identity(const RegevCt<R>& ct, MatN& out, std::size_t c) {
    static_assert(n == 1, "ScalToMat is a key switch for n > 1");
    to_ntt_into(ct.a, out.at(0, c));  // in out's own words: no allocation per ct
    out.at(1, c) = ct.b;
  }

  /// Where convert() puts the first-dimension matrices: every one in a vector (unstored rows as
  /// the zero matrix).
  struct MatrixVector {
    std::vector<MatN>& mats;
    MatN& row(std::size_t i) { return mats[i] = MatN::uninitialised(n + 1, n); }
    void written(std::size_t) {}
    void unstored(std::size_t i) { mats[i] = MatN(n + 1, n); }
    void identity(std::size_t i, const RegevCt<R>& ct) { scal_to_mat_identity(ct, row(i), 0); }
  };

  /// ScalToMat on the first-dimension cts and RegevToGSW on the digit cts: one task per ct, the
  /// (costlier) digit cts first; each task allocates and writes only its own outputs. `split`:
  /// only its share (the other first_mats stay empty, the other digits' GSW columns zero).
  static void convert(const std::vector<RegevCt<R>>& first, const std::vector<RegevCt<R>>& digits,
                      const ExpandedPublicParams<P>& pp, unsigned threads, std::vector<MatN>& first_mats,
                      std::vector<MatN>& gsw, QuerySplit split = {}) {
    first_mats.clear();
    first_mats.resize(first.size());
    convert_into(first, digits, pp, threads, MatrixVector{first_mats}, gsw, split);
  }

  /// convert() with the first-dimension matrices handed to `sink` as they are computed, in any
  /// order and concurrently: sink.row(i) is where matrix i is written (every word), then
  /// sink.written(i) is called; a row the database does not store gets sink.unstored(i) instead.
  /// At n = 1 the matrix is the ct itself (scal_to_mat_identity): sink.identity(i, ct) takes it.
  /// A sink that consumes each matrix at once (tiling it for the first dimension) never holds
  /// all 2^nu_1 of them (at n = 4, d = 1024 they are 84 MB: read back from memory to be tiled).
  template <class Sink>
  static void convert_into(const std::vector<RegevCt<R>>& first, const std::vector<RegevCt<R>>& digits,
                           const ExpandedPublicParams<P>& pp, unsigned threads, Sink&& sink,
                           std::vector<MatN>& gsw, QuerySplit split = {}) {
    const std::size_t cols = std::size_t{n + 1} * P::t_gsw;
    gsw.clear();
    gsw.resize(P::nu_2);
    parallel_for(threads, gsw.size(), [&](std::size_t f) { gsw[f] = MatN(n + 1, cols); });
    // digit task g = one digit ct: column k of block 0 (RegevToGSW) and column (i+1)·t_gsw + k of
    // blocks 1..n (ScalToMat), k = g mod t_gsw, of GSW ct f = g / t_gsw
    parallel_for(threads, digits.size() + first.size(), [&](std::size_t task) {
      std::vector<Pn>& dig = rlwe::scratch<R>(2, 2 * std::size_t{P::t_conv});
      if (task >= digits.size()) {
        const std::size_t i = task - digits.size();
        if (!split.owns(i)) return;
        if (i % D::dim0 >= D::rows_stored) {  // a row the database does not store: never read
          sink.unstored(i);
          return;
        }
        if constexpr (n == 1) {
          sink.identity(i, first[i]);
        } else {
          MatN& m = sink.row(i);  // every column is written
          gadget_decompose_ntt_into<R>(first[i].a, D::bits_conv, P::t_conv, dig.data(), 1);
          scal_to_mat_into(dig.data(), first[i].b, pp, m, [](unsigned c) { return std::size_t{c}; });
          sink.written(i);
        }
        return;
      }
      const std::size_t g = task, f = g / P::t_gsw, k = g % P::t_gsw;
      if (!split.owns(g)) return;
      MatN& G = gsw[f];
      gadget_decompose_ntt_into<R>(digits[g].a, D::bits_conv, P::t_conv, dig.data(), 1);  // RegevToGSW's too
      if constexpr (n == 1)
        scal_to_mat_identity(digits[g], G, P::t_gsw + k);
      else
        scal_to_mat_into(dig.data(), digits[g].b, pp, G, [&](unsigned i) { return (i + 1) * std::size_t{P::t_gsw} + k; });
      gadget_decompose_ntt_into<R>(from_ntt(digits[g].b), D::bits_conv, P::t_conv, dig.data() + P::t_conv, 1);
      std::array<Pn*, n + 1> outs;
      for (unsigned row = 0; row <= n; ++row) outs[row] = &G.at(row, k);
      dot_multi<R, n + 1>(
          outs, 2 * P::t_conv, [&](std::size_t l) -> const Pn& { return dig[l]; },
          [&](std::size_t m, std::size_t l) -> const Pn& {
            return m == 0 ? pp.r2g_a(l) : pp.r2g_b(l, static_cast<unsigned>(m - 1));
          });
    });
  }

  /// First dimension: out[inst·J + j] = Σ_i first_mats[i] · DB[inst][i][j].
  static std::vector<MatN> first_dimension(const std::vector<MatN>& first_mats, const Database<P>& db,
                                           unsigned threads) {
    return FirstDim<P>::run(first_mats, db, threads);
  }
  /// the same from the query matrices already in the kernel's order (FirstDim::tile)
  static std::vector<MatN> first_dimension(const typename FirstDim<P>::Query& query, const Database<P>& db,
                                           unsigned threads) {
    return FirstDim<P>::run(query, db, threads);
  }

  /// External product GSW ⊡ C for an (n+1)×n matrix Regev ct C, consumed: its polynomials
  /// leave the NTT domain in their own words.
  static MatN external_product(const MatN& gsw, MatN&& c) {
    // index (row·t_gsw + k)·n + col
    std::vector<Pn>& dig = rlwe::scratch<R>(1, std::size_t{n + 1} * P::t_gsw * n);
    for (unsigned row = 0; row <= n; ++row)
      for (unsigned col = 0; col < n; ++col)
        gadget_decompose_ntt_into<R>(from_ntt(std::move(c.at(row, col))), D::bits_gsw, P::t_gsw,
                                     &dig[std::size_t{row} * P::t_gsw * n + col], n);
    MatN out = MatN::uninitialised(n + 1, n);  // dot_multi sets every word
    const std::size_t K = std::size_t{n + 1} * P::t_gsw;
    for (unsigned col = 0; col < n; ++col) {
      std::array<Pn*, n + 1> outs;
      for (unsigned r = 0; r <= n; ++r) outs[r] = &out.at(r, col);
      dot_multi<R, n + 1>(
          outs, K, [&](std::size_t x) -> const Pn& { return dig[x * n + col]; },
          [&](std::size_t m, std::size_t x) -> const Pn& { return gsw.at(m, x); });
    }
    return out;
  }

  /// Folding: nu_2 rounds; round r combines pairs (j, j + L/2) with GSW_r (bit nu_2−1−r of j).
  /// `cts` is consumed: it ends as the 1 ct per instance.
  static void fold(std::vector<MatN>& cts, const std::vector<MatN>& gsw, unsigned threads,
                   StageObserver<P>* obs = nullptr) {
    fold_rounds(cts, gsw, 0, P::nu_2, threads, obs);
  }
  /// Rounds [r0, r1) of the folding, on cts of 2^(r1 − r0) per instance (instance-major): a shard
  /// (shard.hpp) runs the first rounds over its own columns, the coordinator the last ones.
  static void fold_rounds(std::vector<MatN>& cts, const std::vector<MatN>& gsw, unsigned r0, unsigned r1,
                          unsigned threads, StageObserver<P>* obs = nullptr) {
    if (r1 < r0 || r1 > gsw.size() || cts.size() != D::instances << (r1 - r0))
      throw ArgumentError("fold: " + std::to_string(cts.size()) + " cts and " + std::to_string(gsw.size()) +
                          " GSW cts do not fit rounds [" + std::to_string(r0) + ", " + std::to_string(r1) + ")");
    for (unsigned r = r0; r < r1; ++r) {
      const std::size_t len = std::size_t{1} << (r1 - r), halfl = len / 2;
      std::vector<MatN> next(D::instances * halfl);
      parallel_for(threads, D::instances * halfl, [&](std::size_t task) {
        const std::size_t inst = task / halfl, j = task % halfl;
        const MatN& c0 = cts[inst * len + j];
        MatN& c1 = cts[inst * len + j + halfl];  // this round's last use: the difference in place
        c1 -= c0;
        next[task] = external_product(gsw[r], std::move(c1));
        next[task] += c0;
      });
      cts = std::move(next);
      if (obs) obs->on_fold(r, cts);
    }
  }

  /// Split modulus switching (row 0 → q2, rows 1..n → q1 = 4p) and bit packing.
  static std::vector<std::uint8_t> modswitch_encode(const std::vector<MatN>& finals, unsigned threads) {
    std::vector<std::uint8_t> out(D::response_bytes, 0);
    write_header<P>(out.data(), ObjectKind::response, D::response_bytes - kHeaderBytes);
    // switch in parallel (one task per instance and matrix entry), pack sequentially
    constexpr std::size_t entries = std::size_t{n + 1} * n;
    std::vector<std::vector<std::uint64_t>> vals(D::instances, std::vector<std::uint64_t>(entries * D::d));
    parallel_for(threads, D::instances * entries, [&](std::size_t task) {
      const std::size_t inst = task / entries, e = task % entries;
      const unsigned row = static_cast<unsigned>(e / n), col = static_cast<unsigned>(e % n);
      const Pc c = from_ntt(finals[inst].at(row, col));
      const std::uint64_t to = row == 0 ? D::q2 : D::q1;
      std::uint64_t* v = vals[inst].data() + e * D::d;
      for (std::size_t z = 0; z < D::d; ++z) v[z] = round_modswitch<R>(coeff(c, z), to);
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
};

}  // namespace spiralpir
