// Blocked queries (the keyword table's one-query lookup): one query selecting a row in each of
// h row blocks and one column; block b's response must decrypt to the plaintext at (row r_b,
// column c). Random databases, random rows and columns, real encryption and decryption; h = 1
// must be today's query and answer byte for byte; each block's noise (measured with the
// secret key) at most a single query's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "spiralpir/spiral/service.hpp"
#include "spiralpir/testing/gtest_seed.hpp"
#include "spiralpir/testing/noise.hpp"
#include "test_params.hpp"

using namespace spiralpir;
using namespace spiralpir::testing;

namespace {

template <class P>
struct Fixture {
  Csprng rng = test_rng_here();
  std::vector<std::uint8_t> recs;
  Server<P> server{2};
  Seed master{};
  std::unique_ptr<Client<P>> client;
  std::unique_ptr<PublicParams<P>> pp;

  Fixture() {
    recs.resize(P::num_records * P::record_size);
    rng.fill(recs.data(), recs.size());
    server.database().build(Database<P>::records_source(recs.data(), P::num_records, P::record_size), P::num_records,
                            2);
    rng.fill(master.data(), master.size());
    client = std::make_unique<Client<P>>(master);
    const auto ppb = client->public_params();
    pp = std::make_unique<PublicParams<P>>(PublicParams<P>::load(ppb.data(), ppb.size(), 2));
  }
  /// the record bytes of item `item` as the client extracts them (zero beyond the records)
  std::vector<std::uint8_t> expected(std::uint64_t item) const {
    std::vector<std::uint8_t> out(P::db_item_size, 0);
    if (item < P::num_records) std::memcpy(out.data(), recs.data() + item * P::record_size, P::record_size);
    return out;
  }
};

template <class P>
void run_blocked(std::size_t blocks, int trials) {
  using D = Derived<P>;
  Fixture<P> f;
  const std::uint64_t per = D::dim0 / blocks;
  for (int t = 0; t < trials; ++t) {
    std::vector<std::uint64_t> rows(blocks);
    for (std::size_t b = 0; b < blocks; ++b) rows[b] = b * per + f.rng.uniform_mod(per);
    const std::uint64_t column = f.rng.uniform_mod(D::dim_rest);
    const auto q = f.client->query_blocked(rows.data(), blocks, column, f.rng);
    ASSERT_EQ(q.size(), D::query_bytes) << "a blocked query has the size of any query";
    f.server.set_threads(t % 2 ? 2 : 1);
    const auto resps = f.server.answer_blocked(*f.pp, q.data(), q.size(), blocks);
    ASSERT_EQ(resps.size(), blocks * D::response_bytes);
    if (t == 0) {
      f.server.set_threads(2);
      EXPECT_EQ(resps, f.server.answer_blocked(*f.pp, q.data(), q.size(), blocks)) << "differs between 1 and 2 threads";
    }
    for (std::size_t b = 0; b < blocks; ++b) {
      const auto pts = f.client->decode_plaintexts(resps.data() + b * D::response_bytes, D::response_bytes);
      const std::uint64_t pt = rows[b] * D::dim_rest + column;
      for (std::uint64_t s = 0; s < D::items_per_pt; ++s) {
        const std::uint64_t item = pt * D::items_per_pt + s;
        EXPECT_EQ(ClientCore<P>::extract_item(item, pts.data()), f.expected(item))
            << "block " << b << " of " << blocks << ", row " << rows[b] << ", column " << column << ", slot " << s;
      }
    }
  }
}

/// h = 1: the blocked query is today's query for the same item (same randomness), and the
/// blocked answer today's answer, byte for byte.
template <class P>
void run_single_block(int trials) {
  Fixture<P> f;
  for (int t = 0; t < trials; ++t) {
    const std::uint64_t item = f.rng.uniform_mod(P::num_records);
    const auto loc = ItemLocation<P>::of(item);
    Seed qs;
    f.rng.fill(qs.data(), qs.size());
    Csprng r1(qs), r2(qs);
    const auto q = f.client->query(item, r1);
    EXPECT_EQ(f.client->query_blocked(&loc.i, 1, loc.j, r2), q) << "item " << item;
    const auto resp = f.server.answer(*f.pp, q.data(), q.size());
    EXPECT_EQ(f.server.answer_blocked(*f.pp, q.data(), q.size(), 1), resp) << "item " << item;
    std::vector<std::uint8_t> got(P::record_size);
    f.client->decode(item, resp.data(), resp.size(), got.data(), got.size());
    EXPECT_TRUE(std::equal(got.begin(), got.end(), f.recs.begin() + static_cast<std::ptrdiff_t>(item * P::record_size)));
  }
}

template <class P>
void run_rejects() {
  using D = Derived<P>;
  Fixture<P> f;
  const std::uint64_t per = D::dim0 / 2;
  std::uint64_t rows[2] = {per, per};  // block 0's row in block 1
  EXPECT_THROW(f.client->query_blocked(rows, 2, 0, f.rng), ArgumentError);
  rows[0] = 0;
  EXPECT_THROW(f.client->query_blocked(rows, 2, D::dim_rest, f.rng), ArgumentError);  // column out of range
  EXPECT_THROW(f.client->query_blocked(rows, 3, 0, f.rng), ArgumentError);            // 3 does not divide
  const auto q = f.client->query_blocked(rows, 2, 0, f.rng);
  EXPECT_THROW(f.server.answer_blocked(*f.pp, q.data(), q.size(), 0), ArgumentError);
  EXPECT_THROW(f.server.answer_blocked(*f.pp, q.data(), q.size(), 2 * D::dim0), ArgumentError);
  EXPECT_THROW(f.server.answer_blocked(*f.pp, q.data(), q.size() - 1, 2), Error);  // truncated
}

/// The measured noise variance of the first dimension's output and of the last fold's, block
/// by block, against an ordinary query's of the same database: a block sums 2^nu_1/h of the
/// products the ordinary query sums, each of the same noise, then folds with GSW cts of the
/// same noise, so it can only be smaller (first dimension: about h times).
template <class P>
void run_noise(std::size_t blocks) {
  using D = Derived<P>;
  using MatN = rlwe::MatN<typename P::ring>;
  Fixture<P> f;
  const std::uint64_t per = D::dim0 / blocks;
  std::vector<std::uint64_t> rows(blocks);
  for (std::size_t b = 0; b < blocks; ++b) rows[b] = b * per + f.rng.uniform_mod(per);
  const std::uint64_t column = f.rng.uniform_mod(D::dim_rest);
  auto measure = [&](const std::vector<std::uint8_t>& q, std::size_t nb) {
    const auto pq = f.server.prepare(*f.pp, q.data(), q.size());
    std::vector<MatN> all = FirstDim<P>::run_blocks(pq.first, f.server.database(), 2, nb);
    const std::size_t each = D::instances * D::dim_rest;
    std::vector<std::pair<double, double>> out;  // (first dimension, last fold) variances
    for (std::size_t b = 0; b < nb; ++b) {
      NoiseMeter<P> meter(f.client->comp(), 0);
      std::vector<MatN> cts(all.begin() + static_cast<std::ptrdiff_t>(b * each),
                            all.begin() + static_cast<std::ptrdiff_t>((b + 1) * each));
      meter.on_first_dimension(cts);
      ServerStages<P>::fold(cts, pq.gsw, 2, &meter);
      out.emplace_back(meter.results().front().second.variance(), meter.results().back().second.variance());
    }
    return out;
  };
  const auto single = measure(f.client->query((rows[0] * D::dim_rest + column) * D::items_per_pt, f.rng), 1)[0];
  const auto blocked = measure(f.client->query_blocked(rows.data(), blocks, column, f.rng), blocks);
  for (std::size_t b = 0; b < blocks; ++b) {
    EXPECT_LT(blocked[b].first, single.first) << "first dimension, block " << b;
    EXPECT_LT(blocked[b].second, 1.1 * single.second) << "last fold, block " << b;
    std::printf("block %zu of %zu: first-dimension noise variance 2^%.2f (single query 2^%.2f), after folding 2^%.2f (2^%.2f)\n",
                b, blocks, std::log2(blocked[b].first), std::log2(single.first), std::log2(blocked[b].second),
                std::log2(single.second));
  }
}

}  // namespace

TEST(Blocked, NoiseAtMostASingleQuerys) { run_noise<insecure_spiral_2e20x256b_ci>(4); }
TEST(Blocked, TwoBlocks) { run_blocked<insecure_spiral_2e20x256b_ci>(2, 3); }
TEST(Blocked, FourBlocks) { run_blocked<insecure_spiral_2e20x256b_ci>(4, 3); }
TEST(Blocked, OneBlockIsTheOrdinaryQuery) { run_single_block<insecure_spiral_2e20x256b_ci>(3); }
TEST(Blocked, NoFoldingFourBlocks) { run_blocked<insecure_nu2_zero_ci>(4, 2); }
TEST(Blocked, BadBlocksRejected) { run_rejects<insecure_spiral_2e20x256b_ci>(); }
TEST(Blocked, SlowInstancesTwoBlocks) { run_blocked<insecure_spiral_2e14x100kb_ci>(2, 1); }
TEST(Blocked, SlowInstancesFourBlocks) { run_blocked<insecure_spiral_2e14x100kb_ci>(4, 1); }
