// spiralpir/spiral/format.hpp — wire formats: the params canonical string and hash, the fixed 32-byte
// object header, bounded header validation, and LSB-first bit packing. runtime/FORMATS.md is
// the normative description; everything here implements it.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "spiralpir/core/error.hpp"
#include "spiralpir/spiral/params.hpp"

namespace spiralpir {

// ------------------------------------------------------------------------------------------
// SHA-256 (FIPS 180-4), used only to fingerprint parameters.
namespace detail {
class Sha256 {
 public:
  Sha256() { reset(); }
  void reset() {
    h_ = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au, 0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
    len_ = 0;
    fill_ = 0;
  }
  void update(const std::uint8_t* data, std::size_t len) {
    len_ += len;
    while (len > 0) {
      const std::size_t take = std::min<std::size_t>(64 - fill_, len);
      std::memcpy(buf_.data() + fill_, data, take);
      fill_ += take;
      data += take;
      len -= take;
      if (fill_ == 64) {
        block(buf_.data());
        fill_ = 0;
      }
    }
  }
  std::array<std::uint8_t, 32> digest() {
    const std::uint64_t bits = len_ * 8;
    const std::uint8_t one = 0x80, zero = 0;
    update(&one, 1);
    while (fill_ != 56) update(&zero, 1);
    std::uint8_t lenb[8];
    for (int i = 0; i < 8; ++i) lenb[i] = static_cast<std::uint8_t>(bits >> (56 - 8 * i));
    update(lenb, 8);
    std::array<std::uint8_t, 32> out{};
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<std::uint8_t>(h_[i] >> (24 - 8 * j));
    return out;
  }

 private:
  static std::uint32_t rotr(std::uint32_t x, int r) { return (x >> r) | (x << (32 - r)); }
  void block(const std::uint8_t* b) {
    static constexpr std::uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    std::uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = (std::uint32_t{b[4 * i]} << 24) | (std::uint32_t{b[4 * i + 1]} << 16) |
             (std::uint32_t{b[4 * i + 2]} << 8) | std::uint32_t{b[4 * i + 3]};
    for (int i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = h_[0], bb = h_[1], c = h_[2], dd = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
      const std::uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const std::uint32_t ch = (e & f) ^ (~e & g);
      const std::uint32_t t1 = h + S1 + ch + k[i] + w[i];
      const std::uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const std::uint32_t mj = (a & bb) ^ (a & c) ^ (bb & c);
      const std::uint32_t t2 = S0 + mj;
      h = g; g = f; f = e; e = dd + t1; dd = c; c = bb; bb = a; a = t1 + t2;
    }
    h_[0] += a; h_[1] += bb; h_[2] += c; h_[3] += dd; h_[4] += e; h_[5] += f; h_[6] += g; h_[7] += h;
  }
  std::array<std::uint32_t, 8> h_{};
  std::array<std::uint8_t, 64> buf_{};
  std::uint64_t len_ = 0;
  std::size_t fill_ = 0;
};

inline std::array<std::uint8_t, 32> sha256(std::span<const std::uint8_t> data) {
  Sha256 h;
  h.update(data.data(), data.size());
  return h.digest();
}
}  // namespace detail

// ------------------------------------------------------------------------------------------
// Params canonical string and hash (FORMATS.md §1).

template <SpiralParams P>
std::string params_canonical_string() {
  using R = typename P::ring;
  std::string s = "spiralpir-params-v1\n";
  auto kv = [&](const char* k, const std::string& v) { s += k; s += '='; s += v; s += '\n'; };
  auto u = [](std::uint64_t x) { return std::to_string(x); };
  kv("variant", variant_name(P::variant));
  kv("poly_len", u(R::poly_len));
  std::string mods;
  for (std::size_t i = 0; i < R::num_primes; ++i) {
    if (i) mods += ',';
    mods += u(R::primes[i]);
  }
  kv("moduli", mods);
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%016llx",
                static_cast<unsigned long long>(std::bit_cast<std::uint64_t>(static_cast<double>(P::noise_width))));
  kv("noise_width", hex);
  kv("secret_dist", secret_dist_name(P::secret_dist));
  kv("secret_plus", u(P::secret_plus));
  kv("secret_minus", u(P::secret_minus));
  kv("n", u(P::n));
  kv("nu_1", u(P::nu_1));
  kv("nu_2", u(P::nu_2));
  kv("p", u(P::p));
  kv("q2_bits", u(P::q2_bits));
  kv("t_gsw", u(P::t_gsw));
  kv("t_conv", u(P::t_conv));
  kv("t_exp_left", u(P::t_exp_left));
  kv("t_exp_right", u(P::t_exp_right));
  kv("instances", u(P::instances));
  kv("db_item_size", u(P::db_item_size));
  return s;
}

/// First 8 bytes of SHA-256(canonical string), as written in every header.
template <SpiralParams P>
const std::array<std::uint8_t, 8>& params_hash() {
  if constexpr (!std::is_same_v<typename WireOf<P>::type, P>) return params_hash<typename WireOf<P>::type>();
  static const std::array<std::uint8_t, 8> h = [] {
    const std::string s = params_canonical_string<P>();
    const auto full = detail::sha256({reinterpret_cast<const std::uint8_t*>(s.data()), s.size()});
    std::array<std::uint8_t, 8> out{};
    std::memcpy(out.data(), full.data(), 8);
    return out;
  }();
  return h;
}

// ------------------------------------------------------------------------------------------
// Object header (FORMATS.md §2).

enum class ObjectKind : std::uint16_t {
  client_state = 1,
  public_params = 2,
  query = 3,
  response = 4,
  preprocessed_db = 5,
};
inline const char* object_kind_name(ObjectKind k) {
  switch (k) {
    case ObjectKind::client_state: return "client state";
    case ObjectKind::public_params: return "public parameters";
    case ObjectKind::query: return "query";
    case ObjectKind::response: return "response";
    case ObjectKind::preprocessed_db: return "preprocessed database";
  }
  return "object";
}

inline constexpr std::array<std::uint8_t, 4> kMagic = {'S', 'P', 'R', 'L'};
inline constexpr std::uint16_t kFormatVersion = 1;
/// version 2 of the preprocessed database: the paired-residue, block-interleaved word layout of
/// database.hpp (version-1 files, one u32 per residue, j-major, are rejected)
inline constexpr std::uint16_t kDbFormatVersion = 2;
/// version 2 of the query: a stream query whose computation matrix is 1×1 (stream_pack; stream
/// with n = 1) carries its first-dimension cts under the computation secret (FORMATS.md §7);
/// a version-1 query of such parameters would decode wrongly, so every version-1 query is rejected
inline constexpr std::uint16_t kQueryFormatVersion = 2;
inline constexpr std::uint16_t format_version(ObjectKind k) {
  return k == ObjectKind::preprocessed_db ? kDbFormatVersion
         : k == ObjectKind::query         ? kQueryFormatVersion
                                          : kFormatVersion;
}
inline constexpr std::size_t kHeaderBytes = 32;

struct Header {
  ObjectKind kind;
  std::array<std::uint8_t, 8> params_hash;
  std::uint64_t payload_len;
  std::uint64_t aux;
};

namespace detail {
inline void put_le(std::uint8_t* dst, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) dst[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
inline std::uint64_t get_le(const std::uint8_t* src, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= std::uint64_t{src[i]} << (8 * i);
  return v;
}
}  // namespace detail

template <SpiralParams P>
void write_header(std::uint8_t* dst, ObjectKind kind, std::uint64_t payload_len, std::uint64_t aux = 0) {
  std::memcpy(dst, kMagic.data(), 4);
  detail::put_le(dst + 4, format_version(kind), 2);
  detail::put_le(dst + 6, static_cast<std::uint16_t>(kind), 2);
  std::memcpy(dst + 8, params_hash<P>().data(), 8);
  detail::put_le(dst + 16, payload_len, 8);
  detail::put_le(dst + 24, aux, 8);
}

/// Validates the header of a serialized object of `kind` made under P, before anything is
/// allocated: magic, version, kind, params hash, and payload length against both the buffer
/// (`total_len` = bytes available) and `expected_payload` (exact, unless 0 = any).
template <SpiralParams P>
Header check_header(const std::uint8_t* buf, std::size_t total_len, ObjectKind kind,
                    std::uint64_t expected_payload) {
  const std::string what = object_kind_name(kind);
  if (buf == nullptr && total_len != 0) throw ArgumentError(what + ": null buffer");
  if (total_len < kHeaderBytes)
    throw FormatError(what + ": truncated (" + std::to_string(total_len) + " bytes, the header alone is " +
                      std::to_string(kHeaderBytes) + ")");
  if (std::memcmp(buf, kMagic.data(), 4) != 0) throw FormatError(what + ": bad magic (not a spiralpir object)");
  const auto ver = detail::get_le(buf + 4, 2);
  if (ver != format_version(kind))
    throw FormatError(what + ": unsupported format version " + std::to_string(ver) + " (this runtime reads " +
                      std::to_string(format_version(kind)) + ")");
  const auto k = detail::get_le(buf + 6, 2);
  if (k != static_cast<std::uint16_t>(kind)) {
    const std::string got = (k >= 1 && k <= 5) ? object_kind_name(static_cast<ObjectKind>(k)) : "unknown kind " + std::to_string(k);
    throw FormatError(what + ": wrong object kind (got " + got + ")");
  }
  Header h{};
  h.kind = kind;
  std::memcpy(h.params_hash.data(), buf + 8, 8);
  if (h.params_hash != params_hash<P>())
    throw ParamsMismatchError(what + ": made under other parameters (params hash mismatch)");
  h.payload_len = detail::get_le(buf + 16, 8);
  h.aux = detail::get_le(buf + 24, 8);
  if (expected_payload != 0 && h.payload_len != expected_payload)
    throw FormatError(what + ": payload length " + std::to_string(h.payload_len) + " != expected " +
                      std::to_string(expected_payload));
  if (h.payload_len != total_len - kHeaderBytes)
    throw FormatError(what + ": length mismatch (header says " + std::to_string(h.payload_len) +
                      " payload bytes, buffer has " + std::to_string(total_len - kHeaderBytes) + ")");
  return h;
}

// ------------------------------------------------------------------------------------------
// LSB-first bit packing: value bit k of the i-th w-bit field is stream bit i*w + k, and stream
// bit j is bit (j mod 8) of byte floor(j / 8).

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
