// random.hpp — cryptographic randomness: OS entropy and a ChaCha20 stream (own code).
//
// API (namespace spiralpir):
//   os_entropy(void* out, size_t n)        getrandom(2) (WebAssembly: crypto.getRandomValues);
//                                          throws std::runtime_error on failure
//   secure_wipe (core/wipe.hpp)            zero memory with a store the compiler keeps
//   class Csprng                           ChaCha20 keystream (RFC 8439 block function, 20 rounds,
//                                          original 64-bit counter / 64-bit nonce layout)
//     Csprng()                             key from os_entropy, stream 0; in a child of fork()
//                                          rekeyed from the OS before its next byte, so parent
//                                          and child never share bytes (a pthread_atfork handler
//                                          marks the fork; a child of a raw clone system call is
//                                          seen through a MADV_WIPEONFORK canary page, Linux ≥ 4.14)
//     Csprng(const Seed& seed, uint64_t stream_id = 0)   deterministic: same seed+stream, same bytes
//                                          (no fork check: the stream is fixed by the seed)
//     fill(void* out, size_t n), fill(std::span<uint8_t>)
//     next_u32(), next_u64(), next_u128()  little-endian words of the keystream
//     uniform_mod(uint64_t q)              uniform in [0, q) by rejection (q ≥ 1)
//     uniform_mod_fill(out, count, q)      the values of count calls of uniform_mod(q), under one
//                                          lock (seed expansion draws a polynomial at a time)
//   using Seed = std::array<uint8_t, 32>
//
// Thread safety: every member may be called concurrently on one generator (an internal mutex;
// concurrent callers get disjoint parts of the stream). A moved-from generator throws
// std::logic_error on use instead of repeating the stream. The key and keystream buffer are
// wiped on destruction and when keyed, the OS seed right after keying; handed-out bytes stay in
// the buffer only until the next refill overwrites them (wiping every draw doubled the cost of
// expanding a seeded query).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>

#include "spiralpir/arith/modarith.hpp"
#include "spiralpir/core/wipe.hpp"

namespace spiralpir {

using Seed = std::array<std::uint8_t, 32>;

void os_entropy(void* out, std::size_t n);

class Csprng {
 public:
  Csprng();
  explicit Csprng(const Seed& seed, std::uint64_t stream_id = 0);
  Csprng(const Csprng&) = delete;  // a copied generator would repeat its stream
  Csprng& operator=(const Csprng&) = delete;
  Csprng(Csprng&& other) noexcept;
  Csprng& operator=(Csprng&& other) noexcept;
  ~Csprng();

  void fill(void* out, std::size_t n);
  void fill(std::span<std::uint8_t> out) { fill(out.data(), out.size()); }
  std::uint32_t next_u32();
  std::uint64_t next_u64();
  u128 next_u128();
  std::uint64_t uniform_mod(std::uint64_t q);
  void uniform_mod_fill(std::uint64_t* out, std::size_t count, std::uint64_t q);

 private:
  void key(const Seed& seed, std::uint64_t stream_id) noexcept;
  void take_from(Csprng& other) noexcept;  // both locked by the caller
  void check_usable();  // a moved-from generator throws; a forked OS-keyed one rekeys
  void fill_locked(std::uint8_t* out, std::size_t n);
  std::uint64_t next_u64_locked();
  void refill() noexcept;
  void rekey_if_forked();
  void wipe() noexcept;

  std::mutex mu_;
  std::array<std::uint32_t, 16> state_{};
  std::array<std::uint8_t, 256> buf_{};  // four keystream blocks
  std::size_t pos_ = 256;                 // bytes of buf_ used; >= buf_.size() means refill first
  int pid_ = 0;                           // process that keyed an OS-keyed generator; 0 if seeded
  std::uint64_t forks_ = 0;               // the process's fork count when pid_ was taken
  bool live_ = true;                      // false once moved from
};

}  // namespace spiralpir
