// Partial hypercubes: record counts whose plaintexts fill the first rows of the first dimension
// only (the last of them partly), every variant and a multi-instance set. The database stores
// and multiplies those rows only; every decoded answer must equal its record, the saved file
// must have the size FORMATS.md §3 gives for the stored rows (computed here by hand), and a
// file of the previous format version (all 2^nu_1 rows) must be refused, not misread. A query
// whose conversion tiles each matrix as it is computed, into a buffer another query used before,
// must equal the same query converted whole and then tiled.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "spiralpir/spiral/service.hpp"
#include "spiralpir/testing/gtest_seed.hpp"
#include "variant_params.hpp"

using namespace spiralpir;
using namespace spiralpir::testing;

namespace {

/// n = 2, p = 256, 256 B items: 32 items per plaintext, nu 4/2 (16 rows of 4 plaintexts).
/// 711 records = 23 plaintexts (the last with 7 records) = rows 0..4 full, row 5 with 3 of 4
/// plaintexts, rows 6..15 empty: 6 stored rows.
template <Variant v>
struct partial_rows_ci : insecure_spiral_2e20x256b_ci {
  static constexpr Variant variant = v;
  static constexpr std::uint64_t num_records = 711;
  static constexpr std::uint64_t expect_rows = 6;
};
/// 100 KB records over 12 instances, nu 3/1 (8 rows of 2): 5 records = rows 0, 1 full, row 2
/// half, rows 3..7 empty.
template <Variant v>
struct partial_rows_multi_ci : insecure_spiral_2e14x100kb_ci {
  static constexpr Variant variant = v;
  static constexpr unsigned nu_1 = 3, nu_2 = 1;
  static constexpr std::uint64_t num_records = 5;
  static constexpr std::uint64_t expect_rows = 3;
};

template <class P>
class PartialRows : public ::testing::Test {};
using Sets = ::testing::Types<partial_rows_ci<Variant::spiral>, partial_rows_ci<Variant::stream>,
                              partial_rows_ci<Variant::pack>, partial_rows_ci<Variant::stream_pack>,
                              partial_rows_multi_ci<Variant::spiral>, partial_rows_multi_ci<Variant::stream_pack>>;
TYPED_TEST_SUITE(PartialRows, Sets);

/// random records, loaded into `server`
template <class P>
std::vector<std::uint8_t> load_random_records(Csprng& rng, Server<P>& server) {
  std::vector<std::uint8_t> recs(P::num_records * P::record_size);
  rng.fill(recs.data(), recs.size());
  server.load_records(recs.data(), P::num_records, P::record_size);
  return recs;
}

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("spiralpir_partial_" + std::to_string(::getpid()) + "_" + name);
}

TYPED_TEST(PartialRows, AnswersEqualTheRecordsAndTheFileHoldsTheStoredRows) {
  using P = TypeParam;
  using D = Derived<P>;
  static_assert(D::rows_stored == P::expect_rows && D::rows_stored < D::dim0);
  Csprng rng = test_rng_here();
  Server<P> server(2);
  const auto recs = load_random_records(rng, server);
  // FORMATS.md §3: 32 + 4·instances·rows_stored·2^nu_2·n²·d·len(moduli)
  const std::uint64_t want = 32 + 4 * P::instances * P::expect_rows * (std::uint64_t{1} << P::nu_2) * P::n * P::n *
                                      P::ring::poly_len * P::ring::num_primes;
  ASSERT_EQ(D::preprocessed_db_bytes, want);
  const auto path = temp_file(std::string(variant_name(P::variant)) + std::to_string(P::instances));
  server.save_db(path.string());
  ASSERT_EQ(std::filesystem::file_size(path), want);
  Server<P> mapped(2);
  mapped.map_db(path.string());

  Client<P> client(test_seed_here("client"));
  const auto ppb = client.public_params();
  for (Server<P>* s : {&server, &mapped}) s->set_public_params("c", PublicParams<P>::load(ppb.data(), ppb.size(), 2));
  // the first and last record, the last row's records, and random ones
  std::vector<std::uint64_t> idx = {0, P::num_records - 1, P::num_records / 2};
  const std::uint64_t last_row_first = (D::rows_stored - 1) * D::dim_rest * D::items_per_pt;
  for (std::uint64_t r = last_row_first; r < P::num_records && idx.size() < 6; r += D::items_per_pt) idx.push_back(r);
  for (int t = 0; t < 3; ++t) idx.push_back(rng.uniform_mod(P::num_records));
  for (std::size_t k = 0; k < idx.size(); ++k) {
    const std::uint64_t i = idx[k];
    const auto q = client.query(i, rng);
    Server<P>& s = k % 2 ? mapped : server;
    s.set_threads(k % 3 == 0 ? 1 : 2);
    const auto resp = s.answer("c", q.data(), q.size());
    std::vector<std::uint8_t> out(P::record_size);
    client.decode(i, resp.data(), resp.size(), out.data(), out.size());
    EXPECT_TRUE(std::equal(out.begin(), out.end(), recs.begin() + i * P::record_size)) << "record " << i;
  }
  // more records than the stored rows hold is an error, not a silently lost record
  std::vector<std::uint8_t> more((D::num_items + 1) * P::record_size);
  EXPECT_THROW(server.load_records(more.data(), D::num_items + 1, P::record_size), ArgumentError);
  EXPECT_THROW((void)client.query(D::num_items, rng), ArgumentError);

  // the previous format version (every row stored) is refused with a version error
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    const char v2[2] = {2, 0};
    f.seekp(4);
    f.write(v2, 2);
  }
  Server<P> old(1);
  try {
    old.map_db(path.string());
    ADD_FAILURE() << "a version-2 file was mapped";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("version 2"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TYPED_TEST(PartialRows, TilingAsConvertedEqualsConvertingThenTiling) {
  using P = TypeParam;
  using C = typename VariantOf<P>::Comp;
  using Query = typename FirstDim<C>::Query;
  Csprng rng = test_rng_here();
  Server<P> server(2);
  const auto recs = load_random_records(rng, server);
  Client<P> client(test_seed_here("client"));
  const auto ppb = client.public_params();
  const auto pp = PublicParams<P>::load(ppb.data(), ppb.size(), 2);
  StageObserver<C> keeps;  // wants every first-dimension matrix: converted whole, then tiled
  ASSERT_TRUE(keeps.needs_first_matrices());
  // these small queries too (restored however the test ends)
  struct Threshold {
    std::size_t saved = std::exchange(QueryPreparation<P>::tile_as_converted_above, 0);
    ~Threshold() { QueryPreparation<P>::tile_as_converted_above = saved; }
  } threshold;
  for (int t = 0; t < 3; ++t) {
    // another query's buffer first: the tiled query below reuses it, every word rewritten
    {
      const auto other = client.query(rng.uniform_mod(P::num_records), rng);
      const auto before = server.prepare(pp, other.data(), other.size());
    }
    const std::uint64_t i = rng.uniform_mod(P::num_records);
    const auto q = client.query(i, rng);
    server.set_threads(t % 2 ? 2 : 1);
    const auto tiled = server.prepare(pp, q.data(), q.size());
    const auto kept = server.prepare(pp, q.data(), q.size(), &keeps);
    ASSERT_EQ(std::memcmp(tiled.first.data(), kept.first.data(), Query::words * 4), 0) << "query " << t;
    const auto resp = server.answer_prepared(tiled);
    EXPECT_EQ(resp, server.answer_prepared(kept));
    std::vector<std::uint8_t> out(P::record_size);
    client.decode(i, resp.data(), resp.size(), out.data(), out.size());
    EXPECT_TRUE(std::equal(out.begin(), out.end(), recs.begin() + i * P::record_size)) << "record " << i;
  }
}

}  // namespace
