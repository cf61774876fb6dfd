// spiralpir/spiral/first_dim.hpp — the first-dimension hot loop: for every instance and folding index j,
// out[j] = Σ_{i < 2^nu_1} C_i · D[i][j] with C_i the (n+1)×n matrix Regev query cts and D the
// n×n plaintexts, all in NTT/CRT form (database.hpp gives the word layout). Only the stored rows
// i < Derived::rows_stored are summed: the rows after them are zero plaintexts.
//
// Work split: the query is first laid out tile by tile (Query: one contiguous, L2-sized slice per
// prime group g and slot tile zt); one task per (instance, g, zt) streams its contiguous slice of
// the database once against its query slice. database.hpp interleaves the folding indices in
// blocks of JB, each block one sequential stream over i; the AVX-512 task walks i in L1-sized
// passes, every block's piece of a pass in turn. For a group of two primes one 64-bit word holds
// both residues of a slot: vpmuludq multiplies the low halves (prime 2g) directly and the word
// shifted right by 32 (prime 2g+1); within a piece the (n+1)·n·JB·W accumulators stay in
// registers and each query vector is loaded once per i for the JB indices of the block.
//
// Lazy reduction: products are < (p−1)^2 and accumulate in uint64. Every kChunk values of i the
// accumulators are *folded*, x ↦ (x mod 2^32) + ⌊x / 2^32⌋·(2^32 mod p) (the same value mod p,
// four vector instructions, result ≤ fold_bound(p) = (2^32−1)·(1 + (2^32 mod p))), and reduced
// exactly to [0, p) once per output. kChunk is the largest count with fold_bound + kChunk·n·
// (p−1)^2 < 2^64 for every prime (static_assert); for primes where folding buys nothing (2^32 mod
// p large) the kernel instead reduces exactly every D::lazy_terms / n values of i.
// Three kernels compute the same values: AVX-512F and AVX2 (function-level target attributes,
// each used only when path_available says so, i.e. compiled in, supported by the CPU and not
// disabled by SPIRALPIR_DISABLE_AVX512=1 / SPIRALPIR_DISABLE_AVX2=1) and a portable one. The AVX2
// kernel reads the same word layout as two 4-slot halves per 8-slot group, in smaller register
// groups (16 ymm registers against 32 zmm).
//
// Why the vector kernels stay in this header (behind target attributes) instead of a per-ISA
// source file like the other kernel families: moved to a source file of their own (one
// instantiation per task shape n, W, NB; I, J and the fold constants as runtime values; the
// epilogue one call per task) the hot loop compiled to the same instruction stream, yet
// StreamPack's first dimension at 2^14 x 100 KB measured 5-6% slower, wall and CPU time alike
// (min of 3 x 5 trials, old/new interleaved: 0.171 -> 0.181 s; spiral 2^20 x 256 B: +1-3%),
// for a reason not yet found. Instantiated here, the kernel sees the parameters' constants.
// (The kernels are also why this file runs past 700 lines.)
#pragma once

#include <algorithm>
#include <array>
#include <cstring>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SPIRALPIR_FIRSTDIM_X86 1
#endif

#include "spiralpir/core/cpu_features.hpp"
#include "spiralpir/spiral/database.hpp"

namespace spiralpir {

template <SpiralParams P>
struct FirstDim {
  using R = typename P::ring;
  using D = Derived<P>;
  using MatN = rlwe::MatN<R>;
  using DB = Database<P>;
  static constexpr unsigned n = P::n;
  static constexpr std::size_t RK = std::size_t{n + 1} * n;  // query entries (r, k)
  static constexpr std::size_t NN = std::size_t{n} * n;      // plaintext entries (k, c)
  static constexpr std::size_t I = D::dim0, J = D::dim_rest, ZT = DB::ZT, NP = R::num_primes, NG = DB::NG;
  static constexpr std::size_t IS = DB::I;  // stored rows (≤ I): the query keeps all I
  static constexpr std::size_t kMaxW = NP >= 2 ? 2 : 1;

  /// Where the kernels find row i of one query slice (a Q's rows(g, zt)): here at base + i·stride,
  /// 64-byte aligned, in a whole query; a shard reads its rows in place from several shares
  /// instead (shard_split.hpp). Every row holds RK·W·8 words.
  struct SliceRows {
    static constexpr bool aligned = true;
    const std::uint32_t* base;
    std::size_t stride;
    const std::uint32_t* operator()(std::size_t i) const { return base + i * stride; }
  };

  // ---- lazy reduction bounds ----------------------------------------------------------------
  static constexpr std::uint64_t kU64Max = ~std::uint64_t{0};
  static constexpr std::uint64_t fold_const(std::size_t prime) { return (std::uint64_t{1} << 32) % R::primes[prime]; }
  static constexpr std::uint64_t fold_bound(std::size_t prime) {  // < 2^64: fold_const < 2^32
    return std::uint64_t{0xffffffffu} * (1 + fold_const(prime));
  }
  static constexpr std::uint64_t sq(std::uint64_t p) { return (p - 1) * (p - 1); }
  static constexpr std::uint64_t fold_terms() {
    std::uint64_t t = kU64Max;
    for (std::size_t i = 0; i < NP; ++i) t = std::min(t, (kU64Max - fold_bound(i)) / sq(R::primes[i]));
    return t;
  }
  static constexpr bool kFold = fold_terms() / n >= 1;
  /// values of i accumulated between two folds (or exact reductions)
  static constexpr std::size_t kChunk = kFold ? fold_terms() / n : D::lazy_terms / n;
  static constexpr bool bound_ok() {
    for (std::size_t i = 0; i < NP; ++i) {
      const u128 start = kFold ? fold_bound(i) : R::primes[i] - 1;
      if (start + u128{kChunk} * n * sq(R::primes[i]) > u128{kU64Max}) return false;
    }
    return true;
  }
  static_assert(kChunk >= 1, "lazy bound: not even one i fits the accumulator");
  static_assert(bound_ok(), "first-dimension term count exceeds the lazy-reduction bound");

  /// The query in the kernel's order, in the database's word layout: for every prime group g and
  /// slot tile zt one contiguous slice Q[i][rk][lane][h] of u32 words (I·RK·W·8 of them; values
  /// < p), h < width(g) the prime 2g + h, so one 64-byte load holds 8 slots of both primes of a
  /// pair, like a database word; the slices of group g follow those of the groups before it.
  /// Built once per query (a prepared, streaming query keeps it), so a task reads its slice
  /// sequentially instead of gathering 64-byte pieces of 2^nu_1·(n+1)·n·W polynomials, a TLB walk
  /// each (that gather took a quarter of the first dimension at n = 1). 32-bit words because a
  /// slice is re-read from memory by the tasks of every instance that do not find it in L2: as
  /// u64 words the query was a quarter of StreamPack's first-dimension traffic at 2^14 × 100 KB.
  /// Huge-page backed: 2^nu_1·(n+1)·n·#primes·d u32 words.
  class Query {
   public:
    static constexpr std::size_t words = I * RK * NP * D::d;
    /// where slice (g, zt) starts in a query of `rows` rows (I: the whole query; fewer: a share
    /// of its rows, shard.hpp), and the words of one row i in it
    static constexpr std::size_t offset(std::size_t g, std::size_t zt, std::size_t rows = I) {
      return rows * RK * kLanes * (ZT * DB::group_prime(g) + zt * DB::width(g));
    }
    static constexpr std::size_t row_words(std::size_t g) { return RK * DB::width(g) * kLanes; }
    Query() = default;
    Query(Query&&) noexcept = default;
    Query& operator=(Query&& o) noexcept {
      if (this != &o) {
        recycle(std::move(storage_));
        storage_ = std::move(o.storage_);
      }
      return *this;
    }
    ~Query() { recycle(std::move(storage_)); }
    bool empty() const { return storage_.data() == nullptr; }
    const std::uint32_t* slice(std::size_t g, std::size_t zt) const { return storage_.data() + offset(g, zt); }
    SliceRows rows(std::size_t g, std::size_t zt) const { return {slice(g, zt), row_words(g)}; }
    /// all `words` words (a serialized query for a shard, shard.hpp)
    const std::uint32_t* data() const { return storage_.data(); }
    /// a query from `words` words in this layout (copied); throws unless each is below its prime
    static Query from_words(const std::uint32_t* src) {
      Query q;
      q.storage_ = storage();
      std::memcpy(q.storage_.data(), src, words * 4);
      for (std::size_t g = 0; g < NG; ++g)
        for (std::size_t zt = 0; zt < ZT; ++zt) {
          const std::size_t w = DB::width(g);
          const std::uint32_t* x = q.slice(g, zt);
          for (std::size_t k = 0; k < I * RK * w * kLanes; ++k)
            if (x[k] >= R::primes[DB::group_prime(g) + k % w])
              throw FormatError("first-dimension query: residue out of range");
        }
      return q;
    }

   private:
    friend struct FirstDim;
    // Query buffers are recycled: a fresh one's huge pages are zeroed by the kernel at first
    // touch (a tenth of the answer at n = 4, d = 1024), a recycled one is overwritten in place.
    // At most kPooled are kept, and none over kPoolBytes; every producer of a query writes all
    // its words (rows the database does not store included), so no query sees another's.
    static constexpr std::size_t kPooled = 2, kPoolBytes = std::size_t{64} << 20;
    struct Pool {
      std::mutex mu;
      std::vector<DbStorage> free;
    };
    static Pool& pool() {
      static Pool p;
      return p;
    }
    static DbStorage storage() {
      if constexpr (words * 4 <= kPoolBytes) {
        Pool& p = pool();
        std::lock_guard<std::mutex> lock(p.mu);
        if (!p.free.empty()) {
          DbStorage s = std::move(p.free.back());
          p.free.pop_back();
          return s;
        }
      }
      return DbStorage(words);
    }
    static void recycle(DbStorage&& s) {
      if (s.data() == nullptr) return;
      if constexpr (words * 4 <= kPoolBytes) {
        Pool& p = pool();
        std::lock_guard<std::mutex> lock(p.mu);
        if (p.free.size() < kPooled) p.free.push_back(std::move(s));
      }
    }
    DbStorage storage_;
  };

  /// the query matrices (2^nu_1 of them, (n+1)×n, NTT/CRT form) in the kernel's order
  static Query tile(const std::vector<MatN>& first_mats, unsigned threads) {
    Query q = unfilled_query();
    tile_rows(first_mats, 0, 0, q.storage_.data(), threads);
    return q;
  }

  /// a query whose words its caller writes, every row (tile_row, zero_row): until then they are
  /// those of a query answered before, or zero
  static Query unfilled_query() {
    Query q;
    q.storage_ = Query::storage();
    return q;
  }

  /// the rows i ≡ part (mod 2^bits) of the query, row i as row i >> bits of a query of I >> bits
  /// rows at `base` (Query::offset(g, zt, I >> bits)); bits = 0: the whole query
  static void tile_rows(const std::vector<MatN>& first_mats, unsigned bits, unsigned part, std::uint32_t* base,
                        unsigned threads) {
    if (first_mats.size() != I) throw ArgumentError("first dimension: expected 2^nu_1 query matrices");
    const std::size_t rows = I >> bits;
    parallel_for(threads, rows, [&](std::size_t il) {
      tile_row(first_mats[(il << bits) + part], il, rows, base);
    });
  }

  /// matrix m as row il of the query at `base` (of `rows` rows); one row's words, disjoint from
  /// every other row's: rows may be written concurrently. Its polynomials are read sequentially,
  /// the W residues of 8 slots written together (whole lines: no partial-line writes).
  static void tile_row(const MatN& m, std::size_t il, std::size_t rows, std::uint32_t* base) {
    std::array<const rlwe::Pn<R>*, RK> polys;
    for (std::size_t rk = 0; rk < RK; ++rk)
      polys[rk] = &m.at(static_cast<unsigned>(rk / n), static_cast<unsigned>(rk % n));
    tile_row(polys, il, rows, base);
  }
  /// the same from the matrix's polynomials, entry (r, k) at polys[r·n + k]
  static void tile_row(const std::array<const rlwe::Pn<R>*, RK>& polys, std::size_t il, std::size_t rows,
                       std::uint32_t* base) {
    for (std::size_t rk = 0; rk < RK; ++rk) {
      const auto& poly = *polys[rk];
      for (std::size_t g = 0; g < NG; ++g) {
        const std::size_t w = DB::width(g), stride = rows * RK * w * kLanes;  // from tile zt to zt + 1
        const std::uint64_t* src[kMaxW] = {};
        for (std::size_t h = 0; h < w; ++h) src[h] = poly.residue(DB::group_prime(g) + h);
        std::uint32_t* dst = base + Query::offset(g, 0, rows) + (il * RK + rk) * w * kLanes;
        for (std::size_t zt = 0; zt < ZT; ++zt, dst += stride)
          for (std::size_t l = 0; l < kLanes; ++l)
            for (std::size_t h = 0; h < w; ++h) dst[l * w + h] = static_cast<std::uint32_t>(src[h][zt * kLanes + l]);
      }
    }
  }
  /// row il of the query at `base` (of `rows` rows) as the zero matrix
  static void zero_row(std::size_t il, std::size_t rows, std::uint32_t* base) {
    static const MatN zero(n + 1, n);
    tile_row(zero, il, rows, base);
  }
  /// the words of a query being filled by tile_row
  static std::uint32_t* words_of(Query& q) { return q.storage_.data(); }

  /// exact reduction of x < 2^64 to [0, p) (Barrett: x − ⌊x·m/2^64⌋·p lies in [0, 2p))
  static std::uint64_t reduce_exact(std::uint64_t x, std::uint64_t p, std::uint64_t barrett) {
    const std::uint64_t qt = static_cast<std::uint64_t>((static_cast<u128>(x) * barrett) >> 64);
    x -= qt * p;
    return x >= p ? x - p : x;
  }

  /// between chunks: fold (or, without folding, reduce exactly) every accumulator
  static void squeeze(std::uint64_t* acc, std::size_t g, std::size_t nb) {
    const std::size_t w = DB::width(g);
    for (std::size_t x = 0; x < nb * RK * w; ++x) {
      const std::size_t prime = DB::group_prime(g) + x % w;
      const std::uint64_t p = R::primes[prime], c = fold_const(prime), m = kU64Max / p;
      for (std::size_t l = 0; l < kLanes; ++l) {
        std::uint64_t& a = acc[x * kLanes + l];
        a = kFold ? (a & 0xffffffffu) + (a >> 32) * c : reduce_exact(a, p, m);
      }
    }
  }

  // acc (block layout above) += Σ_{i in [i0,i1)} Σ_k q[i][r·n+k][lane][h] · w[i][b][k·n+c][lane][h]
  template <class QR>
  static void kernel_portable(std::uint64_t* acc, const QR& q, const std::uint32_t* w, std::size_t wd,
                              std::size_t nb, std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) {
      const std::uint32_t* qi = q(i);
      for (std::size_t b = 0; b < nb; ++b) {
        const std::uint32_t* wb = w + (i * nb + b) * NN * wd * kLanes;
        for (unsigned r = 0; r <= n; ++r)
          for (unsigned c = 0; c < n; ++c)
            for (std::size_t h = 0; h < wd; ++h) {
              std::uint64_t* a = acc + ((b * RK + r * n + c) * wd + h) * kLanes;
              for (unsigned k = 0; k < n; ++k) {
                const std::uint32_t* qa = qi + (r * n + k) * wd * kLanes + h;
                const std::uint32_t* wk = wb + (k * n + c) * wd * kLanes + h;
                for (std::size_t l = 0; l < kLanes; ++l) a[l] += std::uint64_t{qa[l * wd]} * wk[l * wd];
              }
            }
      }
    }
  }

#ifdef SPIRALPIR_FIRSTDIM_X86
  /// Software prefetch of the database stream at two distances ahead of the current i: far into
  /// L2 (more misses in flight than L1's fill buffers allow), then near into L1 from L2; hardware
  /// prefetchers stop at 4 KiB page boundaries. StreamPack's first dimension at 2^14 × 100 KB
  /// streamed 11.1 GB/s with one L1 prefetch 4 KiB ahead, 12.6–13.2 with these distances.
  static constexpr std::size_t kPrefetchNearBytes = 2048;
  static constexpr std::size_t kPrefetchFarBytes = 24576;
  // the accumulator, query and database arrays below are indexed by these loops' counters: only
  // fully unrolled loops keep them in registers (GCC otherwise spills them to the stack and
  // reloads every accumulator on every i)
#define SPIRALPIR_UNROLL _Pragma("GCC unroll 64")
#endif
  /// query bytes of one pass (task_avx512): L1 holds them beside the database stream
  static constexpr std::size_t kPassBytes = 8192;
  static constexpr std::size_t pass_len(std::size_t w) {
    const std::size_t fit = kPassBytes / (RK * w * kLanes * 4);
    return std::min(fit == 0 ? std::size_t{1} : fit, I);
  }
  /// columns of the plaintext matrices one kernel call accumulates (kernel_avx512): the most
  /// whose NB·(n+1)·cols·W accumulators stay within kMaxAccumulators zmm registers, leaving room
  /// for a column's plaintext vectors and a query vector. At n = 4 with a prime pair (40
  /// accumulators for all columns, beside 40 query and 32 plaintext vectors) the whole-matrix
  /// kernel spilled: in two groups its first dimension on a 512 MiB database took 38 ms instead
  /// of 48 (one thread). Smaller limits measured slower (16: n = 2 in single columns 1.23x, n = 4
  /// in four groups 1.05x; n = 3 in groups of two within 2%).
  static constexpr unsigned column_group(std::size_t w, std::size_t nb) {
    unsigned cols = 1;
    while (cols < n && nb * (n + 1) * (cols + 1) * w <= kMaxAccumulators) ++cols;
    return cols;
  }
  static constexpr std::size_t kMaxAccumulators = 24;
#ifdef SPIRALPIR_FIRSTDIM_X86

  /// `dist` bytes past `at` in the stream of this piece (ending at `piece_end`) continued at `next`
  /// (null: the stream ends there, and so does the prefetch)
  static const char* ahead(const std::uint32_t* at, std::size_t dist, const char* piece_end, const std::uint32_t* next) {
    const char* a = reinterpret_cast<const char*>(at) + dist;
    if (a < piece_end) return a;
    return next == nullptr ? nullptr : reinterpret_cast<const char*>(next) + (a - piece_end);
  }

  /// the software prefetches of one i's `Bytes` of database at `at`: `far_dist` ahead into L2,
  /// kPrefetchNearBytes ahead into L1 (ahead() says where the stream is by then)
  template <std::size_t Bytes>
  [[gnu::always_inline]] static inline void prefetch_ahead(const std::uint32_t* at, std::size_t far_dist,
                                                           const char* piece_end, const std::uint32_t* next) {
    if (const char* far = ahead(at, far_dist, piece_end, next))
      SPIRALPIR_UNROLL
      for (std::size_t x = 0; x < Bytes; x += 64) _mm_prefetch(far + x, _MM_HINT_T1);
    if (const char* near = ahead(at, kPrefetchNearBytes, piece_end, next))
      SPIRALPIR_UNROLL
      for (std::size_t x = 0; x < Bytes; x += 64) _mm_prefetch(near + x, _MM_HINT_T0);
  }

  /// the W residues of 8 slots at `src` as W vectors of u64: a query's words (aligned) or a
  /// database's (unaligned: a mapped file's words start 32 bytes into a page)
  template <std::size_t W, bool Aligned>
  __attribute__((target("avx512f"), always_inline)) static inline void load_slots(const std::uint32_t* src, __m512i* out) {
    if constexpr (W == 2) {
      out[0] = Aligned ? _mm512_load_si512(src) : _mm512_loadu_si512(src);
      out[1] = _mm512_maskz_srli_epi64(0xFF, out[0], 32);
    } else {
      const auto* half = reinterpret_cast<const __m256i*>(src);
      out[0] = _mm512_maskz_cvtepu32_epi64(0xFF, Aligned ? _mm256_load_si256(half) : _mm256_loadu_si256(half));
    }
  }

  // GCC 12's intrinsic headers trip -Wmaybe-uninitialized on _mm512_undefined (a known false
  // positive); the masked-zero forms avoid it.
  /// acc (one block of NB folding indices, group width W, in memory) += `count` values of i
  /// from i0 (query row q(i0 + k), database words at w + k·step), for the plaintext columns
  /// [C0, C1): their accumulators are loaded into
  /// registers and stored back, and folded (or, without folding, reduced exactly) before any i
  /// that would take them past kChunk values since the last fold; `since` values were added
  /// before this call. Returns the count after it (the same for every block and column group of
  /// a pass). Only the first column group prefetches: `next` (or null) is where the caller's
  /// stream continues after this piece, and the software prefetch runs on into it; the later
  /// groups find the piece in L1.
  template <std::size_t W, std::size_t NB, unsigned C0, unsigned C1, class QR>
  __attribute__((target("avx512f"))) static std::size_t kernel_avx512(std::uint64_t* acc, const QR& q, std::size_t i0,
                                                                       const std::uint32_t* w, std::size_t count,
                                                                       const std::uint32_t* next, std::size_t since,
                                                                       std::size_t g) {
    static_assert(kLanes == 8, "one zmm register = 8 slots");
    constexpr unsigned CG = C1 - C0;
    constexpr std::size_t step = NB * NN * W * kLanes;  // u32 words per i
    constexpr std::size_t step_bytes = step * 4;
    const auto at = [acc](std::size_t b, unsigned r, unsigned c, std::size_t h) {
      return acc + ((b * RK + r * n + c) * W + h) * kLanes;
    };
    __m512i a[NB][n + 1][CG][W];
    SPIRALPIR_UNROLL
    for (std::size_t b = 0; b < NB; ++b)
      SPIRALPIR_UNROLL
      for (unsigned r = 0; r <= n; ++r)
        SPIRALPIR_UNROLL
        for (unsigned c = 0; c < CG; ++c)
          SPIRALPIR_UNROLL
          for (std::size_t h = 0; h < W; ++h) a[b][r][c][h] = _mm512_load_si512(at(b, r, C0 + c, h));
    __m512i cst[W];
    SPIRALPIR_UNROLL
    for (std::size_t h = 0; h < W; ++h) cst[h] = _mm512_set1_epi64(static_cast<long long>(fold_const(DB::group_prime(g) + h)));
    const __m512i lo32 = _mm512_set1_epi64(0xffffffffLL);
    const char* const piece_end = reinterpret_cast<const char*>(w + count * step);
    // at most one piece ahead: the next piece (of the same length) is where the stream goes on
    const std::size_t far_dist = std::min(kPrefetchFarBytes, count * step_bytes);
    for (std::size_t i = 0; i < count; ++i, ++since) {
      if (since == kChunk) {
        since = 0;
        if constexpr (kFold) {
          SPIRALPIR_UNROLL
          for (std::size_t b = 0; b < NB; ++b)
            SPIRALPIR_UNROLL
            for (unsigned r = 0; r <= n; ++r)
              SPIRALPIR_UNROLL
              for (unsigned c = 0; c < CG; ++c)
                SPIRALPIR_UNROLL
                for (std::size_t h = 0; h < W; ++h)
                  a[b][r][c][h] =
                      _mm512_add_epi64(_mm512_and_si512(a[b][r][c][h], lo32),
                                       _mm512_maskz_mul_epu32(0xFF, _mm512_maskz_srli_epi64(0xFF, a[b][r][c][h], 32), cst[h]));
        } else {  // rare primes (2^32 mod p large): exact reduction through memory (of every
                  // column: the other groups' accumulators stay equal mod p and within bounds)
          SPIRALPIR_UNROLL
          for (std::size_t b = 0; b < NB; ++b)
            SPIRALPIR_UNROLL
            for (unsigned r = 0; r <= n; ++r)
              SPIRALPIR_UNROLL
              for (unsigned c = 0; c < CG; ++c)
                SPIRALPIR_UNROLL
                for (std::size_t h = 0; h < W; ++h) _mm512_store_si512(at(b, r, C0 + c, h), a[b][r][c][h]);
          squeeze(acc, g, NB);
          SPIRALPIR_UNROLL
          for (std::size_t b = 0; b < NB; ++b)
            SPIRALPIR_UNROLL
            for (unsigned r = 0; r <= n; ++r)
              SPIRALPIR_UNROLL
              for (unsigned c = 0; c < CG; ++c)
                SPIRALPIR_UNROLL
                for (std::size_t h = 0; h < W; ++h) a[b][r][c][h] = _mm512_load_si512(at(b, r, C0 + c, h));
        }
      }
      const std::uint32_t* qi = q(i0 + i);
      const std::uint32_t* wi = w + i * step;
      if constexpr (C0 == 0) prefetch_ahead<step_bytes>(wi, far_dist, piece_end, next);
      // the query words are laid out like the database's: one 64-byte load holds both residues
      // of 8 slots (W = 2), the high one taken by a shift
      if constexpr (CG == n) {  // every column: the i's query vectors loaded once for the NB blocks
        __m512i qv[RK][W];
        SPIRALPIR_UNROLL
        for (std::size_t x = 0; x < RK; ++x) load_slots<W, QR::aligned>(qi + x * W * kLanes, qv[x]);
        SPIRALPIR_UNROLL
        for (std::size_t b = 0; b < NB; ++b) {
          __m512i v[NN][W];
          SPIRALPIR_UNROLL
          for (std::size_t kc = 0; kc < NN; ++kc) load_slots<W, false>(wi + (b * NN + kc) * W * kLanes, v[kc]);
          SPIRALPIR_UNROLL
          for (unsigned r = 0; r <= n; ++r)
            SPIRALPIR_UNROLL
            for (unsigned k = 0; k < n; ++k)
              SPIRALPIR_UNROLL
              for (unsigned c = 0; c < n; ++c)
                SPIRALPIR_UNROLL
                for (std::size_t h = 0; h < W; ++h)
                  a[b][r][c][h] = _mm512_add_epi64(a[b][r][c][h], _mm512_maskz_mul_epu32(0xFF, qv[r * n + k][h], v[k * n + c][h]));
        }
      } else {  // a group of columns: a query vector loaded (from L1) where it is used
        SPIRALPIR_UNROLL
        for (std::size_t b = 0; b < NB; ++b)
          SPIRALPIR_UNROLL
          for (unsigned k = 0; k < n; ++k) {
            __m512i v[CG][W];
            SPIRALPIR_UNROLL
            for (unsigned c = 0; c < CG; ++c) load_slots<W, false>(wi + (b * NN + k * n + C0 + c) * W * kLanes, v[c]);
            SPIRALPIR_UNROLL
            for (unsigned r = 0; r <= n; ++r) {
              __m512i qv[W];
              load_slots<W, QR::aligned>(qi + (r * n + k) * W * kLanes, qv);
              SPIRALPIR_UNROLL
              for (unsigned c = 0; c < CG; ++c)
                SPIRALPIR_UNROLL
                for (std::size_t h = 0; h < W; ++h)
                  a[b][r][c][h] = _mm512_add_epi64(a[b][r][c][h], _mm512_maskz_mul_epu32(0xFF, qv[h], v[c][h]));
            }
          }
      }
    }
    SPIRALPIR_UNROLL
    for (std::size_t b = 0; b < NB; ++b)
      SPIRALPIR_UNROLL
      for (unsigned r = 0; r <= n; ++r)
        SPIRALPIR_UNROLL
        for (unsigned c = 0; c < CG; ++c)
          SPIRALPIR_UNROLL
          for (std::size_t h = 0; h < W; ++h) _mm512_store_si512(at(b, r, C0 + c, h), a[b][r][c][h]);
    return since;
  }

  /// kernel_avx512 for every column group from C0 on, in turn over the same piece
  template <std::size_t W, std::size_t NB, unsigned C0, class QR>
  __attribute__((target("avx512f"), always_inline)) static inline std::size_t columns_avx512(std::uint64_t* acc, const QR& q,
                                                                        std::size_t i0, const std::uint32_t* w,
                                                                        std::size_t count, const std::uint32_t* next,
                                                                        std::size_t since, std::size_t g) {
    constexpr unsigned C1 = std::min<unsigned>(C0 + column_group(W, NB), n);
    const std::size_t after = kernel_avx512<W, NB, C0, C1>(acc, q, i0, w, count, next, since, g);
    if constexpr (C1 < n) columns_avx512<W, NB, C1>(acc, q, i0, w, count, next, since, g);
    return after;
  }

  /// One task's passes (AVX-512) over i in [lo, hi): `pass_len` values of i at a time, every block of folding
  /// indices in turn, so the pass's query vectors (≤ kPassBytes) stay in L1 while the blocks stream
  /// their pieces; the accumulators of all J indices wait in `accs` (L1/L2) between passes. (One
  /// block over the whole i range instead re-reads an L2-sized query slice from L2 for every
  /// block, and those misses take the L1 fill buffers the database stream needs: StreamPack's
  /// first dimension at 2^14 × 100 KB streamed 10.8 GB/s that way, 11.4 in passes.)
  template <std::size_t W, class QR>
  __attribute__((target("avx512f"))) static void task_avx512(std::uint64_t* accs, const QR& q, const DB& db,
                                                              std::size_t inst, std::size_t g, std::size_t zt,
                                                              std::size_t lo, std::size_t hi) {
    walk_passes<W>(accs, db, inst, g, zt, lo, hi,
                   [&](std::uint64_t* acc, std::size_t i0, const std::uint32_t* w, std::size_t count,
                       const std::uint32_t* next, std::size_t since) __attribute__((target("avx512f"))) {
                     return columns_avx512<W, DB::jblock(W), 0>(acc, q, i0, w, count, next, since, g);
                   });
  }

  /// The passes of a task over i in [lo, hi): `pass_len` values of i at a time, every block of
  /// folding indices in turn; piece(acc, i0, words, count, next, since) accumulates one block's
  /// piece and returns the values of i added since the last fold after it
  template <std::size_t W, class Piece>
  [[gnu::always_inline]] static inline void walk_passes(std::uint64_t* accs, const DB& db, std::size_t inst,
                                                        std::size_t g, std::size_t zt, std::size_t lo, std::size_t hi,
                                                        const Piece& piece) {
    constexpr std::size_t nb = DB::jblock(W), step = nb * NN * W * kLanes, per_block = nb * RK * W * kLanes;
    constexpr std::size_t pass = pass_len(W);
    std::fill(accs, accs + J * RK * W * kLanes, std::uint64_t{0});
    std::size_t since = 0;  // values of i added since the accumulators were last folded
    for (std::size_t i0 = lo; i0 < hi; i0 += pass) {
      const std::size_t count = std::min(pass, hi - i0);
      std::size_t after = since;
      for (std::size_t j0 = 0; j0 < J; j0 += nb) {
        const std::uint32_t* next = j0 + nb < J ? db.block_words(inst, g, zt, j0 + nb) + i0 * step
                                    : i0 + count < hi ? db.block_words(inst, g, zt, 0) + (i0 + count) * step
                                                      : nullptr;
        after = piece(accs + (j0 / nb) * per_block, i0, db.block_words(inst, g, zt, j0) + i0 * step, count, next,
                      since);
      }
      since = after;
    }
  }

  // ---- AVX2: 4 slots per ymm, so every 8-slot word group is read as two halves ----------------
  /// accumulators of one AVX2 kernel call: with 16 ymm registers, a call keeps them, a block's
  /// plaintext vectors and the query vectors of its columns in registers
  static constexpr std::size_t kMaxAccumulatorsAvx2 = 8;
  static constexpr unsigned column_group_avx2(std::size_t w) {
    unsigned cols = 1;
    while (cols < n && (n + 1) * (cols + 1) * w <= kMaxAccumulatorsAvx2) ++cols;
    return cols;
  }
  /// blocks of folding indices one AVX2 call accumulates: more than one only when a call takes
  /// every column, so the i's query vectors are loaded once for them
  static constexpr std::size_t block_group_avx2(std::size_t w, std::size_t nb) {
    std::size_t bc = 1;
    if (column_group_avx2(w) < n) return bc;
    while (nb % (2 * bc) == 0 && 2 * bc * (n + 1) * n * w <= kMaxAccumulatorsAvx2) bc *= 2;
    return bc;
  }

  /// the W residues of the 4 slots at `src` (half of a word group) as W vectors of u64
  template <std::size_t W, bool Aligned>
  __attribute__((target("avx2"), always_inline)) static inline void load_half(const std::uint32_t* src, __m256i* out) {
    if constexpr (W == 2) {
      const auto* v = reinterpret_cast<const __m256i*>(src);
      out[0] = Aligned ? _mm256_load_si256(v) : _mm256_loadu_si256(v);
      out[1] = _mm256_srli_epi64(out[0], 32);
    } else {
      const auto* v = reinterpret_cast<const __m128i*>(src);
      out[0] = _mm256_cvtepu32_epi64(Aligned ? _mm_load_si128(v) : _mm_loadu_si128(v));
    }
  }

  /// kernel_avx512's sums for half HF of every word group (slots 4·HF … 4·HF + 3), blocks
  /// [B0, B0 + BC) of the NB and plaintext columns [C0, C0 + CG); the same folds at the same i.
  /// Only the piece's first call prefetches: the later ones find the piece in L1.
  template <std::size_t W, std::size_t NB, std::size_t HF, std::size_t B0, std::size_t BC, unsigned C0, unsigned CG,
            class QR>
  __attribute__((target("avx2"))) static std::size_t kernel_avx2(std::uint64_t* acc, const QR& q, std::size_t i0,
                                                                   const std::uint32_t* w, std::size_t count,
                                                                   const std::uint32_t* next, std::size_t since,
                                                                   std::size_t g) {
    constexpr std::size_t step = NB * NN * W * kLanes;  // u32 words per i
    constexpr std::size_t step_bytes = step * 4;
    constexpr std::size_t half = HF * 4 * W;  // u32 words before this half in a word group
    constexpr bool prefetching = HF == 0 && B0 == 0 && C0 == 0;
    const auto at = [acc](std::size_t b, unsigned r, unsigned c, std::size_t h) {
      return reinterpret_cast<__m256i*>(acc + ((b * RK + r * n + c) * W + h) * kLanes + HF * 4);
    };
    __m256i a[BC][n + 1][CG][W];
    SPIRALPIR_UNROLL
    for (std::size_t b = 0; b < BC; ++b)
      SPIRALPIR_UNROLL
      for (unsigned r = 0; r <= n; ++r)
        SPIRALPIR_UNROLL
        for (unsigned c = 0; c < CG; ++c)
          SPIRALPIR_UNROLL
          for (std::size_t h = 0; h < W; ++h) a[b][r][c][h] = _mm256_load_si256(at(B0 + b, r, C0 + c, h));
    __m256i cst[W];
    SPIRALPIR_UNROLL
    for (std::size_t h = 0; h < W; ++h) cst[h] = _mm256_set1_epi64x(static_cast<long long>(fold_const(DB::group_prime(g) + h)));
    const __m256i lo32 = _mm256_set1_epi64x(0xffffffffLL);
    const char* const piece_end = reinterpret_cast<const char*>(w + count * step);
    const std::size_t far_dist = std::min(kPrefetchFarBytes, count * step_bytes);
    for (std::size_t i = 0; i < count; ++i, ++since) {
      if (since == kChunk) {
        since = 0;
        if constexpr (kFold) {
          SPIRALPIR_UNROLL
          for (std::size_t b = 0; b < BC; ++b)
            SPIRALPIR_UNROLL
            for (unsigned r = 0; r <= n; ++r)
              SPIRALPIR_UNROLL
              for (unsigned c = 0; c < CG; ++c)
                SPIRALPIR_UNROLL
                for (std::size_t h = 0; h < W; ++h)
                  a[b][r][c][h] = _mm256_add_epi64(_mm256_and_si256(a[b][r][c][h], lo32),
                                                   _mm256_mul_epu32(_mm256_srli_epi64(a[b][r][c][h], 32), cst[h]));
        } else {  // as kernel_avx512: exact reduction of every accumulator through memory
          SPIRALPIR_UNROLL
          for (std::size_t b = 0; b < BC; ++b)
            SPIRALPIR_UNROLL
            for (unsigned r = 0; r <= n; ++r)
              SPIRALPIR_UNROLL
              for (unsigned c = 0; c < CG; ++c)
                SPIRALPIR_UNROLL
                for (std::size_t h = 0; h < W; ++h) _mm256_store_si256(at(B0 + b, r, C0 + c, h), a[b][r][c][h]);
          squeeze(acc, g, NB);
          SPIRALPIR_UNROLL
          for (std::size_t b = 0; b < BC; ++b)
            SPIRALPIR_UNROLL
            for (unsigned r = 0; r <= n; ++r)
              SPIRALPIR_UNROLL
              for (unsigned c = 0; c < CG; ++c)
                SPIRALPIR_UNROLL
                for (std::size_t h = 0; h < W; ++h) a[b][r][c][h] = _mm256_load_si256(at(B0 + b, r, C0 + c, h));
        }
      }
      const std::uint32_t* qi = q(i0 + i) + half;
      const std::uint32_t* wi = w + i * step + half;
      if constexpr (prefetching) prefetch_ahead<step_bytes>(wi, far_dist, piece_end, next);
      if constexpr (CG == n && RK * W <= 4) {  // the i's query vectors loaded once for the BC blocks
        __m256i qv[RK][W];
        SPIRALPIR_UNROLL
        for (std::size_t x = 0; x < RK; ++x) load_half<W, QR::aligned>(qi + x * W * kLanes, qv[x]);
        SPIRALPIR_UNROLL
        for (std::size_t b = 0; b < BC; ++b) {
          __m256i v[NN][W];
          SPIRALPIR_UNROLL
          for (std::size_t kc = 0; kc < NN; ++kc) load_half<W, false>(wi + ((B0 + b) * NN + kc) * W * kLanes, v[kc]);
          SPIRALPIR_UNROLL
          for (unsigned r = 0; r <= n; ++r)
            SPIRALPIR_UNROLL
            for (unsigned k = 0; k < n; ++k)
              SPIRALPIR_UNROLL
              for (unsigned c = 0; c < n; ++c)
                SPIRALPIR_UNROLL
                for (std::size_t h = 0; h < W; ++h)
                  a[b][r][c][h] = _mm256_add_epi64(a[b][r][c][h], _mm256_mul_epu32(qv[r * n + k][h], v[k * n + c][h]));
        }
      } else {  // a query vector loaded (from L1) where it is used
        SPIRALPIR_UNROLL
        for (std::size_t b = 0; b < BC; ++b)
          SPIRALPIR_UNROLL
          for (unsigned k = 0; k < n; ++k) {
            __m256i v[CG][W];
            SPIRALPIR_UNROLL
            for (unsigned c = 0; c < CG; ++c)
              load_half<W, false>(wi + ((B0 + b) * NN + k * n + C0 + c) * W * kLanes, v[c]);
            SPIRALPIR_UNROLL
            for (unsigned r = 0; r <= n; ++r) {
              __m256i qv[W];
              load_half<W, QR::aligned>(qi + (r * n + k) * W * kLanes, qv);
              SPIRALPIR_UNROLL
              for (unsigned c = 0; c < CG; ++c)
                SPIRALPIR_UNROLL
                for (std::size_t h = 0; h < W; ++h)
                  a[b][r][c][h] = _mm256_add_epi64(a[b][r][c][h], _mm256_mul_epu32(qv[h], v[c][h]));
            }
          }
      }
    }
    SPIRALPIR_UNROLL
    for (std::size_t b = 0; b < BC; ++b)
      SPIRALPIR_UNROLL
      for (unsigned r = 0; r <= n; ++r)
        SPIRALPIR_UNROLL
        for (unsigned c = 0; c < CG; ++c)
          SPIRALPIR_UNROLL
          for (std::size_t h = 0; h < W; ++h) _mm256_store_si256(at(B0 + b, r, C0 + c, h), a[b][r][c][h]);
    return since;
  }

  /// kernel_avx2 for every (half, block group, column group) from the given one on, in turn over
  /// the same piece
  template <std::size_t W, std::size_t NB, std::size_t HF, std::size_t B0, unsigned C0, class QR>
  __attribute__((target("avx2"), always_inline)) static inline std::size_t groups_avx2(std::uint64_t* acc, const QR& q,
                                                                                       std::size_t i0, const std::uint32_t* w,
                                                                                       std::size_t count, const std::uint32_t* next,
                                                                                       std::size_t since, std::size_t g) {
    constexpr unsigned CG = std::min<unsigned>(column_group_avx2(W), n - C0);
    constexpr std::size_t BC = block_group_avx2(W, NB);
    const std::size_t after = kernel_avx2<W, NB, HF, B0, BC, C0, CG>(acc, q, i0, w, count, next, since, g);
    if constexpr (C0 + CG < n)
      groups_avx2<W, NB, HF, B0, C0 + CG>(acc, q, i0, w, count, next, since, g);
    else if constexpr (B0 + BC < NB)
      groups_avx2<W, NB, HF, B0 + BC, 0>(acc, q, i0, w, count, next, since, g);
    else if constexpr (HF == 0)
      groups_avx2<W, NB, 1, 0, 0>(acc, q, i0, w, count, next, since, g);
    return after;
  }

  /// One task's passes (AVX2) over i in [lo, hi), in task_avx512's order
  template <std::size_t W, class QR>
  __attribute__((target("avx2"))) static void task_avx2(std::uint64_t* accs, const QR& q, const DB& db, std::size_t inst,
                                                        std::size_t g, std::size_t zt, std::size_t lo, std::size_t hi) {
    walk_passes<W>(accs, db, inst, g, zt, lo, hi,
                   [&](std::uint64_t* acc, std::size_t i0, const std::uint32_t* w, std::size_t count,
                       const std::uint32_t* next, std::size_t since) __attribute__((target("avx2"))) {
                     return groups_avx2<W, DB::jblock(W), 0, 0, 0>(acc, q, i0, w, count, next, since, g);
                   });
  }
#undef SPIRALPIR_UNROLL
#endif

  /// The final reduction of 8 accumulators (any u64) runs in vectors for a prime p > 2^21 whose
  /// one fold lands below 2^52, where a double holds it exactly (30-bit NTT primes: 2^32 mod p <
  /// 2^21); reduce_lanes_avx512 explains the bounds.
  static constexpr bool vector_reducible(std::size_t prime) {
    return fold_bound(prime) < (std::uint64_t{1} << 52) && R::primes[prime] > (std::uint64_t{1} << 21);
  }

  /// dst[lane] = acc[lane] mod p for 8 slots (dst 64-byte aligned): the AVX-512 path reduces in
  /// vectors where it can and stores streaming — the outputs are written once and read by the
  /// next stage much later, so reading their lines first (a cache miss per line of a fresh,
  /// answer-sized output) would only cost time. (Scalar, this epilogue was 6% of vanilla's
  /// first dimension at 2^14 × 100 KB.)
  static void reduce_store(std::uint64_t* dst, std::uint64_t* acc, std::size_t prime, [[maybe_unused]] Path path) {
#ifdef SPIRALPIR_FIRSTDIM_X86
    const bool avx512 = path == Path::avx512;
    if (avx512 && vector_reducible(prime)) return reduce_stream_avx512(dst, acc, prime);
#endif
    const std::uint64_t p = R::primes[prime], m = kU64Max / p;
    for (std::size_t l = 0; l < kLanes; ++l) acc[l] = reduce_exact(acc[l], p, m);
#ifdef SPIRALPIR_FIRSTDIM_X86
    if (avx512) return stream_store(dst, acc);
#endif
    for (std::size_t l = 0; l < kLanes; ++l) dst[l] = acc[l];
  }
#ifdef SPIRALPIR_FIRSTDIM_X86
  __attribute__((target("avx512f"))) static void stream_store(std::uint64_t* dst, const std::uint64_t* src) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), _mm512_load_si512(src));
  }
  /// 8 values x mod p for vector_reducible(prime): one fold f ≤ fold_bound < 2^52 (exact as a
  /// double), then the quotient estimate ⌊f·(1/p)⌋ with two roundings (relative error < 2^-52).
  /// The quotient is < 2^31, a vpmuludq operand (p > 2^21). The estimate never reaches k + 1 for
  /// the true quotient k: f/p ≤ k + 1 − 1/p, and the overestimate is < (f/p)·2^-52 < 1/p since
  /// f < 2^52. It may fall one short (f a multiple of p, or just above one) but not two, so the
  /// remainder f − q·p lies in [0, 2p): one correction r ↦ min(r, r − p) (wrapping u64).
  __attribute__((target("avx512f,avx512dq"))) static __m512i reduce_lanes_avx512(__m512i x, std::size_t prime) {
    const __m512i p = _mm512_set1_epi64(static_cast<long long>(R::primes[prime]));
    const __m512i c = _mm512_set1_epi64(static_cast<long long>(fold_const(prime)));
    const __m512i f = _mm512_add_epi64(_mm512_and_si512(x, _mm512_set1_epi64(0xffffffffLL)),
                                       _mm512_maskz_mul_epu32(0xFF, _mm512_maskz_srli_epi64(0xFF, x, 32), c));
    const __m512d est = _mm512_mul_pd(_mm512_cvtepu64_pd(f), _mm512_set1_pd(1.0 / static_cast<double>(R::primes[prime])));
    const __m512i q = _mm512_cvttpd_epu64(_mm512_maskz_roundscale_pd(0xFF, est, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
    const __m512i r = _mm512_sub_epi64(f, _mm512_maskz_mul_epu32(0xFF, q, p));
    return _mm512_maskz_min_epu64(0xFF, r, _mm512_sub_epi64(r, p));
  }
  __attribute__((target("avx512f,avx512dq"))) static void reduce_stream_avx512(std::uint64_t* dst, const std::uint64_t* acc,
                                                                               std::size_t prime) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), reduce_lanes_avx512(_mm512_load_si512(acc), prime));
  }
#endif

  /// the fastest kernel this process may run: AVX-512, else AVX2, else the portable one
  static Path kernel_path() {
#ifdef SPIRALPIR_FIRSTDIM_X86
    return active_path();
#else
    return Path::native;
#endif
  }

  /// out[inst·J + j] for every instance and j, from the query matrices (tiled first)
  static std::vector<MatN> run(const std::vector<MatN>& first_mats, const DB& db, unsigned threads,
                               Path path = kernel_path()) {
    return run(tile(first_mats, threads), db, threads, path);
  }

  /// out[inst·J + j] for every instance and j, by the kernel of `path` (available: kernel_path()
  /// or a slower one; native is the portable kernel).
  /// Tasks (inst, g, zt): each streams its slice of the database against its slice of the query.
  /// Tile-major (instance innermost), so the instances' tasks of one tile find its query slice in
  /// L2 instead of re-reading it from memory; an implicit benchmark database is walked
  /// instance-major instead, since tile-major would re-read its repeated instances from cache.
  static std::vector<MatN> run(const Query& query, const DB& db, unsigned threads, Path path = kernel_path()) {
    return run_blocks(query, db, threads, 1, path);
  }
  /// run() from the tiled query of a parameter type of the same query shape (I, n, primes, d) and
  /// another J: a shard's database (shard.hpp) has fewer folding indices than the query's type
  template <class Q>
  static std::vector<MatN> run_tiled(const Q& query, const DB& db, unsigned threads, Path path = kernel_path()) {
    return run_blocks(query, db, threads, 1, path);
  }

  /// The first dimension split into `blocks` equal ranges of i (row blocks; blocks | 2^nu_1):
  /// out[(b·instances + inst)·J + j] = Σ_{i in block b} C_i · D[i][j]. The same multiply-adds as
  /// run(), in the same tasks (each walks its slice of the database once, block after block);
  /// blocks = 1 is run(). A query with one selected row per block gets every block's plaintext
  /// of one column from one pass (the keyword table's candidate bins, FORMATS.md §11). Q: this
  /// type's Query or that of a type of the same query shape (run_tiled).
  template <class Q>
  static std::vector<MatN> run_blocks(const Q& query, const DB& db, unsigned threads, std::size_t blocks,
                                      Path path = kernel_path()) {
    static_assert(Q::words == Query::words, "first dimension: the query's shape differs from the database's");
    if (query.empty()) throw ArgumentError("first dimension: empty query");
    if (blocks == 0 || blocks > I || I % blocks != 0)
      throw ArgumentError("first dimension: " + std::to_string(blocks) + " row blocks do not divide the " +
                          std::to_string(I) + " rows");
    const std::size_t rows = I / blocks, per = D::instances * J;
    std::vector<MatN> out;  // every word is written by the tasks below: not zeroed first
    out.reserve(blocks * per);
    for (std::size_t x = 0; x < blocks * per; ++x) out.push_back(MatN::uninitialised(n + 1, n));
#ifndef SPIRALPIR_FIRSTDIM_X86
    path = Path::native;
#endif
    if (path != Path::native && !path_available(path))
      throw ArgumentError(std::string("first dimension: kernel path ") + path_name(path) + " is not available: " +
                          path_missing(path));
    const bool instance_major = db.implicit();
    parallel_for(threads, D::instances * NG * ZT, [&](std::size_t task) {
      const std::size_t inst = instance_major ? task / (NG * ZT) : task % D::instances;
      const std::size_t tile_index = instance_major ? task % (NG * ZT) : task / D::instances;
      const std::size_t g = tile_index / ZT, zt = tile_index % ZT;
      const std::size_t wd = DB::width(g), nb = DB::jblock(wd);
      const auto qz = query.rows(g, zt);
      const std::size_t per_block = nb * RK * wd * kLanes;  // accumulator words of one block
      thread_local AlignedBuffer<std::uint64_t> acc_buf;     // every block's, J·RK·W·8 words
      if (acc_buf.size() < J * RK * kMaxW * kLanes) acc_buf = AlignedBuffer<std::uint64_t>(J * RK * kMaxW * kLanes);
      std::uint64_t* const accs = acc_buf.data();
      for (std::size_t blk = 0; blk < blocks; ++blk) {
        // the block's stored rows (none past IS: those rows' plaintexts are zero)
        const std::size_t lo = std::min(blk * rows, IS), hi = std::min(lo + rows, IS);
#ifdef SPIRALPIR_FIRSTDIM_X86
        if (path == Path::avx512) {
          if (wd == 2) {
            if constexpr (kMaxW == 2) task_avx512<2>(accs, qz, db, inst, g, zt, lo, hi);
          } else if constexpr (NP % 2 == 1) {
            task_avx512<1>(accs, qz, db, inst, g, zt, lo, hi);
          }
        } else if (path == Path::avx2) {
          if (wd == 2) {
            if constexpr (kMaxW == 2) task_avx2<2>(accs, qz, db, inst, g, zt, lo, hi);
          } else if constexpr (NP % 2 == 1) {
            task_avx2<1>(accs, qz, db, inst, g, zt, lo, hi);
          }
        } else
#endif
        {
          for (std::size_t j0 = 0; j0 < J; j0 += nb) {
            std::uint64_t* acc = accs + (j0 / nb) * per_block;
            std::fill(acc, acc + per_block, std::uint64_t{0});
            for (std::size_t i0 = lo; i0 < hi; i0 += kChunk) {
              const std::size_t i1 = std::min(hi, i0 + kChunk);
              kernel_portable(acc, qz, db.block_words(inst, g, zt, j0), wd, nb, i0, i1);
              if (i1 < hi) squeeze(acc, g, nb);
            }
          }
        }
        for (std::size_t j0 = 0; j0 < J; j0 += nb) {
          std::uint64_t* const acc = accs + (j0 / nb) * per_block;
          for (std::size_t b = 0; b < nb; ++b) {
            MatN& o = out[blk * per + inst * J + j0 + b];
            for (unsigned r = 0; r <= n; ++r)
              for (unsigned c = 0; c < n; ++c)
                for (std::size_t h = 0; h < wd; ++h) {
                  const std::size_t prime = DB::group_prime(g) + h;
                  reduce_store(o.at(r, c).residue(prime) + zt * kLanes, acc + ((b * RK + r * n + c) * wd + h) * kLanes,
                               prime, path);
                }
          }
        }
      }
#ifdef SPIRALPIR_FIRSTDIM_X86
      if (path == Path::avx512) _mm_sfence();  // order the streaming stores before the task counts as done
#endif
    });
    return out;
  }
};

}  // namespace spiralpir
