// spiralpir/spiral/capi_shard.hpp — the C ABI of the sharded server (shard.hpp), part of every
// instance's ABI: SPIRALPIR_DEFINE_C_API (capi.hpp) ends with SPIRALPIR_DEFINE_SHARD_C_API.
// Return codes as in capi.hpp.
//
//   uint32_t PREFIX_shard_max_bits(void);     the largest S this build splits into 2^S shards
//   int  PREFIX_shard_new(uint32_t bits, uint32_t index, uint32_t threads, void** shard);
//   void PREFIX_shard_free(void* shard);
//   int  PREFIX_shard_load_records(void* shard, const uint8_t* records, uint64_t num_records,
//                                  uint64_t record_size, spiralpir_progress_fn cb, void* cb_ctx);
//        builds the shard's columns of the database of these records
//   int  PREFIX_shard_save_db(void* shard, const char* path);
//   int  PREFIX_shard_map_db(void* shard, const char* path);
//   int  PREFIX_shard_hold_in_memory(void* shard);   the mapped database copied into memory
//   int  PREFIX_shard_stored_plaintexts(void* shard, uint64_t* count);
//   int  PREFIX_shard_layout(void* shard, uint8_t* params_hash8, uint64_t* object_bytes);
//        the params hash a shard's file is labelled with and the size of its database object
//   int  PREFIX_shard_answer(void* shard, void* pp, const uint8_t* query, size_t query_len,
//                            uint32_t with_gsw, uint8_t** part, size_t* part_len, double* seconds4_or_null);
//        the partial answer (expansion, conversion, first_dimension, folding seconds)
//   int  PREFIX_shard_combine(void* pp, const uint8_t* const* parts, const size_t* part_lens,
//                             uint32_t count, uint32_t threads, uint8_t** resp, size_t* resp_len);
//        the response from every shard's partial answer (one of them with_gsw)
//   The coordinator expanding the query once instead of every shard:
//   int  PREFIX_shard_prepare(void* pp, const uint8_t* query, size_t query_len, uint32_t threads,
//                             uint8_t** shard_query, size_t* len);
//   int  PREFIX_shard_answer_expanded(void* shard, const uint8_t* shard_query, size_t len,
//                                     uint8_t** part, size_t* part_len, double* seconds2_or_null);
//   int  PREFIX_shard_combine_expanded(void* pp, const uint8_t* shard_query, size_t len,
//                                      const uint8_t* const* parts, const size_t* part_lens,
//                                      uint32_t count, uint32_t threads, uint8_t** resp, size_t* resp_len);
//   The preparation split between the shards (shard_split.hpp):
//   int  PREFIX_shard_share_bytes(void* shard, size_t* len);
//   int  PREFIX_shard_prepare_share(void* shard, void* pp, const uint8_t* query, size_t query_len,
//                                   uint8_t* out, size_t out_len, double* seconds2_or_null);
//        writes this shard's share at out (4-byte aligned, shard_share_bytes long)
//   int  PREFIX_shard_answer_shares(void* shard, const uint8_t* const* shares, const size_t* lens,
//                                   uint32_t count, uint32_t with_gsw, uint8_t** part, size_t* part_len,
//                                   double* seconds3_or_null);
//        the partial answer from every shard's share (assembly, first_dimension, folding seconds)
#pragma once

#include "spiralpir/spiral/shard.hpp"

#define SPIRALPIR_DEFINE_SHARD_C_API(PREFIX, PARAMS)                                                        \
  extern "C" {                                                                                              \
  __attribute__((visibility("default"))) uint32_t SPIRALPIR_CAPI_CAT(PREFIX, _shard_max_bits)(void) {      \
    return ::spiralpir::max_shard_bits<typename ::spiralpir::VariantOf<PARAMS>::Comp>();                   \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _shard_new)(                       \
      uint32_t bits, uint32_t index, uint32_t threads, void** shard) {                                      \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      ::spiralpir::capi::check_out(shard, "shard_new");                                                     \
      *shard = ::spiralpir::make_shard_server<PARAMS>(bits, index, threads).release();                      \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) void SPIRALPIR_CAPI_CAT(PREFIX, _shard_free)(void* shard) {       \
    delete static_cast<::spiralpir::ShardServerBase<PARAMS>*>(shard);                                       \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _shard_load_records)(              \
      void* shard, const uint8_t* records, uint64_t num_records, uint64_t record_size,                      \
      spiralpir_progress_fn cb, void* cb_ctx) {                                                             \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& s = ::spiralpir::capi::deref<::spiralpir::ShardServerBase<PARAMS>>(shard, "shard_load_records");\
      std::function<void(uint64_t, uint64_t)> progress;                                                     \
      if (cb) progress = [cb, cb_ctx](uint64_t d, uint64_t t) { cb(cb_ctx, d, t); };                        \
      s.load_records(records, num_records, record_size, progress);                                          \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _shard_save_db)(void* shard,       \
                                                                                         const char* path) { \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& s = ::spiralpir::capi::deref<::spiralpir::ShardServerBase<PARAMS>>(shard, "shard_save_db");     \
      if (path == nullptr) throw ::spiralpir::ArgumentError("shard_save_db: null path");                    \
      s.save_db(path);                                                                                      \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _shard_map_db)(void* shard,        \
                                                                                        const char* path) {  \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& s = ::spiralpir::capi::deref<::spiralpir::ShardServerBase<PARAMS>>(shard, "shard_map_db");      \
      if (path == nullptr) throw ::spiralpir::ArgumentError("shard_map_db: null path");                     \
      s.map_db(path);                                                                                       \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _shard_hold_in_memory)(void* shard) { \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      ::spiralpir::capi::deref<::spiralpir::ShardServerBase<PARAMS>>(shard, "shard_hold_in_memory")         \
          .hold_in_memory();                                                                                \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _shard_stored_plaintexts)(         \
      void* shard, uint64_t* count) {                                                                       \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      ::spiralpir::capi::check_out(count, "shard_stored_plaintexts");                                       \
      *count = ::spiralpir::capi::deref<::spiralpir::ShardServerBase<PARAMS>>(shard, "shard_stored_plaintexts") \
                   .stored_plaintexts();                                                                    \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _shard_layout)(                    \
      void* shard, uint8_t* params_hash8, uint64_t* object_bytes) {                                         \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      ::spiralpir::capi::check_out(params_hash8, "shard_layout");                                           \
      ::spiralpir::capi::check_out(object_bytes, "shard_layout");                                           \
      auto& s = ::spiralpir::capi::deref<::spiralpir::ShardServerBase<PARAMS>>(shard, "shard_layout");      \
      const auto h = s.params_hash();                                                                       \
      std::memcpy(params_hash8, h.data(), h.size());                                                        \
      *object_bytes = s.object_bytes();                                                                     \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _shard_answer)(                    \
      void* shard, void* pp, const uint8_t* query, size_t query_len, uint32_t with_gsw, uint8_t** part,     \
      size_t* part_len, double* seconds4) {                                                                 \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& s = ::spiralpir::capi::deref<::spiralpir::ShardServerBase<PARAMS>>(shard, "shard_answer");      \
      auto& p = ::spiralpir::capi::deref<::spiralpir::PublicParams<PARAMS>>(pp, "shard_answer");           \
      ::spiralpir::capi::give(s.answer(p, query, query_len, with_gsw != 0, seconds4), part, part_len);      \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _shard_combine_expanded)(          \
      void* pp, const uint8_t* shard_query, size_t query_len, const uint8_t* const* parts,                  \
      const size_t* part_lens, uint32_t count, uint32_t threads, uint8_t** resp, size_t* resp_len) {        \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& p = ::spiralpir::capi::deref<::spiralpir::PublicParams<PARAMS>>(pp, "shard_combine");          \
      if (count != 0 && (parts == nullptr || part_lens == nullptr))                                         \
        throw ::spiralpir::ArgumentError("shard_combine: null parts");                                      \
      std::vector<const uint8_t*> ps(parts, parts + count);                                                 \
      std::vector<size_t> ls(part_lens, part_lens + count);                                                 \
      ::spiralpir::capi::give(                                                                              \
          ::spiralpir::shard_combine<PARAMS>(p, ps, ls, threads, shard_query, query_len), resp, resp_len);  \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _shard_combine)(                   \
      void* pp, const uint8_t* const* parts, const size_t* part_lens, uint32_t count, uint32_t threads,     \
      uint8_t** resp, size_t* resp_len) {                                                                   \
    return SPIRALPIR_CAPI_CAT(PREFIX, _shard_combine_expanded)(pp, nullptr, 0, parts, part_lens, count,     \
                                                               threads, resp, resp_len);                    \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _shard_prepare)(                   \
      void* pp, const uint8_t* query, size_t query_len, uint32_t threads, uint8_t** out, size_t* out_len) { \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& p = ::spiralpir::capi::deref<::spiralpir::PublicParams<PARAMS>>(pp, "shard_prepare");          \
      ::spiralpir::capi::give(::spiralpir::shard_prepare<PARAMS>(p, query, query_len, threads), out, out_len);\
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _shard_share_bytes)(void* shard,   \
                                                                                             size_t* len) {  \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      ::spiralpir::capi::check_out(len, "shard_share_bytes");                                               \
      *len = ::spiralpir::capi::deref<::spiralpir::ShardServerBase<PARAMS>>(shard, "shard_share_bytes")     \
                 .share_bytes();                                                                            \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _shard_prepare_share)(             \
      void* shard, void* pp, const uint8_t* query, size_t query_len, uint8_t* out, size_t out_len,          \
      double* seconds2) {                                                                                   \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& s = ::spiralpir::capi::deref<::spiralpir::ShardServerBase<PARAMS>>(shard, "shard_prepare_share");\
      auto& p = ::spiralpir::capi::deref<::spiralpir::PublicParams<PARAMS>>(pp, "shard_prepare_share");    \
      s.prepare_share(p, query, query_len, out, out_len, seconds2);                                         \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _shard_answer_shares)(             \
      void* shard, const uint8_t* const* shares, const size_t* lens, uint32_t count, uint32_t with_gsw,     \
      uint8_t** part, size_t* part_len, double* seconds3) {                                                 \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& s = ::spiralpir::capi::deref<::spiralpir::ShardServerBase<PARAMS>>(shard, "shard_answer_shares");\
      ::spiralpir::capi::give(s.answer_shares(shares, lens, count, with_gsw != 0, seconds3), part, part_len);\
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _shard_answer_expanded)(           \
      void* shard, const uint8_t* shard_query, size_t len, uint8_t** part, size_t* part_len,                \
      double* seconds2) {                                                                                   \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& s = ::spiralpir::capi::deref<::spiralpir::ShardServerBase<PARAMS>>(shard, "shard_answer");      \
      ::spiralpir::capi::give(s.answer_expanded(shard_query, len, seconds2), part, part_len);               \
    });                                                                                                     \
  }                                                                                                         \
  }
