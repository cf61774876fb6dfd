// Stage-by-stage correctness: every intermediate ciphertext decrypts (with the test-only noise
// hook) to the expected plaintext — expansion, ScalToMat/RegevToGSW, the first dimension (against
// the database's plaintexts), each fold — and the final noise leaves decoding a margin. Also:
// the response is identical at 1, 2 and 3 threads; the C ABI works end to end.
#include <gtest/gtest.h>

#include "spiralpir/spiral/capi.hpp"
#include "spiralpir/spiral/service.hpp"
#include "spiralpir/testing/bench_driver.hpp"
#include "spiralpir/testing/noise.hpp"
#include "spiralpir/testing/gtest_seed.hpp"
#include "test_params.hpp"

using namespace spiralpir;
using namespace spiralpir::testing;

SPIRALPIR_DEFINE_C_API(r2test, spiralpir::testing::insecure_spiral_2e20x256b_ci)

namespace {

/// checks that first-dimension output j (and fold outputs) decrypt to Δ·(the DB plaintext)
template <class P>
struct PlaintextChecker : NoiseMeter<P> {
  using R = typename P::ring;
  using D = Derived<P>;
  using MatN = rlwe::MatN<R>;
  const ClientCore<P>& client;
  std::uint64_t item;
  std::vector<std::uint8_t> records;
  int checked = 0;
  PlaintextChecker(const ClientCore<P>& c, std::uint64_t it, std::vector<std::uint8_t> recs)
      : NoiseMeter<P>(c, it), client(c), item(it), records(std::move(recs)) {}

  std::vector<rlwe::Pc<R>> plaintext(std::uint64_t inst, std::uint64_t pt) {
    std::vector<std::uint8_t> bytes(Database<P>::pt_bytes);
    Database<P>::records_source(records.data(), P::num_records, P::record_size)(inst, pt, bytes.data());
    return Database<P>::plaintext_polys(bytes.data());
  }
  void check(const MatN& m, std::uint64_t inst, std::uint64_t pt) {
    const auto pts = plaintext(inst, pt);
    for (unsigned row = 0; row < P::n; ++row)
      for (unsigned col = 0; col < P::n; ++col) {
        rlwe::Pn<R> x = m.at(row + 1, col);
        x -= m.at(0, col) * client.secret().s_ntt[row];
        const auto ph = from_ntt(std::move(x));
        for (std::size_t z = 0; z < D::d; ++z) {
          const std::uint64_t M = round_modswitch<R>(coeff(ph, z), P::p);
          // the database may store a coefficient v as its centered representative v − p (mod p_0)
          const std::uint64_t x = pts[row * P::n + col](0, z), p0 = R::primes[0];
          const std::uint64_t v = x > p0 / 2 ? P::p - (p0 - x) : x;
          ASSERT_EQ(M, v) << "inst " << inst << " pt " << pt << " entry " << row << "," << col
                                                     << " coeff " << z;
        }
      }
    ++checked;
  }
  void on_first_dimension(const std::vector<MatN>& cts) override {
    NoiseMeter<P>::on_first_dimension(cts);
    const auto loc = ItemLocation<P>::of(item);
    for (std::size_t inst = 0; inst < D::instances; ++inst)
      for (std::size_t j = 0; j < D::dim_rest; ++j) check(cts[inst * D::dim_rest + j], inst, loc.i * D::dim_rest + j);
  }
  void on_fold(unsigned r, const std::vector<MatN>& cts) override {
    NoiseMeter<P>::on_fold(r, cts);
    const auto loc = ItemLocation<P>::of(item);
    const std::size_t len = D::dim_rest >> (r + 1);
    // after round r the survivors are indexed by the low (nu_2-1-r) bits of j; the top bits are chosen
    const std::uint64_t chosen_hi = loc.j >> (P::nu_2 - 1 - r);
    for (std::size_t inst = 0; inst < D::instances; ++inst)
      for (std::size_t jj = 0; jj < len; ++jj)
        check(cts[inst * len + jj], inst, loc.i * D::dim_rest + ((chosen_hi << (P::nu_2 - 1 - r)) | jj));
  }
};

template <class P>
void stage_by_stage() {
  using D = Derived<P>;
  Csprng rng = test_rng_here();
  std::vector<std::uint8_t> recs(P::num_records * P::record_size);
  rng.fill(recs.data(), recs.size());
  Server<P> server(2);
  server.load_records(recs.data(), P::num_records, P::record_size);
  Client<P> client(test_seed_here("client"));
  const auto ppb = client.public_params();
  const auto pp = PublicParams<P>::load(ppb.data(), ppb.size());
  const std::uint64_t idx = rng.uniform_mod(P::num_records);
  const auto q = client.query(idx, rng);
  PlaintextChecker<P> chk(client.comp(), idx, recs);
  const auto resp = server.answer(pp, q.data(), q.size(), nullptr, &chk);
  chk.on_response(resp.data(), resp.size());
  EXPECT_EQ(chk.checked, static_cast<int>(D::instances * (2 * D::dim_rest - 1)));
  const double q_half = std::ldexp(1.0, static_cast<int>(D::q_bits) - 2);
  const double delta = static_cast<double>(D::delta);
  for (const auto& [name, st] : chk.results()) {
    EXPECT_GT(st.count, 0u) << name;
    if (name == "modswitch") {
      EXPECT_LE(st.max_abs, 1.0) << name;  // decoding needs |e| < 2
    } else if (name.rfind("expansion", 0) == 0 || name.rfind("conversion", 0) == 0) {
      // exact expected messages: a wrong stage gives noise ~ q/2
      EXPECT_LT(st.max_abs, q_half / 1024) << name;
      EXPECT_GT(st.variance(), 0.5) << name << " (no noise at all is suspicious)";
    } else {
      EXPECT_LT(st.max_abs, delta / 64) << name;
    }
  }
  std::vector<std::uint8_t> out(P::record_size);
  client.decode(idx, resp.data(), resp.size(), out.data(), out.size());
  EXPECT_EQ(0, std::memcmp(out.data(), recs.data() + idx * P::record_size, P::record_size));
}

}  // namespace

TEST(Stages, DecryptToExpected2e20x256b) { stage_by_stage<insecure_spiral_2e20x256b_ci>(); }
TEST(Stages, SlowDecryptToExpected2e14x100kb) { stage_by_stage<insecure_spiral_2e14x100kb_ci>(); }
TEST(Stages, SlowDecryptToExpectedTernaryN1) { stage_by_stage<insecure_ternary_n1_ci>(); }

TEST(Stages, SlowWrongIndexGivesOtherRecord) {
  using P = insecure_spiral_2e20x256b_ci;
  Csprng rng = test_rng_here();
  std::vector<std::uint8_t> recs(P::num_records * P::record_size);
  rng.fill(recs.data(), recs.size());
  Server<P> server(1);
  server.load_records(recs.data(), P::num_records, P::record_size);
  Client<P> client(test_seed_here("client"));
  const auto ppb = client.public_params();
  const auto pp = PublicParams<P>::load(ppb.data(), ppb.size());
  const auto q = client.query(100, rng);
  const auto resp = server.answer(pp, q.data(), q.size());
  std::vector<std::uint8_t> out(P::record_size);
  client.decode(101, resp.data(), resp.size(), out.data(), out.size());  // same plaintext, other slot
  EXPECT_EQ(0, std::memcmp(out.data(), recs.data() + 101 * P::record_size, P::record_size));
  client.decode(100, resp.data(), resp.size(), out.data(), out.size());
  EXPECT_EQ(0, std::memcmp(out.data(), recs.data() + 100 * P::record_size, P::record_size));
  // another client's secret cannot decode it
  Client<P> other(test_seed_here("other client"));
  other.decode(100, resp.data(), resp.size(), out.data(), out.size());
  EXPECT_NE(0, std::memcmp(out.data(), recs.data() + 100 * P::record_size, P::record_size));
}

TEST(Stages, SameAnswerAtAnyThreadCount) {
  using P = insecure_spiral_2e14x100kb_ci;
  Csprng rng = test_rng_here();
  std::vector<std::uint8_t> recs(P::num_records * P::record_size);
  rng.fill(recs.data(), recs.size());
  Server<P> server(1);
  server.load_records(recs.data(), P::num_records, P::record_size);
  Client<P> client(test_seed_here("client"));
  const auto ppb = client.public_params();
  const auto pp = PublicParams<P>::load(ppb.data(), ppb.size(), 3);
  const auto q = client.query(3, rng);
  const auto r1 = server.answer(pp, q.data(), q.size());
  server.set_threads(2);
  const auto r2 = server.answer(pp, q.data(), q.size());
  server.set_threads(3);
  const auto r3 = server.answer(pp, q.data(), q.size());
  EXPECT_EQ(r1, r2);
  EXPECT_EQ(r1, r3);
}

TEST(Stages, CApiEndToEnd) {
  using P = insecure_spiral_2e20x256b_ci;
  std::uint8_t seed[32] = {1, 2, 3};
  void* c = nullptr;
  ASSERT_EQ(r2test_client_new(seed, &c), 0) << r2test_last_error();
  std::uint8_t* buf = nullptr;
  size_t len = 0;
  ASSERT_EQ(r2test_client_public_params(c, &buf, &len), 0);
  EXPECT_EQ(len, Derived<P>::public_params_bytes);
  void* pp = nullptr;
  ASSERT_EQ(r2test_public_params_load(buf, len, &pp), 0) << r2test_last_error();
  r2test_free(buf);
  void* s = nullptr;
  ASSERT_EQ(r2test_server_new(2, &s), 0);
  Csprng rng = test_rng_here();
  std::vector<std::uint8_t> recs(P::num_records * 100);
  rng.fill(recs.data(), recs.size());
  std::uint64_t last_done = 0, last_total = 0;
  auto cb = [](void* ctx, uint64_t d, uint64_t t) {
    auto* p = static_cast<std::pair<std::uint64_t*, std::uint64_t*>*>(ctx);
    *p->first = d;
    *p->second = t;
  };
  std::pair<std::uint64_t*, std::uint64_t*> ctx{&last_done, &last_total};
  ASSERT_EQ(r2test_server_load_records(s, recs.data(), P::num_records, 100, cb, &ctx), 0) << r2test_last_error();
  EXPECT_EQ(last_done, last_total);
  EXPECT_GT(last_total, 0u);
  std::uint8_t* q = nullptr;
  size_t qlen = 0;
  ASSERT_EQ(r2test_client_query(c, 1234, &q, &qlen), 0);
  std::uint8_t* resp = nullptr;
  size_t rlen = 0;
  double st[5] = {};
  ASSERT_EQ(r2test_server_answer(s, pp, q, qlen, &resp, &rlen, st), 0) << r2test_last_error();
  EXPECT_GT(st[0] + st[1] + st[2] + st[3] + st[4], 0.0);
  std::uint8_t rec[100];
  ASSERT_EQ(r2test_client_decode(c, 1234, resp, rlen, rec, 100), 0) << r2test_last_error();
  EXPECT_EQ(0, std::memcmp(rec, recs.data() + 1234 * 100, 100));
  // client state round trip
  std::uint8_t* stb = nullptr;
  size_t stlen = 0;
  ASSERT_EQ(r2test_client_save(c, &stb, &stlen), 0);
  void* c2 = nullptr;
  ASSERT_EQ(r2test_client_load(stb, stlen, &c2), 0);
  ASSERT_EQ(r2test_client_decode(c2, 1234, resp, rlen, rec, 100), 0);
  EXPECT_EQ(0, std::memcmp(rec, recs.data() + 1234 * 100, 100));
  // errors: nonzero + message, no crash
  EXPECT_NE(r2test_client_decode(c, 1234, resp, rlen - 1, rec, 100), 0);
  EXPECT_NE(std::string(r2test_last_error()).find("response"), std::string::npos);
  EXPECT_NE(r2test_server_answer(s, pp, q, 3, &resp, &rlen, nullptr), 0);
  EXPECT_NE(r2test_server_answer(nullptr, pp, q, qlen, &resp, &rlen, nullptr), 0);
  EXPECT_NE(r2test_client_load(stb, 5, &c2), 0);
  EXPECT_NE(r2test_server_map_db(s, "/nonexistent/x.db"), 0);
  EXPECT_NE(std::string(r2test_params_json()).find("\"nu_1\":4"), std::string::npos);
  EXPECT_EQ(std::string(r2test_stage_names()), "expansion,conversion,first_dimension,folding,modswitch");
  r2test_free(stb);
  r2test_free(q);
  r2test_free(resp);
  r2test_client_free(c);
  r2test_client_free(c2);
  r2test_public_params_free(pp);
  r2test_server_free(s);
}

TEST(Stages, SlowBenchDriverJson) {
  using P = insecure_spiral_2e20x256b_ci;
  const char* args[] = {"bench", "--threads", "2", "--trials", "1", "--json", "--noise"};
  ::testing::internal::CaptureStdout();
  const int rc = run_bench<P>(7, const_cast<char**>(args));
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0) << out;
  for (const char* k : {"\"correct\":true", "\"server_seconds\":", "\"threads\":2", "\"stages\":{\"expansion\":",
                        "\"query_bytes\":14400", "\"response_bytes\":20512", "\"public_params_bytes\":",
                        "\"db_bytes\":512000", "\"preprocessed_db_bytes\":", "\"throughput_bytes_per_second\":",
                        "\"implicit_db\":false", "\"noise\":{\"expansion\":",
                        "\"server_uncontended_seconds\":"})  // 2 threads: the uncontended estimate
    EXPECT_NE(out.find(k), std::string::npos) << k << " in " << out;
  const char* bad[] = {"bench", "--trials", "x"};
  EXPECT_EQ(run_bench<P>(3, const_cast<char**>(bad)), 2);
}
