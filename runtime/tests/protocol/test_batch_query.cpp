// Packed queries (batch_query.hpp): one query ct carrying G buckets' indices. After the one
// expansion, bucket g's slice decrypts to exactly its selectors and GSW digits (noise meter, with
// the client's secret); bucket g's answer against its own random database decodes to the right
// record for G = 2, 4, 16; G = 1 gives the plain query's bytes and response for the same
// randomness; the canonical string (and hash) names G only when it is not 1.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "spiralpir/spiral/batch_query.hpp"
#include "spiralpir/spiral/service.hpp"
#include "spiralpir/testing/gtest_seed.hpp"
#include "spiralpir/testing/noise.hpp"
#include "test_params.hpp"

using namespace spiralpir;
using namespace spiralpir::testing;

namespace {

/// Small buckets (2^3 × 2^2 plaintexts, 16 GSW digits): G = 16 fills 256 odd positions.
struct bucket_params : insecure_spiral_2e20x256b {
  static constexpr unsigned nu_1 = 3, nu_2 = 2;
  static constexpr std::uint64_t num_records = 60;
};
template <unsigned G>
struct packed_params : bucket_params {
  static constexpr unsigned query_buckets = G;
};

template <class P>
std::vector<std::uint64_t> random_items(Csprng& rng) {
  std::vector<std::uint64_t> items(Derived<P>::query_buckets);
  for (auto& x : items) x = rng.uniform_mod(P::num_records);
  return items;
}

template <class P>
void slices_decrypt_to_their_bucket() {
  using D = Derived<P>;
  using S = ServerStages<P>;
  Csprng rng = test_rng_here();
  const Client<P> client(test_seed_here("client"));
  const auto ppb = client.public_params();
  const auto pp = PublicParams<P>::load(ppb.data(), ppb.size());
  const auto items = random_items<P>(rng);
  const auto q = packed_query(client, items.data(), items.size(), rng);
  ASSERT_EQ(q.size(), D::query_bytes);
  std::vector<RegevCt<typename P::ring>> first, digits;
  S::expand(S::parse_query(q.data(), q.size()), pp.keys().comp, 2, first, digits, D::query_buckets);
  ASSERT_EQ(first.size(), D::query_buckets * D::dim0);
  ASSERT_EQ(digits.size(), D::query_buckets * D::num_gsw_digits);
  const double q_quarter = std::ldexp(1.0, static_cast<int>(D::q_bits) - 2);
  for (unsigned g = 0; g < D::query_buckets; ++g) {
    NoiseMeter<P> meter(client.comp(), items[g]);  // exact expected messages of bucket g's item
    meter.on_expansion({first.begin() + g * D::dim0, first.begin() + (g + 1) * D::dim0},
                       {digits.begin() + g * D::num_gsw_digits, digits.begin() + (g + 1) * D::num_gsw_digits});
    for (const auto& [name, st] : meter.results()) {
      // (the meter reads the selectors of the stored rows: the first dimension's only inputs)
      EXPECT_EQ(st.count, (name == "expansion" ? D::rows_stored : D::num_gsw_digits) * D::d) << name;
      // a wrong slice or selector is off by Δ or a gadget power: noise ~ q/4 or more
      EXPECT_LT(st.max_abs, q_quarter / 4096) << "bucket " << g << " " << name;
      EXPECT_GT(st.variance(), 0.5) << "bucket " << g << " " << name << " (no noise at all is suspicious)";
    }
  }
}

template <class P>
void bucket_answers_decode() {
  using D = Derived<P>;
  Csprng rng = test_rng_here();
  Server<P> server(2);
  std::vector<std::vector<std::uint8_t>> recs(D::query_buckets);
  std::vector<Database<P>> dbs(D::query_buckets);
  for (unsigned g = 0; g < D::query_buckets; ++g) {
    recs[g].resize(P::num_records * P::record_size);
    rng.fill(recs[g].data(), recs[g].size());
    dbs[g].build(Database<P>::records_source(recs[g].data(), P::num_records, P::record_size), P::num_records, 2);
  }
  const Client<P> client(test_seed_here("client"));
  const auto ppb = client.public_params();
  ASSERT_EQ(ppb.size(), D::public_params_bytes);
  const auto pp = PublicParams<P>::load(ppb.data(), ppb.size());
  for (int t = 0; t < 2; ++t) {
    const auto items = random_items<P>(rng);
    const auto q = packed_query(client, items.data(), items.size(), rng);
    const auto prepared = PackedPreparation<P>::run(pp, q.data(), q.size(), t == 0 ? 1 : 2);
    ASSERT_EQ(prepared.size(), D::query_buckets);
    for (unsigned g = 0; g < D::query_buckets; ++g) {
      const auto resp = server.answer_prepared(prepared[g], dbs[g]);
      ASSERT_EQ(resp.size(), D::response_bytes);
      std::vector<std::uint8_t> out(P::record_size);
      client.decode(items[g], resp.data(), resp.size(), out.data(), out.size());
      EXPECT_EQ(0, std::memcmp(out.data(), recs[g].data() + items[g] * P::record_size, P::record_size))
          << "bucket " << g << " record " << items[g];
    }
  }
}

}  // namespace

TEST(BatchQuery, ScheduleGrowsWithBuckets) {
  // the super shape: G·8 selectors, G·16 digits
  EXPECT_EQ(Derived<bucket_params>::rounds_right, 5u);
  EXPECT_EQ(Derived<bucket_params>::rounds, 5u);
  EXPECT_EQ(Derived<packed_params<4>>::rounds_right, 7u);
  EXPECT_EQ(Derived<packed_params<4>>::rounds, 7u);
  EXPECT_EQ(Derived<packed_params<16>>::rounds_right, 9u);
  EXPECT_EQ(Derived<packed_params<16>>::rounds, 9u);
  // two more rounds of right keys (t_exp_right polys each) and two of left keys
  EXPECT_EQ(Derived<packed_params<4>>::pp_polys - Derived<bucket_params>::pp_polys,
            2u * bucket_params::t_exp_right + 2u * bucket_params::t_exp_left);
  EXPECT_EQ(Derived<packed_params<4>>::query_bytes, Derived<bucket_params>::query_bytes);
}

TEST(BatchQuery, CanonicalStringNamesBucketsOnlyAboveOne) {
  const std::string one = params_canonical_string<packed_params<1>>();
  EXPECT_EQ(one, params_canonical_string<bucket_params>());
  EXPECT_EQ(params_hash<packed_params<1>>(), params_hash<bucket_params>());
  const std::string four = params_canonical_string<packed_params<4>>();
  EXPECT_EQ(four, one + "query_buckets=4\n");
  EXPECT_NE(params_hash<packed_params<4>>(), params_hash<bucket_params>());
}

TEST(BatchQuery, SlicesDecryptToTheirBucketG2) { slices_decrypt_to_their_bucket<packed_params<2>>(); }
TEST(BatchQuery, SlicesDecryptToTheirBucketG16) { slices_decrypt_to_their_bucket<packed_params<16>>(); }
TEST(BatchQuery, BucketAnswersDecodeG2) { bucket_answers_decode<packed_params<2>>(); }
TEST(BatchQuery, BucketAnswersDecodeG4) { bucket_answers_decode<packed_params<4>>(); }
TEST(BatchQuery, SlowBucketAnswersDecodeG16) { bucket_answers_decode<packed_params<16>>(); }

TEST(BatchQuery, PartialQueryAnswersItsFirstBuckets) {
  // a batch's last query when G does not divide the bucket count: 3 of 4 slots
  using P = packed_params<4>;
  Csprng rng = test_rng_here();
  std::vector<std::uint8_t> recs(P::num_records * P::record_size);
  rng.fill(recs.data(), recs.size());
  Server<P> server(1);
  server.load_records(recs.data(), P::num_records, P::record_size);
  const Client<P> client(test_seed_here("client"));
  const auto ppb = client.public_params();
  const auto pp = PublicParams<P>::load(ppb.data(), ppb.size());
  const std::uint64_t items[3] = {rng.uniform_mod(P::num_records), rng.uniform_mod(P::num_records),
                                  rng.uniform_mod(P::num_records)};
  const auto q = packed_query(client, items, 3, rng);
  const auto prepared = PackedPreparation<P>::run(pp, q.data(), q.size(), 1, 3);
  ASSERT_EQ(prepared.size(), 3u);
  for (unsigned g = 0; g < 3; ++g) {
    const auto resp = server.answer_prepared(prepared[g]);
    std::vector<std::uint8_t> out(P::record_size);
    client.decode(items[g], resp.data(), resp.size(), out.data(), out.size());
    EXPECT_EQ(0, std::memcmp(out.data(), recs.data() + items[g] * P::record_size, P::record_size)) << g;
  }
}

TEST(BatchQuery, OneBucketIsThePlainQuery) {
  using P = bucket_params;
  Csprng data = test_rng_here("records");
  std::vector<std::uint8_t> recs(P::num_records * P::record_size);
  data.fill(recs.data(), recs.size());
  Server<P> server(2);
  server.load_records(recs.data(), P::num_records, P::record_size);
  const Client<P> client(test_seed_here("client"));
  const auto ppb = client.public_params();
  const auto pp = PublicParams<P>::load(ppb.data(), ppb.size());
  const std::uint64_t item = data.uniform_mod(P::num_records);
  Csprng r1(test_seed_here("query")), r2(test_seed_here("query"));
  const auto plain = client.query(item, r1);
  const auto packed = packed_query(client, &item, 1, r2);
  EXPECT_EQ(plain, packed);
  const auto prepared = PackedPreparation<P>::run(pp, packed.data(), packed.size(), 2);
  ASSERT_EQ(prepared.size(), 1u);
  EXPECT_EQ(server.answer(pp, plain.data(), plain.size()), server.answer_prepared(prepared[0]));
}

TEST(BatchQuery, WrongCountsAreRefused) {
  using P = packed_params<4>;
  Csprng rng = test_rng_here();
  const Client<P> client(test_seed_here("client"));
  const std::uint64_t items[4] = {0, 1, 2, 3};
  EXPECT_THROW(packed_query(client, items, 5, rng), ArgumentError);
  EXPECT_THROW(packed_query(client, items, 0, rng), ArgumentError);
  const std::uint64_t bad[4] = {0, 1, P::num_records * 100, 3};
  EXPECT_THROW(packed_query(client, bad, 4, rng), ArgumentError);
  const auto ppb = client.public_params();
  const auto pp = PublicParams<P>::load(ppb.data(), ppb.size());
  const auto q = packed_query(client, items, 4, rng);
  std::vector<RegevCt<P::ring>> first, digits;
  EXPECT_THROW(ServerStages<P>::expand(ServerStages<P>::parse_query(q.data(), q.size()), pp.keys().comp, 1, first,
                                       digits, 5),
               ArgumentError);
  // each expanded slot is prepared once, and only slots that were expanded
  auto ex = PackedPreparation<P>::expand(pp, q.data(), q.size(), 1, 3);
  EXPECT_NO_THROW(PackedPreparation<P>::bucket(pp, ex, 2, 1));
  EXPECT_THROW(PackedPreparation<P>::bucket(pp, ex, 2, 1), ArgumentError);
  EXPECT_THROW(PackedPreparation<P>::bucket(pp, ex, 3, 1), ArgumentError);
  // a query of the one-bucket parameters is refused by its params hash
  const Client<bucket_params> other(test_seed_here("client"));
  const auto q1 = other.query(0, rng);
  EXPECT_THROW(PackedPreparation<P>::run(pp, q1.data(), q1.size(), 1), ParamsMismatchError);
}
