// spiralpir/core/blake2b.hpp — BLAKE2b (RFC 7693) with a key and a personalization string, as
// Python's hashlib.blake2b(data, key=, person=, digest_size=). A keyword client hashes keys with
// it (FORMATS.md §11); Web Crypto has no keyed, personalized BLAKE2b, so the browser client
// gets this one compiled in. Not constant time in the data's length; the seed is public.
//   blake2b(out, out_len, data, len, key, key_len, person, person_len)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "spiralpir/core/error.hpp"

namespace spiralpir {

namespace blake2b_detail {

inline constexpr std::array<std::uint64_t, 8> kIv = {
    0x6a09e667f3bcc908ull, 0xbb67ae8584caa73bull, 0x3c6ef372fe94f82bull, 0xa54ff53a5f1d36f1ull,
    0x510e527fade682d1ull, 0x9b05688c2b3e6c1full, 0x1f83d9abfb41bd6bull, 0x5be0cd19137e2179ull};

inline constexpr std::uint8_t kSigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4}, {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13}, {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11}, {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5}, {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3}};

inline std::uint64_t load64(const std::uint8_t* p) {
  std::uint64_t x = 0;
  for (int i = 7; i >= 0; --i) x = (x << 8) | p[i];
  return x;
}

inline std::uint64_t rotr(std::uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }

// F of RFC 7693 §3.2: one 128-byte block, `t` bytes hashed so far including it
inline void compress(std::array<std::uint64_t, 8>& h, const std::uint8_t* block, std::uint64_t t, bool last) {
  std::uint64_t m[16], v[16];
  for (int i = 0; i < 16; ++i) m[i] = load64(block + 8 * i);
  for (int i = 0; i < 8; ++i) {
    v[i] = h[i];
    v[i + 8] = kIv[i];
  }
  v[12] ^= t;  // the counter's high word stays 0: inputs are far below 2^64 bytes
  if (last) v[14] = ~v[14];
  auto g = [&v](int a, int b, int c, int d, std::uint64_t x, std::uint64_t y) {
    v[a] = v[a] + v[b] + x;
    v[d] = rotr(v[d] ^ v[a], 32);
    v[c] = v[c] + v[d];
    v[b] = rotr(v[b] ^ v[c], 24);
    v[a] = v[a] + v[b] + y;
    v[d] = rotr(v[d] ^ v[a], 16);
    v[c] = v[c] + v[d];
    v[b] = rotr(v[b] ^ v[c], 63);
  };
  for (const auto& s : kSigma) {
    g(0, 4, 8, 12, m[s[0]], m[s[1]]);
    g(1, 5, 9, 13, m[s[2]], m[s[3]]);
    g(2, 6, 10, 14, m[s[4]], m[s[5]]);
    g(3, 7, 11, 15, m[s[6]], m[s[7]]);
    g(0, 5, 10, 15, m[s[8]], m[s[9]]);
    g(1, 6, 11, 12, m[s[10]], m[s[11]]);
    g(2, 7, 8, 13, m[s[12]], m[s[13]]);
    g(3, 4, 9, 14, m[s[14]], m[s[15]]);
  }
  for (int i = 0; i < 8; ++i) h[i] ^= v[i] ^ v[i + 8];
}

}  // namespace blake2b_detail

// The out_len-byte (1..64) BLAKE2b digest of data under key (0..64 bytes) and person (0..16
// bytes, zero-padded to 16 as hashlib's); ArgumentError for lengths out of those bounds.
inline void blake2b(std::uint8_t* out, std::size_t out_len, const std::uint8_t* data, std::size_t len,
                    const std::uint8_t* key, std::size_t key_len, const std::uint8_t* person,
                    std::size_t person_len) {
  using namespace blake2b_detail;
  if (out_len < 1 || out_len > 64) throw ArgumentError("blake2b: digest size must be 1..64 bytes");
  if (key_len > 64) throw ArgumentError("blake2b: key longer than 64 bytes");
  if (person_len > 16) throw ArgumentError("blake2b: person longer than 16 bytes");
  if ((len && !data) || (key_len && !key) || (person_len && !person) || !out) {
    throw ArgumentError("blake2b: null buffer");
  }
  std::array<std::uint64_t, 8> h = kIv;
  h[0] ^= 0x01010000ull ^ (static_cast<std::uint64_t>(key_len) << 8) ^ out_len;  // fanout 1, depth 1
  std::uint8_t p[16] = {};
  if (person_len) std::memcpy(p, person, person_len);
  h[6] ^= load64(p);
  h[7] ^= load64(p + 8);
  std::uint8_t block[128];
  std::uint64_t t = 0;
  if (key_len) {  // the key, zero-padded, is the first block (the last if there is no data)
    std::memset(block, 0, sizeof block);
    std::memcpy(block, key, key_len);
    t = 128;
    compress(h, block, t, len == 0);
  }
  // every full block but the last; the last (partial or full, or empty without key) is final
  while (len > 128) {
    t += 128;
    compress(h, data, t, false);
    data += 128;
    len -= 128;
  }
  if (len || !key_len) {
    std::memset(block, 0, sizeof block);
    if (len) std::memcpy(block, data, len);
    t += len;
    compress(h, block, t, true);
  }
  for (std::size_t i = 0; i < out_len; ++i) out[i] = static_cast<std::uint8_t>(h[i / 8] >> (8 * (i % 8)));
  std::memset(block, 0, sizeof block);
}

}  // namespace spiralpir
