// spiralpir/spiral/first_dim.hpp — the first-dimension hot loop: for every instance and folding index j,
// out[j] = Σ_{i < 2^nu_1} C_i · D[i][j] with C_i the (n+1)×n matrix Regev query cts and D the
// n×n plaintexts, all in NTT/CRT form (database.hpp gives the word layout).
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
// Two kernels compute the same values: AVX-512F (spiral/first_dim_kernels.hpp, compiled in the
// runtime library with its AVX-512 flags; used only when path_available(Path::avx512), i.e.
// compiled in, supported by the CPU and not disabled by SPIRALPIR_DISABLE_AVX512=1) and a
// portable one here (a template over the parameters, like the rest of the protocol).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "spiralpir/core/cpu_features.hpp"
#include "spiralpir/spiral/database.hpp"
#include "spiralpir/spiral/first_dim_kernels.hpp"

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
  static constexpr std::size_t kMaxW = NP >= 2 ? 2 : 1;

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
    static constexpr std::size_t offset(std::size_t g, std::size_t zt) {
      return I * RK * kLanes * (ZT * DB::group_prime(g) + zt * DB::width(g));
    }
    bool empty() const { return storage_.data() == nullptr; }
    const std::uint32_t* slice(std::size_t g, std::size_t zt) const { return storage_.data() + offset(g, zt); }

   private:
    friend struct FirstDim;
    DbStorage storage_;
  };

  /// the query matrices (2^nu_1 of them, (n+1)×n, NTT/CRT form) in the kernel's order
  static Query tile(const std::vector<MatN>& first_mats, unsigned threads) {
    if (first_mats.size() != I) throw ArgumentError("first dimension: expected 2^nu_1 query matrices");
    Query q;
    q.storage_ = DbStorage(Query::words);
    std::uint32_t* const base = q.storage_.data();
    // one task per i: its polynomials are read sequentially, the W residues of 8 slots written
    // together (whole lines: no partial-line writes)
    parallel_for(threads, I, [&](std::size_t i) {
      for (std::size_t rk = 0; rk < RK; ++rk) {
        const auto& poly = first_mats[i].at(static_cast<unsigned>(rk / n), static_cast<unsigned>(rk % n));
        for (std::size_t g = 0; g < NG; ++g) {
          const std::size_t w = DB::width(g), stride = I * RK * w * kLanes;  // from tile zt to zt + 1
          const std::uint64_t* src[kMaxW] = {};
          for (std::size_t h = 0; h < w; ++h) src[h] = poly.residue(DB::group_prime(g) + h);
          std::uint32_t* dst = base + Query::offset(g, 0) + (i * RK + rk) * w * kLanes;
          for (std::size_t zt = 0; zt < ZT; ++zt, dst += stride)
            for (std::size_t l = 0; l < kLanes; ++l)
              for (std::size_t h = 0; h < w; ++h) dst[l * w + h] = static_cast<std::uint32_t>(src[h][zt * kLanes + l]);
        }
      }
    });
    return q;
  }

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
  static void kernel_portable(std::uint64_t* acc, const std::uint32_t* q, const std::uint32_t* w, std::size_t wd,
                              std::size_t nb, std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) {
      const std::uint32_t* qi = q + i * RK * wd * kLanes;
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

  /// query bytes of one pass of the AVX-512 task: L1 holds them beside the database stream
  static constexpr std::size_t kPassBytes = 8192;
  static constexpr std::size_t pass_len(std::size_t w) {
    const std::size_t fit = kPassBytes / (RK * w * kLanes * 4);
    return std::min(fit == 0 ? std::size_t{1} : fit, I);
  }
  /// The final reduction of 8 accumulators (any u64) runs in vectors for a prime p > 2^21 whose
  /// one fold lands below 2^52, where a double holds it exactly (30-bit NTT primes: 2^32 mod p <
  /// 2^21); reduce_lanes in src/first_dim_avx512.cpp explains the bounds.
  static constexpr bool vector_reducible(std::size_t prime) {
    return fold_bound(prime) < (std::uint64_t{1} << 52) && R::primes[prime] > (std::uint64_t{1} << 21);
  }

  /// dst[lane] = acc[lane] mod p for 8 slots (dst 64-byte aligned): the AVX-512 path reduces in
  /// vectors where it can and stores streaming — the outputs are written once and read by the
  /// next stage much later, so reading their lines first (a cache miss per line of a fresh,
  /// answer-sized output) would only cost time. (Scalar, this epilogue was 6% of vanilla's
  /// first dimension at 2^14 × 100 KB.)
  static void reduce_store(std::uint64_t* dst, std::uint64_t* acc, std::size_t prime, bool avx512) {
    if (avx512 && vector_reducible(prime))
      return first_dim_reduce_store_avx512(dst, acc, R::primes[prime], fold_const(prime));
    const std::uint64_t p = R::primes[prime], m = kU64Max / p;
    for (std::size_t l = 0; l < kLanes; ++l) acc[l] = reduce_exact(acc[l], p, m);
    if (avx512) return first_dim_stream_store_avx512(dst, acc);
    for (std::size_t l = 0; l < kLanes; ++l) dst[l] = acc[l];
  }
  static bool use_avx512() {
    static const bool ok = path_available(Path::avx512);
    return ok;
  }

  /// the shape of task (g) for the AVX-512 kernel
  static FirstDimTask avx512_task(std::size_t g) {
    FirstDimTask t;
    t.n = n;
    t.w = DB::width(g);
    t.nb = DB::jblock(t.w);
    t.I = I;
    t.J = J;
    t.pass = pass_len(t.w);
    t.chunk = kChunk;
    t.fold = kFold;
    for (std::size_t h = 0; h < t.w; ++h) {
      t.prime[h] = R::primes[DB::group_prime(g) + h];
      t.fold_const[h] = fold_const(DB::group_prime(g) + h);
      t.vector_reduce[h] = vector_reducible(DB::group_prime(g) + h);
    }
    return t;
  }

  /// out[inst·J + j] for every instance and j, from the query matrices (tiled first)
  static std::vector<MatN> run(const std::vector<MatN>& first_mats, const DB& db, unsigned threads,
                               bool avx512 = use_avx512()) {
    return run(tile(first_mats, threads), db, threads, avx512);
  }

  /// out[inst·J + j] for every instance and j; `avx512` = false forces the portable kernel.
  /// Tasks (inst, g, zt): each streams its slice of the database against its slice of the query.
  /// Tile-major (instance innermost), so the instances' tasks of one tile find its query slice in
  /// L2 instead of re-reading it from memory; an implicit benchmark database is walked
  /// instance-major instead, since tile-major would re-read its repeated instances from cache.
  static std::vector<MatN> run(const Query& query, const DB& db, unsigned threads, bool avx512 = use_avx512()) {
    if (query.empty()) throw ArgumentError("first dimension: empty query");
    std::vector<MatN> out;  // every word is written by the tasks below: not zeroed first
    out.reserve(D::instances * J);
    for (std::size_t x = 0; x < D::instances * J; ++x) out.push_back(MatN::uninitialised(n + 1, n));
    const bool instance_major = db.implicit();
    FirstDimTask tasks[NG];
    for (std::size_t g = 0; g < NG; ++g) tasks[g] = avx512_task(g);
    parallel_for(threads, D::instances * NG * ZT, [&](std::size_t task) {
      const std::size_t inst = instance_major ? task / (NG * ZT) : task % D::instances;
      const std::size_t tile_index = instance_major ? task % (NG * ZT) : task / D::instances;
      const std::size_t g = tile_index / ZT, zt = tile_index % ZT;
      const std::size_t wd = DB::width(g), nb = DB::jblock(wd);
      const std::uint32_t* qz = query.slice(g, zt);
      const std::size_t per_block = nb * RK * wd * kLanes;  // accumulator words of one block
      thread_local AlignedBuffer<std::uint64_t> acc_buf;     // every block's, J·RK·W·8 words
      if (acc_buf.size() < J * RK * kMaxW * kLanes) acc_buf = AlignedBuffer<std::uint64_t>(J * RK * kMaxW * kLanes);
      std::uint64_t* const accs = acc_buf.data();
      if (avx512) {
        // the accumulators of (j, entry x, prime h) lie at accs + ((j·RK + x)·wd + h)·8: reduce and
        // store them all in one call
        thread_local std::vector<const std::uint32_t*> blocks;
        thread_local std::vector<std::uint64_t*> dst;
        blocks.resize(J / nb);
        for (std::size_t j0 = 0; j0 < J; j0 += nb) blocks[j0 / nb] = db.block_words(inst, g, zt, j0);
        first_dim_task_avx512(tasks[g], accs, qz, blocks.data());
        dst.resize(J * RK * wd);
        for (std::size_t j = 0; j < J; ++j)
          for (unsigned r = 0; r <= n; ++r)
            for (unsigned c = 0; c < n; ++c)
              for (std::size_t h = 0; h < wd; ++h)
                dst[(j * RK + r * n + c) * wd + h] =
                    out[inst * J + j].at(r, c).residue(DB::group_prime(g) + h) + zt * kLanes;
        first_dim_reduce_store_task_avx512(tasks[g], accs, dst.data(), dst.size());
        return;
      }
      for (std::size_t j0 = 0; j0 < J; j0 += nb) {
        std::uint64_t* acc = accs + (j0 / nb) * per_block;
        std::fill(acc, acc + per_block, std::uint64_t{0});
        for (std::size_t i0 = 0; i0 < I; i0 += kChunk) {
          const std::size_t i1 = std::min(I, i0 + kChunk);
          kernel_portable(acc, qz, db.block_words(inst, g, zt, j0), wd, nb, i0, i1);
          if (i1 < I) squeeze(acc, g, nb);
        }
      }
      for (std::size_t j0 = 0; j0 < J; j0 += nb) {
        std::uint64_t* const acc = accs + (j0 / nb) * per_block;
        for (std::size_t b = 0; b < nb; ++b) {
          MatN& o = out[inst * J + j0 + b];
          for (unsigned r = 0; r <= n; ++r)
            for (unsigned c = 0; c < n; ++c)
              for (std::size_t h = 0; h < wd; ++h) {
                const std::size_t prime = DB::group_prime(g) + h;
                reduce_store(o.at(r, c).residue(prime) + zt * kLanes, acc + ((b * RK + r * n + c) * wd + h) * kLanes, prime,
                             false);
              }
        }
      }
    });
    return out;
  }
};

}  // namespace spiralpir
