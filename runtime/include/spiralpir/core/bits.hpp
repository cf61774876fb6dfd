// spiralpir/core/bits.hpp — LSB-first bit packing of w-bit fields (w <= 128), the encoding of
// every polynomial and packed value on the wire: value bit k of the i-th w-bit field is stream bit
// i*w + k, and stream bit j is bit (j mod 8) of byte floor(j / 8). BitReader checks bounds and
// throws FormatError rather than read past its buffer.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "spiralpir/core/error.hpp"
#include "spiralpir/core/int128.hpp"

namespace spiralpir {

class BitWriter {
 public:
  explicit BitWriter(std::uint8_t* dst) : dst_(dst) {}
  void put(std::uint64_t v, unsigned w) {
    while (w > 0) {
      const unsigned off = static_cast<unsigned>(pos_ & 7);
      const unsigned take = std::min(8u - off, w);
      const std::uint8_t bits = static_cast<std::uint8_t>((v & ((1u << take) - 1)) << off);
      if (off == 0) dst_[pos_ >> 3] = bits; else dst_[pos_ >> 3] |= bits;
      v >>= take;
      w -= take;
      pos_ += take;
    }
  }
  void put_u128(u128 v, unsigned w) {
    if (w > 64) {
      put(static_cast<std::uint64_t>(v), 64);
      put(static_cast<std::uint64_t>(v >> 64), w - 64);
    } else {
      put(static_cast<std::uint64_t>(v), w);
    }
  }
  std::uint64_t bits_written() const { return pos_; }

 private:
  std::uint8_t* dst_;
  std::uint64_t pos_ = 0;
};

/// Reads w-bit fields; the caller guarantees (by the exact length check) that the buffer holds
/// every field read; `get` checks it anyway and throws instead of reading out of bounds.
class BitReader {
 public:
  BitReader(const std::uint8_t* src, std::size_t len) : src_(src), len_bits_(std::uint64_t{len} * 8) {}
  std::uint64_t get(unsigned w) {
    if (pos_ + w > len_bits_) throw FormatError("bit stream truncated");
    std::uint64_t v = 0;
    unsigned got = 0;
    while (got < w) {
      const unsigned off = static_cast<unsigned>(pos_ & 7);
      const unsigned take = std::min(8u - off, w - got);
      v |= static_cast<std::uint64_t>((src_[pos_ >> 3] >> off) & ((1u << take) - 1)) << got;
      got += take;
      pos_ += take;
    }
    return v;
  }
  u128 get_u128(unsigned w) {
    if (w > 64) {
      const u128 lo = get(64);
      return lo | (static_cast<u128>(get(w - 64)) << 64);
    }
    return get(w);
  }
  /// remaining bits in the last byte must be zero (canonical encoding)
  void check_padding_zero(const char* what) {
    while (pos_ < len_bits_) {
      if (get(1) != 0) throw FormatError(std::string(what) + ": nonzero padding bits");
    }
  }

 private:
  const std::uint8_t* src_;
  std::uint64_t len_bits_;
  std::uint64_t pos_ = 0;
};

}  // namespace spiralpir
