// spiralpir/spiral/database.hpp — the preprocessed database: item layout (FORMATS.md §5), the NTT/CRT
// word layout of the first-dimension kernel, and save/map of preprocessed files.
//
// Word layout (FORMATS.md §5.1, preprocessed database format version 3), in u32 units. The CRT
// primes form groups of two (g covers primes 2g and 2g+1; an odd last prime is a group of one),
// and a group of width W = 2 stores both residues of a slot side by side — as one little-endian
// u64, residue of prime 2g in bits 0..31, of prime 2g+1 in bits 32..63 — so the kernel loads
// 8 slots × 2 primes with one full-width load and multiplies the low halves directly. Folding
// indices are interleaved in blocks of JB (= jblock(W), min J): a block is one sequential stream.
//   word(inst, g, zt, j, i, kc, lane, h) at
//     inst·(P·ZT·J·I·n²·8) + G_g·(ZT·J·I·n²·8) + zt·(W·J·I·n²·8)
//     + j0·(W·I·n²·8) + i·(W·JB·n²·8) + (j − j0)·(W·n²·8) + kc·(W·8) + lane·W + h
//   with P = #primes, G_g = Σ_{g' < g} W_g' (primes before group g), ZT = d / 8 (slot tile: slot
//   z = zt·8 + lane), J = 2^nu_2, j0 = JB·⌊j / JB⌋, I = Derived::rows_stored ≤ 2^nu_1 (the rows
//   holding records; the zero rows after them are not stored), kc = k·n + c the entry (row k,
//   column c) of the n×n plaintext, h < W the prime 2g + h.
// The first-dimension kernel walks (inst, g, zt) tasks, each a contiguous W·J·I·n²·8 words,
// and streams each task's blocks exactly once.
//
// An *implicit* database (benchmarks of databases larger than memory) stores only
// phys_instances ≤ instances and phys_j ≤ J (a multiple of JB) and addresses them cyclically:
// logical plaintext (inst, i, j) is physical (inst mod phys_instances, i, j mod phys_j).
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <new>
#include <utility>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "spiralpir/arith/poly.hpp"
#include "spiralpir/core/aligned.hpp"
#include "spiralpir/core/bits.hpp"
#include "spiralpir/core/parallel.hpp"
#include "spiralpir/core/sigbus_guard.hpp"
#include "spiralpir/rlwe/types.hpp"
#include "spiralpir/spiral/format.hpp"
#include "spiralpir/spiral/params.hpp"

namespace spiralpir {

inline constexpr std::size_t kLanes = 8;

/// The store trailer (FORMATS.md §8) the service appends to a saved database ends with its own
/// length (u64) and this magic; map() accepts a file that is the database plus such a trailer and
/// leaves the trailer's contents (the database's ties and checksums) to the service.
inline constexpr char kStoreMagic[8] = {'S', 'P', 'R', 'L', 'S', 'T', 'O', 'R'};
inline constexpr std::size_t kStoreTailBytes = 16;

/// Zero-filled anonymous memory for a built database, backed by transparent huge pages where the
/// kernel allows them (MADV_HUGEPAGE before the first touch): the first dimension streams it
/// once per answer, and 2 MiB pages spare it a TLB walk every 4 KiB.
class DbStorage {
 public:
  DbStorage() = default;
  explicit DbStorage(std::size_t words) : len_(words * 4) {
    if (len_ == 0) return;
    void* m = ::mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    (void)::madvise(m, len_, MADV_HUGEPAGE);  // advisory: without THP the pages are 4 KiB
#endif
    data_ = static_cast<std::uint32_t*>(m);
  }
  DbStorage(const DbStorage&) = delete;
  DbStorage& operator=(const DbStorage&) = delete;
  DbStorage(DbStorage&& o) noexcept : data_(std::exchange(o.data_, nullptr)), len_(std::exchange(o.len_, 0)) {}
  DbStorage& operator=(DbStorage&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      len_ = std::exchange(o.len_, 0);
    }
    return *this;
  }
  ~DbStorage() { release(); }
  std::uint32_t* data() const { return data_; }

 private:
  void release() {
    if (data_ != nullptr) ::munmap(data_, len_);
    data_ = nullptr;
    len_ = 0;
  }
  std::uint32_t* data_ = nullptr;
  std::size_t len_ = 0;
};

template <SpiralParams P>
class Database {
 public:
  using R = typename P::ring;
  using D = Derived<P>;
  static constexpr std::size_t NP = R::num_primes;
  static constexpr std::size_t ZT = D::d / kLanes;
  static constexpr std::size_t J = D::dim_rest;
  static constexpr std::size_t I = D::rows_stored;  // stored first-dimension rows
  static constexpr std::size_t NN = std::size_t{P::n} * P::n;
  static constexpr std::size_t pt_bytes = D::pt_bits / 8;
  /// prime groups (pairs; an odd last prime alone), their widths and first primes
  static constexpr std::size_t NG = (NP + 1) / 2;
  static constexpr std::size_t width(std::size_t g) { return std::min<std::size_t>(2, NP - 2 * g); }
  static constexpr std::size_t group_prime(std::size_t g) { return 2 * g; }
  /// folding indices per interleaved block: a power of two with JB·(n+1)·n·W ≤ 24 accumulator
  /// registers (at least 1), at most J
  static constexpr std::size_t jblock(std::size_t w) {
    const std::size_t acc = std::size_t{P::n + 1} * P::n * w;
    std::size_t jb = 1;
    while (2 * jb * acc <= 24 && 2 * jb <= J) jb *= 2;
    return jb;
  }
  static_assert(D::pt_bits % 8 == 0, "plaintext bits must be a multiple of 8");
  static_assert(D::d % kLanes == 0);

  /// fills `out` (pt_bytes bytes) with the bit stream of plaintext (inst, pt)
  using PlaintextSource = std::function<void(std::uint64_t inst, std::uint64_t pt, std::uint8_t* out)>;

  Database() = default;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  Database(Database&&) = delete;
  Database& operator=(Database&&) = delete;
  ~Database() { unmap(); }

  std::uint64_t num_records() const { return num_records_; }
  std::size_t phys_instances() const { return phys_inst_; }
  std::size_t phys_j() const { return phys_j_; }
  bool implicit() const { return phys_inst_ != D::instances || phys_j_ != J; }
  bool loaded() const { return words_ != nullptr; }
  std::uint64_t words_count() const { return static_cast<std::uint64_t>(phys_inst_) * NP * ZT * phys_j_ * I * NN * kLanes; }
  std::uint64_t bytes() const { return 4 * words_count(); }

  /// pointer to the words of the block of folding indices [j0, j0 + jblock(W)) of task
  /// (inst, g, zt): I·JB·n²·8·W words, i-major; j0 is a multiple of jblock(W), addressed
  /// cyclically in an implicit database.
  const std::uint32_t* block_words(std::size_t inst, std::size_t g, std::size_t zt, std::size_t j0) const {
    return words_ + word_index(inst % phys_inst_, g, zt, j0 % phys_j_, 0, 0, phys_j_);
  }

  /// u32 index of word (inst, g, zt, j, i, kc, lane 0, h 0) in a database of pj folding indices
  static std::uint64_t word_index(std::size_t inst, std::size_t g, std::size_t zt, std::size_t j, std::size_t i,
                                  std::size_t kc, std::size_t pj) {
    const std::uint64_t w = width(g), jb = jblock(w), j0 = j - j % jb;
    const std::uint64_t per_prime = std::uint64_t{ZT} * pj * I * NN * kLanes;
    return std::uint64_t{inst} * NP * per_prime + 2 * g * per_prime + zt * w * pj * I * NN * kLanes +
           (j0 * I + i * jb + (j - j0)) * w * NN * kLanes + kc * w * kLanes;
  }

  /// Builds the database from a plaintext source (the item layout lives in the source).
  void build(const PlaintextSource& src, std::uint64_t num_records, unsigned threads, std::size_t phys_instances = 0,
             std::size_t phys_j = 0, const std::function<void(std::uint64_t, std::uint64_t)>& progress = {}) {
    unmap();
    words_ = nullptr;
    phys_inst_ = phys_instances == 0 ? D::instances : std::min<std::size_t>(phys_instances, D::instances);
    phys_j_ = phys_j == 0 ? J : std::min<std::size_t>(std::max({phys_j, jblock(1), jblock(2)}), J);
    static_assert(J % jblock(1) == 0 && J % jblock(2) == 0 && jblock(2) <= jblock(1));
    num_records_ = num_records;
    owned_ = DbStorage(words_count());
    words_ = owned_.data();
    const std::uint64_t total = std::uint64_t{phys_inst_} * I * phys_j_;
    std::atomic<std::uint64_t> done{0};
    std::mutex progress_mu;
    parallel_for(threads, total, [&](std::size_t task) {
      const std::size_t inst = task / (I * phys_j_);
      const std::size_t rem = task % (I * phys_j_);
      const std::size_t i = rem / phys_j_, j = rem % phys_j_;
      encode_plaintext(owned_.data(), phys_j_, src, inst, i, j);
      if (progress) {
        const std::uint64_t d = done.fetch_add(1) + 1;
        if (d % 64 == 0 || d == total) {
          std::lock_guard<std::mutex> g(progress_mu);
          progress(d, total);
        }
      }
    });
  }

  /// Encodes plaintext (inst, i·J + j) of `src` into the words of a database of pj folding
  /// indices (its NTT/CRT form, at the places word_index gives; no other word is written).
  static void encode_plaintext(std::uint32_t* words, std::size_t pj, const PlaintextSource& src, std::size_t inst,
                               std::size_t i, std::size_t j) {
    std::vector<std::uint8_t> bytes(pt_bytes);
    src(inst, std::uint64_t{i} * J + j, bytes.data());
    const auto polys = plaintext_polys(bytes.data());
    for (std::size_t kc = 0; kc < NN; ++kc) {
      const rlwe::Pn<R> nt = to_ntt(polys[kc]);
      for (std::size_t g = 0; g < NG; ++g)
        for (std::size_t h = 0; h < width(g); ++h) {
          const std::uint64_t* r = nt.residue(group_prime(g) + h);
          for (std::size_t zt = 0; zt < ZT; ++zt) {
            std::uint32_t* dst = words + word_index(inst, g, zt, j, i, kc, pj) + h;
            for (std::size_t l = 0; l < kLanes; ++l) dst[l * width(g)] = static_cast<std::uint32_t>(r[zt * kLanes + l]);
          }
        }
    }
  }

  /// The words of a loaded database (read-only; a saved file holds them after its header).
  const std::uint32_t* words() const { return words_; }

  /// The words of a built (not mapped, not implicit) database, for updating them in place.
  std::uint32_t* owned_words() {
    if (owned_.data() == nullptr || implicit())
      throw ArgumentError("update: the database is mapped from a file or implicit; copy it into memory first");
    return owned_.data();
  }

  /// Makes this database an in-memory copy of `o` (built or mapped; not implicit).
  void copy_from(const Database& o) {
    if (!o.loaded() || o.implicit()) throw ArgumentError("copy_db: the source holds no full database");
    o.check_intact();
    DbStorage copy(o.words_count());
    std::memcpy(copy.data(), o.words_, o.bytes());
    o.check_intact();  // a mapped source that shrank meanwhile gave zeros
    unmap();
    owned_ = std::move(copy);
    words_ = owned_.data();
    path_.clear();
    num_records_ = o.num_records_;
    phys_inst_ = o.phys_inst_;
    phys_j_ = o.phys_j_;
  }

  /// The n² coefficient-domain polynomials of a plaintext bit stream. Each coefficient v in
  /// [0, p) is stored as its centered representative (v − p if v >= p/2): the same value mod p
  /// (Δ·(v − p) ≡ Δ·v + (q mod p) mod q, a difference below p), but with mean ≈ 0, so the
  /// ciphertext errors the first dimension multiplies by the database do not add up coherently
  /// (errors shared by many query cts — e.g. the gadget digits' −1/2 mean times a shared key
  /// error — would otherwise grow with (Σ_i D_i)², as measured on StreamPack) and E[D²] drops from p²/3 to p²/12.
  static std::vector<rlwe::Pc<R>> plaintext_polys(const std::uint8_t* bytes) {
    std::vector<rlwe::Pc<R>> out(NN);
    BitReader rd(bytes, pt_bytes);
    for (std::size_t kc = 0; kc < NN; ++kc) {
      for (std::size_t z = 0; z < D::d; ++z) {
        const std::uint64_t v = rd.get(D::log2_p);
        const bool neg = 2 * v >= P::p;
        for (std::size_t prime = 0; prime < NP; ++prime)
          out[kc](prime, z) = neg ? R::primes[prime] - (P::p - v) : v;
      }
    }
    return out;
  }

  /// Source that lays out records as items (FORMATS.md §5).
  static PlaintextSource records_source(const std::uint8_t* records, std::uint64_t num_records,
                                        std::uint64_t record_size) {
    return [=](std::uint64_t inst, std::uint64_t pt, std::uint8_t* out) {
      std::memset(out, 0, pt_bytes);
      if constexpr (D::instances == 1) {
        for (std::uint64_t s = 0; s < D::items_per_pt; ++s) {
          const std::uint64_t r = pt * D::items_per_pt + s;
          if (r >= num_records) break;
          std::memcpy(out + s * P::db_item_size, records + r * record_size, record_size);
        }
      } else {
        const std::uint64_t r = pt;
        if (r >= num_records) return;
        const std::uint64_t begin = inst * pt_bytes;
        if (begin >= record_size) return;
        const std::uint64_t n = std::min<std::uint64_t>(pt_bytes, record_size - begin);
        std::memcpy(out, records + r * record_size + begin, n);
      }
    };
  }

  /// Writes header + words (FORMATS.md kind 5). Only full (non-implicit) databases.
  void save(const std::string& path) const {
    if (!loaded()) throw ArgumentError("save_db: no database loaded");
    if (implicit()) throw ArgumentError("save_db: an implicit benchmark database cannot be saved");
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
    if (!f) throw IoError("save_db: cannot open " + path + ": " + std::strerror(errno));
    std::uint8_t hdr[kHeaderBytes];
    write_header<P>(hdr, ObjectKind::preprocessed_db, D::preprocessed_db_bytes - kHeaderBytes, num_records_);
    if (std::fwrite(hdr, 1, kHeaderBytes, f.get()) != kHeaderBytes ||
        std::fwrite(words_, 4, words_count(), f.get()) != words_count())
      throw IoError("save_db: write failed for " + path);
    if (std::fflush(f.get()) != 0) throw IoError("save_db: write failed for " + path);
  }

  /// Maps a file written by save(), optionally followed by a store trailer; checks header, hash
  /// and exact length before mapping, every residue after. A SIGBUS from the file shrinking while
  /// mapped is contained (SigbusGuard): check_intact() then refuses every further answer.
  void map(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IoError("map_db: cannot open " + path + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      ::close(fd);
      throw IoError("map_db: cannot stat " + path);
    }
    const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
    std::uint8_t hdr[kHeaderBytes] = {};
    const ssize_t got = size >= kHeaderBytes ? ::pread(fd, hdr, kHeaderBytes, 0) : 0;
    Header h{};
    try {
      if (got != static_cast<ssize_t>(kHeaderBytes))
        throw FormatError("preprocessed database: truncated (" + std::to_string(size) + " bytes)");
      const std::uint64_t object = object_bytes(fd, size);
      // check_header reads only the 32 header bytes and compares the payload length with the object size
      h = check_header<P>(hdr, static_cast<std::size_t>(object), ObjectKind::preprocessed_db,
                          D::preprocessed_db_bytes - kHeaderBytes);
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (h.aux == 0 || h.aux > Derived<typename WireOf<P>::type>::num_items) {
      ::close(fd);
      throw FormatError("preprocessed database: record count " + std::to_string(h.aux) + " out of range");
    }
    const std::size_t len = D::preprocessed_db_bytes;
    void* m = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (m == MAP_FAILED) throw IoError("map_db: mmap failed for " + path + ": " + std::strerror(errno));
    unmap();
    owned_ = DbStorage();
    map_base_ = m;
    map_len_ = len;
    guard_.guard(m, len);
    path_ = path;
    phys_inst_ = D::instances;
    phys_j_ = J;
    num_records_ = h.aux;
    words_ = reinterpret_cast<const std::uint32_t*>(static_cast<const std::uint8_t*>(m) + kHeaderBytes);
    // every residue must be below its prime (the kernel's lazy bound relies on it); a group of
    // width W holds W·(ZT·J·I·n²·8) words, word x of it a residue of prime 2g + x mod W
    const std::uint64_t per_prime = std::uint64_t{ZT} * J * I * NN * kLanes;
    for (std::size_t inst = 0; inst < D::instances; ++inst)
      for (std::size_t g = 0; g < NG; ++g) {
        const std::uint32_t* w = words_ + word_index(inst, g, 0, 0, 0, 0, J);
        const std::size_t wd = width(g);
        const std::uint32_t p0 = static_cast<std::uint32_t>(R::primes[group_prime(g)]);
        const std::uint32_t p1 = static_cast<std::uint32_t>(R::primes[group_prime(g) + wd - 1]);
        bool bad = false;
        for (std::uint64_t x = 0; x < wd * per_prime; x += wd) bad |= (w[x] >= p0) | (w[x + wd - 1] >= p1);
        if (bad) {
          unmap();
          throw FormatError("preprocessed database: residue out of range in " + path);
        }
      }
    try {
      check_intact();
    } catch (...) {
      unmap();
      throw;
    }
  }

  /// Throws if the mapped file shrank since map() (its lost pages read as zeros): call after
  /// every use of the words, so no result computed from them is served.
  void check_intact() const {
    if (guard_.faults() != 0)
      throw IoError("preprocessed database " + path_ +
                    " shrank while mapped (truncated from outside?); refusing to answer from it: restart to "
                    "rebuild it");
  }

 private:
  /// Bytes of the database object in a file of `size` bytes: all but a store trailer if one
  /// accounts exactly for the bytes past the object, else all (check_header then names the length).
  static std::uint64_t object_bytes(int fd, std::uint64_t size) {
    const std::uint64_t want = D::preprocessed_db_bytes;
    if (size < want + kStoreTailBytes) return size;
    std::uint8_t tail[kStoreTailBytes] = {};
    const bool trailer = ::pread(fd, tail, kStoreTailBytes, static_cast<off_t>(size - kStoreTailBytes)) ==
                             static_cast<ssize_t>(kStoreTailBytes) &&
                         std::memcmp(tail + 8, kStoreMagic, 8) == 0 && detail::get_le(tail, 8) == size - want;
    return trailer ? want : size;
  }

  void unmap() {
    guard_.release();
    if (map_base_ != nullptr) {
      ::munmap(map_base_, map_len_);
      words_ = nullptr;
    }
    map_base_ = nullptr;
    map_len_ = 0;
  }

  DbStorage owned_;
  SigbusGuard guard_;
  std::string path_;
  const std::uint32_t* words_ = nullptr;
  void* map_base_ = nullptr;
  std::size_t map_len_ = 0;
  std::uint64_t num_records_ = 0;
  std::size_t phys_inst_ = D::instances;
  std::size_t phys_j_ = J;
};

}  // namespace spiralpir
