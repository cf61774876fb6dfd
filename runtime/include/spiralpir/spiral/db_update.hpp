// spiralpir/spiral/db_update.hpp — changing records of a preprocessed database without rebuilding
// it: only the plaintexts holding changed records are encoded again (their NTT/CRT words).
//
//   DbUpdate<P>::update(server, records, num_records, record_size, pts, count, threads)
//       re-encodes plaintexts `pts` of the server's in-memory database from the full records
//   DbUpdate<P>::patch_file(path, records, …, pts, count, threads, chunk_bytes, touched, touched_len)
//       the same into a preprocessed file (mapped shared and writable; not flushed: fsync the file
//       for that); marks in `touched` every chunk of `chunk_bytes` file bytes holding a written word
//   DbUpdate<P>::touched_chunks(pts, count, chunk_bytes, touched, len)   those chunks alone
//   DbUpdate<P>::words(server, len)   the server's database words, as a saved file holds them
//
// A plaintext index is P's (record r lives in plaintext r / items_per_pt; every instance of it,
// and for the pack variants every one of its n² sub-database entries, is re-encoded). Callers
// serialise updates and keep readers off the words they change (the service double-buffers).
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "spiralpir/spiral/server.hpp"

namespace spiralpir {

template <SpiralParams P>
struct DbUpdate {
  using V = VariantOf<P>;
  using DB = Database<typename V::Comp>;
  using D = Derived<P>;

  /// Re-encodes plaintexts `pts` of the server's in-memory database from `records` (all of them,
  /// the database's current contents).
  static void update(Server<P>& server, const std::uint8_t* records, std::uint64_t num_records,
                     std::uint64_t record_size, const std::uint64_t* pts, std::uint64_t count, unsigned threads) {
    DB& db = server.database();
    if (!db.loaded()) throw ArgumentError("update: no database loaded");
    if (num_records != db.num_records())
      throw ArgumentError("update: " + std::to_string(num_records) + " records given, the database holds " +
                          std::to_string(db.num_records()));
    encode(db.owned_words(), source(records, num_records, record_size, pts, count), pts, count, threads);
  }

  /// Re-encodes plaintexts `pts` into the preprocessed file at `path` (written by save_db, with or
  /// without a store trailer); `touched[k] = 1` for each chunk k it wrote to.
  static void patch_file(const std::string& path, const std::uint8_t* records, std::uint64_t num_records,
                         std::uint64_t record_size, const std::uint64_t* pts, std::uint64_t count, unsigned threads,
                         std::uint64_t chunk_bytes, std::uint8_t* touched, std::uint64_t touched_len) {
    const auto src = source(records, num_records, record_size, pts, count);
    const std::uint64_t len = D::preprocessed_db_bytes;
    if (chunk_bytes == 0 || touched == nullptr || touched_len != (len + chunk_bytes - 1) / chunk_bytes)
      throw ArgumentError("patch_file: the chunk map must have one byte per chunk of the database");
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) throw IoError("patch_file: cannot open " + path + ": " + std::strerror(errno));
    struct stat st {};
    std::uint8_t hdr[kHeaderBytes] = {};
    if (::fstat(fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) < len ||
        ::pread(fd, hdr, kHeaderBytes, 0) != static_cast<ssize_t>(kHeaderBytes)) {
      ::close(fd);
      throw IoError("patch_file: " + path + " is not a whole preprocessed database");
    }
    Header h{};
    try {
      h = check_header<P>(hdr, static_cast<std::size_t>(len), ObjectKind::preprocessed_db, len - kHeaderBytes);
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (h.aux != num_records) {
      ::close(fd);
      throw ArgumentError("patch_file: " + path + " holds " + std::to_string(h.aux) + " records, not " +
                          std::to_string(num_records));
    }
    void* m = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (m == MAP_FAILED) throw IoError("patch_file: mmap failed for " + path + ": " + std::strerror(errno));
    auto* words = reinterpret_cast<std::uint32_t*>(static_cast<std::uint8_t*>(m) + kHeaderBytes);
    try {
      encode(words, src, pts, count, threads);
    } catch (...) {
      ::munmap(m, len);
      throw;
    }
    ::munmap(m, len);  // the page cache holds the words: fsync the file to make them durable
    mark_chunks(pts, count, chunk_bytes, touched);
  }

  /// `touched[k] = 1` for each chunk of `chunk_bytes` bytes of a saved database (header
  /// included) that holds a word of plaintexts `pts`.
  static void touched_chunks(const std::uint64_t* pts, std::uint64_t count, std::uint64_t chunk_bytes,
                             std::uint8_t* touched, std::uint64_t touched_len) {
    if (chunk_bytes == 0 || touched == nullptr ||
        touched_len != (D::preprocessed_db_bytes + chunk_bytes - 1) / chunk_bytes)
      throw ArgumentError("touched_chunks: the chunk map must have one byte per chunk of the database");
    if (pts == nullptr && count != 0) throw ArgumentError("touched_chunks: null buffer");
    for (std::uint64_t k = 0; k < count; ++k)
      if (pts[k] >= D::num_pts) throw ArgumentError("touched_chunks: plaintext out of range");
    mark_chunks(pts, count, chunk_bytes, touched);
  }

  /// The words of the server's database as a saved file holds them after its header.
  static const std::uint8_t* words(const Server<P>& server, std::uint64_t& len) {
    const DB& db = server.database();
    if (!db.loaded() || db.implicit()) throw ArgumentError("db_words: no full database loaded");
    len = db.bytes();
    return reinterpret_cast<const std::uint8_t*>(db.words());
  }

 private:
  static typename DB::PlaintextSource source(const std::uint8_t* records, std::uint64_t num_records,
                                             std::uint64_t record_size, const std::uint64_t* pts,
                                             std::uint64_t count) {
    if (records == nullptr || (pts == nullptr && count != 0)) throw ArgumentError("update: null buffer");
    if (num_records == 0 || num_records > D::num_items)
      throw ArgumentError("update: record count " + std::to_string(num_records) + " not in [1, " +
                          std::to_string(D::num_items) + "]");
    if (record_size == 0 || record_size > P::db_item_size)
      throw ArgumentError("update: record size " + std::to_string(record_size) + " not in [1, " +
                          std::to_string(P::db_item_size) + "]");
    for (std::uint64_t k = 0; k < count; ++k)
      if (pts[k] >= D::num_pts)
        throw ArgumentError("update: plaintext " + std::to_string(pts[k]) + " out of range [0, " +
                            std::to_string(D::num_pts) + ")");
    return V::comp_source(Database<P>::records_source(records, num_records, record_size));
  }

  static void encode(std::uint32_t* words, const typename DB::PlaintextSource& src, const std::uint64_t* pts,
                     std::uint64_t count, unsigned threads) {
    constexpr std::uint64_t inst = Derived<typename V::Comp>::instances;
    parallel_for(resolve_threads(threads), count * inst, [&](std::size_t task) {
      const std::uint64_t pt = pts[task / inst];
      DB::encode_plaintext(words, DB::J, src, task % inst, pt / DB::J, pt % DB::J);
    });
  }

  /// The file bytes of plaintext pt: for each (instance, prime group, slot tile) one run of
  /// n²·8·W words at the header's offset plus word_index.
  static void mark_chunks(const std::uint64_t* pts, std::uint64_t count, std::uint64_t chunk_bytes,
                          std::uint8_t* touched) {
    constexpr std::uint64_t inst = Derived<typename V::Comp>::instances;
    for (std::uint64_t k = 0; k < count; ++k) {
      const std::uint64_t i = pts[k] / DB::J, j = pts[k] % DB::J;
      for (std::uint64_t m = 0; m < inst; ++m)
        for (std::size_t g = 0; g < DB::NG; ++g)
          for (std::size_t zt = 0; zt < DB::ZT; ++zt) {
            const std::uint64_t off = kHeaderBytes + 4 * DB::word_index(m, g, zt, j, i, 0, DB::J);
            const std::uint64_t run = 4 * DB::NN * kLanes * DB::width(g);
            for (std::uint64_t c = off / chunk_bytes; c <= (off + run - 1) / chunk_bytes; ++c) touched[c] = 1;
          }
    }
  }
};

}  // namespace spiralpir
