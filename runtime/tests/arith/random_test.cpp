// ChaCha20 against RFC 8439 test vectors; determinism, streams, rejection sampling.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "spiralpir/arith/random.hpp"

namespace spiralpir {
namespace {

std::vector<std::uint8_t> from_hex(const char* s) {
  std::vector<std::uint8_t> out;
  for (; s[0] && s[1]; s += 2) out.push_back(static_cast<std::uint8_t>(std::stoi(std::string(s, 2), nullptr, 16)));
  return out;
}

TEST(ChaCha20, Rfc8439KeystreamVectors) {
  // RFC 8439 appendix A.1, test vectors #1 and #2: all-zero key and nonce, blocks 0 and 1.
  Csprng rng(Seed{}, 0);
  std::vector<std::uint8_t> got(128);
  rng.fill(got);
  const auto block0 = from_hex(
      "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
      "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586");
  const auto block1 = from_hex(
      "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed"
      "29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f");
  EXPECT_EQ(std::vector<std::uint8_t>(got.begin(), got.begin() + 64), block0);
  EXPECT_EQ(std::vector<std::uint8_t>(got.begin() + 64, got.end()), block1);
}

TEST(ChaCha20, DeterministicPerSeedAndStream) {
  Seed s{};
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::uint8_t>(i);
  Csprng a(s, 5), b(s, 5), c(s, 6);
  std::vector<std::uint8_t> x(1000), y(1000), z(1000);
  // Reads of odd sizes must give the same stream as one big read.
  a.fill(x);
  for (std::size_t off = 0; off < y.size();) {
    const std::size_t take = std::min<std::size_t>(37, y.size() - off);
    b.fill(y.data() + off, take);
    off += take;
  }
  c.fill(z);
  EXPECT_EQ(x, y);
  EXPECT_NE(x, z);
}

TEST(Csprng, OsSeededGeneratorsDiffer) {
  Csprng a, b;
  EXPECT_NE(a.next_u64(), b.next_u64());
}

TEST(Csprng, UniformModCoversRangeEvenly) {
  Csprng rng(Seed{}, 9);
  const std::uint64_t q = 7;
  std::map<std::uint64_t, int> counts;
  const int N = 70000;
  for (int i = 0; i < N; ++i) counts[rng.uniform_mod(q)]++;
  ASSERT_EQ(counts.size(), q);
  for (auto [v, c] : counts) EXPECT_NEAR(c, N / 7.0, 6 * std::sqrt(N / 7.0)) << v;
  // A modulus just above 2^63 rejects about half of the draws and must still stay below q.
  const std::uint64_t big = (1ULL << 63) + 1;
  for (int i = 0; i < 1000; ++i) ASSERT_LT(rng.uniform_mod(big), big);
  EXPECT_THROW(rng.uniform_mod(0), std::invalid_argument);
}

TEST(Csprng, UniformModFillIsTheSameStreamAsOneAtATime) {
  // Seed expansion defines the wire format: the bulk draw must give exactly the values (and
  // leave the generator exactly where) count single draws would, rejections included.
  Seed seed{};
  seed[0] = 0x5a;
  for (const std::uint64_t q : {std::uint64_t{7}, std::uint64_t{268369921}, std::uint64_t{(1ULL << 63) + 1}}) {
    Csprng one(seed, 3), bulk(seed, 3);
    std::vector<std::uint64_t> expected(1000), got(1000);
    for (auto& v : expected) v = one.uniform_mod(q);
    bulk.uniform_mod_fill(got.data(), got.size(), q);
    EXPECT_EQ(got, expected) << q;
    EXPECT_EQ(bulk.next_u64(), one.next_u64()) << q;
  }
  Csprng rng(seed, 4);
  std::uint64_t out = 0;
  EXPECT_THROW(rng.uniform_mod_fill(&out, 1, 0), std::invalid_argument);
}

}  // namespace
}  // namespace spiralpir
