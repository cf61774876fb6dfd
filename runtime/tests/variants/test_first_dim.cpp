// First-dimension kernel (first_dim.hpp) over the preprocessed word layout (database.hpp), for
// every shape the variants use: n = 1 (Pack / StreamPack compute with n = 1), n = 2, 3; two
// primes (one paired 64-bit word), one prime, three primes (a pair and a single); 28/26-bit
// primes (long lazy chunks), 30-bit primes (a fold every 16/n values of i), a 31-bit prime whose
// 2^32 mod p is too large to fold (exact reduction between chunks); implicit (cyclic) databases.
// Every case: random database and query, every kernel path the CPU has (AVX-512, AVX2, portable)
// at 1 and 2 threads, each against an independent schoolbook sum mod p. Plus the worst case of the
// lazy bound (every query and database residue = p − 1) and the database file checks (format
// version 3 and residues of both halves of a paired word). Partial hypercubes: only the first
// rows_stored rows are stored and summed (the reference sums exactly those).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "spiralpir/spiral/first_dim.hpp"
#include "spiralpir/arith/random.hpp"
#include "spiralpir/testing/gtest_seed.hpp"
#include "../protocol/test_params.hpp"

namespace spiralpir {
namespace {

using Base = testing::insecure_spiral_2e20x256b;

template <class Ring, unsigned N, unsigned Nu1, unsigned Nu2, std::uint64_t Inst = 1, std::uint64_t Rows = 0>
struct FdParams : Base {
  using ring = Ring;
  static constexpr unsigned n = N, nu_1 = Nu1, nu_2 = Nu2;
  static constexpr unsigned t_gsw = 4, t_conv = 4, t_exp_left = 4, t_exp_right = 8;
  static constexpr std::uint64_t instances = Inst;
  // one item per plaintext (instances == 1) or an item spread over Inst plaintexts
  static constexpr std::uint64_t db_item_size =
      Inst == 1 ? 16 : (Inst - 1) * (std::uint64_t{N} * N * Ring::poly_len * 8 / 8) + 8;
  static constexpr std::uint64_t num_records = 1, record_size = 1;
  // every row (Rows = 0) or the first Rows: random plaintexts fill each stored row
  static constexpr std::uint64_t rows_stored = Rows == 0 ? std::uint64_t{1} << Nu1 : Rows;
};

using Ring2 = RingSpec<1024, 268369921ULL, 67104769ULL>;            // 28 + 26 bits: long chunks
using Ring30 = RingSpec<1024, 1073707009ULL, 268369921ULL>;          // 30-bit: a fold every 16/n values of i
using Ring1 = RingSpec<1024, 268369921ULL>;                          // one prime: a single group
using Ring3 = RingSpec<1024, 268369921ULL, 67104769ULL, 1073707009ULL>;  // a pair and a single
using RingBig = RingSpec<1024, 2148468737ULL>;                       // 2^32 mod p ≈ 2^31: no fold

template <SpiralParams P>
struct Case {
  using R = typename P::ring;
  using FD = FirstDim<P>;
  using DB = Database<P>;
  using MatN = rlwe::MatN<R>;
  static constexpr std::size_t I = FD::I, IS = DB::I, J = FD::J, n = P::n, inst = Derived<P>::instances;

  Seed seed = testing::test_seed_here("case");
  std::vector<MatN> q;
  Case() {
    Csprng rng(seed, 1);
    for (std::size_t i = 0; i < I; ++i) {
      MatN m(n + 1, n);
      for (unsigned r = 0; r <= n; ++r)
        for (unsigned k = 0; k < n; ++k)
          for (std::size_t pr = 0; pr < R::num_primes; ++pr)
            for (std::size_t z = 0; z < R::poly_len; ++z) m.at(r, k).residue(pr)[z] = rng.uniform_mod(R::primes[pr]);
      q.push_back(std::move(m));
    }
  }
  typename DB::PlaintextSource source() const {
    const Seed s = seed;
    return [s](std::uint64_t in, std::uint64_t pt, std::uint8_t* out) {
      Csprng g(s, 2 + in * Derived<P>::num_pts + pt);
      g.fill(out, DB::pt_bytes);
    };
  }
  /// schoolbook Σ_i Σ_k Q_i(r,k)·D(inst, i, j)(k,c) mod p per slot, for physical plaintexts
  /// (inst mod pinst, i, j mod pj)
  std::vector<MatN> reference(std::size_t pinst, std::size_t pj) const {
    std::vector<MatN> out(inst * J, MatN(n + 1, n));
    std::vector<std::uint8_t> bytes(DB::pt_bytes);
    const auto src = source();
    for (std::size_t in = 0; in < inst; ++in)
      for (std::size_t j = 0; j < J; ++j)
        for (std::size_t i = 0; i < IS; ++i) {  // the rows past IS are not stored: zero
          src(in % pinst, i * J + j % pj, bytes.data());
          const auto polys = DB::plaintext_polys(bytes.data());
          std::vector<rlwe::Pn<R>> nt;
          for (const auto& p : polys) nt.push_back(to_ntt(p));
          for (unsigned r = 0; r <= n; ++r)
            for (unsigned c = 0; c < n; ++c)
              for (unsigned k = 0; k < n; ++k)
                for (std::size_t pr = 0; pr < R::num_primes; ++pr) {
                  const std::uint64_t p = R::primes[pr];
                  std::uint64_t* o = out[in * J + j].at(r, c).residue(pr);
                  const std::uint64_t* a = q[i].at(r, k).residue(pr);
                  const std::uint64_t* b = nt[k * n + c].residue(pr);
                  for (std::size_t z = 0; z < R::poly_len; ++z)
                    o[z] = static_cast<std::uint64_t>((u128{o[z]} + u128{a[z]} * b[z]) % p);
                }
        }
    return out;
  }
  static void expect_equal(const std::vector<MatN>& got, const std::vector<MatN>& want, const char* what) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t x = 0; x < got.size(); ++x)
      for (unsigned r = 0; r <= n; ++r)
        for (unsigned c = 0; c < n; ++c)
          for (std::size_t pr = 0; pr < R::num_primes; ++pr)
            ASSERT_EQ(0, std::memcmp(got[x].at(r, c).residue(pr), want[x].at(r, c).residue(pr), R::poly_len * 8))
                << what << ": output " << x << " entry (" << r << "," << c << ") prime " << pr;
  }
  /// every kernel path and thread count against the reference
  void check(std::size_t pinst = 0, std::size_t pj = 0) const {
    DB db;
    db.build(source(), 1, 2, pinst, pj);
    const auto want = reference(db.phys_instances(), db.phys_j());
    for (unsigned threads : {1u, 2u})
      for (Path path : available_paths()) expect_equal(FD::run(q, db, threads, path), want, path_name(path));
  }
};

TEST(FirstDim, N1TwoPrimes) { Case<FdParams<Ring2, 1, 4, 3>>().check(); }
TEST(FirstDim, N1OneFoldingIndexBlock) { Case<FdParams<Ring2, 1, 3, 1>>().check(); }  // J < JB
TEST(FirstDim, N2ThirtyBitPrimesFolds) { Case<FdParams<Ring30, 2, 5, 2, 2>>().check(); }
TEST(FirstDim, N1ThirtyBitPrimesFolds) { Case<FdParams<Ring30, 1, 6, 3>>().check(); }
TEST(FirstDim, N3ThreePrimes) { Case<FdParams<Ring3, 3, 2, 2>>().check(); }
TEST(FirstDim, N1OnePrime) { Case<FdParams<Ring1, 1, 3, 4>>().check(); }
// n = 4: the pair's kernel takes the columns in two groups (its one folding index per block has
// 40 accumulators), a single prime all four at once
TEST(FirstDim, N4ColumnGroups) {
  static_assert(FirstDim<FdParams<Ring2, 4, 4, 2>>::column_group(2, Database<FdParams<Ring2, 4, 4, 2>>::jblock(2)) == 2);
  static_assert(FirstDim<FdParams<Ring2, 4, 4, 2>>::column_group(1, Database<FdParams<Ring2, 4, 4, 2>>::jblock(1)) == 4);
  Case<FdParams<Ring2, 4, 4, 2>>().check();
  Case<FdParams<Ring30, 4, 5, 1>>().check();     // folds every 16/n values of i
  Case<FdParams<Ring3, 4, 3, 2, 2>>().check();   // a pair in groups and a single whole, two instances
}
TEST(FirstDim, N2NoFoldExactReduction) {
  using P = FdParams<RingBig, 2, 3, 1>;
  static_assert(!FirstDim<P>::kFold && FirstDim<P>::kChunk == 1, "this case must take the exact-reduction path");
  static_assert(FirstDim<FdParams<Ring30, 2, 5, 2, 2>>::kFold && FirstDim<FdParams<Ring30, 2, 5, 2, 2>>::kChunk == 8);
  Case<P>().check();
}
TEST(FirstDim, PartialRows) {
  static_assert(Database<FdParams<Ring2, 2, 4, 2, 1, 5>>::I == 5 && FirstDim<FdParams<Ring2, 2, 4, 2, 1, 5>>::I == 16);
  Case<FdParams<Ring2, 2, 4, 2, 1, 5>>().check();       // 5 of 16 rows, one prime pair
  Case<FdParams<Ring30, 1, 5, 3, 2, 1>>().check();      // one row of 32, two instances, folds
  Case<FdParams<Ring3, 3, 3, 1, 1, 7>>().check();       // 7 of 8, a pair and a single
  Case<FdParams<Ring2, 1, 4, 4, 3, 3>>().check(1, 1);   // implicit database over 3 stored rows
}
TEST(FirstDim, ImplicitDatabase) {
  Case<FdParams<Ring30, 1, 4, 4, 3>>().check(1, 1);  // phys_j rounded up to the block size
  Case<FdParams<Ring2, 2, 3, 3, 3>>().check(2, 4);
}

/// writes `p − 1` into every database word of a saved file (through the layout's group regions)
template <SpiralParams P>
void saturate_file(const std::string& path) {
  using DB = Database<P>;
  using R = typename P::ring;
  std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
  const std::uint64_t per_prime = std::uint64_t{DB::ZT} * DB::J * DB::I * DB::NN * kLanes;
  for (std::size_t inst = 0; inst < Derived<P>::instances; ++inst)
    for (std::size_t g = 0; g < DB::NG; ++g) {
      const std::size_t w = DB::width(g);
      std::vector<std::uint32_t> words(w * per_prime);
      for (std::size_t x = 0; x < words.size(); ++x)
        words[x] = static_cast<std::uint32_t>(R::primes[DB::group_prime(g) + x % w] - 1);
      io.seekp(static_cast<std::streamoff>(kHeaderBytes + 4 * DB::word_index(inst, g, 0, 0, 0, 0, DB::J)));
      io.write(reinterpret_cast<const char*>(words.data()), static_cast<std::streamsize>(4 * words.size()));
    }
}

/// every query and database residue p − 1: each output is I·n·(p−1)^2 ≡ I·n (mod p), with the
/// accumulators at the lazy bound's worst case in every chunk
template <SpiralParams P>
void worst_case(const char* name) {
  using C = Case<P>;
  using R = typename P::ring;
  const auto dir = std::filesystem::temp_directory_path() / ("spiralpir_fd_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / (std::string(name) + ".bin")).string();
  {
    Database<P> db;
    db.build([](std::uint64_t, std::uint64_t, std::uint8_t* out) { std::memset(out, 0, Database<P>::pt_bytes); }, 1, 2);
    db.save(path);
  }
  saturate_file<P>(path);
  Database<P> db;
  db.map(path);
  C c;
  for (auto& m : c.q)
    for (unsigned r = 0; r <= P::n; ++r)
      for (unsigned k = 0; k < P::n; ++k)
        for (std::size_t pr = 0; pr < R::num_primes; ++pr)
          for (std::size_t z = 0; z < R::poly_len; ++z) m.at(r, k).residue(pr)[z] = R::primes[pr] - 1;
  for (Path path : available_paths()) {
    const auto out = FirstDim<P>::run(c.q, db, 2, path);
    for (const auto& m : out)
      for (unsigned r = 0; r <= P::n; ++r)
        for (unsigned cc = 0; cc < P::n; ++cc)
          for (std::size_t pr = 0; pr < R::num_primes; ++pr)
            for (std::size_t z = 0; z < R::poly_len; ++z)
              ASSERT_EQ(m.at(r, cc).residue(pr)[z], (C::IS * P::n) % R::primes[pr])
                  << name << " " << path_name(path) << " prime " << pr << " slot " << z;
  }
  std::filesystem::remove_all(dir);
}

TEST(FirstDim, WorstCaseLazyBound) {
  worst_case<FdParams<Ring2, 1, 9, 1>>("n1_28bit");   // 512 values of i: two chunks of 256
  worst_case<FdParams<Ring30, 2, 5, 1>>("n2_30bit");  // chunks of 8
  worst_case<FdParams<Ring3, 3, 3, 1>>("n3_three_primes");
  worst_case<FdParams<RingBig, 2, 3, 1>>("n2_exact");
  worst_case<FdParams<Ring30, 4, 4, 1>>("n4_30bit_groups");
}

// The epilogue's exact reduction of any u64 accumulator (the vector path for 30-bit primes: a
// fold, a double-precision quotient off by at most one, two corrections) at the values where an
// off-by-one quotient or a missing correction shows: multiples of p and their neighbours from 0
// to 2^64, the fold's boundaries, all-ones, and random words.
template <SpiralParams P>
void check_final_reduction(const char* name) {
  using FD = FirstDim<P>;
  Csprng rng(testing::test_seed_here("rng"), 7);
  for (std::size_t prime = 0; prime < P::ring::num_primes; ++prime) {
    const std::uint64_t p = P::ring::primes[prime], top = ~std::uint64_t{0};
    std::vector<std::uint64_t> xs = {0, 1, p - 1, p, p + 1, 2 * p - 1, 2 * p, 0xffffffffULL, 0x100000000ULL,
                                     FD::fold_bound(prime), top, top - 1, top - p, top - top % p, top - top % p - 1};
    for (int s = 1; s < 64; ++s) {
      const std::uint64_t k = (std::uint64_t{1} << s) / p * p + (s % 7) * p;  // a multiple of p near 2^s
      for (std::uint64_t d : {std::uint64_t{0}, std::uint64_t{1}, p - 1}) xs.push_back(k + d), xs.push_back(k - 1 - d);
    }
    for (int x = 0; x < 4096; ++x) {
      std::uint64_t w = rng.next_u64();
      xs.push_back(w);
      xs.push_back(w - w % p + (x % 3 == 0 ? 0 : x % 3 == 1 ? p - 1 : 1));
    }
    while (xs.size() % kLanes != 0) xs.push_back(rng.next_u64());
    for (Path path : available_paths())
      for (std::size_t at = 0; at < xs.size(); at += kLanes) {
        alignas(64) std::uint64_t acc[kLanes], out[kLanes];
        std::copy(xs.begin() + at, xs.begin() + at + kLanes, acc);
        FD::reduce_store(out, acc, prime, path);
        for (std::size_t l = 0; l < kLanes; ++l)
          ASSERT_EQ(out[l], xs[at + l] % p) << name << " " << path_name(path) << " prime " << prime << " x " << xs[at + l];
      }
  }
}

TEST(FirstDim, FinalReductionExact) {
  static_assert(FirstDim<FdParams<Ring30, 2, 5, 2, 2>>::vector_reducible(0), "30-bit primes take the vector path");
  static_assert(!FirstDim<FdParams<RingBig, 2, 3, 1>>::vector_reducible(0), "without folding: the scalar path");
  check_final_reduction<FdParams<Ring30, 2, 5, 2, 2>>("30-bit");
  check_final_reduction<FdParams<Ring2, 1, 4, 3>>("28/26-bit");
  check_final_reduction<FdParams<RingBig, 2, 3, 1>>("no fold");
}

TEST(FirstDim, DatabaseFileChecks) {
  using P = FdParams<Ring2, 1, 3, 2>;
  const auto dir = std::filesystem::temp_directory_path() / ("spiralpir_fdf_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "db.bin").string();
  Case<P> c;
  Database<P> db;
  db.build(c.source(), 1, 1);
  db.save(path);
  auto expect_format_error = [&](const std::string& file, const char* what) {
    Database<P> d2;
    try {
      d2.map(file);
      ADD_FAILURE() << what << ": accepted";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  auto patch = [&](const char* name, std::streamoff at, const void* bytes, std::size_t len) {
    const std::string f = (dir / name).string();
    std::filesystem::copy_file(path, f);
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(at);
    io.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(len));
    return f;
  };
  const std::uint16_t v1 = 1;  // the version-1 (u32 per residue, j-major) layout
  expect_format_error(patch("v1.bin", 4, &v1, 2), "unsupported format version");
  const std::uint16_t v2 = 2;  // the version-2 layout: every 2^nu_1 row stored
  expect_format_error(patch("v2.bin", 4, &v2, 2), "unsupported format version 2");
  // the high half of a paired word is prime 1's residue: p1 itself is out of range there (but
  // below prime 0, so only a per-half check catches it)
  const std::uint32_t p1 = 67104769;
  expect_format_error(patch("hi.bin", kHeaderBytes + 4 * 13, &p1, 4), "residue out of range");
  const std::uint32_t p0 = 268369921;
  expect_format_error(patch("lo.bin", kHeaderBytes + 4 * 12, &p0, 4), "residue out of range");
  Database<P> ok;
  ok.map(path);
  Case<P>::expect_equal(FirstDim<P>::run(c.q, ok, 1), FirstDim<P>::run(c.q, db, 1), "mapped");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spiralpir
