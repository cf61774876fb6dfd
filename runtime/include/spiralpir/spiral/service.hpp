// spiralpir/spiral/service.hpp — the high-level C++ API over one compiled parameter type P.
//
//   PublicParams<P>::load(buf, len[, threads])       parse + expand a client's public params
//   Client<P>(seed or nullptr)                       keys from a 32-byte seed (nullptr: OS entropy)
//     Client<P>::load(buf, len), save()              client state (secret!)
//     public_params(), query(record_index), decode(record_index, resp, len, out, record_size)
//   Server<P>(threads = 0 → all cores)
//     load_records(records, num_records, record_size, progress), save_db(path), map_db(path)
//     set_public_params(client_id, PublicParams)     many clients, stored by id
//     answer(client_id | PublicParams, query, len[, stage_seconds[5]]) -> response bytes
//   params_json<P>()                                 the compiled parameters + derived sizes
// Everything a caller can get wrong throws a spiralpir::Error subclass with a clear message.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <string>
#include <vector>

#include "spiralpir/spiral/client.hpp"
#include "spiralpir/core/heap.hpp"
#include "spiralpir/spiral/server.hpp"

namespace spiralpir {

template <SpiralParams P>
class PublicParams {
 public:
  static PublicParams load(const std::uint8_t* buf, std::size_t len, unsigned threads = 1) {
    PublicParams p;
    p.pp_ = std::make_shared<const ExpandedPublicParams<P>>(
        ExpandedPublicParams<P>::parse(buf, len, resolve_threads(threads)));
    return p;
  }
  const ExpandedPublicParams<P>& expanded() const { return *pp_; }

 private:
  std::shared_ptr<const ExpandedPublicParams<P>> pp_;
};

/// The protocol core a Client wraps: vanilla's ClientCore; variants.hpp specialises it for the
/// other variants, so Client's checks and buffer handling exist once for every variant.
template <SpiralParams P>
struct ClientCoreOf {
  using type = ClientCore<P>;
};

template <SpiralParams P>
class Client {
 public:
  using D = Derived<P>;
  using Core = typename ClientCoreOf<P>::type;
  /// seed32: 32 bytes, or nullptr for fresh OS entropy
  explicit Client(const std::uint8_t* seed32 = nullptr) : core_(make_seed(seed32)) {}
  static Client load(const std::uint8_t* buf, std::size_t len) { return Client(Core::load(buf, len)); }
  std::vector<std::uint8_t> save() const { return core_.save(); }
  std::vector<std::uint8_t> public_params() const { return core_.public_params(); }
  std::vector<std::uint8_t> query(std::uint64_t record_index) {
    check_index(record_index);
    return core_.query(record_index, rng_);
  }
  /// Writes the first record_size bytes of the record (record_size <= db_item_size).
  void decode(std::uint64_t record_index, const std::uint8_t* resp, std::size_t len, std::uint8_t* out,
              std::size_t record_size) const {
    check_index(record_index);
    if (record_size > P::db_item_size)
      throw ArgumentError("decode: record_size " + std::to_string(record_size) + " exceeds the item size " +
                          std::to_string(P::db_item_size));
    if (out == nullptr && record_size != 0) throw ArgumentError("decode: null output buffer");
    const auto item = core_.decode(record_index, resp, len);
    std::memcpy(out, item.data(), record_size);
  }
  const Core& core() const { return core_; }

 private:
  explicit Client(Core&& c) : core_(std::move(c)) {}
  static Seed make_seed(const std::uint8_t* s) {
    Seed seed;
    if (s) std::memcpy(seed.data(), s, 32); else os_entropy(seed.data(), 32);
    return seed;
  }
  static void check_index(std::uint64_t i) {
    if (i >= D::num_items)
      throw ArgumentError("record index " + std::to_string(i) + " out of range (the parameters hold " +
                          std::to_string(D::num_items) + " records)");
  }
  Core core_;
  Csprng rng_;
};

template <SpiralParams P>
class Server {
 public:
  using D = Derived<P>;
  using Progress = std::function<void(std::uint64_t, std::uint64_t)>;

  explicit Server(unsigned threads = 0) : threads_(resolve_threads(threads)), db_(std::make_unique<Database<P>>()) {
    retain_heap_between_answers();  // heap.hpp: no page faults on every answer
  }

  unsigned threads() const { return threads_; }
  void set_threads(unsigned t) { threads_ = resolve_threads(t); }
  Database<P>& database() { return *db_; }
  const Database<P>& database() const { return *db_; }

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
    db_->build(Database<P>::records_source(records, num_records, record_size), num_records, threads_, 0, 0, progress);
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

  std::vector<std::uint8_t> answer(const std::string& client_id, const std::uint8_t* query, std::size_t len,
                                   double* stage_seconds = nullptr) const {
    return answer(public_params_of(client_id), query, len, stage_seconds);
  }
  std::vector<std::uint8_t> answer(const PublicParams<P>& pp, const std::uint8_t* query, std::size_t len,
                                   double* stage_seconds = nullptr, StageObserver<P>* obs = nullptr) const {
    if (query == nullptr && len != 0) throw ArgumentError("answer: null query buffer");
    return ServerStages<P>::answer(query, len, pp.expanded(), *db_, threads_, stage_seconds, obs);
  }

 private:
  unsigned threads_;
  std::unique_ptr<Database<P>> db_;
  mutable std::shared_mutex mu_;
  std::map<std::string, PublicParams<P>> clients_;
};

/// The compiled parameters and their derived values, as one JSON object.
template <SpiralParams P>
std::string params_json() {
  using R = typename P::ring;
  using D = Derived<P>;
  std::ostringstream o;
  o.precision(17);
  o << "{\"variant\":\"" << variant_name(P::variant) << "\",\"poly_len\":" << R::poly_len << ",\"moduli\":[";
  for (std::size_t i = 0; i < R::num_primes; ++i) o << (i ? "," : "") << R::primes[i];
  o << "],\"noise_width\":" << P::noise_width << ",\"secret_dist\":\"" << secret_dist_name(P::secret_dist)
    << "\",\"secret_plus\":" << P::secret_plus << ",\"secret_minus\":" << P::secret_minus << ",\"n\":" << P::n
    << ",\"nu_1\":" << P::nu_1 << ",\"nu_2\":" << P::nu_2 << ",\"p\":" << P::p << ",\"q2_bits\":" << P::q2_bits
    << ",\"t_gsw\":" << P::t_gsw << ",\"t_conv\":" << P::t_conv << ",\"t_exp_left\":" << P::t_exp_left
    << ",\"t_exp_right\":" << P::t_exp_right << ",\"instances\":" << P::instances
    << ",\"db_item_size\":" << P::db_item_size << ",\"num_records\":" << P::num_records
    << ",\"record_size\":" << P::record_size << ",\"q2\":" << D::q2 << ",\"q_bits\":" << D::q_bits
    << ",\"items_per_plaintext\":" << D::items_per_pt << ",\"capacity\":" << D::num_items
    << ",\"public_params_bytes\":" << D::public_params_bytes << ",\"query_bytes\":" << D::query_bytes
    << ",\"response_bytes\":" << D::response_bytes << ",\"preprocessed_db_bytes\":" << D::preprocessed_db_bytes
    << ",\"lazy_terms\":" << D::lazy_terms << ",\"params_hash\":\"";
  const auto& h = params_hash<P>();
  static const char* hex = "0123456789abcdef";
  for (auto b : h) o << hex[b >> 4] << hex[b & 15];
  o << "\",\"stages\":\"" << kStageNames << "\"}";
  return o.str();
}

}  // namespace spiralpir

// SpiralStream / SpiralPack / SpiralStreamPack specializations and the streaming API (issue 8).
#include "spiralpir/spiral/variants.hpp"
