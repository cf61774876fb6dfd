// spiralpir/spiral/server.hpp — Server<P>, the one server of every variant: the computation
// database, the public parameters of many clients (by id), and the answer pipeline written once:
//   prepare (prepared.hpp: parse, expansion, conversion)
//   → first dimension → folding → packing (pack only, packing.hpp) → modulus switching.
// answer() = prepare + answer_prepared; the streaming API answers one prepared query against any
// number of databases of the same parameters.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "spiralpir/core/heap.hpp"
#include "spiralpir/spiral/packing.hpp"
#include "spiralpir/spiral/prepared.hpp"

namespace spiralpir {

template <SpiralParams P>
class Server {
 public:
  using V = VariantOf<P>;
  using C = typename V::Comp;
  using D = Derived<P>;
  using R = typename P::ring;
  using MatN = rlwe::MatN<R>;
  using Progress = std::function<void(std::uint64_t, std::uint64_t)>;
  /// the computation database (pack: n² sub-databases of n = 1 plaintexts per instance)
  using DB = Database<C>;

  explicit Server(unsigned threads = 0) : threads_(resolve_threads(threads)), db_(std::make_unique<DB>()) {
    retain_heap_between_answers();  // heap.hpp: no page faults on every answer
  }

  unsigned threads() const { return threads_; }
  void set_threads(unsigned t) { threads_ = resolve_threads(t); }
  DB& database() { return *db_; }
  const DB& database() const { return *db_; }

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
    db_->build(V::comp_source(Database<P>::records_source(records, num_records, record_size)), num_records,
               threads_, 0, 0, progress);
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

  /// One-time part: parse, expansion (not stream), conversion. `obs` (optional, tests and
  /// benchmarks) sees the intermediate cts.
  PreparedQuery<P> prepare(const PublicParams<P>& pp, const std::uint8_t* query, std::size_t len,
                           StageObserver<C>* obs = nullptr) const {
    return QueryPreparation<P>::run(pp, query, len, threads_, obs);
  }

  /// Per-database part against `db`: first dimension, folding, packing (pack), modulus switching.
  /// stage_seconds (optional): first_dimension, folding, packing (0 unless pack), modswitch.
  /// finals (optional): the (n+1)×n cts before the modulus switching.
  std::vector<std::uint8_t> answer_prepared(const PreparedQuery<P>& pq, const DB& db, double* stage_seconds = nullptr,
                                            StageObserver<C>* obs = nullptr,
                                            std::vector<MatN>* finals = nullptr) const {
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
    db.check_intact();  // the only stage that reads the database
    lap(0);
    if (obs) obs->on_first_dimension(cts);
    S::fold(cts, pq.gsw, threads_, obs);
    lap(1);
    if constexpr (V::pack) {
      if (!pq.pack_keys) throw ArgumentError("answer_prepared: prepared query without packing keys");
      cts = PackingStep<P>::pack(cts, *pq.pack_keys, threads_);
    }
    lap(2);
    if (finals) *finals = cts;
    std::vector<std::uint8_t> resp = ServerStages<P>::modswitch_encode(cts, threads_);
    lap(3);
    if (stage_seconds)
      for (int s = 0; s < 4; ++s) stage_seconds[s] = secs[s];
    return resp;
  }
  std::vector<std::uint8_t> answer_prepared(const PreparedQuery<P>& pq, double* stage_seconds = nullptr) const {
    return answer_prepared(pq, *db_, stage_seconds);
  }

  /// A blocked answer (FORMATS.md §11): the first dimension split into `blocks` row blocks
  /// (FirstDim::run_blocks), each block's J results folded with the query's one set of GSW cts
  /// and modulus-switched: `blocks` responses, concatenated, each of the standard size and
  /// decoding to the plaintext at (the query's row in that block, its column). Expansion and
  /// conversion run once, the first dimension once over the database; folding and modulus
  /// switching once per block. blocks = 1 is answer(). The spiral variant only (the others'
  /// queries do not select rows of one computation database this way).
  /// stage_seconds: kNumStages values, folding and modswitch summed over the blocks.
  std::vector<std::uint8_t> answer_blocked(const PublicParams<P>& pp, const std::uint8_t* query, std::size_t len,
                                           std::size_t blocks, double* stage_seconds = nullptr) const {
    if constexpr (V::pack || V::stream) {
      throw ArgumentError("answer_blocked: the spiral variant only, not " + std::string(variant_name(P::variant)));
    } else {
      if (query == nullptr && len != 0) throw ArgumentError("answer_blocked: null query buffer");
      if (!db_->loaded()) throw ArgumentError("answer_blocked: no database loaded");
      using clock = std::chrono::steady_clock;
      using S = ServerStages<C>;
      const PreparedQuery<P> pq = prepare(pp, query, len);
      double secs[3] = {};
      auto t0 = clock::now();
      auto lap = [&](int s) {
        const auto t1 = clock::now();
        secs[s] += std::chrono::duration<double>(t1 - t0).count();
        t0 = t1;
      };
      std::vector<MatN> all = FirstDim<C>::run_blocks(pq.first, *db_, threads_, blocks);
      db_->check_intact();
      lap(0);
      const std::size_t per = D::instances * D::dim_rest;
      std::vector<std::uint8_t> out;
      out.reserve(blocks * D::response_bytes);
      for (std::size_t b = 0; b < blocks; ++b) {
        std::vector<MatN> cts(std::make_move_iterator(all.begin() + static_cast<std::ptrdiff_t>(b * per)),
                              std::make_move_iterator(all.begin() + static_cast<std::ptrdiff_t>((b + 1) * per)));
        S::fold(cts, pq.gsw, threads_);
        lap(1);
        const std::vector<std::uint8_t> resp = ServerStages<P>::modswitch_encode(cts, threads_);
        out.insert(out.end(), resp.begin(), resp.end());
        lap(2);
      }
      if (stage_seconds) {
        stage_seconds[0] = pq.seconds[0];
        stage_seconds[1] = pq.seconds[1];
        for (int s = 0; s < 3; ++s) stage_seconds[2 + s] = secs[s];
      }
      return out;
    }
  }

  std::vector<std::uint8_t> answer(const std::string& client_id, const std::uint8_t* query, std::size_t len,
                                   double* stage_seconds = nullptr) const {
    return answer(public_params_of(client_id), query, len, stage_seconds);
  }
  /// The whole answer; stage_seconds receives kNumStages values (stages.hpp kStageNames; for the
  /// pack variants "modswitch" includes the packing).
  std::vector<std::uint8_t> answer(const PublicParams<P>& pp, const std::uint8_t* query, std::size_t len,
                                   double* stage_seconds = nullptr, StageObserver<C>* obs = nullptr) const {
    if (query == nullptr && len != 0) throw ArgumentError("answer: null query buffer");
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

 private:
  unsigned threads_;
  std::unique_ptr<DB> db_;
  mutable std::shared_mutex mu_;
  std::map<std::string, PublicParams<P>> clients_;
};

}  // namespace spiralpir
