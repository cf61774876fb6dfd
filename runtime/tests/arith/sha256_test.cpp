// SHA-256 against the FIPS 180-2 example vectors (typed in: an independent oracle), and the
// incremental interface against one-shot hashing across block boundaries.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "spiralpir/core/sha256.hpp"

namespace spiralpir {
namespace {

std::string hex(const std::array<std::uint8_t, 32>& d) {
  std::string s;
  char b[3];
  for (auto x : d) {
    std::snprintf(b, sizeof b, "%02x", x);
    s += b;
  }
  return s;
}
std::array<std::uint8_t, 32> hash(const std::string& s) {
  return sha256({reinterpret_cast<const std::uint8_t*>(s.data()), s.size()});
}

TEST(Sha256, Fips180Vectors) {
  EXPECT_EQ(hex(hash("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(hash("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(hash(std::string(1000000, 'a'))), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalEqualsOneShot) {
  std::string msg;
  for (int i = 0; i < 300; ++i) msg += static_cast<char>('a' + i % 26);
  // every split point around the 55/56/64-byte padding edges and a few beyond
  for (std::size_t len : {0u, 1u, 55u, 56u, 63u, 64u, 65u, 119u, 120u, 128u, 300u}) {
    const std::string m = msg.substr(0, len);
    for (std::size_t cut = 0; cut <= len; cut += (len < 70 ? 1 : 17)) {
      Sha256 h;
      h.update(reinterpret_cast<const std::uint8_t*>(m.data()), cut);
      h.update(reinterpret_cast<const std::uint8_t*>(m.data()) + cut, len - cut);
      ASSERT_EQ(h.digest(), hash(m)) << "len " << len << " cut " << cut;
    }
  }
}

}  // namespace
}  // namespace spiralpir
