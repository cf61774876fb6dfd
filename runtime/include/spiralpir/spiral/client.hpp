// spiralpir/spiral/client.hpp — Client<P>, the one client of every variant: secrets from a
// 32-byte master seed, the public parameters, queries and response decoding.
//
// It holds the computation client ClientCore<C> (client_core.hpp: C's secrets, vanilla's query,
// response decoding) and, when the variant computes on another type than P, the client of P that
// decodes responses (pack: under the packing target s̃, from an independent stream of the master
// seed; stream: the same secrets, labelled P). Its queries are C's (spiral, pack) or the uploaded
// first-dimension and GSW-digit cts (stream, FORMATS.md §7). Constant time in the secrets and
// the record index, seeds wiped when dropped (as client_core.hpp).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "spiralpir/rlwe/regev.hpp"
#include "spiralpir/spiral/client_core.hpp"
#include "spiralpir/spiral/public_params.hpp"

namespace spiralpir {

template <SpiralParams P>
class Client {
 public:
  using V = VariantOf<P>;
  using C = typename V::Comp;
  using R = typename P::ring;
  using D = Derived<P>;
  using Pc = rlwe::Pc<R>;
  using Pn = rlwe::Pn<R>;

  /// seed32: 32 bytes, or nullptr for fresh OS entropy
  explicit Client(const std::uint8_t* seed32 = nullptr) : Client(*make_seed(seed32)) {}
  explicit Client(const Seed& master) : comp_(master), out_(*outer_seed(master)) {
    Csprng seedgen(master, 3);
    seedgen.fill(pp_seed_.data(), pp_seed_.size());
    SPIRALPIR_CT_PUBLIC(pp_seed_.data(), pp_seed_.size());  // sent in the public parameters
  }

  /// Serialized client state (kind 1): the master seed; the header carries P's hash.
  std::vector<std::uint8_t> save() const { return comp_.save(); }
  static Client load(const std::uint8_t* buf, std::size_t len) {
    check_header<P>(buf, len, ObjectKind::client_state, 32);
    Wiped<Seed> s;
    std::memcpy(s->data(), buf + kHeaderBytes, 32);
    return Client(*s);
  }
  const Seed& master_seed() const { return comp_.master_seed(); }
  /// the computation client (C's secrets)
  const ClientCore<C>& comp() const { return comp_; }
  /// the client that decodes responses (holds the response secret)
  const ClientCore<P>& outer() const {
    if constexpr (V::separate_outer) return out_;
    else return comp_;
  }

  /// Deterministic in the master seed (the errors come from a stream of it).
  std::vector<std::uint8_t> public_params() const {
    Csprng noise(master_seed(), 2);
    const SecretKey<P>* target = nullptr;
    if constexpr (V::pack) target = &out_.secret();
    return PublicKeys<P>::generate(comp_.secret(), target, pp_seed_, noise);
  }

  /// A query for record `record_index` (fresh randomness from the client's CSPRNG).
  std::vector<std::uint8_t> query(std::uint64_t record_index) { return query(record_index, rng_); }
  /// The same with randomness from `rng` (deterministic queries in tests).
  std::vector<std::uint8_t> query(std::uint64_t item, Csprng& rng) const {
    check_index(item);
    if constexpr (!V::stream) return comp_.query(V::comp_item(item), rng);  // P's hash, size D::query_bytes
    else return stream_query(item, rng);
  }

  /// A blocked query (ClientCore::query_blocked; Server::answer_blocked answers it): the spiral
  /// variant only, whose computation database is P's own.
  std::vector<std::uint8_t> query_blocked(const std::uint64_t* rows, std::size_t blocks, std::uint64_t column) {
    return query_blocked(rows, blocks, column, rng_);
  }
  std::vector<std::uint8_t> query_blocked(const std::uint64_t* rows, std::size_t blocks, std::uint64_t column,
                                          Csprng& rng) const {
    if constexpr (V::pack || V::stream)
      throw ArgumentError("query_blocked: the spiral variant only, not " + std::string(variant_name(P::variant)));
    else
      return comp_.query_blocked(rows, blocks, column, rng);
  }

  /// Decodes a response into the plaintexts (one per instance, pt_bytes each, concatenated).
  std::vector<std::uint8_t> decode_plaintexts(const std::uint8_t* buf, std::size_t len) const {
    return outer().decode_plaintexts(buf, len);
  }
  /// Writes the first record_size bytes of the record (record_size <= db_item_size).
  void decode(std::uint64_t record_index, const std::uint8_t* resp, std::size_t len, std::uint8_t* out,
              std::size_t record_size) const {
    check_index(record_index);
    if (record_size > P::db_item_size)
      throw ArgumentError("decode: record_size " + std::to_string(record_size) + " exceeds the item size " +
                          std::to_string(P::db_item_size));
    if (out == nullptr && record_size != 0) throw ArgumentError("decode: null output buffer");
    const auto item = outer().decode(record_index, resp, len);
    std::memcpy(out, item.data(), record_size);
  }

 private:
  /// Stream: the 2^nu_1 first-dimension cts (message Δ·[x = i]) and the nu_2·t_gsw GSW-digit cts
  /// (message bit·z_gsw^k), seed-compressed; the first-dimension cts under s_c when C's matrices
  /// are 1×1 (direct_first), else under s_reg.
  std::vector<std::uint8_t> stream_query(std::uint64_t item, Csprng& rng) const {
    const auto loc = ItemLocation<C>::of(V::comp_item(item));
    Seed seed;
    rng.fill(seed.data(), seed.size());
    SPIRALPIR_CT_PUBLIC(seed.data(), seed.size());  // sent in the clear: the random rows' seed
    const GaussianSampler g(P::noise_width);
    std::vector<std::uint8_t> out(D::query_bytes, 0);
    write_header<P>(out.data(), ObjectKind::query, D::query_bytes - kHeaderBytes);
    std::memcpy(out.data() + kHeaderBytes, seed.data(), 32);
    BitWriter w(out.data() + kHeaderBytes + 32);
    const auto& sk = comp_.secret();
    const Pn& s_first = V::direct_first ? sk.s_ntt[0] : sk.s_reg_ntt;
    for (std::uint64_t x = 0; x < D::query_polys; ++x) {
      // the message by masks: x is public, the index and its bits are not
      u128 m = 0;
      if (x < D::dim0) {
        m = ct::select128(ct::eq_mask(x, loc.i), D::delta, 0);
      } else {
        const std::uint64_t gi = x - D::dim0, f = gi / P::t_gsw, k = gi % P::t_gsw;
        const std::uint64_t bit = 0 - ((loc.j >> (P::nu_2 - 1 - f)) & 1);
        m = ct::select128(bit, pow2_mod128(D::bits_gsw * static_cast<unsigned>(k), D::q), 0);
      }
      Pc mp;
      auto r = crt_decompose<R>(m);
      for (std::size_t i = 0; i < R::num_primes; ++i) mp(i, 0) = r[i];
      secure_wipe(r.data(), sizeof r);
      secure_wipe(&m, sizeof m);
      Pn m_ntt = to_ntt(std::move(mp));
      const Pn b = rlwe::regev_body<R>(uniform_poly_ntt<R>(seed, x), x < D::dim0 ? s_first : sk.s_reg_ntt, rng, g,
                                       &m_ntt);
      m_ntt.wipe();
      rlwe::put_poly_q<R>(w, from_ntt(b), D::q_bits);
    }
    return out;
  }

  static Wiped<Seed> make_seed(const std::uint8_t* s) {
    Wiped<Seed> seed;
    if (s) std::memcpy(seed->data(), s, 32); else os_entropy(seed->data(), 32);
    return seed;
  }
  /// the seed of the response client: pack decodes under the packing target, an independent
  /// stream of the master seed; stream under the computation's secrets
  static Wiped<Seed> outer_seed(const Seed& master) {
    if constexpr (V::pack) {
      Csprng g(master, 7);
      Wiped<Seed> s;
      g.fill(s->data(), s->size());
      return s;
    } else {
      return Wiped<Seed>(master);
    }
  }
  static void check_index(std::uint64_t i) {
    if (!index_in_range(i, D::num_items))
      throw ArgumentError("record index " + std::to_string(i) + " out of range (the parameters hold " +
                          std::to_string(D::num_items) + " records)");
  }

  struct NoOuter {
    explicit NoOuter(const Seed&) {}
  };
  ClientCore<C> comp_;
  [[no_unique_address]] std::conditional_t<V::separate_outer, ClientCore<P>, NoOuter> out_;
  Seed pp_seed_{};
  Csprng rng_;
};

}  // namespace spiralpir
