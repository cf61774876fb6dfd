// spiralpir/spiral/format.hpp — wire formats: the params canonical string and hash, the fixed 32-byte
// object header and its bounded validation (bit packing: core/bits.hpp; SHA-256: core/sha256.hpp).
// runtime/FORMATS.md is the normative description; everything here implements it.
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

#include "spiralpir/core/bits.hpp"
#include "spiralpir/core/error.hpp"
#include "spiralpir/core/sha256.hpp"
#include "spiralpir/spiral/params.hpp"

namespace spiralpir {

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
  // the builtin, not std::bit_cast: Emscripten 3.1's libc++ (the WebAssembly client) lacks it
  std::snprintf(hex, sizeof hex, "0x%016llx",
                static_cast<unsigned long long>(__builtin_bit_cast(std::uint64_t, static_cast<double>(P::noise_width))));
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
  // only when not 1, so every build without packed queries keeps its hash
  if constexpr (query_buckets_of<P>() != 1) kv("query_buckets", u(query_buckets_of<P>()));
  return s;
}

/// First 8 bytes of SHA-256(canonical string), as written in every header.
template <SpiralParams P>
const std::array<std::uint8_t, 8>& params_hash() {
  if constexpr (!std::is_same_v<typename WireOf<P>::type, P>) return params_hash<typename WireOf<P>::type>();
  static const std::array<std::uint8_t, 8> h = [] {
    const std::string s = params_canonical_string<P>();
    const auto full = sha256({reinterpret_cast<const std::uint8_t*>(s.data()), s.size()});
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
  shard_partial = 6,
  shard_query = 7,
  shard_share = 8,
};
inline const char* object_kind_name(ObjectKind k) {
  switch (k) {
    case ObjectKind::client_state: return "client state";
    case ObjectKind::public_params: return "public parameters";
    case ObjectKind::query: return "query";
    case ObjectKind::response: return "response";
    case ObjectKind::preprocessed_db: return "preprocessed database";
    case ObjectKind::shard_partial: return "shard partial answer";
    case ObjectKind::shard_query: return "shard query";
    case ObjectKind::shard_share: return "shard query share";
  }
  return "object";
}

inline constexpr std::array<std::uint8_t, 4> kMagic = {'S', 'P', 'R', 'L'};
inline constexpr std::uint16_t kFormatVersion = 1;
/// version 3 of the preprocessed database: the paired-residue, block-interleaved word layout of
/// database.hpp over the stored rows only (Derived::rows_stored; version 2 stored all 2^nu_1
/// rows, version 1 one u32 per residue, j-major: both are rejected, never misread)
inline constexpr std::uint16_t kDbFormatVersion = 3;
/// version 2 of the query: a stream query whose computation matrix is 1×1 (stream_pack; stream
/// with n = 1) carries its first-dimension cts under the computation secret (FORMATS.md §7);
/// a version-1 query of such parameters would decode wrongly, so every version-1 query is rejected
inline constexpr std::uint16_t kQueryFormatVersion = 2;
/// version 2 of the public parameters: no ScalToMat keys when the computation's n is 1 (its
/// matrix secret is then the scalar secret, keys.hpp); version 1 had them, and its clients'
/// responses would decode wrongly under version-2 conversion, so version 1 is rejected
inline constexpr std::uint16_t kPublicParamsFormatVersion = 2;
inline constexpr std::uint16_t format_version(ObjectKind k) {
  return k == ObjectKind::preprocessed_db ? kDbFormatVersion
         : k == ObjectKind::query         ? kQueryFormatVersion
         : k == ObjectKind::public_params ? kPublicParamsFormatVersion
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
/// allocated: magic, version, kind, params hash, aux (0 unless a preprocessed database), and
/// payload length against both the buffer (`total_len` = bytes available) and `expected_payload`
/// (exact, unless 0 = any).
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
    const std::string got = (k >= 1 && k <= 7) ? object_kind_name(static_cast<ObjectKind>(k)) : "unknown kind " + std::to_string(k);
    throw FormatError(what + ": wrong object kind (got " + got + ")");
  }
  Header h{};
  h.kind = kind;
  std::memcpy(h.params_hash.data(), buf + 8, 8);
  if (h.params_hash != params_hash<P>())
    throw ParamsMismatchError(what + ": made under other parameters (params hash mismatch)");
  h.payload_len = detail::get_le(buf + 16, 8);
  h.aux = detail::get_le(buf + 24, 8);
  // aux is the record count of a preprocessed database and 0 in every other object: a nonzero
  // aux elsewhere would make byte-different copies of one object (a new client id for the same keys)
  if (kind != ObjectKind::preprocessed_db && h.aux != 0)
    throw FormatError(what + ": aux field is " + std::to_string(h.aux) + ", must be 0");
  if (expected_payload != 0 && h.payload_len != expected_payload)
    throw FormatError(what + ": payload length " + std::to_string(h.payload_len) + " != expected " +
                      std::to_string(expected_payload));
  if (h.payload_len != total_len - kHeaderBytes)
    throw FormatError(what + ": length mismatch (header says " + std::to_string(h.payload_len) +
                      " payload bytes, buffer has " + std::to_string(total_len - kHeaderBytes) + ")");
  return h;
}

}  // namespace spiralpir
