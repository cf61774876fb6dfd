// spiralpir/spiral/capi_batch.hpp — SPIRALPIR_DEFINE_BATCH_C_API(prefix, ParamsType): the C ABI
// of packed queries (batch_query.hpp), beside capi.hpp's (same conventions: 0 on success, else
// 1 or 2 with PREFIX_last_error(); buffers from PREFIX_free's allocator).
//
//   uint32_t PREFIX_query_buckets(void);   G, the buckets one query carries (1: plain queries)
//   int  PREFIX_client_query_packed(void* client, const uint64_t* record_indices, size_t count,
//                                   uint8_t** buf, size_t* len);
//        1 ≤ count ≤ G; record_indices[g] is bucket g's record (fresh randomness from the OS);
//        count < G only for a batch's last query when G does not divide its bucket count.
//   int  PREFIX_server_expand_packed(void* server, void* pp, const uint8_t* query, size_t query_len,
//                                    size_t buckets, void** expansion, double* seconds_or_null);
//        parse and expand once, for the query's first `buckets` slots (1 ≤ buckets ≤ G);
//        seconds_or_null: room for 1 double (parse + expansion).
//   int  PREFIX_server_prepare_bucket(void* server, void* pp, void* expansion, size_t bucket,
//                                     void** prepared, double* seconds2_or_null);
//        bucket g's prepared query from its slice (once per bucket; distinct buckets may be
//        prepared concurrently): answer it against bucket g's database with
//        PREFIX_server_answer_prepared, free it with PREFIX_prepared_free; seconds2: expansion
//        (0: shared, counted by expand) and conversion.
//   void PREFIX_expansion_free(void* expansion);
// Stream variants upload their expanded cts: both functions fail there (G is always 1).
#pragma once

#include <string>

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
void server_expand_packed(void* server, void* pp, const uint8_t* query, size_t query_len, size_t buckets,
                          void** expansion, double* seconds) {
  if constexpr (VariantOf<P>::stream) {
    throw ArgumentError("server_expand_packed: a stream variant has no packed queries");
  } else {
    check_out(expansion, "server_expand_packed");
    if (buckets < 1 || buckets > Derived<P>::query_buckets)
      throw ArgumentError("server_expand_packed: " + std::to_string(buckets) + " buckets, " +
                          "these parameters pack 1 to " + std::to_string(Derived<P>::query_buckets));
    auto& s = deref<Server<P>>(server, "server_expand_packed");
    auto& p = deref<PublicParams<P>>(pp, "server_expand_packed");
    auto* ex = new PackedExpansion<typename VariantOf<P>::Comp>(
        PackedPreparation<P>::expand(p, query, query_len, s.threads(), buckets));
    if (seconds) seconds[0] = ex->seconds;
    *expansion = ex;
  }
}

template <class P>
void server_prepare_bucket(void* server, void* pp, void* expansion, size_t bucket, void** prepared,
                           double* seconds) {
  if constexpr (VariantOf<P>::stream) {
    throw ArgumentError("server_prepare_bucket: a stream variant has no packed queries");
  } else {
    check_out(prepared, "server_prepare_bucket");
    auto& s = deref<Server<P>>(server, "server_prepare_bucket");
    auto& p = deref<PublicParams<P>>(pp, "server_prepare_bucket");
    auto& ex = deref<PackedExpansion<typename VariantOf<P>::Comp>>(expansion, "server_prepare_bucket");
    auto* q = new PreparedQuery<P>(PackedPreparation<P>::bucket(p, ex, bucket, s.threads()));
    if (seconds) {
      seconds[0] = q->seconds[0];
      seconds[1] = q->seconds[1];
    }
    *prepared = q;
  }
}

template <class P>
void expansion_free(void* expansion) {
  if constexpr (!VariantOf<P>::stream) delete static_cast<PackedExpansion<typename VariantOf<P>::Comp>*>(expansion);
}

}  // namespace spiralpir::capi

// The client's part alone (PREFIX_query_buckets, PREFIX_client_query_packed): with
// SPIRALPIR_DEFINE_CLIENT_C_API, what a client-only library exports (build/client_lib.py).
#define SPIRALPIR_DEFINE_BATCH_CLIENT_C_API(PREFIX, PARAMS)                                                   \
  extern "C" {                                                                                              \
  __attribute__((visibility("default"))) uint32_t SPIRALPIR_CAPI_CAT(PREFIX, _query_buckets)(void) {        \
    return ::spiralpir::Derived<PARAMS>::query_buckets;                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _client_query_packed)(              \
      void* client, const uint64_t* records, size_t count, uint8_t** buf, size_t* len) {                    \
    return ::spiralpir::capi::guarded(                                                                      \
        [&] { ::spiralpir::capi::client_query_packed<PARAMS>(client, records, count, buf, len); });         \
  }                                                                                                         \
  }

#define SPIRALPIR_DEFINE_BATCH_C_API(PREFIX, PARAMS)                                                          \
  SPIRALPIR_DEFINE_BATCH_CLIENT_C_API(PREFIX, PARAMS)                                                       \
  extern "C" {                                                                                              \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _server_expand_packed)(             \
      void* server, void* pp, const uint8_t* query, size_t query_len, size_t buckets, void** expansion,     \
      double* seconds) {                                                                                    \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      ::spiralpir::capi::server_expand_packed<PARAMS>(server, pp, query, query_len, buckets, expansion,      \
                                                      seconds);                                             \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _server_prepare_bucket)(            \
      void* server, void* pp, void* expansion, size_t bucket, void** prepared, double* seconds) {           \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      ::spiralpir::capi::server_prepare_bucket<PARAMS>(server, pp, expansion, bucket, prepared, seconds);   \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) void SPIRALPIR_CAPI_CAT(PREFIX, _expansion_free)(void* expansion) { \
    ::spiralpir::capi::expansion_free<PARAMS>(expansion);                                                   \
  }                                                                                                         \
  }
