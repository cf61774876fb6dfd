// spiralpir/testing/test_seed.hpp — where every test's randomness comes from, so that a failure
// reproduces: SPIRALPIR_TEST_SEED (an unsigned 64-bit integer, decimal or 0x-hex) or, unset, a
// fixed default. Tests draw independent streams by label; nothing is seeded from the OS.
//   test_seed_value()            the 64-bit seed in force (printed when a test fails)
//   test_seed(label)             a 32-byte Csprng seed: SHA-256(seed value, 8 bytes LE ‖ label)
//   test_rng(label[, stream])    a Csprng on that seed
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string_view>
#include <vector>

#include "spiralpir/arith/random.hpp"
#include "spiralpir/core/sha256.hpp"

namespace spiralpir::testing {

inline constexpr std::uint64_t kDefaultTestSeed = 0x5eed;

inline std::uint64_t test_seed_value() {
  static const std::uint64_t value = [] {
    const char* s = std::getenv("SPIRALPIR_TEST_SEED");
    if (s == nullptr || *s == '\0') return kDefaultTestSeed;
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(s, &end, 0);
    if (errno != 0 || *end != '\0' || *s == '-') {
      std::fprintf(stderr, "SPIRALPIR_TEST_SEED=%s: not an unsigned 64-bit integer\n", s);
      std::exit(2);
    }
    return static_cast<std::uint64_t>(v);
  }();
  return value;
}

inline Seed test_seed(std::string_view label) {
  std::vector<std::uint8_t> msg(8 + label.size());
  const std::uint64_t v = test_seed_value();
  for (int b = 0; b < 8; ++b) msg[b] = static_cast<std::uint8_t>(v >> (8 * b));
  for (std::size_t i = 0; i < label.size(); ++i) msg[8 + i] = static_cast<std::uint8_t>(label[i]);
  return sha256(std::span<const std::uint8_t>(msg));
}

inline Csprng test_rng(std::string_view label, std::uint64_t stream = 0) { return Csprng(test_seed(label), stream); }

}  // namespace spiralpir::testing
