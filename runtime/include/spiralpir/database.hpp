// spiralpir/database.hpp — the preprocessed database: item layout (FORMATS.md §5), the NTT/CRT
// word layout of the first-dimension kernel, and save/map of preprocessed files.
//
// Word layout (u32 residues, kLanes NTT slots interleaved):
//   word(inst, prime, zt, j, i, kc, lane) at
//   ((((((inst·P + prime)·ZT + zt)·J + j)·I + i)·n² + kc)·kLanes + lane)
//   with P = #primes, ZT = d / kLanes (slot tile: slot z = zt·kLanes + lane), J = 2^nu_2,
//   I = 2^nu_1, kc = k·n + c the entry (row k, column c) of the n×n plaintext.
// The first-dimension kernel walks (inst, prime, zt) tasks and streams each task's J·I·n²·kLanes
// words exactly once.
//
// An *implicit* database (benchmarks of databases larger than memory) stores only
// phys_instances ≤ instances and phys_j ≤ J and addresses them cyclically: logical plaintext
// (inst, i, j) is physical (inst mod phys_instances, i, j mod phys_j).
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "spiralpir/protocol_common.hpp"

namespace spiralpir {

inline constexpr std::size_t kLanes = 8;

template <SpiralParams P>
class Database {
 public:
  using R = typename P::ring;
  using D = Derived<P>;
  static constexpr std::size_t NP = R::num_primes;
  static constexpr std::size_t ZT = D::d / kLanes;
  static constexpr std::size_t J = D::dim_rest;
  static constexpr std::size_t I = D::dim0;
  static constexpr std::size_t NN = std::size_t{P::n} * P::n;
  static constexpr std::size_t pt_bytes = D::pt_bits / 8;
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

  /// pointer to the words of task (inst, prime, zt): J·I·n²·kLanes words, j-major; `j` is
  /// addressed cyclically in an implicit database.
  const std::uint32_t* task_words(std::size_t inst, std::size_t prime, std::size_t zt, std::size_t j) const {
    const std::size_t pi = inst % phys_inst_;
    const std::size_t pj = j % phys_j_;
    return words_ + ((((pi * NP + prime) * ZT + zt) * phys_j_ + pj) * I) * NN * kLanes;
  }

  /// Builds the database from a plaintext source (the item layout lives in the source).
  void build(const PlaintextSource& src, std::uint64_t num_records, unsigned threads, std::size_t phys_instances = 0,
             std::size_t phys_j = 0, const std::function<void(std::uint64_t, std::uint64_t)>& progress = {}) {
    unmap();
    words_ = nullptr;
    phys_inst_ = phys_instances == 0 ? D::instances : std::min<std::size_t>(phys_instances, D::instances);
    phys_j_ = phys_j == 0 ? J : std::min<std::size_t>(phys_j, J);
    num_records_ = num_records;
    owned_ = AlignedBuffer<std::uint32_t>(words_count());
    words_ = owned_.data();
    const std::uint64_t total = std::uint64_t{phys_inst_} * I * phys_j_;
    std::atomic<std::uint64_t> done{0};
    std::mutex progress_mu;
    parallel_for(threads, total, [&](std::size_t task) {
      const std::size_t inst = task / (I * phys_j_);
      const std::size_t rem = task % (I * phys_j_);
      const std::size_t i = rem / phys_j_, j = rem % phys_j_;
      std::vector<std::uint8_t> bytes(pt_bytes);
      src(inst, std::uint64_t{i} * J + j, bytes.data());
      const auto polys = plaintext_polys(bytes.data());
      for (std::size_t kc = 0; kc < NN; ++kc) {
        const proto::Pn<R> nt = to_ntt(polys[kc]);
        for (std::size_t prime = 0; prime < NP; ++prime) {
          const std::uint64_t* r = nt.residue(prime);
          for (std::size_t zt = 0; zt < ZT; ++zt) {
            std::uint32_t* dst = owned_.data() +
                                 (((((inst * NP + prime) * ZT + zt) * phys_j_ + j) * I + i) * NN + kc) * kLanes;
            for (std::size_t l = 0; l < kLanes; ++l) dst[l] = static_cast<std::uint32_t>(r[zt * kLanes + l]);
          }
        }
      }
      if (progress) {
        const std::uint64_t d = done.fetch_add(1) + 1;
        if (d % 64 == 0 || d == total) {
          std::lock_guard<std::mutex> g(progress_mu);
          progress(d, total);
        }
      }
    });
  }

  /// The n² coefficient-domain polynomials of a plaintext bit stream. Each coefficient v in
  /// [0, p) is stored as its centered representative (v − p if v >= p/2): the same value mod p
  /// (Δ·(v − p) ≡ Δ·v + (q mod p) mod q, a difference below p), but with mean ≈ 0, so the
  /// ciphertext errors the first dimension multiplies by the database do not add up coherently
  /// (errors shared by many query cts — e.g. the gadget digits' −1/2 mean times a shared key
  /// error — would otherwise grow with (Σ_i D_i)², issue 8) and E[D²] drops from p²/3 to p²/12.
  static std::vector<proto::Pc<R>> plaintext_polys(const std::uint8_t* bytes) {
    std::vector<proto::Pc<R>> out(NN);
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

  /// Maps a file written by save(); checks header, hash and exact length before mapping.
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
      // check_header reads only the 32 header bytes and compares the payload length with the file size
      h = check_header<P>(hdr, static_cast<std::size_t>(size), ObjectKind::preprocessed_db,
                          D::preprocessed_db_bytes - kHeaderBytes);
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (h.payload_len != D::preprocessed_db_bytes - kHeaderBytes || size != D::preprocessed_db_bytes) {
      ::close(fd);
      throw FormatError("preprocessed database: " + path + " has " + std::to_string(size) + " bytes, expected " +
                        std::to_string(D::preprocessed_db_bytes));
    }
    if (h.aux == 0 || h.aux > Derived<typename WireOf<P>::type>::num_items) {
      ::close(fd);
      throw FormatError("preprocessed database: record count " + std::to_string(h.aux) + " out of range");
    }
    void* m = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (m == MAP_FAILED) throw IoError("map_db: mmap failed for " + path + ": " + std::strerror(errno));
    unmap();
    owned_ = AlignedBuffer<std::uint32_t>();
    map_base_ = m;
    map_len_ = size;
    phys_inst_ = D::instances;
    phys_j_ = J;
    num_records_ = h.aux;
    words_ = reinterpret_cast<const std::uint32_t*>(static_cast<const std::uint8_t*>(m) + kHeaderBytes);
    // every residue must be below its prime (the kernel's lazy bound relies on it)
    for (std::size_t inst = 0; inst < D::instances; ++inst)
      for (std::size_t prime = 0; prime < NP; ++prime) {
        const std::uint64_t p = R::primes[prime];
        const std::uint32_t* w = words_ + (inst * NP + prime) * (ZT * J * I * NN * kLanes);
        for (std::size_t x = 0; x < ZT * J * I * NN * kLanes; ++x)
          if (w[x] >= p) {
            unmap();
            throw FormatError("preprocessed database: residue out of range in " + path);
          }
      }
  }

 private:
  void unmap() {
    if (map_base_ != nullptr) {
      ::munmap(map_base_, map_len_);
      words_ = nullptr;
    }
    map_base_ = nullptr;
    map_len_ = 0;
  }

  AlignedBuffer<std::uint32_t> owned_;
  const std::uint32_t* words_ = nullptr;
  void* map_base_ = nullptr;
  std::size_t map_len_ = 0;
  std::uint64_t num_records_ = 0;
  std::size_t phys_inst_ = D::instances;
  std::size_t phys_j_ = J;
};

}  // namespace spiralpir
