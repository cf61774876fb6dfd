// spiralpir/spiral/client_core.hpp — the client of one computation type P: secret keys from a
// 32-byte master seed, the vanilla query (one seed-compressed scalar Regev ct packing the
// first-dimension one-hot index and the nu_2·t_gsw GSW digits), response decoding and item
// extraction. Client<P> (client.hpp) builds every variant's client from it.
//
// Constant time: no branch, address or division depends on the secrets, the noise or the
// queried index (the one-hot message and the item are built by scanning every position with
// masks); only "the index is in range" is made public. The master seed, the secret key and
// the secret-bearing temporaries are wiped when dropped (core/wipe.hpp). runtime/tests/ct
// checks this under Valgrind.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "spiralpir/rlwe/regev.hpp"
#include "spiralpir/spiral/database.hpp"
#include "spiralpir/spiral/keys.hpp"

namespace spiralpir {

/// Whether a (secret) index is below `count`, with no branch on it: only the answer is public.
inline bool index_in_range(std::uint64_t index, std::uint64_t count) {
  std::uint64_t ok = ct::lt_mask(index, count);
  SPIRALPIR_CT_PUBLIC(&ok, sizeof ok);
  return ok != 0;
}

/// Where an item lives (FORMATS.md §5). Divisions by compile-time constants only (the
/// compiler multiplies), so constant time in the item.
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

  explicit ClientCore(const Seed& master) : master_(master), sk_(keys_of(master)) {}

  const Seed& master_seed() const { return *master_; }
  const SecretKey<P>& secret() const { return sk_; }

  /// Serialized client state (kind 1): the master seed.
  std::vector<std::uint8_t> save() const {
    std::vector<std::uint8_t> out(D::client_state_bytes);
    write_header<P>(out.data(), ObjectKind::client_state, 32);
    std::memcpy(out.data() + kHeaderBytes, master_->data(), 32);
    return out;
  }
  static ClientCore load(const std::uint8_t* buf, std::size_t len) {
    check_header<P>(buf, len, ObjectKind::client_state, 32);
    Wiped<Seed> s;
    std::memcpy(s->data(), buf + kHeaderBytes, 32);
    return ClientCore(*s);
  }

  /// The query polynomial (before encryption) for an item: every position written, with masks.
  static Pc query_message(std::uint64_t item) { return query_message(&item, 1); }
  /// The packed query polynomial of `count` ≤ G items, item g for bucket g (params.hpp: bucket
  /// g's selectors at 2(g·dim0 + x), its digits at 2(g·digits + y) + 1; buckets ≥ count get none).
  static Pc query_message(const std::uint64_t* items, std::size_t count) {
    SecretVector<u128> m(D::d, 0);
    for (std::size_t bucket = 0; bucket < count; ++bucket) {
      const auto loc = ItemLocation<P>::of(items[bucket]);
      select_into(m, bucket, &loc.i, 1, loc.j);
    }
    return residues(m);
  }
  /// The blocked query polynomial: `count` rows of the first dimension selected (each with the
  /// weight of one) and GSW bits encoding `column`; every position written, with masks.
  static Pc query_message(const std::uint64_t* rows, std::size_t count, std::uint64_t column) {
    SecretVector<u128> m(D::d, 0);
    select_into(m, 0, rows, count, column);
    return residues(m);
  }

  /// A query for `item` (fresh randomness from `rng`); with G > 1 it selects in bucket 0 only.
  std::vector<std::uint8_t> query(std::uint64_t item, Csprng& rng) const {
    check_item(item, "query");
    return encrypt_query(query_message(item), rng);
  }
  /// The packed query of count ≤ G = D::query_buckets items, items[g] in bucket g
  /// (batch_query.hpp); the slots from count on carry no index.
  std::vector<std::uint8_t> query_packed(const std::uint64_t* items, std::size_t count, Csprng& rng) const {
    if (count < 1 || count > D::query_buckets || items == nullptr)
      throw ArgumentError("packed query: " + std::to_string(count) + " items, these parameters pack 1 to " +
                          std::to_string(D::query_buckets) + " buckets per query");
    for (std::size_t g = 0; g < count; ++g) check_item(items[g], "packed query");
    return encrypt_query(query_message(items, count), rng);
  }

  /// A blocked query (FORMATS.md §11): the first dimension's 2^nu_1 rows split into `blocks`
  /// equal blocks, rows[b] the row selected in block b, `column` the folded index; answered by
  /// Server::answer_blocked. Its size and format are those of an ordinary query.
  std::vector<std::uint8_t> query_blocked(const std::uint64_t* rows, std::size_t blocks, std::uint64_t column,
                                          Csprng& rng) const {
    if (blocks == 0 || blocks > D::dim0 || D::dim0 % blocks != 0)
      throw ArgumentError("query_blocked: " + std::to_string(blocks) + " row blocks do not divide the " +
                          std::to_string(D::dim0) + " rows");
    if (rows == nullptr) throw ArgumentError("query_blocked: null rows");
    const std::uint64_t per = D::dim0 / blocks;
    std::uint64_t ok = ct::lt_mask(column, D::dim_rest);
    for (std::size_t b = 0; b < blocks; ++b) ok &= ct::lt_mask(rows[b] - b * per, per);  // wraps below the block
    SPIRALPIR_CT_PUBLIC(&ok, sizeof ok);
    if (ok == 0)
      throw ArgumentError("query_blocked: a row outside its block (" + std::to_string(per) +
                          " rows each) or a column not below " + std::to_string(D::dim_rest));
    return encrypt_query(query_message(rows, blocks, column), rng);
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
    static_assert(std::has_single_bit(D::q1), "q1 = 4p is a power of two (p is)");
    static const Barrett128 red_q2(D::q2);
    static constexpr Barrett64 red_q2_64(D::q2);
    // the rounding's numerator fits 64 bits for every q2·q1 < 2^64 (then one word quotient)
    constexpr bool narrow = u128{D::q2} * D::q1 + D::q2 / 2 < (u128{1} << 64);
    const NttTable& tq2 = q2_table();
    const auto& s_q2 = s_q2_;
    WipedBuffer<std::uint64_t> sc(d);
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
      for (unsigned row = 0; row < n; ++row)
        for (unsigned col = 0; col < n; ++col) {
          // s_row · c0_col mod q2 (negacyclic, via the NTT mod q2), then scaled to q1:
          // u = round(sc·q1/q2) ∈ [0, q1] by a Barrett quotient (no division)
          pointwise_mul(sc.data(), s_q2[row].data(), c0.data() + col * d, d, D::q2);
          ntt_inverse(sc.data(), tq2);
          for (std::size_t z = 0; z < d; ++z) {
            std::uint64_t u;
            if constexpr (narrow) {
              u = red_q2_64.quotient(sc[z] * D::q1 + D::q2 / 2) & (D::q1 - 1);
            } else {
              const u128 num = static_cast<u128>(sc[z]) * D::q1 + D::q2 / 2;
              u = static_cast<std::uint64_t>(red_q2.quotient(num)) & (D::q1 - 1);
            }
            const std::uint64_t ph = (c1[(row * n + col) * d + z] - u) & (D::q1 - 1);
            const std::uint64_t mr = (ph + 2) >> 2;  // round(ph / 4)
            noise(static_cast<std::int64_t>(ph) - static_cast<std::int64_t>(4 * mr));
            w.put(mr & (P::p - 1), D::log2_p);
          }
        }
    }
    rd.check_padding_zero("response");
    return out;
  }

  /// Decodes a response and extracts item `item` (db_item_size bytes).
  std::vector<std::uint8_t> decode(std::uint64_t item, const std::uint8_t* buf, std::size_t len) const {
    if (!index_in_range(item, D::num_items)) throw ArgumentError("decode: index out of range");
    std::vector<std::uint8_t> pts = decode_plaintexts(buf, len);
    auto out = extract_item(item, pts.data());
    secure_wipe(pts.data(), pts.size());
    return out;
  }

  /// The item bytes from decoded plaintext bytes (all instances, concatenated): every slot
  /// read, the item's kept by a mask.
  static std::vector<std::uint8_t> extract_item(std::uint64_t item, const std::uint8_t* pts) {
    std::vector<std::uint8_t> out(P::db_item_size, 0);
    if constexpr (D::instances == 1) {
      const auto loc = ItemLocation<P>::of(item);
      for (std::uint64_t slot = 0; slot < D::items_per_pt; ++slot) {
        const auto keep = static_cast<std::uint8_t>(ct::eq_mask(slot, loc.slot));
        const std::uint8_t* src = pts + slot * P::db_item_size;
        for (std::size_t k = 0; k < P::db_item_size; ++k) out[k] |= src[k] & keep;
      }
    } else {
      std::memcpy(out.data(), pts, P::db_item_size);  // instances are concatenated in order
    }
    return out;
  }

 private:
  /// Writes bucket `bucket`'s positions of a query message: `count` first-dimension rows
  /// selected and the GSW digits of `column`, every position of the bucket written, with masks.
  static void select_into(SecretVector<u128>& m, std::size_t bucket, const std::uint64_t* rows, std::size_t count,
                          std::uint64_t column) {
    const u128 q = D::q;
    const u128 inv_left = inv_mod128(pow2_mod128(D::rounds, q), q);
    const u128 inv_right = inv_mod128(pow2_mod128(D::rounds_right, q), q);
    const u128 first = mulmod_u128(D::delta % q, inv_left, q);
    const std::size_t x0 = bucket * D::dim0, g0 = bucket * D::num_gsw_digits;
    for (std::uint64_t x = 0; x < D::dim0; ++x) {
      std::uint64_t hit = 0;
      for (std::size_t b = 0; b < count; ++b) hit |= ct::eq_mask(x, rows[b]);
      m[2 * (x0 + x)] = ct::select128(hit, first, 0);
    }
    for (unsigned f = 0; f < P::nu_2; ++f) {
      const std::uint64_t bit = 0 - ((column >> (P::nu_2 - 1 - f)) & 1);  // a mask
      for (unsigned k = 0; k < P::t_gsw; ++k) {
        const std::size_t g = g0 + std::size_t{f} * P::t_gsw + k;
        const u128 zk = pow2_mod128(D::bits_gsw * k, q);
        m[2 * g + 1] = ct::select128(bit, mulmod_u128(zk, inv_right, q), 0);
      }
    }
  }
  /// The message's CRT residues.
  static Pc residues(const SecretVector<u128>& m) {
    Pc out;
    for (std::size_t z = 0; z < D::d; ++z) {
      auto r = crt_decompose<R>(m[z]);
      for (std::size_t i = 0; i < R::num_primes; ++i) out(i, z) = r[i];
      secure_wipe(r.data(), sizeof r);
    }
    return out;
  }
  static void check_item(std::uint64_t item, const char* what) {
    if (!index_in_range(item, D::num_items))
      throw ArgumentError(std::string(what) + ": index " + std::to_string(item) + " out of range (capacity " +
                          std::to_string(D::num_items) + ")");
  }
  /// The seed-compressed scalar Regev encryption of a query message (wiped after use).
  std::vector<std::uint8_t> encrypt_query(Pc message, Csprng& rng) const {
    Seed seed;
    rng.fill(seed.data(), seed.size());
    SPIRALPIR_CT_PUBLIC(seed.data(), seed.size());  // sent in the clear: the random row's seed
    const GaussianSampler g(P::noise_width);
    Pn m = to_ntt(std::move(message));
    Pn b = rlwe::regev_body<R>(uniform_poly_ntt<R>(seed, 0), sk_.s_reg_ntt, rng, g, &m);
    m.wipe();
    std::vector<std::uint8_t> out(D::query_bytes, 0);
    write_header<P>(out.data(), ObjectKind::query, D::query_bytes - kHeaderBytes);
    std::memcpy(out.data() + kHeaderBytes, seed.data(), 32);
    BitWriter w(out.data() + kHeaderBytes + 32);
    rlwe::put_poly_q<R>(w, from_ntt(std::move(b)), D::q_bits);
    return out;
  }
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
  static SecretKey<P> keys_of(const Seed& master) {
    Csprng rng(master, 1);
    return SecretKey<P>::generate(rng);
  }
  /// s_row mod q2 in the NTT domain, for decoding: the centred coefficient c = x − q·[x > q/2]
  /// of x ∈ [0, q), so c mod q2 = (x mod q2 − [x > q/2]·(q mod q2)) mod q2
  static std::vector<WipedBuffer<std::uint64_t>> secret_mod_q2(const SecretKey<P>& sk) {
    constexpr u128 q = D::q;
    constexpr std::uint64_t q_mod_q2 = static_cast<std::uint64_t>(q % D::q2);
    const Barrett128 red_q2(D::q2);
    std::vector<WipedBuffer<std::uint64_t>> out;
    out.reserve(P::n);
    for (unsigned i = 0; i < P::n; ++i) {
      WipedBuffer<std::uint64_t> v(D::d);
      for (std::size_t z = 0; z < D::d; ++z) {
        const u128 x = coeff(sk.s[i], z);
        const std::uint64_t upper = ct::lt_mask128(q / 2, x);
        v[z] = ct::sub_mod(red_q2.reduce(x), q_mod_q2 & upper, D::q2);
      }
      ntt_forward(v.data(), q2_table());
      out.push_back(std::move(v));
    }
    return out;
  }
  Wiped<Seed> master_;
  SecretKey<P> sk_;
  std::vector<WipedBuffer<std::uint64_t>> s_q2_ = secret_mod_q2(sk_);  // wiped when dropped
};

}  // namespace spiralpir
