// Formats: params canonical string and hash, exact sizes (the FORMATS.md table and the real
// serialized objects), headers, bit packing, the params concept on derived (twin) types.
#include <gtest/gtest.h>

#include "spiralpir/spiral/client.hpp"
#include "spiralpir/spiral/server.hpp"
#include "spiralpir/spiral/service.hpp"
#include "spiralpir/testing/gtest_seed.hpp"
#include "test_params.hpp"

using namespace spiralpir;
using namespace spiralpir::testing;

namespace {
std::string hex8(const std::array<std::uint8_t, 8>& h) {
  static const char* x = "0123456789abcdef";
  std::string s;
  for (auto b : h) { s += x[b >> 4]; s += x[b & 15]; }
  return s;
}
}  // namespace

static_assert(SpiralParams<insecure_spiral_2e20x256b>);
static_assert(SpiralParams<insecure_spiral_2e20x256b_ci>);
static_assert(Derived<insecure_spiral_2e20x256b_ci>::nu_1 == 4 && Derived<insecure_spiral_2e20x256b_ci>::nu_2 == 2,
              "a derived params type shadowing nu_1/nu_2 must be seen through P::");

TEST(Formats, CanonicalStringAndHash) {
  const std::string expect =
      "spiralpir-params-v1\nvariant=spiral\npoly_len=2048\nmoduli=268369921,249561089\n"
      "noise_width=0x401999999999999a\nsecret_dist=gaussian\nsecret_plus=0\nsecret_minus=0\nn=2\nnu_1=9\nnu_2=6\n"
      "p=256\nq2_bits=20\nt_gsw=8\nt_conv=4\nt_exp_left=8\nt_exp_right=56\ninstances=1\ndb_item_size=256\n";
  EXPECT_EQ(params_canonical_string<insecure_spiral_2e20x256b>(), expect);
  // SHA-256 of the string above, first 8 bytes (python: hashlib.sha256(s).hexdigest()[:16])
  EXPECT_EQ(hex8(params_hash<insecure_spiral_2e20x256b>()), "d61bf71dc74fe77a");
  EXPECT_EQ(hex8(params_hash<insecure_spiral_2e14x100kb>()), "065bbb4600419004");
  EXPECT_NE(params_hash<insecure_spiral_2e20x256b>(), params_hash<insecure_spiral_2e20x256b_ci>());
}

TEST(Formats, Sha256KnownAnswers) {
  const std::string abc = "abc";
  const auto h = sha256({reinterpret_cast<const std::uint8_t*>(abc.data()), abc.size()});
  EXPECT_EQ(h[0], 0xba);
  EXPECT_EQ(h[31], 0xad);
  const std::string longer(1000, 'a');  // crosses block boundaries
  const auto h2 = sha256({reinterpret_cast<const std::uint8_t*>(longer.data()), longer.size()});
  // sha256('a'*1000) = 41edece4...
  EXPECT_EQ(h2[0], 0x41);
  EXPECT_EQ(h2[1], 0xed);
}

TEST(Formats, ReferenceTableOfFormatsMd) {
  using A = Derived<insecure_spiral_2e20x256b>;
  EXPECT_EQ(A::q_bits, 56u);
  EXPECT_EQ(A::q2, 1032193u);
  EXPECT_EQ(A::rounds, 10u);
  EXPECT_EQ(A::rounds_right, 7u);
  EXPECT_EQ(A::pp_polys, 496u);
  EXPECT_EQ(A::public_params_bytes, 7110720u);
  EXPECT_EQ(A::query_bytes, 14400u);
  EXPECT_EQ(A::response_bytes, 20512u);
  EXPECT_EQ(A::preprocessed_db_bytes, 2147483680ull);
  EXPECT_EQ(A::items_per_pt, 32u);
  using B = Derived<insecure_spiral_2e14x100kb>;
  EXPECT_EQ(B::q2, 2056193u);
  EXPECT_EQ(B::pp_polys, 568u);
  EXPECT_EQ(B::public_params_bytes, 8142912u);
  EXPECT_EQ(B::query_bytes, 14400u);
  EXPECT_EQ(B::response_bytes, 264224u);
  EXPECT_EQ(B::preprocessed_db_bytes, 12884901920ull);
  EXPECT_EQ(B::items_per_pt, 1u);
}

template <class P>
void check_real_sizes() {
  using D = Derived<P>;
  Seed s{};
  s[0] = 7;
  Client<P> c(s);
  Csprng rng = test_rng_here();
  const auto pp = c.public_params();
  const auto q = c.query(0, rng);
  const auto st = c.save();
  EXPECT_EQ(pp.size(), D::public_params_bytes);
  EXPECT_EQ(q.size(), D::query_bytes);
  EXPECT_EQ(st.size(), D::client_state_bytes);
  for (const auto* obj : {&pp, &q, &st}) {
    ASSERT_GE(obj->size(), kHeaderBytes);
    EXPECT_EQ(std::memcmp(obj->data(), "SPRL", 4), 0);
    // FORMATS.md §1: query and public parameters version 2
    EXPECT_EQ(detail::get_le(obj->data() + 4, 2), obj == &st ? 1u : 2u);
    EXPECT_EQ(std::memcmp(obj->data() + 8, params_hash<P>().data(), 8), 0);
    EXPECT_EQ(detail::get_le(obj->data() + 16, 8), obj->size() - kHeaderBytes);
  }
  EXPECT_EQ(detail::get_le(pp.data() + 6, 2), 2u);
  EXPECT_EQ(detail::get_le(q.data() + 6, 2), 3u);
  EXPECT_EQ(detail::get_le(st.data() + 6, 2), 1u);
  // public params are deterministic in the master seed; queries are fresh
  EXPECT_EQ(c.public_params(), pp);
  EXPECT_NE(c.query(0, rng), q);
}

TEST(Formats, SerializedSizesEqualFormulas) { check_real_sizes<insecure_spiral_2e20x256b_ci>(); }

TEST(Formats, SlowSerializedSizesOtherSets) {
  check_real_sizes<insecure_spiral_2e14x100kb_ci>();
  check_real_sizes<insecure_ternary_n1_ci>();
}

TEST(Formats, SlowFullSizeQueryAndPublicParamsSizes) {
  // full-size client objects are cheap to make; their sizes must match the table too
  check_real_sizes<insecure_spiral_2e20x256b>();
}

TEST(Formats, BitPackingRoundTrip) {
  Csprng rng = test_rng_here();
  std::vector<std::pair<std::uint64_t, unsigned>> vals;
  for (int i = 0; i < 1000; ++i) {
    const unsigned w = 1 + static_cast<unsigned>(rng.uniform_mod(64));
    const std::uint64_t v = w == 64 ? rng.next_u64() : rng.next_u64() & ((std::uint64_t{1} << w) - 1);
    vals.emplace_back(v, w);
  }
  std::vector<std::uint8_t> buf(1000 * 8 + 8, 0);
  BitWriter w(buf.data());
  for (auto [v, bits] : vals) w.put(v, bits);
  BitReader r(buf.data(), (w.bits_written() + 7) / 8);
  for (auto [v, bits] : vals) EXPECT_EQ(r.get(bits), v);
  EXPECT_THROW(r.get(64), FormatError);
}

TEST(Formats, ParamsJsonHasEveryField) {
  const std::string j = params_json<insecure_spiral_2e20x256b>();
  for (const char* k : {"\"variant\":\"spiral\"", "\"poly_len\":2048", "\"moduli\":[268369921,249561089]", "\"n\":2",
                        "\"nu_1\":9", "\"nu_2\":6", "\"p\":256", "\"q2_bits\":20", "\"t_gsw\":8", "\"t_conv\":4",
                        "\"t_exp_left\":8", "\"t_exp_right\":56", "\"instances\":1", "\"db_item_size\":256",
                        "\"public_params_bytes\":7110720", "\"query_bytes\":14400", "\"response_bytes\":20512",
                        "\"params_hash\":\"d61bf71dc74fe77a\""})
    EXPECT_NE(j.find(k), std::string::npos) << k;
}
