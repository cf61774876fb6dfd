// spiralpir/spiral/shard.hpp — the server's computation split over 2^S shards along the
// last-folded dimensions, with a response byte-identical to Server<P>'s.
//
// Folding round r pairs folding indices j and j + 2^(nu_2−r−1) (stages.hpp), so the rounds
// nu_2−S .. nu_2−1 (the last) fold the S low bits of j. Shard s of 2^S holds the columns
// j ≡ s (mod 2^S), as its own local column j >> S (database of ShardComp<C, S>: nu_2 − S);
// it prepares the query (parse, expansion, conversion: the same cts on every shard), runs the
// first dimension over its columns and folding rounds 0 .. nu_2−S−1, and returns one ct per
// instance — the very ct the one-process server holds at index s after those rounds, since
// every step is deterministic. The coordinator (shard_combine) places the 2^S cts at indices
// s, runs rounds nu_2−S .. nu_2−1 with the query's last S GSW cts (which one shard sends along),
// packs (pack variants) and modulus-switches: the one-process server's last steps on the same values.
//
// The shards may instead split the preparation (shard_split.hpp: prepare_share, answer_shares):
// each prepares 1/2^S of it and answers from every shard's share.
// The coordinator may instead prepare the query once (shard_prepare: a kind-7 shard query with
// the tiled first-dimension query and every GSW ct) and send that to the shards
// (answer_expanded); it then takes the last S GSW cts from it.
//
// Partial answer (ObjectKind::shard_partial, FORMATS.md §12): header (params hash of P, aux 0),
// then u8 S, u8 with_gsw, u16 0, u32 shard index, the instances' (n_c+1)×n_c cts, then (with_gsw)
// the S GSW cts of the last rounds, (n_c+1)×(n_c+1)·t_gsw each; every polynomial in the NTT
// domain as its residues, prime-major, one u32 little-endian word each (every residue < 2^32).
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "spiralpir/spiral/server.hpp"
#include "spiralpir/spiral/shard_split.hpp"

namespace spiralpir {

/// the largest S any build can be generated for (2^10 shards)
inline constexpr unsigned kShardBitsCeiling = 10;
/// the largest S a build answers unless its parameters set max_shard_bits (each S instantiates
/// the first-dimension kernel once more, so a build compiles only the splits it may serve)
inline constexpr unsigned kDefaultShardBits = 3;

/// the largest S a build of C answers: C::max_shard_bits where given (`spiralpir generate
/// --max-shards`), else kDefaultShardBits; never above nu_2
template <class C>
constexpr unsigned max_shard_bits() {
  unsigned bits = kDefaultShardBits;
  if constexpr (requires { C::max_shard_bits; }) {
    static_assert(C::max_shard_bits >= 1 && C::max_shard_bits <= kShardBitsCeiling,
                  "max_shard_bits must be in [1, kShardBitsCeiling]");
    bits = C::max_shard_bits;
  }
  return std::min(bits, C::nu_2);
}

/// A shard's computation type: C over 2^(nu_2 − S) folding indices. Its own params hash (its
/// canonical string has the shard's nu_2), so a shard's file is never taken for a whole database.
template <SpiralParams C, unsigned S>
struct ShardComp : C {
  static constexpr unsigned nu_2 = C::nu_2 - S;
  // every shard stores C's rows (its columns j ≡ index mod 2^S of each)
  static constexpr std::uint64_t num_records = (Derived<C>::rows_stored << (C::nu_2 - S)) * Derived<C>::items_per_pt;
  using wire_params = ShardComp;
};

/// Serialized partial answers and their parts.
template <SpiralParams P>
struct ShardWire {
  using C = typename VariantOf<P>::Comp;
  using R = typename P::ring;
  using MatN = rlwe::MatN<R>;
  static constexpr std::size_t poly_bytes = R::num_primes * R::poly_len * 4;
  static constexpr std::size_t ct_bytes = std::size_t{C::n + 1} * C::n * poly_bytes;
  static constexpr std::size_t gsw_bytes = std::size_t{C::n + 1} * (C::n + 1) * P::t_gsw * poly_bytes;
  static constexpr std::uint64_t payload(unsigned S, bool with_gsw) {
    return 8 + Derived<C>::instances * ct_bytes + (with_gsw ? S * gsw_bytes : 0);
  }

  struct Parsed {
    unsigned bits = 0, index = 0;
    std::vector<MatN> cts, gsw;  // cts: one per instance; gsw: S (with_gsw) or none
  };

  static std::vector<std::uint8_t> encode(unsigned S, unsigned index, const std::vector<MatN>& cts,
                                          const MatN* gsw_begin, std::size_t gsw_count) {
    const std::uint64_t len = payload(S, gsw_count != 0);
    std::vector<std::uint8_t> out(kHeaderBytes + len);
    write_header<P>(out.data(), ObjectKind::shard_partial, len);
    std::uint8_t* w = out.data() + kHeaderBytes;
    w[0] = static_cast<std::uint8_t>(S);
    w[1] = gsw_count != 0 ? 1 : 0;
    detail::put_le(w + 4, index, 4);
    w += 8;
    for (const MatN& m : cts) put(m, w);
    for (std::size_t g = 0; g < gsw_count; ++g) put(gsw_begin[g], w);
    return out;
  }

  /// writes m's residues at w (u32 little-endian each), advancing w
  static void put(const MatN& m, std::uint8_t*& w) {
    for (unsigned r = 0; r < m.rows(); ++r)
      for (unsigned c = 0; c < m.cols(); ++c) {
        const std::uint64_t* x = m.at(r, c).data();
        for (std::size_t k = 0; k < R::num_primes * R::poly_len; ++k, w += 4) detail::put_le(w, x[k], 4);
      }
  }
  /// reads a rows×cols matrix written by put at r, advancing r; every residue below its prime
  static MatN get(unsigned rows, unsigned cols, const std::uint8_t*& r, const char* what) {
    MatN m = MatN::uninitialised(rows, cols);
    for (unsigned y = 0; y < rows; ++y)
      for (unsigned c = 0; c < cols; ++c) {
        std::uint64_t* x = m.at(y, c).data();
        for (std::size_t i = 0; i < R::num_primes; ++i)
          for (std::size_t z = 0; z < R::poly_len; ++z, r += 4) {
            x[i * R::poly_len + z] = detail::get_le(r, 4);
            if (x[i * R::poly_len + z] >= R::primes[i]) throw FormatError(std::string(what) + ": residue out of range");
          }
      }
    return m;
  }

  static Parsed decode(const std::uint8_t* buf, std::size_t len) {
    check_header<P>(buf, len, ObjectKind::shard_partial, 0);
    const std::uint8_t* r = buf + kHeaderBytes;
    if (len < kHeaderBytes + 8) throw FormatError("shard partial answer: truncated");
    Parsed p;
    p.bits = r[0];
    const bool with_gsw = r[1] != 0;
    p.index = static_cast<unsigned>(detail::get_le(r + 4, 4));
    if (p.bits < 1 || p.bits > max_shard_bits<C>() || r[1] > 1 || r[2] != 0 || r[3] != 0 ||
        p.index >= (1u << p.bits))
      throw FormatError("shard partial answer: S = " + std::to_string(p.bits) + ", shard " + std::to_string(p.index) +
                        " out of range");
    if (len - kHeaderBytes != payload(p.bits, with_gsw))
      throw FormatError("shard partial answer: payload length " + std::to_string(len - kHeaderBytes) +
                        " != expected " + std::to_string(payload(p.bits, with_gsw)));
    r += 8;
    const char* what = "shard partial answer";
    for (std::size_t inst = 0; inst < Derived<C>::instances; ++inst) p.cts.push_back(get(C::n + 1, C::n, r, what));
    if (with_gsw)
      for (unsigned g = 0; g < p.bits; ++g) p.gsw.push_back(get(C::n + 1, (C::n + 1) * P::t_gsw, r, what));
    return p;
  }

  // ---- the query prepared once by the coordinator (kind 7, shard query) -------------------
  // payload: 8 zero bytes, the first dimension's tiled query (FirstDim::Query::words u32
  // little-endian), then the nu_2 GSW cts (as put writes them)
  static constexpr std::size_t query_words = FirstDim<C>::Query::words;
  static constexpr std::uint64_t query_payload = 8 + query_words * 4 + std::uint64_t{C::nu_2} * gsw_bytes;

  static std::vector<std::uint8_t> encode_query(const PreparedQuery<P>& pq) {
    std::vector<std::uint8_t> out(kHeaderBytes + query_payload);
    write_header<P>(out.data(), ObjectKind::shard_query, query_payload);
    std::uint8_t* w = out.data() + kHeaderBytes + 8;
    const std::uint32_t* words = pq.first.data();
    for (std::size_t k = 0; k < query_words; ++k, w += 4) detail::put_le(w, words[k], 4);
    for (const MatN& g : pq.gsw) put(g, w);
    return out;
  }
  /// the prepared query of a shard query (no packing keys: a shard does not pack); without
  /// `first`, only its GSW cts (the coordinator's)
  static PreparedQuery<P> decode_query(const std::uint8_t* buf, std::size_t len, bool first = true) {
    check_header<P>(buf, len, ObjectKind::shard_query, query_payload);
    const std::uint8_t* r = buf + kHeaderBytes;
    for (int k = 0; k < 8; ++k)
      if (r[k] != 0) throw FormatError("shard query: reserved bytes not zero");
    r += 8;
    PreparedQuery<P> pq;
    if (first) {
      std::vector<std::uint32_t> words(query_words);
      for (std::size_t k = 0; k < query_words; ++k) words[k] = static_cast<std::uint32_t>(detail::get_le(r + 4 * k, 4));
      pq.first = FirstDim<C>::Query::from_words(words.data());
    }
    r += query_words * 4;
    for (unsigned f = 0; f < C::nu_2; ++f) pq.gsw.push_back(get(C::n + 1, (C::n + 1) * P::t_gsw, r, "shard query"));
    return pq;
  }
};

/// One shard's server, over any S ≤ max_shard_bits<C>() (make_shard_server picks the type).
template <SpiralParams P>
class ShardServerBase {
 public:
  using Progress = std::function<void(std::uint64_t, std::uint64_t)>;
  virtual ~ShardServerBase() = default;
  virtual unsigned bits() const = 0;
  virtual unsigned index() const = 0;
  virtual void load_records(const std::uint8_t* records, std::uint64_t num_records, std::uint64_t record_size,
                            const Progress& progress) = 0;
  virtual void save_db(const std::string& path) const = 0;
  virtual void map_db(const std::string& path) = 0;
  /// copies the mapped database into memory of its own (huge pages where the kernel allows them)
  /// and drops the mapping: the first dimension streams it whole on every answer
  virtual void hold_in_memory() = 0;
  /// the plaintexts (per instance) of this shard that hold records: a saved file's header aux
  virtual std::uint64_t stored_plaintexts() const = 0;
  /// the params hash a saved file of this shard carries, and the size of its database object
  virtual std::array<std::uint8_t, 8> params_hash() const = 0;
  virtual std::uint64_t object_bytes() const = 0;
  /// the partial answer; seconds4 (optional): expansion, conversion, first_dimension, folding
  virtual std::vector<std::uint8_t> answer(const PublicParams<P>& pp, const std::uint8_t* query, std::size_t len,
                                           bool with_gsw, double* seconds4) const = 0;
  /// the partial answer (no GSW cts) to a shard query the coordinator prepared (shard_prepare);
  /// seconds2 (optional): first_dimension, folding
  virtual std::vector<std::uint8_t> answer_expanded(const std::uint8_t* shard_query, std::size_t len,
                                                    double* seconds2) const = 0;
  /// The preparation split between the shards (shard_split.hpp): the bytes of this shard's share,
  /// writing it at out (seconds2: expansion, conversion), and the partial answer from every
  /// shard's share (seconds3: assembly, first_dimension, folding).
  virtual std::size_t share_bytes() const = 0;
  virtual void prepare_share(const PublicParams<P>& pp, const std::uint8_t* query, std::size_t len,
                             std::uint8_t* out, std::size_t out_len, double* seconds2) const = 0;
  virtual std::vector<std::uint8_t> answer_shares(const std::uint8_t* const* shares, const std::size_t* lens,
                                                  std::size_t count, bool with_gsw, double* seconds3) const = 0;
};

template <SpiralParams P, unsigned S>
class ShardServer final : public ShardServerBase<P> {
 public:
  using V = VariantOf<P>;
  using C = typename V::Comp;
  using SC = ShardComp<C, S>;
  using DB = Database<SC>;
  using Progress = typename ShardServerBase<P>::Progress;
  static_assert(S >= 1 && S <= C::nu_2, "a shard split needs 1 <= S <= nu_2");
  static constexpr std::uint64_t J = Derived<C>::dim_rest, I = Derived<C>::dim0, Js = J >> S;

  ShardServer(unsigned index, unsigned threads) : index_(index), threads_(resolve_threads(threads)) {
    if (index >= (1u << S))
      throw ArgumentError("shard index " + std::to_string(index) + " not below 2^S = " + std::to_string(1u << S));
    retain_heap_between_answers();
  }
  unsigned bits() const override { return S; }
  unsigned index() const override { return index_; }

  /// plaintexts of this shard (per instance) among the first `used` plaintexts of the database
  std::uint64_t shard_plaintexts(std::uint64_t used) const {
    std::uint64_t count = 0;
    for (std::uint64_t i = 0; i < I; ++i)
      for (std::uint64_t jl = 0; jl < Js; ++jl) count += (i * J + (jl << S) + index_) < used ? 1 : 0;
    return count;
  }

  void load_records(const std::uint8_t* records, std::uint64_t num_records, std::uint64_t record_size,
                    const Progress& progress) override {
    using DP = Derived<P>;
    if (num_records == 0 || num_records > DP::num_items)
      throw ArgumentError("shard load_records: " + std::to_string(num_records) + " records not in [1, " +
                          std::to_string(DP::num_items) + "]");
    if (record_size == 0 || record_size > P::db_item_size)
      throw ArgumentError("shard load_records: record size " + std::to_string(record_size) + " not in [1, " +
                          std::to_string(P::db_item_size) + "]");
    if (records == nullptr) throw ArgumentError("shard load_records: null records buffer");
    const std::uint64_t used = (num_records + DP::items_per_pt - 1) / DP::items_per_pt;
    const std::uint64_t mine = shard_plaintexts(used);
    if (mine == 0)
      throw ArgumentError("shard " + std::to_string(index_) + " of " + std::to_string(1u << S) + " would hold no record (" +
                          std::to_string(num_records) + " records): use fewer shards");
    auto whole = V::comp_source(Database<P>::records_source(records, num_records, record_size));
    const unsigned s = index_;
    auto src = [whole = std::move(whole), s](std::uint64_t inst, std::uint64_t pt, std::uint8_t* out) {
      whole(inst, (pt / Js) * J + ((pt % Js) << S) + s, out);
    };
    db_.build(src, mine, threads_, 0, 0, progress);
  }
  void save_db(const std::string& path) const override { db_.save(path); }
  void map_db(const std::string& path) override { db_.map(path); }
  void hold_in_memory() override { db_.copy_from(db_); }
  std::uint64_t stored_plaintexts() const override { return db_.num_records(); }
  std::array<std::uint8_t, 8> params_hash() const override { return spiralpir::params_hash<SC>(); }
  std::uint64_t object_bytes() const override { return Derived<SC>::preprocessed_db_bytes; }

  std::vector<std::uint8_t> answer(const PublicParams<P>& pp, const std::uint8_t* query, std::size_t len,
                                   bool with_gsw, double* seconds4) const override {
    if (!db_.loaded()) throw ArgumentError("shard answer: no database loaded");
    const PreparedQuery<P> pq = QueryPreparation<P>::run(pp, query, len, threads_);
    if (seconds4) {
      seconds4[0] = pq.seconds[0];
      seconds4[1] = pq.seconds[1];
    }
    return answer_prepared(pq, with_gsw, seconds4 ? seconds4 + 2 : nullptr);
  }
  std::vector<std::uint8_t> answer_expanded(const std::uint8_t* shard_query, std::size_t len,
                                            double* seconds2) const override {
    if (!db_.loaded()) throw ArgumentError("shard answer: no database loaded");
    return answer_prepared(ShardWire<P>::decode_query(shard_query, len), false, seconds2);
  }
  std::size_t share_bytes() const override { return kHeaderBytes + ShardSplit<P>::payload(S, index_); }
  void prepare_share(const PublicParams<P>& pp, const std::uint8_t* query, std::size_t len, std::uint8_t* out,
                     std::size_t out_len, double* seconds2) const override {
    ShardSplit<P>::prepare(pp, query, len, S, index_, threads_, out, out_len, seconds2);
  }
  std::vector<std::uint8_t> answer_shares(const std::uint8_t* const* shares, const std::size_t* lens,
                                          std::size_t count, bool with_gsw, double* seconds3) const override {
    if (!db_.loaded()) throw ArgumentError("shard answer: no database loaded");
    const auto t0 = std::chrono::steady_clock::now();
    const auto pq = ShardSplit<P>::assemble(shares, lens, count, S, threads_);
    if (seconds3) seconds3[0] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return answer_from(pq.first, pq.gsw, with_gsw, seconds3 ? seconds3 + 1 : nullptr);
  }

 private:
  std::vector<std::uint8_t> answer_prepared(const PreparedQuery<P>& pq, bool with_gsw, double* seconds2) const {
    return answer_from(pq.first, pq.gsw, with_gsw, seconds2);
  }
  /// the partial answer from the first dimension's query (any Q of run_tiled) and the GSW cts
  template <class Q>
  std::vector<std::uint8_t> answer_from(const Q& first, const std::vector<rlwe::MatN<typename P::ring>>& gsw,
                                        bool with_gsw, double* seconds2) const {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<rlwe::MatN<typename P::ring>> cts = FirstDim<SC>::run_tiled(first, db_, threads_);
    db_.check_intact();  // the only step that reads the database
    const auto t1 = std::chrono::steady_clock::now();
    ServerStages<SC>::fold(cts, gsw, threads_);
    const auto t2 = std::chrono::steady_clock::now();
    if (seconds2) {
      seconds2[0] = std::chrono::duration<double>(t1 - t0).count();
      seconds2[1] = std::chrono::duration<double>(t2 - t1).count();
    }
    return ShardWire<P>::encode(S, index_, cts, gsw.data() + (C::nu_2 - S), with_gsw ? S : 0);
  }

  unsigned index_;
  unsigned threads_;
  DB db_;
};

/// the shard server of shard `index` of 2^S (1 ≤ S ≤ max_shard_bits<C>())
template <SpiralParams P>
std::unique_ptr<ShardServerBase<P>> make_shard_server(unsigned S, unsigned index, unsigned threads) {
  using C = typename VariantOf<P>::Comp;
  constexpr unsigned top = max_shard_bits<C>();
  std::unique_ptr<ShardServerBase<P>> out;
  [&]<unsigned... B>(std::integer_sequence<unsigned, B...>) {
    auto pick = [&]<unsigned Bits>() {
      if constexpr (Bits <= top)
        if (S == Bits) out = std::make_unique<ShardServer<P, Bits>>(index, threads);
    };
    (pick.template operator()<B + 1>(), ...);
  }(std::make_integer_sequence<unsigned, kShardBitsCeiling>{});
  if (!out)
    throw ArgumentError("shards: S = " + std::to_string(S) + " not in [1, " + std::to_string(top) + "] (nu_2 = " +
                        std::to_string(C::nu_2) + (top < C::nu_2 ? "; generate the build with --max-shards" : "") + ")");
  return out;
}

/// The coordinator's step: the response from the 2^S partial answers of one query (any order;
/// exactly one of them with the GSW cts).
/// The coordinator's preparation of a query for every shard (kind 7): parse, expansion and
/// conversion done once, here, instead of on each shard.
template <SpiralParams P>
std::vector<std::uint8_t> shard_prepare(const PublicParams<P>& pp, const std::uint8_t* query, std::size_t len,
                                        unsigned threads) {
  return ShardWire<P>::encode_query(QueryPreparation<P>::run(pp, query, len, resolve_threads(threads)));
}

/// shard_combine when the shards answered a shard query: its last S GSW cts fold the last rounds
template <SpiralParams P>
std::vector<std::uint8_t> shard_combine(const PublicParams<P>& pp, const std::vector<const std::uint8_t*>& parts,
                                        const std::vector<std::size_t>& lens, unsigned threads,
                                        const std::uint8_t* shard_query, std::size_t query_len);

template <SpiralParams P>
std::vector<std::uint8_t> shard_combine(const PublicParams<P>& pp, const std::vector<const std::uint8_t*>& parts,
                                        const std::vector<std::size_t>& lens, unsigned threads) {
  return shard_combine<P>(pp, parts, lens, threads, nullptr, 0);
}

template <SpiralParams P>
std::vector<std::uint8_t> shard_combine(const PublicParams<P>& pp, const std::vector<const std::uint8_t*>& parts,
                                        const std::vector<std::size_t>& lens, unsigned threads,
                                        const std::uint8_t* shard_query, std::size_t query_len) {
  using V = VariantOf<P>;
  using C = typename V::Comp;
  using MatN = rlwe::MatN<typename P::ring>;
  threads = resolve_threads(threads);
  if (parts.empty() || parts.size() != lens.size()) throw ArgumentError("shard combine: no partial answers");
  std::vector<typename ShardWire<P>::Parsed> got;
  for (std::size_t x = 0; x < parts.size(); ++x) got.push_back(ShardWire<P>::decode(parts[x], lens[x]));
  const unsigned S = got[0].bits;
  const std::size_t shards = std::size_t{1} << S;
  if (got.size() != shards)
    throw ArgumentError("shard combine: " + std::to_string(got.size()) + " partial answers for 2^" + std::to_string(S) +
                        " shards");
  std::vector<MatN> cts(Derived<C>::instances * shards);
  std::vector<char> seen(shards, 0);
  const std::vector<MatN>* gsw_tail = nullptr;
  for (auto& g : got) {
    if (g.bits != S) throw ArgumentError("shard combine: partial answers of different shard counts");
    if (seen[g.index]) throw ArgumentError("shard combine: shard " + std::to_string(g.index) + " answered twice");
    seen[g.index] = 1;
    for (std::size_t inst = 0; inst < g.cts.size(); ++inst) cts[inst * shards + g.index] = std::move(g.cts[inst]);
    if (!g.gsw.empty()) {
      if (gsw_tail) throw ArgumentError("shard combine: more than one partial answer carries the GSW cts");
      gsw_tail = &g.gsw;
    }
  }
  // rounds nu_2−S .. nu_2−1 index gsw[r]: place the tail there (the slots before stay unused)
  std::vector<MatN> gsw(C::nu_2);
  if (shard_query != nullptr) {
    if (gsw_tail) throw ArgumentError("shard combine: GSW cts from a partial answer and from the shard query");
    PreparedQuery<P> pq = ShardWire<P>::decode_query(shard_query, query_len, false);
    for (unsigned k = 0; k < S; ++k) gsw[C::nu_2 - S + k] = std::move(pq.gsw[C::nu_2 - S + k]);
  } else {
    if (!gsw_tail) throw ArgumentError("shard combine: no partial answer carries the GSW cts of the last rounds");
    for (unsigned k = 0; k < S; ++k) gsw[C::nu_2 - S + k] = (*gsw_tail)[k];
  }
  ServerStages<C>::fold_rounds(cts, gsw, C::nu_2 - S, C::nu_2, threads);
  if constexpr (V::pack) cts = PackingStep<P>::pack(cts, pp.keys(), threads);
  else (void)pp;
  return ServerStages<P>::modswitch_encode(cts, threads);
}

}  // namespace spiralpir
