// Variant formats: sizes equal FORMATS.md §7 (pinned reference values, and the sizes
// of serialized objects), malformed and foreign input rejected with a clear error as for vanilla,
// preprocessed databases saved and mapped, and the C ABI including the streaming additions.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "spiralpir/spiral/capi.hpp"
#include "spiralpir/testing/gtest_seed.hpp"
#include "variant_params.hpp"

using namespace spiralpir;
using namespace spiralpir::testing;

namespace {
struct stream_2e20 : insecure_spiral_2e20x256b { static constexpr Variant variant = Variant::stream; };
struct pack_2e20 : insecure_spiral_2e20x256b { static constexpr Variant variant = Variant::pack; };
struct streampack_2e20 : insecure_spiral_2e20x256b { static constexpr Variant variant = Variant::stream_pack; };
struct streampack_2e14 : insecure_spiral_2e14x100kb { static constexpr Variant variant = Variant::stream_pack; };
}  // namespace

SPIRALPIR_DEFINE_C_API(vtest_sp, insecure_streampack_2e20x256b_ci)

TEST(VariantFormats, ReferenceSizes) {
  // FORMATS.md §7 table (14,336 bytes per polynomial)
  EXPECT_EQ(Derived<stream_2e20>::pp_polys, 32u);
  EXPECT_EQ(Derived<stream_2e20>::public_params_bytes, 458816u);
  EXPECT_EQ(Derived<stream_2e20>::query_polys, 560u);
  EXPECT_EQ(Derived<stream_2e20>::query_bytes, 8028224u);
  EXPECT_EQ(Derived<stream_2e20>::response_bytes, 20512u);
  EXPECT_EQ(Derived<pack_2e20>::pp_polys, 488u);
  EXPECT_EQ(Derived<pack_2e20>::public_params_bytes, 6996032u);
  EXPECT_EQ(Derived<pack_2e20>::query_bytes, 14400u);
  EXPECT_EQ(Derived<pack_2e20>::response_bytes, 20512u);
  EXPECT_EQ(Derived<streampack_2e20>::pp_polys, 24u);
  EXPECT_EQ(Derived<streampack_2e20>::public_params_bytes, 344128u);
  EXPECT_EQ(Derived<streampack_2e20>::query_bytes, 8028224u);
  EXPECT_EQ(Derived<streampack_2e14>::query_polys, 557u);
  EXPECT_EQ(Derived<streampack_2e14>::query_bytes, 7985216u);
  EXPECT_EQ(Derived<streampack_2e14>::response_bytes, 264224u);
  EXPECT_EQ(Derived<streampack_2e14>::preprocessed_db_bytes, Derived<insecure_spiral_2e14x100kb>::preprocessed_db_bytes);
  // vanilla unchanged (FORMATS.md §6)
  EXPECT_EQ(Derived<insecure_spiral_2e20x256b>::public_params_bytes, 7110720u);
  EXPECT_EQ(Derived<insecure_spiral_2e20x256b>::query_bytes, 14400u);
  // the variant is part of the params hash
  EXPECT_NE(params_hash<stream_2e20>(), params_hash<insecure_spiral_2e20x256b>());
  EXPECT_NE(params_hash<stream_2e20>(), params_hash<streampack_2e20>());
  EXPECT_NE(params_hash<pack_2e20>(), params_hash<streampack_2e20>());
  // the computation types write the outer hash
  EXPECT_EQ(params_hash<PackComp<pack_2e20>>(), params_hash<pack_2e20>());
  EXPECT_EQ(params_hash<SpiralComp<stream_2e20>>(), params_hash<stream_2e20>());
}

namespace {

template <class P>
struct Fixture {
  Csprng rng = test_rng_here("fixture");
  std::vector<std::uint8_t> recs;
  Server<P> server{2};
  Client<P> client{test_seed_here("client")};
  std::vector<std::uint8_t> ppb;
  PublicParams<P> pp;
  Fixture() {
    recs.resize(P::num_records * P::record_size);
    rng.fill(recs.data(), recs.size());
    server.load_records(recs.data(), P::num_records, P::record_size);
    ppb = client.public_params();
    pp = PublicParams<P>::load(ppb.data(), ppb.size(), 2);
  }
};

template <class Fn>
std::string error_of(Fn&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

template <class P>
void run_malformed() {
  using D = Derived<P>;
  Fixture<P> fx;
  const std::uint64_t idx = fx.rng.uniform_mod(P::num_records);
  const auto qb = fx.client.query(idx, fx.rng);
  const auto resp = fx.server.answer(fx.pp, qb.data(), qb.size());
  // truncations of every object
  for (std::size_t cut : {std::size_t{0}, std::size_t{10}, std::size_t{31}, std::size_t{32}, qb.size() / 2, qb.size() - 1}) {
    EXPECT_NE(error_of([&] { fx.server.answer(fx.pp, qb.data(), cut); }), "") << "query cut " << cut;
  }
  for (std::size_t cut : {std::size_t{5}, std::size_t{40}, fx.ppb.size() - 1})
    EXPECT_NE(error_of([&] { PublicParams<P>::load(fx.ppb.data(), cut); }), "") << "pp cut " << cut;
  std::vector<std::uint8_t> out(P::record_size);
  for (std::size_t cut : {std::size_t{3}, std::size_t{33}, resp.size() - 1})
    EXPECT_NE(error_of([&] { fx.client.decode(idx, resp.data(), cut, out.data(), out.size()); }), "");
  // oversized
  auto big = qb;
  big.push_back(0);
  EXPECT_NE(error_of([&] { fx.server.answer(fx.pp, big.data(), big.size()); }), "");
  // header bit flips (magic, version, kind, hash, length)
  for (std::size_t byte : {0, 4, 6, 8, 15, 16, 23}) {
    auto bad = qb;
    bad[byte] ^= 0x01;
    EXPECT_NE(error_of([&] { fx.server.answer(fx.pp, bad.data(), bad.size()); }), "") << "flip byte " << byte;
  }
  // a coefficient >= q in the query and in the public params
  {
    auto bad = qb;
    for (std::size_t b = 64; b < 64 + 8; ++b) bad[b] = 0xFF;
    EXPECT_NE(error_of([&] { fx.server.answer(fx.pp, bad.data(), bad.size()); }).find("out of range"), std::string::npos);
    auto badpp = fx.ppb;
    for (std::size_t b = badpp.size() - 8; b < badpp.size(); ++b) badpp[b] = 0xFF;
    EXPECT_NE(error_of([&] { PublicParams<P>::load(badpp.data(), badpp.size()); }), "");
  }
  // a response coefficient >= q2 in the first row
  {
    auto bad = resp;
    for (std::size_t b = 32; b < 40; ++b) bad[b] = 0xFF;
    EXPECT_NE(error_of([&] { fx.client.decode(idx, bad.data(), bad.size(), out.data(), out.size()); }), "");
  }
  // out-of-range index
  EXPECT_NE(error_of([&] { fx.client.query(D::num_items); }), "");
  // the server still answers correctly after all that
  const auto resp2 = fx.server.answer(fx.pp, qb.data(), qb.size());
  fx.client.decode(idx, resp2.data(), resp2.size(), out.data(), out.size());
  EXPECT_EQ(0, std::memcmp(out.data(), fx.recs.data() + idx * P::record_size, P::record_size));
}

/// Objects made under other parameters (another variant of the same shape) are rejected as such.
template <class P, class Q>
void run_foreign() {
  Fixture<P> fx;
  Client<Q> other(test_seed_here("other client"));
  const auto q_other = other.query(1, fx.rng);
  const std::string e = error_of([&] { fx.server.answer(fx.pp, q_other.data(), q_other.size()); });
  EXPECT_NE(e.find("other parameters"), std::string::npos) << e;
  const auto pp_other = other.public_params();
  EXPECT_NE(error_of([&] { PublicParams<P>::load(pp_other.data(), pp_other.size()); }).find("other parameters"),
            std::string::npos);
  const auto st = other.save();
  EXPECT_NE(error_of([&] { Client<P>::load(st.data(), st.size()); }).find("other parameters"), std::string::npos);
}

template <class P>
void run_save_map() {
  Fixture<P> fx;
  const std::string path = ::testing::TempDir() + "variant_db_" + std::to_string(getpid()) + ".bin";
  fx.server.save_db(path);
  Server<P> s2(1);
  s2.map_db(path);
  const std::uint64_t idx = fx.rng.uniform_mod(P::num_records);
  const auto qb = fx.client.query(idx, fx.rng);
  const auto r1 = fx.server.answer(fx.pp, qb.data(), qb.size());
  const auto r2 = s2.answer(fx.pp, qb.data(), qb.size());
  EXPECT_EQ(r1, r2);
  EXPECT_EQ(s2.database().num_records(), P::num_records);
  // a vanilla server refuses this file (other params hash)
  using Vanilla = insecure_spiral_2e20x256b_ci;
  Server<Vanilla> sv(1);
  EXPECT_NE(error_of([&] { sv.map_db(path); }).find("other parameters"), std::string::npos);
  std::remove(path.c_str());
}

}  // namespace

TEST(VariantMalformed, Stream) { run_malformed<insecure_stream_2e20x256b_ci>(); }
TEST(VariantMalformed, Pack) { run_malformed<insecure_pack_2e20x256b_ci>(); }
TEST(VariantMalformed, StreamPack) { run_malformed<insecure_streampack_2e14x100kb_ci>(); }
TEST(VariantForeign, StreamVsStreamPack) { run_foreign<insecure_stream_2e20x256b_ci, insecure_streampack_2e20x256b_ci>(); }
TEST(VariantForeign, PackVsVanilla) { run_foreign<insecure_pack_2e20x256b_ci, insecure_spiral_2e20x256b_ci>(); }
TEST(VariantDb, PackSaveMap) { run_save_map<insecure_pack_2e20x256b_ci>(); }
TEST(VariantDb, StreamSaveMap) { run_save_map<insecure_stream_2e20x256b_ci>(); }

TEST(VariantCApi, StreamPackRoundTripAndStreaming) {
  using P = insecure_streampack_2e20x256b_ci;
  EXPECT_STREQ(vtest_sp_variant(), "stream_pack");
  EXPECT_NE(std::string(vtest_sp_params_json()).find("\"variant\":\"stream_pack\""), std::string::npos);
  void* client = nullptr;
  void* server = nullptr;
  void* pp = nullptr;
  void* prepared = nullptr;
  ASSERT_EQ(vtest_sp_client_new(nullptr, &client), 0);
  ASSERT_EQ(vtest_sp_server_new(2, &server), 0);
  Csprng rng = test_rng_here();
  std::vector<std::uint8_t> recs(P::num_records * P::record_size);
  rng.fill(recs.data(), recs.size());
  ASSERT_EQ(vtest_sp_server_load_records(server, recs.data(), P::num_records, P::record_size, nullptr, nullptr), 0);
  std::uint8_t* buf = nullptr;
  std::size_t len = 0;
  ASSERT_EQ(vtest_sp_client_public_params(client, &buf, &len), 0);
  EXPECT_EQ(len, Derived<P>::public_params_bytes);
  ASSERT_EQ(vtest_sp_public_params_load(buf, len, &pp), 0);
  vtest_sp_free(buf);
  const std::uint64_t idx = rng.uniform_mod(P::num_records);
  ASSERT_EQ(vtest_sp_client_query(client, idx, &buf, &len), 0);
  EXPECT_EQ(len, Derived<P>::query_bytes);
  // a truncated query fails with a message, nothing leaks
  EXPECT_NE(vtest_sp_server_prepare(server, pp, buf, len - 1, &prepared, nullptr), 0);
  EXPECT_NE(std::string(vtest_sp_last_error()).find("query"), std::string::npos);
  double s2[2] = {-1, -1}, s4[4] = {-1, -1, -1, -1};
  ASSERT_EQ(vtest_sp_server_prepare(server, pp, buf, len, &prepared, s2), 0) << vtest_sp_last_error();
  vtest_sp_free(buf);
  EXPECT_GE(s2[1], 0.0);
  for (int block = 0; block < 2; ++block) {
    if (block == 1) {
      rng.fill(recs.data(), recs.size());
      ASSERT_EQ(vtest_sp_server_load_records(server, recs.data(), P::num_records, P::record_size, nullptr, nullptr), 0);
    }
    std::uint8_t* resp = nullptr;
    std::size_t rlen = 0;
    ASSERT_EQ(vtest_sp_server_answer_prepared(server, prepared, &resp, &rlen, s4), 0) << vtest_sp_last_error();
    EXPECT_EQ(rlen, Derived<P>::response_bytes);
    std::vector<std::uint8_t> out(P::record_size);
    ASSERT_EQ(vtest_sp_client_decode(client, idx, resp, rlen, out.data(), out.size()), 0);
    EXPECT_EQ(0, std::memcmp(out.data(), recs.data() + idx * P::record_size, P::record_size)) << "block " << block;
    vtest_sp_free(resp);
  }
  EXPECT_NE(vtest_sp_server_answer_prepared(server, nullptr, &buf, &len, nullptr), 0);
  vtest_sp_prepared_free(prepared);
  vtest_sp_public_params_free(pp);
  vtest_sp_server_free(server);
  vtest_sp_client_free(client);
}
