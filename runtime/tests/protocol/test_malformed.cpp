// Malformed input: truncations, extensions, bit flips, foreign parameters, out-of-range values,
// bad database files — always a spiralpir::Error with a clear message, never a crash or an
// out-of-bounds read (this suite runs under ASan/UBSan in CI).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "spiralpir/spiral/service.hpp"
#include "spiralpir/testing/gtest_seed.hpp"
#include "test_params.hpp"

using namespace spiralpir;
using namespace spiralpir::testing;

using PA = insecure_spiral_2e20x256b_ci;
using PB = insecure_ternary_n1_ci;  // "other parameters"

namespace {

struct Fixture {
  Client<PA> client{test_seed("malformed fixture client")};
  Server<PA> server{2};
  std::vector<std::uint8_t> ppb, query, resp;
  std::vector<std::uint8_t> records;
  Fixture() {
    Csprng rng = test_rng("malformed fixture");
    records.resize(PA::num_records * PA::record_size);
    rng.fill(records.data(), records.size());
    server.load_records(records.data(), PA::num_records, PA::record_size);
    ppb = client.public_params();
    query = client.query(5, rng);
    resp = server.answer(PublicParams<PA>::load(ppb.data(), ppb.size()), query.data(), query.size());
  }
};
Fixture& fx() {
  static Fixture f;
  return f;
}

template <class F>
void expect_format_error(F&& f, const char* what) {
  try {
    f();
    ADD_FAILURE() << what << ": accepted";
  } catch (const FormatError& e) {
    EXPECT_GT(std::string(e.what()).size(), 10u) << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": wrong exception type: " << e.what();
  }
}

std::vector<std::size_t> cut_points(std::size_t len) {
  std::vector<std::size_t> c = {0, 1, 4, 8, 16, 31, 32, 33, 63, 64, 65, len / 2, len - 33, len - 1};
  std::vector<std::size_t> out;
  for (auto x : c)
    if (x < len) out.push_back(x);
  return out;
}

// header flips that must be rejected: magic, version, kind, hash, length bytes
std::vector<std::size_t> header_flip_bytes() { return {0, 3, 4, 6, 8, 15, 16, 20, 23}; }

}  // namespace

TEST(Malformed, QueryTruncatedExtendedFlipped) {
  auto& f = fx();
  const auto pp = PublicParams<PA>::load(f.ppb.data(), f.ppb.size());
  for (std::size_t cut : cut_points(f.query.size())) {
    std::vector<std::uint8_t> q(f.query.begin(), f.query.begin() + static_cast<std::ptrdiff_t>(cut));
    expect_format_error([&] { f.server.answer(pp, q.data(), q.size()); }, "truncated query");
  }
  auto ext = f.query;
  ext.push_back(0);
  expect_format_error([&] { f.server.answer(pp, ext.data(), ext.size()); }, "extended query");
  for (std::size_t b : header_flip_bytes()) {
    auto q = f.query;
    q[b] ^= 0x01;
    expect_format_error([&] { f.server.answer(pp, q.data(), q.size()); }, "header flip");
  }
  // a coefficient >= q: set the first 56-bit field to all ones
  auto big = f.query;
  for (std::size_t i = 64; i < 64 + 7; ++i) big[i] = 0xff;
  expect_format_error([&] { f.server.answer(pp, big.data(), big.size()); }, "coefficient >= q");
  // payload flips: either still a valid query (answered, wrong item) or rejected; never a crash
  Csprng rng = test_rng_here();
  for (int t = 0; t < 5; ++t) {
    auto q = f.query;
    q[32 + rng.uniform_mod(q.size() - 32)] ^= static_cast<std::uint8_t>(1u << rng.uniform_mod(8));
    try {
      const auto r = f.server.answer(pp, q.data(), q.size());
      EXPECT_EQ(r.size(), Derived<PA>::response_bytes);
    } catch (const FormatError&) {
    }
  }
  EXPECT_THROW(f.server.answer(pp, nullptr, 10), ArgumentError);
}

TEST(Malformed, QueryUnderOtherParams) {
  auto& f = fx();
  Client<PB> other(test_seed_here("other client"));
  Csprng rng = test_rng_here();
  const auto q = other.query(3, rng);
  const auto pp = PublicParams<PA>::load(f.ppb.data(), f.ppb.size());
  EXPECT_THROW(f.server.answer(pp, q.data(), q.size()), ParamsMismatchError);
  const auto ppo = other.public_params();
  EXPECT_THROW(PublicParams<PA>::load(ppo.data(), ppo.size()), ParamsMismatchError);
  try {
    f.server.answer(pp, q.data(), q.size());
  } catch (const ParamsMismatchError& e) {
    EXPECT_NE(std::string(e.what()).find("other parameters"), std::string::npos);
  }
}

TEST(Malformed, PublicParamsTruncatedFlipped) {
  auto& f = fx();
  for (std::size_t cut : cut_points(f.ppb.size())) {
    std::vector<std::uint8_t> p(f.ppb.begin(), f.ppb.begin() + static_cast<std::ptrdiff_t>(cut));
    expect_format_error([&] { PublicParams<PA>::load(p.data(), p.size()); }, "truncated pp");
  }
  for (std::size_t b : header_flip_bytes()) {
    auto p = f.ppb;
    p[b] ^= 0x80;
    expect_format_error([&] { PublicParams<PA>::load(p.data(), p.size()); }, "pp header flip");
  }
  auto p = f.ppb;
  p.push_back(1);
  expect_format_error([&] { PublicParams<PA>::load(p.data(), p.size()); }, "extended pp");
}

TEST(Malformed, ResponseTruncatedFlippedForeign) {
  auto& f = fx();
  std::vector<std::uint8_t> out(PA::record_size);
  for (std::size_t cut : cut_points(f.resp.size())) {
    std::vector<std::uint8_t> r(f.resp.begin(), f.resp.begin() + static_cast<std::ptrdiff_t>(cut));
    expect_format_error([&] { f.client.decode(5, r.data(), r.size(), out.data(), out.size()); }, "truncated response");
  }
  for (std::size_t b : header_flip_bytes()) {
    auto r = f.resp;
    r[b] ^= 0x02;
    expect_format_error([&] { f.client.decode(5, r.data(), r.size(), out.data(), out.size()); }, "response header flip");
  }
  // first-row coefficient >= q2 (q2 < 2^20): all-ones 20-bit field
  auto r = f.resp;
  r[32] = r[33] = 0xff;
  r[34] |= 0x0f;
  expect_format_error([&] { f.client.decode(5, r.data(), r.size(), out.data(), out.size()); }, "value >= q2");
  // the genuine response decodes
  f.client.decode(5, f.resp.data(), f.resp.size(), out.data(), out.size());
  EXPECT_EQ(0, std::memcmp(out.data(), f.records.data() + 5 * PA::record_size, PA::record_size));
  EXPECT_THROW(f.client.decode(Derived<PA>::num_items, f.resp.data(), f.resp.size(), out.data(), out.size()),
               ArgumentError);
  EXPECT_THROW(f.client.decode(5, f.resp.data(), f.resp.size(), out.data(), PA::db_item_size + 1), ArgumentError);
}

TEST(Malformed, ClientStateAndArguments) {
  auto& f = fx();
  const auto st = f.client.save();
  for (std::size_t cut : cut_points(st.size())) {
    std::vector<std::uint8_t> s(st.begin(), st.begin() + static_cast<std::ptrdiff_t>(cut));
    expect_format_error([&] { Client<PA>::load(s.data(), s.size()); }, "truncated client state");
  }
  auto restored = Client<PA>::load(st.data(), st.size());
  EXPECT_EQ(restored.public_params(), f.ppb);
  EXPECT_THROW(f.client.query(Derived<PA>::num_items), ArgumentError);
  Server<PA> s(1);
  EXPECT_THROW(s.load_records(f.records.data(), Derived<PA>::num_items + 1, PA::record_size), ArgumentError);
  EXPECT_THROW(s.load_records(f.records.data(), 10, PA::db_item_size + 1), ArgumentError);
  EXPECT_THROW(s.load_records(nullptr, 10, 10), ArgumentError);
  const auto pp = PublicParams<PA>::load(f.ppb.data(), f.ppb.size());
  EXPECT_THROW(s.answer(pp, f.query.data(), f.query.size()), ArgumentError);  // no database
  EXPECT_THROW(s.answer("nobody", f.query.data(), f.query.size()), ArgumentError);
}

TEST(Malformed, NonzeroAuxRejectedOutsideDatabases) {
  // aux (header bytes 24..31) is the record count of a preprocessed database and 0 in every other
  // object; any other value must be refused, not parsed into byte-different copies of one object
  auto& f = fx();
  std::vector<std::uint8_t> out(PA::record_size);
  const auto st = f.client.save();
  const auto pp = PublicParams<PA>::load(f.ppb.data(), f.ppb.size());
  for (std::size_t b : {24, 27, 31})
    for (std::uint8_t bit : {0x01, 0x80}) {
      auto p = f.ppb;
      p[b] ^= bit;
      expect_format_error([&] { PublicParams<PA>::load(p.data(), p.size()); }, "public params aux");
      auto q = f.query;
      q[b] ^= bit;
      expect_format_error([&] { f.server.answer(pp, q.data(), q.size()); }, "query aux");
      auto r = f.resp;
      r[b] ^= bit;
      expect_format_error([&] { f.client.decode(5, r.data(), r.size(), out.data(), out.size()); }, "response aux");
      auto s = st;
      s[b] ^= bit;
      expect_format_error([&] { Client<PA>::load(s.data(), s.size()); }, "client state aux");
    }
  try {
    auto p = f.ppb;
    p[24] = 7;
    PublicParams<PA>::load(p.data(), p.size());
    ADD_FAILURE() << "public parameters with aux 7 accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("aux field is 7, must be 0"), std::string::npos) << e.what();
  }
}

TEST(Malformed, DatabaseFiles) {
  auto& f = fx();
  const auto dir = std::filesystem::temp_directory_path() / ("spiralpir_r2_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "db.bin").string();
  f.server.save_db(path);
  EXPECT_EQ(std::filesystem::file_size(path), Derived<PA>::preprocessed_db_bytes);
  Server<PA> s2(2);
  s2.map_db(path);
  const auto pp = PublicParams<PA>::load(f.ppb.data(), f.ppb.size());
  EXPECT_EQ(s2.answer(pp, f.query.data(), f.query.size()), f.resp);
  // truncated file
  {
    std::filesystem::copy_file(path, dir / "trunc.bin");
    std::filesystem::resize_file(dir / "trunc.bin", Derived<PA>::preprocessed_db_bytes - 4);
    Server<PA> s3(1);
    expect_format_error([&] { s3.map_db((dir / "trunc.bin").string()); }, "truncated db");
    std::filesystem::resize_file(dir / "trunc.bin", 10);
    expect_format_error([&] { s3.map_db((dir / "trunc.bin").string()); }, "tiny db");
  }
  // residue out of range
  {
    std::filesystem::copy_file(path, dir / "bad.bin");
    std::fstream io(dir / "bad.bin", std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(100);
    const char ff[4] = {'\xff', '\xff', '\xff', '\xff'};
    io.write(ff, 4);
    io.close();
    Server<PA> s3(1);
    expect_format_error([&] { s3.map_db((dir / "bad.bin").string()); }, "residue out of range");
  }
  // other parameters
  Server<PB> sb(1);
  EXPECT_THROW(sb.map_db(path), ParamsMismatchError);
  EXPECT_THROW(s2.map_db((dir / "missing.bin").string()), IoError);
  std::filesystem::remove_all(dir);
}
