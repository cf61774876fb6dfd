// spiralpir/spiral/shard_split.hpp — a query's preparation (expansion, conversion, tiling)
// split between the 2^S shards of shard.hpp instead of repeated on every one: shard s computes
// its share (QuerySplit, stages.hpp: the first-dimension rows i ≡ s and the GSW digits g ≡ s,
// mod 2^S) and every shard answers from all 2^S shares, read in place. Every ct is computed by
// the same deterministic step as in the one-process server, so the assembled query is the one
// Server<P> prepares, word for word.
//
// Share (ObjectKind::shard_share, FORMATS.md §12): header (params hash of P, aux 0), then u8 S,
// u8 0, u16 0, u32 shard index s, the tiled first-dimension rows i ≡ s (FirstDim::Query's layout
// with 2^(nu_1−S) rows, row i as row i >> S), then for each digit g ≡ s in ascending order the
// (n_c+1)×(n_c+1) polynomials it fills in GSW ct g / t_gsw (rows 0..n_c of column k and of
// columns (c+1)·t_gsw + k, c < n_c, k = g mod t_gsw), NTT domain; u32 little-endian words.
// The assembling shard checks headers, lengths and the set of shares, not the residues: the
// shares are the deployment's own, made from a client query that their makers checked.
#pragma once

#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "spiralpir/core/aligned.hpp"
#include "spiralpir/spiral/prepared.hpp"

namespace spiralpir {

template <SpiralParams P>
struct ShardSplit {
  using V = VariantOf<P>;
  using C = typename V::Comp;
  using R = typename P::ring;
  using MatN = rlwe::MatN<R>;
  using FD = FirstDim<C>;
  using QP = QueryPreparation<P>;
  static_assert(std::endian::native == std::endian::little, "shares are written as native u32 words");
  static constexpr unsigned n = C::n;
  static constexpr std::size_t poly_words = R::num_primes * R::poly_len;
  static constexpr std::size_t digit_words = std::size_t{n + 1} * (n + 1) * poly_words;
  static constexpr std::uint64_t num_digits = Derived<C>::num_gsw_digits;

  static std::uint64_t digits(unsigned bits, unsigned part) {
    return num_digits > part ? (num_digits - part + (std::uint64_t{1} << bits) - 1) >> bits : 0;
  }
  static std::uint64_t payload(unsigned bits, unsigned part) {
    return 8 + ((FD::Query::words >> bits) + digits(bits, part) * digit_words) * 4;
  }
  static void check_split(unsigned bits, unsigned part) {
    if (bits < 1 || bits > C::nu_1 || part >= (1u << bits))
      throw ArgumentError("shard share: S = " + std::to_string(bits) + ", shard " + std::to_string(part) +
                          " out of range (nu_1 = " + std::to_string(C::nu_1) + ")");
  }
  /// the column of GSW ct g / t_gsw that digit g fills in block c (0: RegevToGSW, 1..n: ScalToMat)
  static unsigned digit_col(std::uint64_t g, unsigned c) {
    return static_cast<unsigned>(c * P::t_gsw + g % P::t_gsw);
  }

  /// Writes shard `part`'s share of the query's preparation at out (kHeaderBytes + payload bytes,
  /// 4-byte aligned); seconds2 (optional): expansion (parse included), conversion and tiling.
  static void prepare(const PublicParams<P>& pp, const std::uint8_t* query, std::size_t len, unsigned bits,
                      unsigned part, unsigned threads, std::uint8_t* out, std::size_t out_len, double* seconds2) {
    check_split(bits, part);
    if (out == nullptr || reinterpret_cast<std::uintptr_t>(out) % 4 != 0 ||
        out_len != kHeaderBytes + payload(bits, part))
      throw ArgumentError("shard share: output buffer of " + std::to_string(out_len) + " bytes, " +
                          std::to_string(kHeaderBytes + payload(bits, part)) + " 4-byte aligned expected");
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    const QuerySplit split{bits, part};
    std::vector<RegevCt<R>> first, digit_cts;
    std::vector<MatN> direct, first_mats, gsw;
    QP::expanded(pp, query, len, threads, first, digit_cts, direct, split);
    const auto t1 = clock::now();
    ServerStages<C>::convert(first, digit_cts, pp.keys().comp, threads, first_mats, gsw, split);
    if constexpr (V::direct_first) first_mats = std::move(direct);
    write_header<P>(out, ObjectKind::shard_share, payload(bits, part));
    std::uint8_t* w = out + kHeaderBytes;
    std::memset(w, 0, 8);
    w[0] = static_cast<std::uint8_t>(bits);
    detail::put_le(w + 4, part, 4);
    auto* words = reinterpret_cast<std::uint32_t*>(w + 8);
    FD::tile_rows(first_mats, bits, part, words, threads);
    words += FD::Query::words >> bits;
    for (std::uint64_t g = part; g < num_digits; g += std::uint64_t{1} << bits)
      for (unsigned c = 0; c <= n; ++c)
        for (unsigned row = 0; row <= n; ++row, words += poly_words) {
          const std::uint64_t* x = gsw[g / P::t_gsw].at(row, digit_col(g, c)).data();
          for (std::size_t k = 0; k < poly_words; ++k) words[k] = static_cast<std::uint32_t>(x[k]);
        }
    if (seconds2) {
      seconds2[0] = std::chrono::duration<double>(t1 - t0).count();
      seconds2[1] = std::chrono::duration<double>(clock::now() - t1).count();
    }
  }

  /// The first dimension's query read in place from the shares (FirstDim::run_tiled's Q): row i
  /// of slice (g, zt) is row i >> S of that slice in share i mod 2^S; the kernels load each row
  /// where it lies, unaligned (a share's rows start 40 bytes into its buffer). Assembling the
  /// slices in a buffer first took 2.2 ms of the first dimension's 44 at 2^20 × 256 B (128-byte
  /// rows, two shares, one thread).
  class SharesQuery {
   public:
    static constexpr std::size_t words = FD::Query::words;
    struct Rows {
      static constexpr bool aligned = false;
      const std::uint32_t* const* shares;
      std::size_t offset, stride, mask;
      unsigned bits;
      const std::uint32_t* operator()(std::size_t i) const { return shares[i & mask] + offset + (i >> bits) * stride; }
    };
    SharesQuery(std::vector<const std::uint32_t*> rows, unsigned bits) : rows_(std::move(rows)), bits_(bits) {}
    bool empty() const { return rows_.empty(); }
    Rows rows(std::size_t g, std::size_t zt) const {
      const std::size_t stride = FD::Query::row_words(g);
      return {rows_.data(), FD::Query::offset(g, zt, FD::I >> bits_), stride, (std::size_t{1} << bits_) - 1, bits_};
    }

   private:
    std::vector<const std::uint32_t*> rows_;
    unsigned bits_;
  };

  struct Assembled {
    SharesQuery first;
    std::vector<MatN> gsw;  // nu_2 GSW cts
  };

  /// The prepared query (no packing keys: a shard does not pack) from the 2^S shares of it, in
  /// any order; the shares must outlive it.
  static Assembled assemble(const std::uint8_t* const* shares, const std::size_t* lens, std::size_t count,
                            unsigned bits, unsigned threads) {
    if (count != (std::size_t{1} << bits) || shares == nullptr || lens == nullptr)
      throw ArgumentError("shard shares: " + std::to_string(count) + " for 2^" + std::to_string(bits) + " shards");
    std::vector<const std::uint32_t*> rows(count, nullptr), cols(count, nullptr);
    for (std::size_t x = 0; x < count; ++x) {
      const std::uint8_t* b = shares[x];
      if (b == nullptr || lens[x] < kHeaderBytes + 8) throw FormatError("shard query share: truncated");
      if (reinterpret_cast<std::uintptr_t>(b) % 4 != 0) throw ArgumentError("shard query share: not 4-byte aligned");
      const unsigned S = b[kHeaderBytes], part = static_cast<unsigned>(detail::get_le(b + kHeaderBytes + 4, 4));
      if (S != bits || part >= count || rows[part] != nullptr)
        throw ArgumentError("shard shares: a share of shard " + std::to_string(part) + " of 2^" + std::to_string(S) +
                            " among shares for 2^" + std::to_string(bits) + " shards, or one shard's twice");
      check_header<P>(b, lens[x], ObjectKind::shard_share, payload(bits, part));
      rows[part] = reinterpret_cast<const std::uint32_t*>(b + kHeaderBytes + 8);
      cols[part] = rows[part] + (FD::Query::words >> bits);
    }
    Assembled pq{SharesQuery(rows, bits), std::vector<MatN>(C::nu_2)};
    parallel_for(threads, C::nu_2, [&](std::size_t f) {
      MatN m = MatN::uninitialised(n + 1, (n + 1) * P::t_gsw);  // every column is some digit's
      for (std::uint64_t g = f * P::t_gsw; g < (f + 1) * P::t_gsw; ++g) {
        const std::uint32_t* src = cols[g % count] + (g >> bits) * digit_words;
        for (unsigned c = 0; c <= n; ++c)
          for (unsigned row = 0; row <= n; ++row, src += poly_words) {
            std::uint64_t* x = m.at(row, digit_col(g, c)).data();
            for (std::size_t k = 0; k < poly_words; ++k) x[k] = src[k];
          }
      }
      pq.gsw[f] = std::move(m);
    });
    return pq;
  }
};

}  // namespace spiralpir
