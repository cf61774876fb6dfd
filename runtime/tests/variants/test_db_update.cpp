// Record updates (db_update.hpp): re-encoding the plaintexts of changed records, in memory and in
// a saved file, gives byte for byte the database a fresh build of the changed records gives, for
// every variant (the pack variants spread a plaintext over n² sub-databases) and for records
// several per plaintext or several plaintexts per record; out-of-range input is refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "spiralpir/spiral/service.hpp"
#include "spiralpir/spiral/db_update.hpp"
#include "spiralpir/testing/gtest_seed.hpp"
#include "variant_params.hpp"

using namespace spiralpir;
using namespace spiralpir::testing;

namespace {

std::vector<std::uint8_t> file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

template <class P>
class DbUpdateTest : public ::testing::Test {};

using Params = ::testing::Types<insecure_spiral_2e20x256b_ci, insecure_stream_2e20x256b_ci,
                                insecure_pack_2e20x256b_ci, insecure_streampack_2e20x256b_ci,
                                insecure_pack_n3_ci, insecure_pack_short_records_multi_ci>;
TYPED_TEST_SUITE(DbUpdateTest, Params);

TYPED_TEST(DbUpdateTest, SameAsAFreshBuild) {
  using P = TypeParam;
  using D = Derived<P>;
  Csprng rng = test_rng_here("records");
  const std::uint64_t n = P::num_records, rs = P::record_size;
  std::vector<std::uint8_t> before(n * rs), after;
  rng.fill(before.data(), before.size());
  after = before;
  std::set<std::uint64_t> pts;
  for (int k = 0; k < 5; ++k) {
    const std::uint64_t r = rng.uniform_mod(n);
    rng.fill(after.data() + r * rs, rs);
    pts.insert(r / D::items_per_pt);
  }
  pts.insert((n - 1) / D::items_per_pt);  // the last plaintext, with the padding after the records
  after[(n - 1) * rs] ^= 1;
  const std::vector<std::uint64_t> list(pts.begin(), pts.end());
  const auto dir = std::filesystem::temp_directory_path() / ("spiralpir_dbupdate_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string old_path = (dir / "old.db").string(), new_path = (dir / "new.db").string(),
                    upd_path = (dir / "upd.db").string();

  Server<P> fresh(2), updated(2), copy(2);
  fresh.load_records(after.data(), n, rs);
  fresh.save_db(new_path);
  updated.load_records(before.data(), n, rs);
  updated.save_db(old_path);
  copy.database().copy_from(updated.database());  // a copy, updated apart from its source
  DbUpdate<P>::update(copy, after.data(), n, rs, list.data(), list.size(), 1);
  copy.save_db(upd_path);
  EXPECT_EQ(file_bytes(upd_path), file_bytes(new_path));
  updated.save_db(upd_path);
  EXPECT_EQ(file_bytes(upd_path), file_bytes(old_path)) << "the source of the copy changed";

  // the same into the file, which may carry a trailer after the object
  { std::ofstream(old_path, std::ios::binary | std::ios::app) << "trailer bytes"; }
  const std::uint64_t chunk = 4096, chunks = (D::preprocessed_db_bytes + chunk - 1) / chunk;
  std::vector<std::uint8_t> touched(chunks);
  DbUpdate<P>::patch_file(old_path, after.data(), n, rs, list.data(), list.size(), 2, chunk, touched.data(),
                          touched.size());
  auto patched = file_bytes(old_path);
  const auto want = file_bytes(new_path);
  ASSERT_EQ(patched.size(), want.size() + 13);
  const auto old_bytes = file_bytes(upd_path);
  for (std::uint64_t c = 0; c < chunks; ++c) {  // every changed chunk is marked touched
    const std::uint64_t b = c * chunk, e = std::min<std::uint64_t>(b + chunk, want.size());
    if (!std::equal(want.begin() + b, want.begin() + e, old_bytes.begin() + b)) {
      EXPECT_EQ(touched[c], 1) << c;
    }
  }
  EXPECT_LT(std::count(touched.begin(), touched.end(), 1), static_cast<long>(chunks));
  patched.resize(want.size());
  EXPECT_EQ(patched, want);
  std::filesystem::remove_all(dir);
}

TYPED_TEST(DbUpdateTest, RefusesBadInput) {
  using P = TypeParam;
  using D = Derived<P>;
  Server<P> server(1);
  std::vector<std::uint8_t> records(P::num_records * P::record_size);
  const std::uint64_t bad = D::num_pts, ok = 0;
  EXPECT_THROW(DbUpdate<P>::update(server, records.data(), P::num_records, P::record_size, &ok, 1, 1),
               ArgumentError);  // nothing loaded
  server.load_records(records.data(), P::num_records, P::record_size);
  EXPECT_THROW(DbUpdate<P>::update(server, records.data(), P::num_records, P::record_size, &bad, 1, 1),
               ArgumentError);
  EXPECT_THROW(DbUpdate<P>::update(server, records.data(), P::num_records - 1, P::record_size, &ok, 1, 1),
               ArgumentError);
  std::uint8_t touched[1] = {};
  EXPECT_THROW(DbUpdate<P>::patch_file("/nonexistent/db", records.data(), P::num_records, P::record_size, &ok, 1,
                                       1, D::preprocessed_db_bytes, touched, 1),
               IoError);
}

}  // namespace
