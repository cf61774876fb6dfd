// spiralpir/spiral/prepared.hpp — a query after its one-time server work, and that work:
//   parse (one scalar Regev ct; stream: the uploaded cts) → expand (not for stream)
//   → convert (ScalToMat + RegevToGSW; direct_first: no ScalToMat) → tile for the first dimension.
// A prepared query answers any number of databases of the same parameters (the streaming
// setting); Server<P>::answer prepares and answers once.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <vector>

#include "spiralpir/spiral/public_params.hpp"
#include "spiralpir/spiral/stages.hpp"

namespace spiralpir {

/// A query after parse, expansion and conversion, in the first dimension's order. Holds a
/// reference to the public params it was prepared with when the answer needs them (pack).
template <SpiralParams P>
struct PreparedQuery {
  using C = typename VariantOf<P>::Comp;
  using MatN = rlwe::MatN<typename P::ring>;
  typename FirstDim<C>::Query first;              // 2^nu_1 matrix Regev cts (C's n), tiled
  std::vector<MatN> gsw;                          // nu_2 GSW cts
  std::shared_ptr<const PublicKeys<P>> pack_keys;  // pack only (null otherwise)
  double seconds[2] = {0, 0};                     // expansion (parse included), conversion
};

/// The one-time steps of an answer, for every variant.
template <SpiralParams P>
struct QueryPreparation {
  using V = VariantOf<P>;
  using C = typename V::Comp;
  using R = typename P::ring;
  using D = Derived<P>;
  using S = ServerStages<C>;
  using MatN = rlwe::MatN<R>;

  /// The prepared query; `obs` (optional) sees the expanded and the converted cts.
  static PreparedQuery<P> run(const PublicParams<P>& pp, const std::uint8_t* query, std::size_t len,
                              unsigned threads, StageObserver<C>* obs = nullptr) {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    std::vector<RegevCt<R>> first, digits;
    std::vector<MatN> direct;  // direct_first: the first-dimension cts, already 2×1 matrices
    expanded(pp, query, len, threads, first, digits, direct);
    const auto t1 = clock::now();
    if (obs) obs->on_expansion(first, digits);  // (direct_first: first is empty)
    PreparedQuery<P> out = converted(pp, first, digits, std::move(direct), threads, obs);
    const auto t2 = clock::now();
    out.seconds[0] = std::chrono::duration<double>(t1 - t0).count();
    out.seconds[1] = std::chrono::duration<double>(t2 - t1).count();
    return out;
  }

  /// Parse and expansion (stream: parse): the first-dimension cts (direct_first: `direct`) and
  /// the GSW digit cts; `split`: only its share (QuerySplit), the others left empty.
  static void expanded(const PublicParams<P>& pp, const std::uint8_t* query, std::size_t len, unsigned threads,
                       std::vector<RegevCt<R>>& first, std::vector<RegevCt<R>>& digits, std::vector<MatN>& direct,
                       QuerySplit split = {}) {
    if (query == nullptr && len != 0) throw ArgumentError("prepare: null query buffer");
    if constexpr (V::stream) {
      parse_stream_query(query, len, threads, first, digits, direct, split);
    } else {
      const RegevCt<R> q = S::parse_query(query, len);
      S::expand(q, pp.keys().comp, threads, first, digits, 1, split);
    }
  }

  /// Conversion and tiling of one bucket's expanded cts (direct_first: `direct` are the
  /// first-dimension matrices, no ScalToMat); seconds are left to the caller.
  static PreparedQuery<P> converted(const PublicParams<P>& pp, const std::vector<RegevCt<R>>& first,
                                    const std::vector<RegevCt<R>>& digits, std::vector<MatN> direct,
                                    unsigned threads, StageObserver<C>* obs = nullptr) {
    PreparedQuery<P> out;
    const bool tile_as_converted = !V::direct_first && (C::n == 1 || kKeptBytes > tile_as_converted_above);
    if (!tile_as_converted || (obs && obs->needs_first_matrices())) {  // kept, then tiled
      std::vector<MatN> first_mats;
      S::convert(first, digits, pp.keys().comp, threads, first_mats, out.gsw);
      if constexpr (V::direct_first) first_mats = std::move(direct);  // no ScalToMat
      out.first = FirstDim<C>::tile(first_mats, threads);
      if (obs) obs->on_conversion(first_mats, out.gsw);
    } else {
      if (first.size() != FirstDim<C>::I) throw ArgumentError("conversion: expected 2^nu_1 first-dimension cts");
      out.first = FirstDim<C>::unfilled_query();
      S::convert_into(first, digits, pp.keys().comp, threads, TilingSink{FirstDim<C>::words_of(out.first)}, out.gsw);
      if (obs) obs->on_conversion({}, out.gsw);
    }
    if constexpr (V::pack) out.pack_keys = pp.shared();
    return out;
  }

  /// The first-dimension matrices of one query, all kept (u64 words).
  static constexpr std::size_t kKeptBytes =
      std::size_t{FirstDim<C>::I} * (C::n + 1) * C::n * R::num_primes * R::poly_len * 8;
  /// Above this many bytes of kept matrices, conversion tiles each matrix as it is computed
  /// (tests lower it); at n = 1 always, straight from the ct (TilingSink::identity). Kept
  /// whole, the matrices are read back to be tiled: from memory when they exceed the cache
  /// (84 MB at d = 1024, n = 4: the conversion ran 29% faster tiled as converted), but tiled
  /// last the query is still in the last-level cache when the first dimension starts (25 and
  /// 34 MB of matrices, 32 MB of L3: the first dimension ran 2-3 ms slower after tiling as
  /// converted, more than the conversion saved).
  static inline std::size_t tile_as_converted_above = std::size_t{64} << 20;

  /// convert_into's sink that tiles each first-dimension matrix as it is computed, from a
  /// per-thread matrix still in cache (unstored rows: the zero matrix)
  struct TilingSink {
    std::uint32_t* words;
    static MatN& scratch() {
      thread_local MatN m = MatN::uninitialised(C::n + 1, C::n);
      return m;
    }
    MatN& row(std::size_t) { return scratch(); }
    void written(std::size_t i) { FirstDim<C>::tile_row(scratch(), i, FirstDim<C>::I, words); }
    void unstored(std::size_t i) { FirstDim<C>::zero_row(i, FirstDim<C>::I, words); }
    /// n = 1: the ct is the matrix (a; b), a taken to the NTT domain in a per-thread polynomial
    /// and b tiled in place: no matrix is written and read back
    void identity(std::size_t i, const RegevCt<R>& ct) {
      thread_local rlwe::Pn<R> a = rlwe::Pn<R>::uninitialised();
      to_ntt_into(ct.a, a);
      FirstDim<C>::tile_row({&a, &ct.b}, i, FirstDim<C>::I, words);
    }
  };

  /// Stream query: 2^nu_1 + nu_2·t_gsw b-polys, a from (seed, index) (`split`: its share). direct_first: the
  /// first-dimension cts (under s_c) go to `direct` as 2×1 matrix Regev cts (row 0 = a, row 1 = b,
  /// NTT domain) and `first` stays empty.
  static void parse_stream_query(const std::uint8_t* buf, std::size_t len, unsigned threads,
                                 std::vector<RegevCt<R>>& first, std::vector<RegevCt<R>>& digits,
                                 std::vector<MatN>& direct, QuerySplit split = {}) {
    check_header<P>(buf, len, ObjectKind::query, D::query_bytes - kHeaderBytes);
    Seed seed;
    std::memcpy(seed.data(), buf + kHeaderBytes, 32);
    const std::uint8_t* body = buf + kHeaderBytes + 32;
    const std::size_t body_len = len - kHeaderBytes - 32;
    const std::uint64_t poly_bits = std::uint64_t{D::d} * D::q_bits;
    std::vector<RegevCt<R>> all(D::query_polys);
    direct.clear();
    if constexpr (V::direct_first) direct.resize(D::dim0);
    parallel_for(threads, all.size(), [&](std::size_t x) {
      if (!split.owns(x < D::dim0 ? x : x - D::dim0)) return;
      const std::uint64_t bit0 = x * poly_bits;
      BitReader rd(body + bit0 / 8, body_len - bit0 / 8);
      if (V::direct_first && x < D::dim0) {
        MatN m(2, 1);
        m.at(0, 0) = uniform_poly_ntt<R>(seed, x);
        m.at(1, 0) = to_ntt(rlwe::get_poly_q<R>(rd, D::q_bits, "query"));
        direct[x] = std::move(m);
        return;
      }
      all[x].b = to_ntt(rlwe::get_poly_q<R>(rd, D::q_bits, "query"));
      all[x].a = from_ntt(uniform_poly_ntt<R>(seed, x));
    });
    const std::uint64_t used = D::query_polys * poly_bits;
    BitReader rd(body + used / 8, body_len - used / 8);
    rd.check_padding_zero("query");
    if constexpr (!V::direct_first)
      first.assign(std::make_move_iterator(all.begin()), std::make_move_iterator(all.begin() + D::dim0));
    digits.assign(std::make_move_iterator(all.begin() + D::dim0), std::make_move_iterator(all.end()));
  }
};

}  // namespace spiralpir
