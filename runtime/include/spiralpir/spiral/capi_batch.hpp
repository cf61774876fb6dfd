// spiralpir/spiral/capi_batch.hpp — SPIRALPIR_DEFINE_BATCH_C_API(prefix, ParamsType): the C ABI
// of packed queries (batch_query.hpp), beside capi.hpp's (same conventions: 0 on success, else
// 1 or 2 with PREFIX_last_error(); buffers from PREFIX_free's allocator).
//
//   uint32_t PREFIX_query_buckets(void);   G, the buckets one query carries (1: plain queries)
//   int  PREFIX_client_query_packed(void* client, const uint64_t* record_indices, size_t count,
//                                   uint8_t** buf, size_t* len);
//        1 ≤ count ≤ G; record_indices[g] is bucket g's record (fresh randomness from the OS);
//        count < G only for a batch's last query when G does not divide its bucket count.
//   int  PREFIX_server_prepare_packed(void* server, void* pp, const uint8_t* query, size_t query_len,
//                                     void** prepared, size_t count, double* seconds_or_null);
//        1 ≤ count ≤ G (the query's first count slots); prepared[g] receives bucket g's prepared query (answer it against bucket g's
//        database with PREFIX_server_answer_prepared, free it with PREFIX_prepared_free);
//        seconds_or_null: room for 2·count doubles, (expansion, conversion) per bucket, the shared
//        expansion counted in bucket 0's.
// Stream variants upload their expanded cts: both functions fail there (G is always 1).
#pragma once

#include <memory>
#include <vector>

#include "spiralpir/spiral/batch_query.hpp"
#include "spiralpir/spiral/capi.hpp"

namespace spiralpir::capi {

template <class P>
void client_query_packed(void* client, const uint64_t* records, size_t count, uint8_t** buf, size_t* len) {
  if constexpr (VariantOf<P>::stream) {
    throw ArgumentError("client_query_packed: a stream variant has no packed queries");
  } else {
    auto& c = deref<Client<P>>(client, "client_query_packed");
    Csprng rng;
    give(packed_query(c, records, count, rng), buf, len);
  }
}

template <class P>
void server_prepare_packed(void* server, void* pp, const uint8_t* query, size_t query_len, void** prepared,
                           size_t count, double* seconds) {
  if constexpr (VariantOf<P>::stream) {
    throw ArgumentError("server_prepare_packed: a stream variant has no packed queries");
  } else {
    check_out(prepared, "server_prepare_packed");
    if (count < 1 || count > Derived<P>::query_buckets)
      throw ArgumentError("server_prepare_packed: " + std::to_string(count) + " buckets, " +
                          "these parameters pack 1 to " + std::to_string(Derived<P>::query_buckets));
    auto& s = deref<Server<P>>(server, "server_prepare_packed");
    auto& p = deref<PublicParams<P>>(pp, "server_prepare_packed");
    auto all = PackedPreparation<P>::run(p, query, query_len, s.threads(), count);
    std::vector<std::unique_ptr<PreparedQuery<P>>> owned;
    for (auto& q : all) owned.push_back(std::make_unique<PreparedQuery<P>>(std::move(q)));
    for (std::size_t g = 0; g < count; ++g) {  // nothing below throws: every handle is given
      if (seconds) {
        seconds[2 * g] = owned[g]->seconds[0];
        seconds[2 * g + 1] = owned[g]->seconds[1];
      }
      prepared[g] = owned[g].release();
    }
  }
}

}  // namespace spiralpir::capi

#define SPIRALPIR_DEFINE_BATCH_C_API(PREFIX, PARAMS)                                                          \
  extern "C" {                                                                                              \
  __attribute__((visibility("default"))) uint32_t SPIRALPIR_CAPI_CAT(PREFIX, _query_buckets)(void) {        \
    return ::spiralpir::Derived<PARAMS>::query_buckets;                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _client_query_packed)(              \
      void* client, const uint64_t* records, size_t count, uint8_t** buf, size_t* len) {                    \
    return ::spiralpir::capi::guarded(                                                                      \
        [&] { ::spiralpir::capi::client_query_packed<PARAMS>(client, records, count, buf, len); });         \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _server_prepare_packed)(            \
      void* server, void* pp, const uint8_t* query, size_t query_len, void** prepared, size_t count,        \
      double* seconds) {                                                                                    \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      ::spiralpir::capi::server_prepare_packed<PARAMS>(server, pp, query, query_len, prepared, count,       \
                                                       seconds);                                            \
    });                                                                                                     \
  }                                                                                                         \
  }
