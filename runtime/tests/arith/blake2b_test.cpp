// BLAKE2b against typed-in vectors (an independent oracle): RFC 7693 Appendix A ("abc"), the
// reference keyed vector (empty message, key 00..3f), and hashlib.blake2b's digests with keys,
// persons and digest sizes at block boundaries; bad lengths are refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "spiralpir/core/blake2b.hpp"

namespace spiralpir {
namespace {

std::vector<std::uint8_t> counting(std::size_t n) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i);
  return v;
}

std::vector<std::uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

std::string digest(const std::vector<std::uint8_t>& data, const std::vector<std::uint8_t>& key,
                   const std::vector<std::uint8_t>& person, std::size_t n) {
  std::uint8_t out[64];
  blake2b(out, n, data.data(), data.size(), key.data(), key.size(), person.data(), person.size());
  std::string s;
  char b[3];
  for (std::size_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof b, "%02x", out[i]);
    s += b;
  }
  return s;
}

TEST(Blake2b, Vectors) {
  EXPECT_EQ(digest(bytes("abc"), {}, {}, 64),
            "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
            "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923");
  EXPECT_EQ(digest({}, counting(64), {}, 64),
            "10ebb67700b1868efb4417987acf4690ae9d972fb7a590c2f02871799aaa4786"
            "b5e996e8f0f4eb981fc214b005f42d2ff4233499391653df7aefcbc13fc51568");
  EXPECT_EQ(digest(counting(128), counting(16), bytes("spiralpir-kwbin"), 40),
            "27cf55acca60ef133ad2e7cce6cd7ad7a32606f23b5d6f633b27866caa657aae5aebfdae0b2ed5cb");
  EXPECT_EQ(digest(counting(129), {}, bytes("0123456789abcdef"), 32),
            "4c327d51b8bea0e0e77f31a0a9abb2b6a994b86bc5f4639452e0ec49e38728c8");
  EXPECT_EQ(digest(counting(256), counting(1), bytes("p"), 8), "20e69a61e0462e93");
  EXPECT_EQ(digest({}, {}, {}, 1), "2e");
}

TEST(Blake2b, BadLengthsAreRefused) {
  std::uint8_t out[64], in[80] = {};
  EXPECT_THROW(blake2b(out, 0, in, 1, nullptr, 0, nullptr, 0), ArgumentError);
  EXPECT_THROW(blake2b(out, 65, in, 1, nullptr, 0, nullptr, 0), ArgumentError);
  EXPECT_THROW(blake2b(out, 8, in, 1, in, 65, nullptr, 0), ArgumentError);
  EXPECT_THROW(blake2b(out, 8, in, 1, nullptr, 0, in, 17), ArgumentError);
}

}  // namespace
}  // namespace spiralpir
