// A saved database followed by a store trailer (FORMATS.md §8) maps and answers like the bare
// file; a tail that is not such a trailer is refused; a file truncated while mapped makes every
// later answer an IoError instead of a SIGBUS that ends the process.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "spiralpir/spiral/service.hpp"
#include "test_params.hpp"

using namespace spiralpir;
using namespace spiralpir::testing;

using PA = insecure_spiral_2e20x256b_ci;

namespace {

struct Fixture {
  Client<PA> client;
  Server<PA> server{2};
  std::vector<std::uint8_t> ppb, query, resp;
  std::filesystem::path dir;
  std::string bare;
  Fixture() {
    Csprng rng;
    std::vector<std::uint8_t> records(PA::num_records * PA::record_size);
    rng.fill(records.data(), records.size());
    server.load_records(records.data(), PA::num_records, PA::record_size);
    ppb = client.public_params();
    query = client.query(7);
    resp = server.answer(PublicParams<PA>::load(ppb.data(), ppb.size()), query.data(), query.size());
    dir = std::filesystem::temp_directory_path() / ("spiralpir_stored_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    bare = (dir / "db.bin").string();
    server.save_db(bare);
  }
  ~Fixture() { std::filesystem::remove_all(dir); }
  /// a copy of the saved database with `tail` appended
  std::string with_tail(const std::string& name, const std::vector<std::uint8_t>& tail) const {
    const auto path = dir / name;
    std::filesystem::copy_file(bare, path, std::filesystem::copy_options::overwrite_existing);
    std::ofstream(path, std::ios::binary | std::ios::app).write(reinterpret_cast<const char*>(tail.data()),
                                                               static_cast<std::streamsize>(tail.size()));
    return path.string();
  }
  std::vector<std::uint8_t> answer(Server<PA>& s) const {
    return s.answer(PublicParams<PA>::load(ppb.data(), ppb.size()), query.data(), query.size());
  }
};

/// one fixture for the suite: building the database dominates its time under the sanitizers
Fixture& fx() {
  static Fixture f;
  return f;
}

/// a trailer of `body` bytes whose last 16 bytes are its length `len` and the magic `magic`
std::vector<std::uint8_t> trailer(std::size_t body, std::uint64_t len, const char* magic = "SPRLSTOR") {
  std::vector<std::uint8_t> t(body + 16, 0xA5);
  detail::put_le(t.data() + body, len, 8);
  std::memcpy(t.data() + body + 8, magic, 8);
  return t;
}

}  // namespace

TEST(StoredDb, TrailerIsAcceptedAndOnlyATrailer) {
  auto& f = fx();
  Server<PA> s(1);
  s.map_db(f.with_tail("store.bin", trailer(80, 96)));
  EXPECT_EQ(f.answer(s), f.resp);
  EXPECT_THROW(s.map_db(f.with_tail("badlen.bin", trailer(80, 95))), FormatError);
  EXPECT_THROW(s.map_db(f.with_tail("badmagic.bin", trailer(80, 96, "SPRLSTOX"))), FormatError);
  EXPECT_THROW(s.map_db(f.with_tail("short.bin", {1, 2, 3})), FormatError);
}

TEST(StoredDb, TruncatedWhileMappedIsAnErrorNotASignal) {
  auto& f = fx();
  Server<PA> s(2);
  const std::string path = f.with_tail("mapped.bin", trailer(8, 24));
  s.map_db(path);
  EXPECT_EQ(f.answer(s), f.resp);
  std::filesystem::resize_file(path, 4096);
  for (int k = 0; k < 2; ++k) {
    try {
      f.answer(s);
      ADD_FAILURE() << "answered from a truncated mapping";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find("shrank while mapped"), std::string::npos) << e.what();
    }
  }
  // another server's mapping of an intact file is unaffected
  Server<PA> t(1);
  t.map_db(f.with_tail("intact.bin", trailer(8, 24)));
  EXPECT_EQ(f.answer(t), f.resp);
}
