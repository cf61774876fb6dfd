// spiralpir/spiral/variants.hpp — the rest of the SPIRAL family (issue 8): SpiralStream, SpiralPack and
// SpiralStreamPack, behind the same service API as vanilla SPIRAL (Client<P>, Server<P>,
// PublicParams<P> are specialized here for P::variant != spiral), plus the streaming API for
// every variant (prepare a query once, answer any number of databases with it).
//
// How the variants reuse the vanilla pipeline (server.hpp) — a *computation type* C:
//   * stream:       C = SpiralComp<P> (P computed as vanilla, same n). The client uploads the 2^nu_1
//                   first-dimension scalar Regev cts (message Δ·[i = index]) and the nu_2·t_gsw
//                   GSW-digit scalar Regev cts (message bit·z_gsw^k) under s_reg, seed-compressed;
//                   the server skips expansion and runs ScalToMat / RegevToGSW (the public params
//                   hold only these conversion keys), then first dimension, folding, modswitch.
//                   When C::n = 1 (VariantOf::direct_first: stream_pack always, stream with
//                   P::n = 1) the first-dimension cts are encrypted under the computation secret
//                   s_c instead (b = a·s_c + e + Δ·[i = index]): a 2×1 matrix Regev ct under
//                   [−s_c | 1] is such a scalar ct, so the server takes (a, b) as the matrix (a in
//                   row 0, b in row 1) with no ScalToMat — the first dimension's input noise is the
//                   fresh encryption noise instead of the key switch's. Same wire format and sizes;
//                   the GSW-digit cts stay under s_reg (RegevToGSW). The noise hook's "expansion"
//                   stage is then empty (no s_reg first-dimension cts); "conversion" measures them.
//   * pack:         C = PackComp<P>: n_comp = 1 over n² sub-databases (sub-database e = row·n + col
//                   holds entry (row, col) of every n×n plaintext; C::instances = instances·n²), the
//                   vanilla query/expansion of C, and at the end the n² scalar (2×1) responses of each
//                   instance are packed into one (n+1)×n matrix Regev ct under S = [−s̃ | I_n] with n
//                   key-switching matrices W_r (packing keys: column r·t_conv + k, rows i < n, phase
//                   [i = r]·(−s_c·z_conv^k), s_c the n = 1 computation secret). The response is then
//                   exactly vanilla's (split modulus switching of an (n+1)×n ct).
//   * stream_pack:  both: the query of stream over C = PackComp<P>, the packing of pack.
// C carries `using wire_params = P`, so every header it writes (query, preprocessed database) has
// P's params hash (params.hpp WireOf). Sizes: Derived<P> (FORMATS.md §3, §7).
//
// Streaming (all variants): prepare(pp, query) parses and converts a query once (expansion +
// conversion); answer_prepared(prepared, database) runs first dimension, folding, (packing) and
// modulus switching against any database of the same parameters. The C ABI exposes it as
// PREFIX_server_prepare / PREFIX_server_answer_prepared / PREFIX_prepared_free.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "spiralpir/arith/dot.hpp"
#include "spiralpir/arith/gadget.hpp"
#include "spiralpir/testing/noise.hpp"
#include "spiralpir/spiral/service.hpp"

namespace spiralpir {

/// SpiralStream's computation type: P computed by the vanilla pipeline, labelled P on the wire.
template <SpiralParams P>
struct SpiralComp : P {
  static constexpr Variant variant = Variant::spiral;
  using wire_params = P;
};

/// SpiralPack's computation type: n = 1 over n² sub-databases. One C "item" is one plaintext of P
/// (all instances): sub-database (instance) m' = inst·n² + e holds bits [e·d·log2p, (e+1)·d·log2p)
/// of P's plaintext of instance inst, i.e. its matrix entry e (FORMATS.md §5).
template <SpiralParams P>
struct PackComp : P {
  static constexpr Variant variant = Variant::spiral;
  static constexpr unsigned n = 1;
  static constexpr std::uint64_t instances = P::instances * P::n * P::n;
  static constexpr std::uint64_t db_item_size = P::instances * (Derived<P>::pt_bits / 8);
  static constexpr std::uint64_t num_records = Derived<P>::num_pts;
  static constexpr std::uint64_t record_size = db_item_size;
  using wire_params = P;
};

template <SpiralParams P>
struct VariantOf {
  static constexpr bool stream = Derived<P>::is_stream;
  static constexpr bool pack = Derived<P>::is_pack;
  using Comp = std::conditional_t<pack, PackComp<P>, SpiralComp<P>>;
  /// stream with a 1×1 computation matrix (stream_pack always, stream when P::n = 1): the client
  /// encrypts the first-dimension cts directly under the computation secret s_c, so each IS a
  /// 2×1 matrix Regev ct under [−s_c | 1] and the server runs no ScalToMat on them
  static constexpr bool direct_first = stream && Comp::n == 1;
};

/// Key material of a variant: the column list of its public params in wire order, generation and
/// parsing.
template <SpiralParams P>
struct VariantKeys {
  using V = VariantOf<P>;
  using C = typename V::Comp;
  using R = typename P::ring;
  using D = Derived<P>;
  using DC = Derived<C>;
  using LC = KeyLayout<C>;
  using Pn = rlwe::Pn<R>;
  static constexpr unsigned n = P::n;
  static constexpr unsigned nc = C::n;
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
    for (std::size_t c = LC::s2m_begin; c < LC::num_columns; ++c) cols.push_back({c, nc});
    for (std::size_t c = 0; c < pack_columns; ++c) cols.push_back({pack_begin + c, n});
    return cols;
  }
  static std::size_t total_rows() {
    std::size_t t = 0;
    for (const auto& c : columns()) t += c.rows;
    return t;
  }
};

/// Server view of a variant's public parameters (NTT domain).
template <SpiralParams P>
struct VariantPublicParams {
  using K = VariantKeys<P>;
  using C = typename K::C;
  using R = typename P::ring;
  using Pn = rlwe::Pn<R>;
  ExpandedPublicParams<C> comp;         // C's key columns (expansion columns empty for stream)
  std::vector<Pn> pack_a;               // packing column c = r·t_conv + k: random row
  std::vector<std::vector<Pn>> pack_b;  // [c][row], n rows

  static VariantPublicParams parse(const std::uint8_t* buf, std::size_t len, unsigned threads) {
    using D = Derived<P>;
    check_header<P>(buf, len, ObjectKind::public_params, D::public_params_bytes - kHeaderBytes);
    Seed seed;
    std::memcpy(seed.data(), buf + kHeaderBytes, 32);
    const std::uint8_t* body = buf + kHeaderBytes + 32;
    const std::size_t body_len = len - kHeaderBytes - 32;
    const auto cols = K::columns();
    std::vector<std::size_t> first(cols.size());
    std::size_t acc = 0;
    for (std::size_t c = 0; c < cols.size(); ++c) {
      first[c] = acc;
      acc += cols[c].rows;
    }
    static_assert(std::uint64_t{D::d} * D::q_bits % 8 == 0, "polynomials start on a byte boundary");
    if (acc != D::pp_polys) throw std::logic_error("variant public-params layout disagrees with FORMATS.md");
    VariantPublicParams pp;
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
};

/// The variant client's secrets: C's keys (s_reg, s_c = C's n_comp matrix secret) and, for pack,
/// the packing target s̃ (n polys) from an independent derived seed.
template <SpiralParams P>
class VariantClientCore {
 public:
  using K = VariantKeys<P>;
  using V = VariantOf<P>;
  using C = typename K::C;
  using R = typename P::ring;
  using D = Derived<P>;
  using DC = Derived<C>;
  using Pc = rlwe::Pc<R>;
  using Pn = rlwe::Pn<R>;

  explicit VariantClientCore(const Seed& master) : comp_(master), out_(derive(master)) {
    Csprng seedgen(master, 3);
    seedgen.fill(pp_seed_.data(), pp_seed_.size());
  }
  const ClientCore<C>& comp() const { return comp_; }
  /// the client that decodes responses (holds the response secret)
  const ClientCore<P>& outer() const { return out_; }
  const Seed& master_seed() const { return comp_.master_seed(); }

  std::vector<std::uint8_t> save() const { return comp_.save(); }  // header carries P's hash
  static VariantClientCore load(const std::uint8_t* buf, std::size_t len) {
    check_header<P>(buf, len, ObjectKind::client_state, 32);
    Seed s;
    std::memcpy(s.data(), buf + kHeaderBytes, 32);
    return VariantClientCore(s);
  }

  std::vector<std::uint8_t> public_params() const {
    Csprng noise(master_seed(), 2);
    const GaussianSampler g(P::noise_width);
    const auto& sk = comp_.secret();
    std::vector<std::uint8_t> out(D::public_params_bytes, 0);
    std::uint64_t poly_index = 0;  // polys written so far
    if constexpr (!V::stream) {
      // C's vanilla public params (expansion + conversion keys) are the prefix
      const std::vector<std::uint8_t> c = make_public_params<C>(sk, pp_seed_, noise);
      static_assert(DC::public_params_bytes <= D::public_params_bytes);
      std::memcpy(out.data(), c.data(), c.size());
      poly_index = DC::pp_polys;
    }
    write_header<P>(out.data(), ObjectKind::public_params, D::public_params_bytes - kHeaderBytes);
    std::memcpy(out.data() + kHeaderBytes, pp_seed_.data(), 32);
    BitWriter w(out.data() + kHeaderBytes + 32 + poly_index * (std::uint64_t{D::d} * D::q_bits / 8));
    const u128 q = D::q;
    auto neg_pow = [&](unsigned bits, unsigned j) {
      const u128 zj = pow2_mod128(bits * j, q);
      return zj == 0 ? u128{0} : q - zj;
    };
    auto emit = [&](const Pn& a, const Pn& s, const Pn* m) {
      Pn b = a * s;
      b += to_ntt(gaussian_poly<R>(noise, g));
      if (m) b += *m;
      rlwe::put_poly_q<R>(w, from_ntt(std::move(b)), D::q_bits);
    };
    using LC = typename K::LC;
    if constexpr (V::stream) {
      // conversion keys only, same messages and seed streams as vanilla (keys.hpp)
      for (unsigned i = 0; i < C::n; ++i)
        for (unsigned k = 0; k < P::t_conv; ++k) {
          const std::size_t c = std::size_t{i} * P::t_conv + k;
          const Pn a = uniform_poly_ntt<R>(pp_seed_, LC::s2m_begin + c);
          const Pn m = scalar_mul(sk.s_reg_ntt, neg_pow(DC::bits_conv, k));
          for (unsigned row = 0; row < C::n; ++row) emit(a, sk.s_ntt[row], row == i ? &m : nullptr);
        }
      for (unsigned c = 0; c < 2 * P::t_conv; ++c) {
        const Pn a = uniform_poly_ntt<R>(pp_seed_, LC::r2g_begin + c);
        const unsigned k = c % P::t_conv;
        const u128 zk = pow2_mod128(DC::bits_conv * k, q);
        for (unsigned row = 0; row < C::n; ++row) {
          const Pn m = c < P::t_conv ? scalar_mul(sk.s_ntt[row] * sk.s_reg_ntt, zk)
                                     : scalar_mul(sk.s_ntt[row], neg_pow(DC::bits_conv, k));
          emit(a, sk.s_ntt[row], &m);
        }
      }
    }
    if constexpr (V::pack) {
      // packing keys W_r, column r·t_conv + k: row i has phase [i = r]·(−s_c·z^k) under s̃_i
      const auto& st = out_.secret();
      for (unsigned r = 0; r < P::n; ++r)
        for (unsigned k = 0; k < P::t_conv; ++k) {
          const std::size_t c = std::size_t{r} * P::t_conv + k;
          const Pn a = uniform_poly_ntt<R>(pp_seed_, K::pack_begin + c);
          const Pn m = scalar_mul(sk.s_ntt[0], neg_pow(D::bits_conv, k));
          for (unsigned row = 0; row < P::n; ++row) emit(a, st.s_ntt[row], row == r ? &m : nullptr);
        }
    }
    return out;
  }

  /// The computation index (C's item) of record `item`.
  static std::uint64_t comp_item(std::uint64_t item) {
    if constexpr (V::pack) return ItemLocation<P>::of(item).pt;
    else return item;
  }

  std::vector<std::uint8_t> query(std::uint64_t item, Csprng& rng) const {
    if (item >= D::num_items)
      throw ArgumentError("query: index " + std::to_string(item) + " out of range (capacity " +
                          std::to_string(D::num_items) + ")");
    if constexpr (!V::stream) {
      return comp_.query(comp_item(item), rng);  // C's query: P's hash, size D::query_bytes
    } else {
      const auto loc = ItemLocation<C>::of(comp_item(item));
      Seed seed;
      rng.fill(seed.data(), seed.size());
      const GaussianSampler g(P::noise_width);
      std::vector<std::uint8_t> out(D::query_bytes, 0);
      write_header<P>(out.data(), ObjectKind::query, D::query_bytes - kHeaderBytes);
      std::memcpy(out.data() + kHeaderBytes, seed.data(), 32);
      BitWriter w(out.data() + kHeaderBytes + 32);
      const auto& sk = comp_.secret();
      // first-dimension cts under s_c when C's matrices are 1×1 (V::direct_first), else s_reg
      const Pn& s_first = V::direct_first ? sk.s_ntt[0] : sk.s_reg_ntt;
      for (std::uint64_t x = 0; x < D::query_polys; ++x) {
        u128 m = 0;
        if (x < D::dim0) {
          m = x == loc.i ? D::delta : 0;
        } else {
          const std::uint64_t gi = x - D::dim0, f = gi / P::t_gsw, k = gi % P::t_gsw;
          const bool bit = ((loc.j >> (P::nu_2 - 1 - f)) & 1) != 0;
          m = bit ? pow2_mod128(D::bits_gsw * static_cast<unsigned>(k), D::q) : 0;
        }
        Pc mp;
        const auto r = crt_decompose<R>(m);
        for (std::size_t i = 0; i < R::num_primes; ++i) mp(i, 0) = r[i];
        const Pn a = uniform_poly_ntt<R>(seed, x);
        Pn b = a * (x < D::dim0 ? s_first : sk.s_reg_ntt);
        b += to_ntt(gaussian_poly<R>(rng, g));
        b += to_ntt(mp);
        rlwe::put_poly_q<R>(w, from_ntt(std::move(b)), D::q_bits);
      }
      return out;
    }
  }

  std::vector<std::uint8_t> decode_plaintexts(const std::uint8_t* buf, std::size_t len) const {
    return out_.decode_plaintexts(buf, len);
  }
  std::vector<std::uint8_t> decode(std::uint64_t item, const std::uint8_t* buf, std::size_t len) const {
    return out_.decode(item, buf, len);
  }

 private:
  static Seed derive(const Seed& master) {
    if constexpr (V::pack) {
      Csprng g(master, 7);  // the packing target secret: an independent stream of the master seed
      Seed s;
      g.fill(s.data(), s.size());
      return s;
    } else {
      return master;  // stream: C = P computed as vanilla, same secrets
    }
  }
  ClientCore<C> comp_;
  ClientCore<P> out_;
  Seed pp_seed_{};
};

// ------------------------------------------------------------------------------------------
// Primary-template specializations for the variants.

template <SpiralParams P>
  requires(P::variant != Variant::spiral)
class PublicParams<P> {
 public:
  static PublicParams load(const std::uint8_t* buf, std::size_t len, unsigned threads = 1) {
    PublicParams p;
    p.pp_ = std::make_shared<const VariantPublicParams<P>>(
        VariantPublicParams<P>::parse(buf, len, resolve_threads(threads)));
    return p;
  }
  const VariantPublicParams<P>& expanded() const { return *pp_; }
  const std::shared_ptr<const VariantPublicParams<P>>& shared() const { return pp_; }

 private:
  std::shared_ptr<const VariantPublicParams<P>> pp_;
};

template <SpiralParams P>
  requires(P::variant != Variant::spiral)
struct ClientCoreOf<P> {
  using type = VariantClientCore<P>;
};

/// A query after its one-time server work (parse, expansion, conversion): reusable against any
/// database of the same parameters (the streaming setting). Holds a reference to the public
/// params it was prepared with (pack: the packing keys).
template <SpiralParams P>
struct PreparedQuery {
  using C = std::conditional_t<P::variant == Variant::spiral, P, typename VariantOf<P>::Comp>;
  using MatN = rlwe::MatN<typename P::ring>;
  typename FirstDim<C>::Query first;  // 2^nu_1 matrix Regev cts (C's n), in the kernel's order
  std::vector<MatN> gsw;              // nu_2 GSW cts
  std::shared_ptr<const VariantPublicParams<P>> pack_keys;  // variants only (may be null otherwise)
  double seconds[2] = {0, 0};    // expansion (parse included), conversion
};

template <SpiralParams P>
  requires(P::variant != Variant::spiral)
class Server<P> {
 public:
  using V = VariantOf<P>;
  using C = typename V::Comp;
  using D = Derived<P>;
  using DC = Derived<C>;
  using R = typename P::ring;
  using Pc = rlwe::Pc<R>;
  using Pn = rlwe::Pn<R>;
  using MatN = rlwe::MatN<R>;
  using Progress = std::function<void(std::uint64_t, std::uint64_t)>;
  using DB = Database<C>;

  explicit Server(unsigned threads = 0) : threads_(resolve_threads(threads)), db_(std::make_unique<DB>()) {
    retain_heap_between_answers();  // heap.hpp: no page faults on every answer
  }

  unsigned threads() const { return threads_; }
  void set_threads(unsigned t) { threads_ = resolve_threads(t); }
  /// the computation database (pack: n² sub-databases of n = 1 plaintexts per instance)
  DB& database() { return *db_; }
  const DB& database() const { return *db_; }

  /// Plaintext source of the computation database from a source of P's plaintexts
  /// (fills Database<P>::pt_bytes bytes for (instance, plaintext)).
  static typename DB::PlaintextSource comp_source(typename Database<P>::PlaintextSource outer) {
    if constexpr (!V::pack) {
      return outer;
    } else {
      constexpr std::size_t nn = std::size_t{P::n} * P::n;
      return [outer = std::move(outer)](std::uint64_t inst_c, std::uint64_t pt, std::uint8_t* out) {
        thread_local std::vector<std::uint8_t> tmp;
        tmp.resize(Database<P>::pt_bytes);
        outer(inst_c / nn, pt, tmp.data());
        std::memcpy(out, tmp.data() + (inst_c % nn) * DB::pt_bytes, DB::pt_bytes);
      };
    }
  }

  void load_records(const std::uint8_t* records, std::uint64_t num_records, std::uint64_t record_size,
                    const Progress& progress = {}) {
    if (num_records == 0) throw ArgumentError("load_records: no records");
    if (num_records > D::num_items)
      throw ArgumentError("load_records: " + std::to_string(num_records) + " records exceed the capacity " +
                          std::to_string(D::num_items) + " of these parameters");
    if (record_size == 0 || record_size > P::db_item_size)
      throw ArgumentError("load_records: record size " + std::to_string(record_size) + " not in [1, " +
                          std::to_string(P::db_item_size) + "]");
    if (records == nullptr) throw ArgumentError("load_records: null records buffer");
    db_->build(comp_source(Database<P>::records_source(records, num_records, record_size)), num_records, threads_, 0,
               0, progress);
  }
  void save_db(const std::string& path) const { db_->save(path); }
  void map_db(const std::string& path) { db_->map(path); }

  void set_public_params(const std::string& client_id, PublicParams<P> pp) {
    std::unique_lock<std::shared_mutex> g(mu_);
    clients_[client_id] = std::move(pp);
  }
  bool has_client(const std::string& client_id) const {
    std::shared_lock<std::shared_mutex> g(mu_);
    return clients_.count(client_id) != 0;
  }
  PublicParams<P> public_params_of(const std::string& client_id) const {
    std::shared_lock<std::shared_mutex> g(mu_);
    auto it = clients_.find(client_id);
    if (it == clients_.end()) throw ArgumentError("unknown client id '" + client_id + "': upload public parameters first");
    return it->second;
  }

  /// One-time part: parse + (expansion) + conversion.
  PreparedQuery<P> prepare(const PublicParams<P>& pp, const std::uint8_t* query, std::size_t len,
                           StageObserver<C>* obs = nullptr) const {
    if (query == nullptr && len != 0) throw ArgumentError("answer: null query buffer");
    using clock = std::chrono::steady_clock;
    using S = ServerStages<C>;
    const auto t0 = clock::now();
    std::vector<RegevCt<R>> first, digits;
    std::vector<MatN> direct;  // V::direct_first: the first-dimension cts, already 2×1 matrices
    if constexpr (V::stream) {
      parse_stream_query(query, len, first, digits, direct);
    } else {
      const RegevCt<R> q = S::parse_query(query, len);
      S::expand(q, pp.expanded().comp, threads_, first, digits);
    }
    const auto t1 = clock::now();
    if (obs) obs->on_expansion(first, digits);  // (direct_first: first is empty)
    PreparedQuery<P> out;
    std::vector<MatN> first_mats;
    S::convert(first, digits, pp.expanded().comp, threads_, first_mats, out.gsw);
    if constexpr (V::direct_first) first_mats = std::move(direct);  // no ScalToMat
    out.first = FirstDim<C>::tile(first_mats, threads_);  // one-time: part of the conversion
    const auto t2 = clock::now();
    if (obs) obs->on_conversion(first_mats, out.gsw);
    out.pack_keys = pp.shared();
    out.seconds[0] = std::chrono::duration<double>(t1 - t0).count();
    out.seconds[1] = std::chrono::duration<double>(t2 - t1).count();
    return out;
  }

  /// Per-database part against `db`: first dimension, folding, packing (pack), modulus switching.
  /// stage_seconds (optional): first_dimension, folding, packing, modswitch (4 values).
  std::vector<std::uint8_t> answer_prepared(const PreparedQuery<P>& pq, const DB& db, double* stage_seconds = nullptr,
                                            StageObserver<C>* obs = nullptr,
                                            std::vector<MatN>* packed_out = nullptr) const {
    if (!db.loaded()) throw ArgumentError("answer: no database loaded");
    if (pq.first.empty() || pq.gsw.size() != P::nu_2)
      throw ArgumentError("answer_prepared: not a prepared query of these parameters");
    using clock = std::chrono::steady_clock;
    using S = ServerStages<C>;
    double secs[4] = {};
    auto t0 = clock::now();
    auto lap = [&](int s) {
      const auto t1 = clock::now();
      secs[s] = std::chrono::duration<double>(t1 - t0).count();
      t0 = t1;
    };
    std::vector<MatN> cts = S::first_dimension(pq.first, db, threads_);
    lap(0);
    if (obs) obs->on_first_dimension(cts);
    S::fold(cts, pq.gsw, threads_, obs);
    lap(1);
    std::vector<std::uint8_t> resp;
    if constexpr (V::pack) {
      if (!pq.pack_keys) throw ArgumentError("answer_prepared: prepared query without packing keys");
      std::vector<MatN> packed = pack(cts, *pq.pack_keys, threads_);
      lap(2);
      if (packed_out) *packed_out = packed;
      resp = ServerStages<P>::modswitch_encode(packed, threads_);
    } else {
      lap(2);
      if (packed_out) *packed_out = cts;
      resp = S::modswitch_encode(cts, threads_);
    }
    lap(3);
    if (stage_seconds)
      for (int s = 0; s < 4; ++s) stage_seconds[s] = secs[s];
    return resp;
  }
  std::vector<std::uint8_t> answer_prepared(const PreparedQuery<P>& pq, double* stage_seconds = nullptr) const {
    return answer_prepared(pq, *db_, stage_seconds);
  }

  std::vector<std::uint8_t> answer(const std::string& client_id, const std::uint8_t* query, std::size_t len,
                                   double* stage_seconds = nullptr) const {
    return answer(public_params_of(client_id), query, len, stage_seconds);
  }
  /// The whole answer; stage_seconds receives kNumStages values (server.hpp kStageNames; for the
  /// pack variants "modswitch" includes the packing).
  std::vector<std::uint8_t> answer(const PublicParams<P>& pp, const std::uint8_t* query, std::size_t len,
                                   double* stage_seconds = nullptr, StageObserver<C>* obs = nullptr) const {
    if (!db_->loaded()) throw ArgumentError("answer: no database loaded");
    const PreparedQuery<P> pq = prepare(pp, query, len, obs);
    double s4[4] = {};
    auto resp = answer_prepared(pq, *db_, s4, obs);
    if (stage_seconds) {
      stage_seconds[0] = pq.seconds[0];
      stage_seconds[1] = pq.seconds[1];
      stage_seconds[2] = s4[0];
      stage_seconds[3] = s4[1];
      stage_seconds[4] = s4[2] + s4[3];
    }
    return resp;
  }

  /// SpiralPack's packing: per instance, the n² scalar (2×1) cts (sub-database e = row·n + col)
  /// become one (n+1)×n matrix Regev ct under s̃ with the packing keys.
  static std::vector<MatN> pack(const std::vector<MatN>& cts, const VariantPublicParams<P>& pp, unsigned threads) {
    constexpr unsigned n = P::n;
    constexpr std::size_t nn = std::size_t{n} * n;
    constexpr std::size_t T = P::t_conv;
    if (cts.size() != D::instances * nn) throw std::logic_error("pack: wrong number of cts");
    std::vector<MatN> out(D::instances, MatN(n + 1, n));
    parallel_for(threads, D::instances * n, [&](std::size_t task) {
      const std::size_t inst = task / n, col = task % n;
      std::vector<Pn> dig;  // index r·T + k
      dig.reserve(n * T);
      for (unsigned r = 0; r < n; ++r) {
        auto g = gadget_decompose_ntt<R>(from_ntt(cts[inst * nn + r * n + col].at(0, 0)), D::bits_conv,
                                         static_cast<unsigned>(T));
        for (auto& x : g) dig.push_back(std::move(x));
      }
      MatN& o = out[inst];
      dot<R>(o.at(0, col), n * T, [&](std::size_t x) -> const Pn& { return dig[x]; },
                    [&](std::size_t x) -> const Pn& { return pp.pack_a[x]; });
      for (unsigned row = 0; row < n; ++row) {
        dot<R>(o.at(row + 1, col), n * T, [&](std::size_t x) -> const Pn& { return dig[x]; },
                      [&](std::size_t x) -> const Pn& { return pp.pack_b[x][row]; });
        o.at(row + 1, col) += cts[inst * nn + row * n + col].at(1, 0);
      }
    });
    return out;
  }

 private:
  /// Stream query: 2^nu_1 + nu_2·t_gsw b-polys, a from (seed, index). V::direct_first: the
  /// first-dimension cts (under s_c) go to `direct` as 2×1 matrix Regev cts (row 0 = a, row 1 = b,
  /// NTT domain) and `first` stays empty.
  void parse_stream_query(const std::uint8_t* buf, std::size_t len, std::vector<RegevCt<R>>& first,
                          std::vector<RegevCt<R>>& digits, std::vector<MatN>& direct) const {
    check_header<P>(buf, len, ObjectKind::query, D::query_bytes - kHeaderBytes);
    Seed seed;
    std::memcpy(seed.data(), buf + kHeaderBytes, 32);
    const std::uint8_t* body = buf + kHeaderBytes + 32;
    const std::size_t body_len = len - kHeaderBytes - 32;
    const std::uint64_t poly_bits = std::uint64_t{D::d} * D::q_bits;
    std::vector<RegevCt<R>> all(D::query_polys);
    direct.clear();
    if constexpr (V::direct_first) direct.resize(D::dim0);
    parallel_for(threads_, all.size(), [&](std::size_t x) {
      const std::uint64_t bit0 = x * poly_bits;
      BitReader rd(body + bit0 / 8, body_len - bit0 / 8);
      if (V::direct_first && x < D::dim0) {
        MatN m(2, 1);
        m.at(0, 0) = uniform_poly_ntt<R>(seed, x);
        m.at(1, 0) = to_ntt(rlwe::get_poly_q<R>(rd, D::q_bits, "query"));
        direct[x] = std::move(m);
        return;
      }
      all[x].b = rlwe::get_poly_q<R>(rd, D::q_bits, "query");
      all[x].a = from_ntt(uniform_poly_ntt<R>(seed, x));
    });
    const std::uint64_t used = D::query_polys * poly_bits;
    BitReader rd(body + used / 8, body_len - used / 8);
    rd.check_padding_zero("query");
    if constexpr (!V::direct_first)
      first.assign(std::make_move_iterator(all.begin()), std::make_move_iterator(all.begin() + D::dim0));
    digits.assign(std::make_move_iterator(all.begin() + D::dim0), std::make_move_iterator(all.end()));
  }

  unsigned threads_;
  std::unique_ptr<DB> db_;
  mutable std::shared_mutex mu_;
  std::map<std::string, PublicParams<P>> clients_;
};

// ------------------------------------------------------------------------------------------
// Streaming entry points for every variant (vanilla included): used by the C ABI.

template <SpiralParams P>
PreparedQuery<P> prepare_query(const Server<P>& server, const PublicParams<P>& pp, const std::uint8_t* query,
                               std::size_t len) {
  if constexpr (P::variant != Variant::spiral) {
    return server.prepare(pp, query, len);
  } else {
    if (query == nullptr && len != 0) throw ArgumentError("prepare: null query buffer");
    using clock = std::chrono::steady_clock;
    using S = ServerStages<P>;
    const auto t0 = clock::now();
    const auto q = S::parse_query(query, len);
    std::vector<RegevCt<typename P::ring>> first, digits;
    S::expand(q, pp.expanded(), server.threads(), first, digits);
    const auto t1 = clock::now();
    PreparedQuery<P> out;
    std::vector<typename PreparedQuery<P>::MatN> first_mats;
    S::convert(first, digits, pp.expanded(), server.threads(), first_mats, out.gsw);
    out.first = FirstDim<P>::tile(first_mats, server.threads());  // one-time: part of the conversion
    const auto t2 = clock::now();
    out.seconds[0] = std::chrono::duration<double>(t1 - t0).count();
    out.seconds[1] = std::chrono::duration<double>(t2 - t1).count();
    return out;
  }
}

/// stage_seconds (optional): 4 values — first_dimension, folding, packing (0 unless pack), modswitch.
template <SpiralParams P>
std::vector<std::uint8_t> answer_prepared(const Server<P>& server, const PreparedQuery<P>& pq,
                                          double* stage_seconds = nullptr) {
  if constexpr (P::variant != Variant::spiral) {
    return server.answer_prepared(pq, stage_seconds);
  } else {
    if (!server.database().loaded()) throw ArgumentError("answer: no database loaded");
    if (pq.first.empty() || pq.gsw.size() != P::nu_2)
      throw ArgumentError("answer_prepared: not a prepared query of these parameters");
    using clock = std::chrono::steady_clock;
    using S = ServerStages<P>;
    const auto t0 = clock::now();
    auto cts = S::first_dimension(pq.first, server.database(), server.threads());
    const auto t1 = clock::now();
    S::fold(cts, pq.gsw, server.threads());
    const auto t2 = clock::now();
    auto resp = S::modswitch_encode(cts, server.threads());
    const auto t3 = clock::now();
    if (stage_seconds) {
      stage_seconds[0] = std::chrono::duration<double>(t1 - t0).count();
      stage_seconds[1] = std::chrono::duration<double>(t2 - t1).count();
      stage_seconds[2] = 0;
      stage_seconds[3] = std::chrono::duration<double>(t3 - t2).count();
    }
    return resp;
  }
}

}  // namespace spiralpir

// C ABI additions (streaming), emitted by SPIRALPIR_DEFINE_C_API (capi.hpp):
//   int  PREFIX_server_prepare(void* server, void* pp, const uint8_t* query, size_t query_len,
//                              void** prepared, double* seconds2_or_null);   expansion, conversion
//   int  PREFIX_server_answer_prepared(void* server, void* prepared, uint8_t** resp, size_t* resp_len,
//                                      double* seconds4_or_null);  first_dimension, folding, packing, modswitch
//   void PREFIX_prepared_free(void* prepared);
//   const char* PREFIX_variant(void);   "spiral" | "stream" | "pack" | "stream_pack"
#define SPIRALPIR_DEFINE_C_API_STREAMING(PREFIX, PARAMS)                                                    \
  extern "C" {                                                                                              \
  __attribute__((visibility("default"))) const char* SPIRALPIR_CAPI_CAT(PREFIX, _variant)(void) {          \
    return ::spiralpir::variant_name(PARAMS::variant);                                                      \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _server_prepare)(                  \
      void* server, void* pp, const uint8_t* query, size_t query_len, void** prepared, double* seconds2) {  \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      ::spiralpir::capi::check_out(prepared, "server_prepare");                                             \
      auto& s = ::spiralpir::capi::deref<::spiralpir::Server<PARAMS>>(server, "server_prepare");           \
      auto& p = ::spiralpir::capi::deref<::spiralpir::PublicParams<PARAMS>>(pp, "server_prepare");         \
      auto* q = new ::spiralpir::PreparedQuery<PARAMS>(::spiralpir::prepare_query(s, p, query, query_len)); \
      if (seconds2) {                                                                                       \
        seconds2[0] = q->seconds[0];                                                                        \
        seconds2[1] = q->seconds[1];                                                                        \
      }                                                                                                     \
      *prepared = q;                                                                                        \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _server_answer_prepared)(          \
      void* server, void* prepared, uint8_t** resp, size_t* resp_len, double* seconds4) {                   \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& s = ::spiralpir::capi::deref<::spiralpir::Server<PARAMS>>(server, "server_answer_prepared");   \
      auto& q = ::spiralpir::capi::deref<::spiralpir::PreparedQuery<PARAMS>>(prepared,                      \
                                                                            "server_answer_prepared");      \
      ::spiralpir::capi::give(::spiralpir::answer_prepared(s, q, seconds4), resp, resp_len);                \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) void SPIRALPIR_CAPI_CAT(PREFIX, _prepared_free)(void* prepared) { \
    delete static_cast<::spiralpir::PreparedQuery<PARAMS>*>(prepared);                                      \
  }                                                                                                         \
  }
