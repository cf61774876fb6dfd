// spiralpir/spiral/client_core.hpp — the client of one computation type P: secret keys from a
// 32-byte master seed, the vanilla query (one seed-compressed scalar Regev ct packing the
// first-dimension one-hot index and the nu_2·t_gsw GSW digits), response decoding and item
// extraction. Client<P> (client.hpp) builds every variant's client from it.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "spiralpir/rlwe/regev.hpp"
#include "spiralpir/spiral/database.hpp"
#include "spiralpir/spiral/keys.hpp"

namespace spiralpir {

/// Where an item lives (FORMATS.md §5).
template <SpiralParams P>
struct ItemLocation {
  std::uint64_t pt, slot, i, j;
  static ItemLocation of(std::uint64_t item) {
    using D = Derived<P>;
    ItemLocation L{};
    L.pt = item / D::items_per_pt;
    L.slot = item % D::items_per_pt;
    L.i = L.pt >> P::nu_2;
    L.j = L.pt & (D::dim_rest - 1);
    return L;
  }
};

template <SpiralParams P>
class ClientCore {
 public:
  using R = typename P::ring;
  using D = Derived<P>;
  using Pc = rlwe::Pc<R>;
  using Pn = rlwe::Pn<R>;

  explicit ClientCore(const Seed& master) : master_(master) {
    Csprng rng(master_, 1);
    sk_ = SecretKey<P>::generate(rng);
  }

  const Seed& master_seed() const { return master_; }
  const SecretKey<P>& secret() const { return sk_; }

  /// Serialized client state (kind 1): the master seed.
  std::vector<std::uint8_t> save() const {
    std::vector<std::uint8_t> out(D::client_state_bytes);
    write_header<P>(out.data(), ObjectKind::client_state, 32);
    std::memcpy(out.data() + kHeaderBytes, master_.data(), 32);
    return out;
  }
  static ClientCore load(const std::uint8_t* buf, std::size_t len) {
    check_header<P>(buf, len, ObjectKind::client_state, 32);
    Seed s;
    std::memcpy(s.data(), buf + kHeaderBytes, 32);
    return ClientCore(s);
  }

  /// The query polynomial (before encryption) for an item.
  static Pc query_message(std::uint64_t item) {
    const auto loc = ItemLocation<P>::of(item);
    const u128 q = D::q;
    std::vector<u128> m(D::d, 0);
    const u128 inv_left = inv_mod128(pow2_mod128(D::rounds, q), q);
    const u128 inv_right = inv_mod128(pow2_mod128(D::rounds_right, q), q);
    m[2 * loc.i] = mulmod_u128(D::delta % q, inv_left, q);
    for (unsigned f = 0; f < P::nu_2; ++f) {
      const std::uint64_t bit = (loc.j >> (P::nu_2 - 1 - f)) & 1;
      for (unsigned k = 0; k < P::t_gsw; ++k) {
        const std::size_t g = std::size_t{f} * P::t_gsw + k;
        const u128 zk = pow2_mod128(D::bits_gsw * k, q);
        m[2 * g + 1] = bit ? mulmod_u128(zk, inv_right, q) : 0;
      }
    }
    Pc out;
    for (std::size_t z = 0; z < D::d; ++z) {
      const auto r = crt_decompose<R>(m[z]);
      for (std::size_t i = 0; i < R::num_primes; ++i) out(i, z) = r[i];
    }
    return out;
  }

  /// A query for `item` (fresh randomness from `rng`).
  std::vector<std::uint8_t> query(std::uint64_t item, Csprng& rng) const {
    if (item >= D::num_items)
      throw ArgumentError("query: index " + std::to_string(item) + " out of range (capacity " +
                          std::to_string(D::num_items) + ")");
    Seed seed;
    rng.fill(seed.data(), seed.size());
    const GaussianSampler g(P::noise_width);
    const Pn m = to_ntt(query_message(item));
    Pn b = rlwe::regev_body<R>(uniform_poly_ntt<R>(seed, 0), sk_.s_reg_ntt, rng, g, &m);
    std::vector<std::uint8_t> out(D::query_bytes, 0);
    write_header<P>(out.data(), ObjectKind::query, D::query_bytes - kHeaderBytes);
    std::memcpy(out.data() + kHeaderBytes, seed.data(), 32);
    BitWriter w(out.data() + kHeaderBytes + 32);
    rlwe::put_poly_q<R>(w, from_ntt(std::move(b)), D::q_bits);
    return out;
  }

  /// Decodes a response into the plaintexts (one per instance, pt_bytes each, concatenated).
  std::vector<std::uint8_t> decode_plaintexts(const std::uint8_t* buf, std::size_t len) const {
    return decode_plaintexts(buf, len, [](std::int64_t) {});
  }
  /// Same; `noise(e)` receives every coefficient's rounding residue e = phase − 4·m ∈ [−2, 1]
  /// (test-only noise measurement).
  template <class NoiseFn>
  std::vector<std::uint8_t> decode_plaintexts(const std::uint8_t* buf, std::size_t len, NoiseFn&& noise) const {
    check_header<P>(buf, len, ObjectKind::response, D::response_bytes - kHeaderBytes);
    BitReader rd(buf + kHeaderBytes, len - kHeaderBytes);
    constexpr unsigned n = P::n;
    constexpr std::size_t d = D::d;
    std::vector<std::uint8_t> out(D::instances * Database<P>::pt_bytes, 0);
    // s_row mod q2 in the NTT domain (computed once per call; constant time)
    const NttTable& tq2 = q2_table();
    std::vector<AlignedBuffer<std::uint64_t>> s_q2;
    for (unsigned i = 0; i < n; ++i) {
      AlignedBuffer<std::uint64_t> v(d);
      for (std::size_t z = 0; z < d; ++z) {
        const i128 c = centered_coeff(sk_.s[i], z);
        const std::int64_t m = static_cast<std::int64_t>(c % static_cast<i128>(D::q2));
        v[z] = static_cast<std::uint64_t>(m + (m < 0 ? static_cast<std::int64_t>(D::q2) : 0));
      }
      ntt_forward(v.data(), tq2);
      s_q2.push_back(std::move(v));
    }
    for (std::size_t inst = 0; inst < D::instances; ++inst) {
      AlignedBuffer<std::uint64_t> c0(n * d);
      std::vector<std::uint64_t> c1(n * n * d);
      for (auto& v : c0) {
        v = rd.get(P::q2_bits);
        if (v >= D::q2) throw FormatError("response: first-row coefficient out of range (>= q2)");
      }
      for (auto& v : c1) v = rd.get(D::q1_bits);
      for (unsigned col = 0; col < n; ++col) ntt_forward(c0.data() + col * d, tq2);
      BitWriter w(out.data() + inst * Database<P>::pt_bytes);
      AlignedBuffer<std::uint64_t> sc(d);
      for (unsigned row = 0; row < n; ++row)
        for (unsigned col = 0; col < n; ++col) {
          // s_row · c0_col mod q2 (negacyclic, via the NTT mod q2), then scaled to q1
          pointwise_mul(sc.data(), s_q2[row].data(), c0.data() + col * d, d, D::q2);
          ntt_inverse(sc.data(), tq2);
          for (std::size_t z = 0; z < d; ++z) {
            const std::uint64_t u = static_cast<std::uint64_t>((static_cast<u128>(sc[z]) * D::q1 + D::q2 / 2) / D::q2) % D::q1;
            const std::uint64_t ph = (c1[(row * n + col) * d + z] + D::q1 - u) % D::q1;
            const std::uint64_t mr = (ph + 2) / 4;  // round(ph / 4)
            noise(static_cast<std::int64_t>(ph) - static_cast<std::int64_t>(4 * mr));
            const std::uint64_t m = mr % P::p;
            w.put(m, D::log2_p);
          }
        }
    }
    rd.check_padding_zero("response");
    return out;
  }

  /// Decodes a response and extracts item `item` (db_item_size bytes).
  std::vector<std::uint8_t> decode(std::uint64_t item, const std::uint8_t* buf, std::size_t len) const {
    if (item >= D::num_items) throw ArgumentError("decode: index out of range");
    const std::vector<std::uint8_t> pts = decode_plaintexts(buf, len);
    return extract_item(item, pts.data());
  }

  /// The item bytes from decoded plaintext bytes (all instances, concatenated).
  static std::vector<std::uint8_t> extract_item(std::uint64_t item, const std::uint8_t* pts) {
    std::vector<std::uint8_t> out(P::db_item_size);
    if constexpr (D::instances == 1) {
      const auto loc = ItemLocation<P>::of(item);
      std::memcpy(out.data(), pts + loc.slot * P::db_item_size, P::db_item_size);
    } else {
      std::memcpy(out.data(), pts, P::db_item_size);  // instances are concatenated in order
    }
    return out;
  }

 private:
  static u128 mulmod_u128(u128 a, u128 b, u128 q) {
    u128 r = 0;
    a %= q;
    while (b) {
      if (b & 1) r = add_mod128(r, a, q);
      a = add_mod128(a, a, q);
      b >>= 1;
    }
    return r;
  }
  /// NTT of a polynomial mod q2 (q2 ≡ 1 mod 2d is NTT-friendly); constant time.
  static const NttTable& q2_table() {
    static const NttTable t = NttTable::make(D::q2, D::d);
    return t;
  }
  Seed master_{};
  SecretKey<P> sk_;
};

}  // namespace spiralpir
