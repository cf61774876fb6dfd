// Threads: the persistent pool behind parallel_for (every index run exactly once, exceptions
// rethrown and the pool still usable, nested and concurrent callers), the per-residue building
// blocks the parallel stages use (they must equal the whole-polynomial functions), and every
// server stage's output identical bit for bit at 1, 2, 3 and 4 threads on random inputs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "spiralpir/spiral/service.hpp"
#include "spiralpir/testing/gtest_seed.hpp"
#include "test_params.hpp"

using namespace spiralpir;
using namespace spiralpir::testing;

namespace {

TEST(Pool, EveryIndexExactlyOnce) {
  for (unsigned threads : {1u, 2u, 3u, 8u})
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{5000}}) {
      std::vector<std::atomic<int>> hits(count);
      parallel_for(threads, count, [&](std::size_t i) { hits[i].fetch_add(1); });
      for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(hits[i].load(), 1) << threads << " threads, index " << i;
    }
}

TEST(Pool, ExceptionIsRethrownAndPoolStaysUsable) {
  for (unsigned threads : {1u, 2u, 3u}) {
    std::atomic<int> ran{0};
    EXPECT_THROW(parallel_for(threads, 1000,
                              [&](std::size_t i) {
                                ran.fetch_add(1);
                                if (i == 17) throw std::runtime_error("task 17");
                              }),
                 std::runtime_error);
    EXPECT_GE(ran.load(), 18);
    std::vector<std::atomic<int>> hits(300);
    parallel_for(threads, hits.size(), [&](std::size_t i) { hits[i].fetch_add(1); });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
}

// Jobs back to back find the workers still spinning; after a long gap they are parked on the
// condition variable. Either way every index runs once and the caller sees every task's plain
// (non-atomic) writes when parallel_for returns.
TEST(Pool, JobsAfterShortAndLongGapsSeeEveryWrite) {
  for (unsigned threads : {2u, 3u})
    for (int gap_us : {0, 5, 40, 300, 3000})
      for (int job = 0; job < 20; ++job) {
        std::this_thread::sleep_for(std::chrono::microseconds(gap_us));
        std::vector<std::uint64_t> out(64, 0);
        parallel_for(threads, out.size(), [&](std::size_t i) {
          if (i % 16 == 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
          out[i] = i * 3 + static_cast<std::uint64_t>(job);
        });
        for (std::size_t i = 0; i < out.size(); ++i)
          ASSERT_EQ(out[i], i * 3 + static_cast<std::uint64_t>(job)) << threads << " threads, gap " << gap_us << " us";
      }
}

TEST(Pool, NestedCallsRunAndComplete) {
  std::vector<std::atomic<int>> hits(40 * 30);
  parallel_for(2, 40, [&](std::size_t i) {
    parallel_for(3, 30, [&](std::size_t j) { hits[i * 30 + j].fetch_add(1); });
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST(Pool, ConcurrentCallersTakeTurns) {
  constexpr std::size_t kCallers = 4, kJobs = 50, kCount = 97;
  std::vector<std::vector<std::uint64_t>> sums(kCallers, std::vector<std::uint64_t>(kJobs, 0));
  std::vector<std::thread> callers;
  for (std::size_t c = 0; c < kCallers; ++c)
    callers.emplace_back([&, c] {
      for (std::size_t job = 0; job < kJobs; ++job) {
        std::vector<std::uint64_t> out(kCount, 0);
        parallel_for(static_cast<unsigned>(1 + (c + job) % 3), kCount, [&](std::size_t i) { out[i] = i * (c + 1) + job; });
        for (auto v : out) sums[c][job] += v;
      }
    });
  for (auto& t : callers) t.join();
  for (std::size_t c = 0; c < kCallers; ++c)
    for (std::size_t job = 0; job < kJobs; ++job)
      ASSERT_EQ(sums[c][job], (c + 1) * (kCount * (kCount - 1) / 2) + kCount * job);
}

template <class R>
rlwe::Pc<R> random_poly(Csprng& g) {
  rlwe::Pc<R> x;
  for (std::size_t i = 0; i < R::num_primes; ++i)
    for (std::size_t z = 0; z < R::poly_len; ++z) x(i, z) = g.uniform_mod(R::primes[i]);
  // a consistent CRT value per coefficient: rebuild residues from one u128 < q
  for (std::size_t z = 0; z < R::poly_len; ++z) {
    const u128 v = (static_cast<u128>(g.uniform_mod(~std::uint64_t{0})) << 64 | g.uniform_mod(~std::uint64_t{0})) %
                   modulus<R>();
    const auto r = crt_decompose<R>(v);
    for (std::size_t i = 0; i < R::num_primes; ++i) x(i, z) = r[i];
  }
  return x;
}

template <class R>
void residue_decomposition_matches(unsigned bits, unsigned t) {
  Csprng g = test_rng_here();
  const auto x = random_poly<R>(g);
  const auto whole = gadget_decompose_ntt<R>(x, bits, t);
  for (std::size_t i = 0; i < R::num_primes; ++i) {
    std::vector<AlignedBuffer<std::uint64_t>> bufs;
    std::vector<std::uint64_t*> outs;
    for (unsigned k = 0; k < t; ++k) bufs.emplace_back(R::poly_len);
    for (auto& b : bufs) outs.push_back(b.data());
    gadget_decompose_residue_ntt<R>(x, bits, t, i, outs.data());
    for (unsigned k = 0; k < t; ++k)
      for (std::size_t z = 0; z < R::poly_len; ++z)
        ASSERT_EQ(outs[k][z], whole[k](i, z)) << "prime " << i << " digit " << k << " slot " << z;
  }
}

using three_prime_ring = RingSpec<2048, 268369921ULL, 268361729ULL, 268271617ULL>;

TEST(Residues, DecompositionOfOneResidueEqualsTheWholeOne) {
  residue_decomposition_matches<spiral_ring>(8, 7);   // fast path, two primes
  residue_decomposition_matches<spiral_ring>(1, 56);  // many 1-bit digits
  residue_decomposition_matches<spiral_ring>(56, 1);  // t = 1: the value itself
  residue_decomposition_matches<three_prime_ring>(12, 7);  // generic (CRT) path
}

TEST(Residues, DotOfOneResidueEqualsDotMulti) {
  using R = spiral_ring;
  Csprng g = test_rng_here();
  for (std::size_t K : {std::size_t{3}, std::size_t{56}, max_lazy_terms<R>() + 5}) {
    std::vector<rlwe::Pn<R>> dig(K), key(2 * K);
    for (auto& d : dig) d = to_ntt(random_poly<R>(g));
    for (auto& k : key) k = to_ntt(random_poly<R>(g));
    rlwe::Pn<R> o0, o1;
    dot_multi<R, 2>({&o0, &o1}, K, [&](std::size_t k) -> const rlwe::Pn<R>& { return dig[k]; },
                           [&](std::size_t m, std::size_t k) -> const rlwe::Pn<R>& { return key[m * K + k]; });
    // reference: plain modular sums of products
    for (std::size_t i = 0; i < R::num_primes; ++i) {
      const std::uint64_t p = R::primes[i];
      for (std::size_t z = 0; z < R::poly_len; z += 97) {
        std::uint64_t s0 = 0, s1 = 0;
        for (std::size_t k = 0; k < K; ++k) {
          s0 = (s0 + static_cast<std::uint64_t>(static_cast<u128>(dig[k](i, z)) * key[k](i, z) % p)) % p;
          s1 = (s1 + static_cast<std::uint64_t>(static_cast<u128>(dig[k](i, z)) * key[K + k](i, z) % p)) % p;
        }
        ASSERT_EQ(o0(i, z), s0) << "K " << K;
        ASSERT_EQ(o1(i, z), s1) << "K " << K;
      }
    }
  }
}

/// every stage's output at 2, 3 and 4 threads equals the 1-thread output
template <class P>
void stages_identical_at_any_thread_count() {
  using S = ServerStages<P>;
  using R = typename P::ring;
  using MatN = rlwe::MatN<R>;
  Csprng rng = test_rng_here();
  std::vector<std::uint8_t> recs(P::num_records * P::record_size);
  rng.fill(recs.data(), recs.size());
  Database<P> db;
  db.build(Database<P>::records_source(recs.data(), P::num_records, P::record_size), P::num_records, 2);
  const Client<P> client([&] {
    Seed s;
    rng.fill(s.data(), s.size());
    return s;
  }());
  const auto ppb = client.public_params();
  const auto pp1 = PublicKeys<P>::parse(ppb.data(), ppb.size(), 1).comp;
  const auto qb = client.query(rng.uniform_mod(P::num_records), rng);
  const auto q = S::parse_query(qb.data(), qb.size());
  struct Out {
    std::vector<RegevCt<R>> first, digits;
    std::vector<MatN> first_mats, gsw, cts;
    std::vector<std::uint8_t> resp;
  };
  auto run = [&](unsigned threads) {
    const auto pp = PublicKeys<P>::parse(ppb.data(), ppb.size(), threads).comp;
    for (std::size_t c = 0; c < KeyLayout<P>::num_columns; ++c) {
      EXPECT_TRUE(pp.a[c] == pp1.a[c]) << "public params column " << c << " at " << threads << " threads";
      EXPECT_TRUE(pp.b[c] == pp1.b[c]) << "public params column " << c << " at " << threads << " threads";
    }
    Out o;
    S::expand(q, pp, threads, o.first, o.digits);
    S::convert(o.first, o.digits, pp, threads, o.first_mats, o.gsw);
    o.cts = S::first_dimension(o.first_mats, db, threads);
    S::fold(o.cts, o.gsw, threads);
    o.resp = S::modswitch_encode(o.cts, threads);
    return o;
  };
  const Out ref = run(1);
  auto same_cts = [](const std::vector<RegevCt<R>>& a, const std::vector<RegevCt<R>>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!(a[i].a == b[i].a) || !(a[i].b == b[i].b)) return false;
    return true;
  };
  for (unsigned threads : {2u, 3u, 4u}) {
    const Out o = run(threads);
    EXPECT_TRUE(same_cts(o.first, ref.first)) << "expansion (first dimension cts), " << threads << " threads";
    EXPECT_TRUE(same_cts(o.digits, ref.digits)) << "expansion (GSW digit cts), " << threads << " threads";
    EXPECT_TRUE(o.first_mats == ref.first_mats) << "ScalToMat, " << threads << " threads";
    EXPECT_TRUE(o.gsw == ref.gsw) << "RegevToGSW, " << threads << " threads";
    EXPECT_TRUE(o.cts == ref.cts) << "first dimension + folding, " << threads << " threads";
    EXPECT_EQ(o.resp, ref.resp) << "response, " << threads << " threads";
  }
  const auto item = client.comp().decode(0, ref.resp.data(), ref.resp.size());  // decodes (some record)
  EXPECT_EQ(item.size(), P::db_item_size);
}

}  // namespace

TEST(Threads, StagesIdentical2e20x256b) { stages_identical_at_any_thread_count<insecure_spiral_2e20x256b_ci>(); }
TEST(Threads, SlowStagesIdentical2e14x100kb) { stages_identical_at_any_thread_count<insecure_spiral_2e14x100kb_ci>(); }
TEST(Threads, SlowStagesIdenticalTernaryN1) { stages_identical_at_any_thread_count<insecure_ternary_n1_ci>(); }
