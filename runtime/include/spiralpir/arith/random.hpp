// random.hpp — cryptographic randomness: OS entropy and a ChaCha20 stream (own code).
//
// API (namespace spiralpir):
//   os_entropy(void* out, size_t n)        getrandom(2); throws std::runtime_error on failure
//   class Csprng                           ChaCha20 keystream (RFC 8439 block function, 20 rounds,
//                                          original 64-bit counter / 64-bit nonce layout)
//     Csprng()                             key from os_entropy, stream 0
//     Csprng(const Seed& seed, uint64_t stream_id = 0)   deterministic: same seed+stream, same bytes
//     fill(void* out, size_t n), fill(std::span<uint8_t>)
//     next_u32(), next_u64(), next_u128()  little-endian words of the keystream
//     uniform_mod(uint64_t q)              uniform in [0, q) by rejection (q ≥ 1)
//   using Seed = std::array<uint8_t, 32>
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "spiralpir/arith/modarith.hpp"

namespace spiralpir {

using Seed = std::array<std::uint8_t, 32>;

void os_entropy(void* out, std::size_t n);

class Csprng {
 public:
  Csprng();
  explicit Csprng(const Seed& seed, std::uint64_t stream_id = 0);
  Csprng(const Csprng&) = delete;  // a copied generator would repeat its stream
  Csprng& operator=(const Csprng&) = delete;
  Csprng(Csprng&&) = default;
  Csprng& operator=(Csprng&&) = default;
  ~Csprng();

  void fill(void* out, std::size_t n);
  void fill(std::span<std::uint8_t> out) { fill(out.data(), out.size()); }
  std::uint32_t next_u32();
  std::uint64_t next_u64();
  u128 next_u128();
  std::uint64_t uniform_mod(std::uint64_t q);

 private:
  void refill();

  std::array<std::uint32_t, 16> state_{};
  std::array<std::uint8_t, 256> buf_{};  // four keystream blocks
  std::size_t pos_ = 256;
};

}  // namespace spiralpir
