// End-to-end: random databases, random indices, real encryption and decryption; the same
// response at 1 and 2 threads.
#include <gtest/gtest.h>

#include <vector>

#include "spiralpir/spiral/service.hpp"
#include "spiralpir/testing/gtest_seed.hpp"
#include "test_params.hpp"

using namespace spiralpir;
using namespace spiralpir::testing;

namespace {

template <class P>
std::vector<std::uint8_t> random_records(Csprng& rng, std::uint64_t n) {
  std::vector<std::uint8_t> recs(n * P::record_size);
  rng.fill(recs.data(), recs.size());
  return recs;
}

template <class P>
void run_end_to_end(int queries) {
  Csprng rng = test_rng_here();
  const auto recs = random_records<P>(rng, P::num_records);
  Server<P> server(2);
  server.database().build(Database<P>::records_source(recs.data(), P::num_records, P::record_size), P::num_records,
                          2);
  Seed master;
  rng.fill(master.data(), master.size());
  const Client<P> client(master);
  const auto ppb = client.public_params();
  ASSERT_EQ(ppb.size(), Derived<P>::public_params_bytes);
  const auto pp = PublicParams<P>::load(ppb.data(), ppb.size(), 2);
  for (int t = 0; t < queries; ++t) {
    const std::uint64_t idx = rng.uniform_mod(P::num_records);
    const auto qb = client.query(idx, rng);
    ASSERT_EQ(qb.size(), Derived<P>::query_bytes);
    server.set_threads(t % 2 ? 2 : 1);
    const auto resp = server.answer(pp, qb.data(), qb.size());
    ASSERT_EQ(resp.size(), Derived<P>::response_bytes);
    const auto item = client.comp().decode(idx, resp.data(), resp.size());
    ASSERT_EQ(item.size(), P::db_item_size);
    std::vector<std::uint8_t> expect(P::db_item_size, 0);
    std::memcpy(expect.data(), recs.data() + idx * P::record_size, P::record_size);
    EXPECT_EQ(item, expect) << "index " << idx;
    if (t == 0) {
      server.set_threads(2);
      const auto resp2 = server.answer(pp, qb.data(), qb.size());
      EXPECT_EQ(resp, resp2) << "answer differs between 1 and 2 threads";
    }
  }
}

}  // namespace

TEST(EndToEnd, Spiral2e20x256bReducedNu) { run_end_to_end<insecure_spiral_2e20x256b_ci>(3); }
TEST(EndToEnd, SlowSpiral2e14x100kbReducedNu) { run_end_to_end<insecure_spiral_2e14x100kb_ci>(2); }
TEST(EndToEnd, SlowTernarySecretN1) { run_end_to_end<insecure_ternary_n1_ci>(2); }
TEST(EndToEnd, SlowSparseTernarySecret) { run_end_to_end<insecure_sparse_n2_ci>(2); }
TEST(EndToEnd, LargePlaintextModulus) { run_end_to_end<insecure_large_p_ci>(2); }
TEST(EndToEnd, Nu2ZeroNoFolding) { run_end_to_end<insecure_nu2_zero_ci>(3); }
TEST(EndToEnd, RecordsShorterThanItems) { run_end_to_end<insecure_short_records_ci>(3); }
TEST(EndToEnd, SlowRecordsShorterThanItemsOverInstances) { run_end_to_end<insecure_short_records_multi_ci>(2); }
