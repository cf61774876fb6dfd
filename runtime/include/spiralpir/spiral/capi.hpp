// spiralpir/spiral/capi.hpp — SPIRALPIR_DEFINE_C_API(prefix, ParamsType) emits the C ABI of one
// compiled parameter set over the C++ API of service.hpp. Every int-returning function
// returns 0 on success, 2 when the server's own storage failed (IoError: the preprocessed
// database could not be read, written or stopped being intact), else 1 (bad input, out of
// memory, internal error); either way with a thread-local message from PREFIX_last_error().
// Buffers returned through uint8_t** are malloc'd; release them with PREFIX_free.
// SPIRALPIR_DEFINE_CLIENT_C_API(prefix, ParamsType) emits the client's part alone (the functions
// up to PREFIX_client_decode, and PREFIX_variant): what the WebAssembly client exports.
//
//   const char* PREFIX_last_error(void);
//   void        PREFIX_free(void* buffer);
//   const char* PREFIX_params_json(void);
//   const char* PREFIX_stage_names(void);   "expansion,conversion,first_dimension,folding,modswitch"
//   int  PREFIX_client_new(const uint8_t* seed32_or_null, void** client);
//   int  PREFIX_client_save(void* client, uint8_t** buf, size_t* len);
//   int  PREFIX_client_load(const uint8_t* buf, size_t len, void** client);
//   void PREFIX_client_free(void* client);
//   int  PREFIX_client_public_params(void* client, uint8_t** buf, size_t* len);
//   int  PREFIX_client_query(void* client, uint64_t record_index, uint8_t** buf, size_t* len);
//   int  PREFIX_client_decode(void* client, uint64_t record_index, const uint8_t* resp, size_t resp_len,
//                             uint8_t* record_out, size_t record_size);
//   int  PREFIX_server_new(uint32_t threads, void** server);          0 threads = all cores
//   void PREFIX_server_free(void* server);
//   int  PREFIX_server_load_records(void* server, const uint8_t* records, uint64_t num_records,
//                                   uint64_t record_size, spiralpir_progress_fn cb, void* cb_ctx);
//   int  PREFIX_server_save_db(void* server, const char* path);
//   int  PREFIX_server_map_db(void* server, const char* path);
//   int  PREFIX_public_params_load(const uint8_t* buf, size_t len, void** pp);
//   void PREFIX_public_params_free(void* pp);
//   int  PREFIX_server_answer(void* server, void* pp, const uint8_t* query, size_t query_len,
//                             uint8_t** resp, size_t* resp_len, double* stage_seconds_or_null);
//        stage_seconds_or_null: room for 5 doubles, in the order of PREFIX_stage_names().
//   const char* PREFIX_variant(void);   "spiral" | "stream" | "pack" | "stream_pack"
//   Streaming (one prepared query answers any number of databases):
//   int  PREFIX_server_prepare(void* server, void* pp, const uint8_t* query, size_t query_len,
//                              void** prepared, double* seconds2_or_null);   expansion, conversion
//   int  PREFIX_server_answer_prepared(void* server, void* prepared, uint8_t** resp, size_t* resp_len,
//                                      double* seconds4_or_null);  first_dimension, folding, packing, modswitch
//   void PREFIX_prepared_free(void* prepared);
//   Blocked queries (the keyword table, FORMATS.md §11; spiral variant only):
//   int  PREFIX_client_query_blocked(void* client, const uint64_t* rows, uint32_t blocks, uint64_t column,
//                                    uint8_t** buf, size_t* len);
//   int  PREFIX_client_decode_plaintexts(void* client, const uint8_t* resp, size_t resp_len,
//                                        uint8_t** pts, size_t* pts_len);   every instance's plaintext
//   int  PREFIX_server_answer_blocked(void* server, void* pp, const uint8_t* query, size_t query_len,
//                                     uint32_t blocks, uint8_t** resps, size_t* resps_len,
//                                     double* stage_seconds_or_null);   `blocks` responses, concatenated
//   int  PREFIX_blake2b(uint8_t* out, size_t out_len, const uint8_t* data, size_t len, const uint8_t* key,
//                       size_t key_len, const uint8_t* person, size_t person_len);   a keyword's hash
//   (the two client_ ones and blake2b are in the client's part, SPIRALPIR_DEFINE_CLIENT_C_API)
//   Record updates: PREFIX_server_copy_db, PREFIX_server_update_records, PREFIX_db_patch_file
//   (capi_update.hpp). The sharded server: PREFIX_shard_* (capi_shard.hpp).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "spiralpir/core/blake2b.hpp"
#include "spiralpir/spiral/service.hpp"

extern "C" {
typedef void (*spiralpir_progress_fn)(void* ctx, uint64_t done, uint64_t total);
}

namespace spiralpir::capi {

inline std::string& last_error_slot() {
  thread_local std::string msg;
  return msg;
}

template <class F>
int guarded(F&& f) noexcept {
  try {
    f();
    last_error_slot().clear();
    return 0;
  } catch (const IoError& e) {
    last_error_slot() = e.what();
    return 2;
  } catch (const Error& e) {
    last_error_slot() = e.what();
  } catch (const std::bad_alloc&) {
    last_error_slot() = "out of memory";
  } catch (const std::exception& e) {
    last_error_slot() = std::string("internal error: ") + e.what();
  } catch (...) {
    last_error_slot() = "internal error: unknown exception";
  }
  return 1;
}

inline void check_out(const void* p, const char* what) {
  if (p == nullptr) throw ArgumentError(std::string(what) + ": null output pointer");
}

inline void give(const std::vector<std::uint8_t>& v, std::uint8_t** buf, std::size_t* len) {
  check_out(buf, "buffer");
  check_out(len, "length");
  auto* p = static_cast<std::uint8_t*>(std::malloc(v.empty() ? 1 : v.size()));
  if (p == nullptr) throw std::bad_alloc();
  if (!v.empty()) std::memcpy(p, v.data(), v.size());
  *buf = p;
  *len = v.size();
}

/// give() for a secret (the saved client state): the library's own copy is wiped either way
inline void give_secret(std::vector<std::uint8_t> v, std::uint8_t** buf, std::size_t* len) {
  struct Wipe {
    std::vector<std::uint8_t>& v;
    ~Wipe() { secure_wipe(v.data(), v.size()); }
  } wipe{v};
  give(v, buf, len);
}

template <class T>
T& deref(void* h, const char* what) {
  if (h == nullptr) throw ArgumentError(std::string(what) + ": null handle");
  return *static_cast<T*>(h);
}

}  // namespace spiralpir::capi

#include "spiralpir/spiral/capi_shard.hpp"   // the sharded server: part of every instance's ABI
#include "spiralpir/spiral/capi_update.hpp"  // record updates: the rest of every instance's ABI

#define SPIRALPIR_CAPI_CAT_(a, b) a##b
#define SPIRALPIR_CAPI_CAT(a, b) SPIRALPIR_CAPI_CAT_(a, b)

#define SPIRALPIR_DEFINE_CLIENT_C_API(PREFIX, PARAMS)                                                       \
  extern "C" {                                                                                              \
  __attribute__((visibility("default"))) const char* SPIRALPIR_CAPI_CAT(PREFIX, _last_error)(void) {       \
    return ::spiralpir::capi::last_error_slot().c_str();                                                    \
  }                                                                                                         \
  __attribute__((visibility("default"))) void SPIRALPIR_CAPI_CAT(PREFIX, _free)(void* buffer) {           \
    std::free(buffer);                                                                                      \
  }                                                                                                         \
  __attribute__((visibility("default"))) const char* SPIRALPIR_CAPI_CAT(PREFIX, _params_json)(void) {      \
    static const std::string s = ::spiralpir::params_json<PARAMS>();                                       \
    return s.c_str();                                                                                       \
  }                                                                                                         \
  __attribute__((visibility("default"))) const char* SPIRALPIR_CAPI_CAT(PREFIX, _stage_names)(void) {      \
    return ::spiralpir::kStageNames;                                                                        \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _client_new)(                      \
      const uint8_t* seed32_or_null, void** client) {                                                       \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      ::spiralpir::capi::check_out(client, "client_new");                                                   \
      *client = new ::spiralpir::Client<PARAMS>(seed32_or_null);                                            \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _client_save)(void* client,       \
                                                                                       uint8_t** buf,       \
                                                                                       size_t* len) {       \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& c = ::spiralpir::capi::deref<::spiralpir::Client<PARAMS>>(client, "client_save");              \
      ::spiralpir::capi::give_secret(c.save(), buf, len);                                                   \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _client_load)(                     \
      const uint8_t* buf, size_t len, void** client) {                                                      \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      ::spiralpir::capi::check_out(client, "client_load");                                                  \
      *client = new ::spiralpir::Client<PARAMS>(::spiralpir::Client<PARAMS>::load(buf, len));               \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) void SPIRALPIR_CAPI_CAT(PREFIX, _client_free)(void* client) {     \
    delete static_cast<::spiralpir::Client<PARAMS>*>(client);                                               \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _client_public_params)(            \
      void* client, uint8_t** buf, size_t* len) {                                                           \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& c = ::spiralpir::capi::deref<::spiralpir::Client<PARAMS>>(client, "client_public_params");     \
      ::spiralpir::capi::give(c.public_params(), buf, len);                                                 \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _client_query)(                    \
      void* client, uint64_t record_index, uint8_t** buf, size_t* len) {                                    \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& c = ::spiralpir::capi::deref<::spiralpir::Client<PARAMS>>(client, "client_query");             \
      ::spiralpir::capi::give(c.query(record_index), buf, len);                                             \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _client_decode)(                   \
      void* client, uint64_t record_index, const uint8_t* resp, size_t resp_len, uint8_t* record_out,       \
      size_t record_size) {                                                                                 \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& c = ::spiralpir::capi::deref<::spiralpir::Client<PARAMS>>(client, "client_decode");            \
      c.decode(record_index, resp, resp_len, record_out, record_size);                                      \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _client_query_blocked)(            \
      void* client, const uint64_t* rows, uint32_t blocks, uint64_t column, uint8_t** buf, size_t* len) {   \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& c = ::spiralpir::capi::deref<::spiralpir::Client<PARAMS>>(client, "client_query_blocked");     \
      ::spiralpir::capi::give(c.query_blocked(rows, blocks, column), buf, len);                             \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _client_decode_plaintexts)(        \
      void* client, const uint8_t* resp, size_t resp_len, uint8_t** pts, size_t* pts_len) {                \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& c = ::spiralpir::capi::deref<::spiralpir::Client<PARAMS>>(client, "client_decode_plaintexts"); \
      if (resp == nullptr) throw ::spiralpir::ArgumentError("client_decode_plaintexts: null response");     \
      auto v = c.decode_plaintexts(resp, resp_len);                                                         \
      ::spiralpir::capi::give_secret(std::move(v), pts, pts_len);                                           \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _blake2b)(                          \
      uint8_t* out, size_t out_len, const uint8_t* data, size_t len, const uint8_t* key, size_t key_len,    \
      const uint8_t* person, size_t person_len) {                                                           \
    return ::spiralpir::capi::guarded(                                                                      \
        [&] { ::spiralpir::blake2b(out, out_len, data, len, key, key_len, person, person_len); });          \
  }                                                                                                         \
  __attribute__((visibility("default"))) const char* SPIRALPIR_CAPI_CAT(PREFIX, _variant)(void) {          \
    return ::spiralpir::variant_name(PARAMS::variant);                                                      \
  }                                                                                                         \
  }

#define SPIRALPIR_DEFINE_C_API(PREFIX, PARAMS)                                                              \
  SPIRALPIR_DEFINE_CLIENT_C_API(PREFIX, PARAMS)                                                             \
  extern "C" {                                                                                              \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _server_new)(uint32_t threads,     \
                                                                                      void** server) {      \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      ::spiralpir::capi::check_out(server, "server_new");                                                   \
      *server = new ::spiralpir::Server<PARAMS>(threads);                                                   \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) void SPIRALPIR_CAPI_CAT(PREFIX, _server_free)(void* server) {     \
    delete static_cast<::spiralpir::Server<PARAMS>*>(server);                                               \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _server_load_records)(             \
      void* server, const uint8_t* records, uint64_t num_records, uint64_t record_size,                     \
      spiralpir_progress_fn cb, void* cb_ctx) {                                                             \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& s = ::spiralpir::capi::deref<::spiralpir::Server<PARAMS>>(server, "server_load_records");      \
      std::function<void(uint64_t, uint64_t)> progress;                                                     \
      if (cb) progress = [cb, cb_ctx](uint64_t d, uint64_t t) { cb(cb_ctx, d, t); };                        \
      s.load_records(records, num_records, record_size, progress);                                          \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _server_save_db)(void* server,     \
                                                                                          const char* path) {\
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& s = ::spiralpir::capi::deref<::spiralpir::Server<PARAMS>>(server, "server_save_db");           \
      if (path == nullptr) throw ::spiralpir::ArgumentError("server_save_db: null path");                   \
      s.save_db(path);                                                                                      \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _server_map_db)(void* server,      \
                                                                                         const char* path) { \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& s = ::spiralpir::capi::deref<::spiralpir::Server<PARAMS>>(server, "server_map_db");            \
      if (path == nullptr) throw ::spiralpir::ArgumentError("server_map_db: null path");                    \
      s.map_db(path);                                                                                       \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _public_params_load)(              \
      const uint8_t* buf, size_t len, void** pp) {                                                          \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      ::spiralpir::capi::check_out(pp, "public_params_load");                                               \
      *pp = new ::spiralpir::PublicParams<PARAMS>(::spiralpir::PublicParams<PARAMS>::load(buf, len, 0));    \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) void SPIRALPIR_CAPI_CAT(PREFIX, _public_params_free)(void* pp) {  \
    delete static_cast<::spiralpir::PublicParams<PARAMS>*>(pp);                                             \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _server_answer)(                   \
      void* server, void* pp, const uint8_t* query, size_t query_len, uint8_t** resp, size_t* resp_len,     \
      double* stage_seconds_or_null) {                                                                      \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& s = ::spiralpir::capi::deref<::spiralpir::Server<PARAMS>>(server, "server_answer");            \
      auto& p = ::spiralpir::capi::deref<::spiralpir::PublicParams<PARAMS>>(pp, "server_answer");          \
      ::spiralpir::capi::give(s.answer(p, query, query_len, stage_seconds_or_null), resp, resp_len);        \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _server_prepare)(                  \
      void* server, void* pp, const uint8_t* query, size_t query_len, void** prepared, double* seconds2) {  \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      ::spiralpir::capi::check_out(prepared, "server_prepare");                                             \
      auto& s = ::spiralpir::capi::deref<::spiralpir::Server<PARAMS>>(server, "server_prepare");           \
      auto& p = ::spiralpir::capi::deref<::spiralpir::PublicParams<PARAMS>>(pp, "server_prepare");         \
      auto* q = new ::spiralpir::PreparedQuery<PARAMS>(s.prepare(p, query, query_len));                     \
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
      ::spiralpir::capi::give(s.answer_prepared(q, seconds4), resp, resp_len);                              \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _server_answer_blocked)(           \
      void* server, void* pp, const uint8_t* query, size_t query_len, uint32_t blocks, uint8_t** resps,     \
      size_t* resps_len, double* stage_seconds_or_null) {                                                   \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& s = ::spiralpir::capi::deref<::spiralpir::Server<PARAMS>>(server, "server_answer_blocked");    \
      auto& p = ::spiralpir::capi::deref<::spiralpir::PublicParams<PARAMS>>(pp, "server_answer_blocked");  \
      ::spiralpir::capi::give(s.answer_blocked(p, query, query_len, blocks, stage_seconds_or_null), resps,  \
                              resps_len);                                                                   \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) void SPIRALPIR_CAPI_CAT(PREFIX, _prepared_free)(void* prepared) { \
    delete static_cast<::spiralpir::PreparedQuery<PARAMS>*>(prepared);                                      \
  }                                                                                                         \
  }                                                                                                         \
  SPIRALPIR_DEFINE_UPDATE_C_API(PREFIX, PARAMS)                                                            \
  SPIRALPIR_DEFINE_SHARD_C_API(PREFIX, PARAMS)
