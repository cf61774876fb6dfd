// spiralpir/spiral/capi_update.hpp — the C ABI of record updates (db_update.hpp), part of every
// instance's ABI: SPIRALPIR_DEFINE_C_API (capi.hpp, which includes this file after its helpers)
// ends with SPIRALPIR_DEFINE_UPDATE_C_API(PREFIX, PARAMS). Return codes as in capi.hpp.
//
//   int PREFIX_server_copy_db(void* dst, void* src);   dst holds an in-memory copy of src's database
//   int PREFIX_server_update_records(void* server, const uint8_t* records, uint64_t num_records,
//                                    uint64_t record_size, const uint64_t* pts, uint64_t count,
//                                    uint32_t threads);
//       re-encodes plaintexts pts of an in-memory database from all its (current) records
//   int PREFIX_db_patch_file(const char* path, const uint8_t* records, uint64_t num_records,
//                            uint64_t record_size, const uint64_t* pts, uint64_t count, uint32_t threads,
//                            uint64_t chunk_bytes, uint8_t* touched, uint64_t touched_len);
//       the same into a preprocessed file; touched[k] = 1 for each chunk_bytes chunk written
//   int PREFIX_db_touched_chunks(const uint64_t* pts, uint64_t count, uint64_t chunk_bytes,
//                                uint8_t* touched, uint64_t touched_len);   the chunks alone
//   int PREFIX_server_db_words(void* server, const uint8_t** words, uint64_t* len);
//       the database's words as a saved file holds them after its 32-byte header (valid until
//       the database is replaced or updated)
// Updates are not synchronised with answers on the same server: the caller keeps them apart.
#pragma once

#include "spiralpir/spiral/db_update.hpp"

#define SPIRALPIR_DEFINE_UPDATE_C_API(PREFIX, PARAMS)                                                       \
  extern "C" {                                                                                              \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _server_copy_db)(void* dst,        \
                                                                                          void* src) {      \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& d = ::spiralpir::capi::deref<::spiralpir::Server<PARAMS>>(dst, "server_copy_db");              \
      auto& s = ::spiralpir::capi::deref<::spiralpir::Server<PARAMS>>(src, "server_copy_db");              \
      if (&d == &s) throw ::spiralpir::ArgumentError("server_copy_db: source and destination are one");     \
      d.database().copy_from(s.database());                                                                 \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _server_update_records)(           \
      void* server, const uint8_t* records, uint64_t num_records, uint64_t record_size, const uint64_t* pts, \
      uint64_t count, uint32_t threads) {                                                                   \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& s = ::spiralpir::capi::deref<::spiralpir::Server<PARAMS>>(server, "server_update_records");    \
      ::spiralpir::DbUpdate<PARAMS>::update(s, records, num_records, record_size, pts, count, threads);     \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _db_patch_file)(                   \
      const char* path, const uint8_t* records, uint64_t num_records, uint64_t record_size,                 \
      const uint64_t* pts, uint64_t count, uint32_t threads, uint64_t chunk_bytes, uint8_t* touched,        \
      uint64_t touched_len) {                                                                               \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      if (path == nullptr) throw ::spiralpir::ArgumentError("db_patch_file: null path");                    \
      ::spiralpir::DbUpdate<PARAMS>::patch_file(path, records, num_records, record_size, pts, count,        \
                                                threads, chunk_bytes, touched, touched_len);                \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _db_touched_chunks)(               \
      const uint64_t* pts, uint64_t count, uint64_t chunk_bytes, uint8_t* touched, uint64_t touched_len) {   \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      ::spiralpir::DbUpdate<PARAMS>::touched_chunks(pts, count, chunk_bytes, touched, touched_len);         \
    });                                                                                                     \
  }                                                                                                         \
  __attribute__((visibility("default"))) int SPIRALPIR_CAPI_CAT(PREFIX, _server_db_words)(                 \
      void* server, const uint8_t** words, uint64_t* len) {                                                 \
    return ::spiralpir::capi::guarded([&] {                                                                 \
      auto& s = ::spiralpir::capi::deref<::spiralpir::Server<PARAMS>>(server, "server_db_words");          \
      ::spiralpir::capi::check_out(words, "server_db_words");                                               \
      ::spiralpir::capi::check_out(len, "server_db_words");                                                 \
      *words = ::spiralpir::DbUpdate<PARAMS>::words(s, *len);                                               \
    });                                                                                                     \
  }                                                                                                         \
  }
