// spiralpir/spiral/params.hpp — the protocol parameter concept and every derived constant.
//
// A parameter type is a plain struct of static constexpr members (generated code writes it from
// templates/params.hpp.j2):
//   using ring = <a type with static constexpr poly_len, num_primes, primes[]>;
//   variant, noise_width, secret_dist, secret_plus, secret_minus, n, nu_1, nu_2, p, q2_bits,
//   t_gsw, t_conv, t_exp_left, t_exp_right, instances, db_item_size, num_records, record_size.
// Optional: rows_stored (default: the first-dimension rows that hold the num_records records,
// Derived::rows_stored; a type that needs every row, e.g. a keyword table's row blocks, sets
// 2^nu_1). Optional: query_buckets (G, default 1; batch_query.hpp): one query ct carries the indices of G
// equal-shaped bucket databases, so the expansion schedule is that of G·2^nu_1 selectors and
// G·nu_2·t_gsw digits.
// A type derived from such a struct that shadows some members (e.g. nu_1/nu_2/num_records for a
// CI-sized twin) is a parameter type too: every member is read as P::member, never via a base.
//
// Derived<P> holds the derived constants (q, bit widths, gadget bases, q2, item layout, the
// expansion schedule, exact object sizes) and static_asserts every bound. The formulas are the
// ones written in runtime/FORMATS.md; the Python optimizer reproduces them byte-exact.
#pragma once

#include <array>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>

#include "spiralpir/arith/modarith.hpp"
#include "spiralpir/arith/ring.hpp"
#include "spiralpir/rlwe/secret.hpp"

namespace spiralpir {

/// Members of the SPIRAL family (variant.hpp gives each its policy).
enum class Variant : std::uint8_t { spiral = 0, stream = 1, pack = 2, stream_pack = 3 };

constexpr const char* variant_name(Variant v) {
  switch (v) {
    case Variant::spiral: return "spiral";
    case Variant::stream: return "stream";
    case Variant::pack: return "pack";
    case Variant::stream_pack: return "stream_pack";
  }
  return "?";
}

template <class P>
concept SpiralParams = requires {
  typename P::ring;
  { P::ring::poly_len } -> std::convertible_to<std::size_t>;
  { P::ring::num_primes } -> std::convertible_to<std::size_t>;
  { P::ring::primes[0] } -> std::convertible_to<std::uint64_t>;
  { P::variant } -> std::convertible_to<Variant>;
  { P::noise_width } -> std::convertible_to<double>;
  { P::secret_dist } -> std::convertible_to<SecretDist>;
  { P::secret_plus } -> std::convertible_to<unsigned>;
  { P::secret_minus } -> std::convertible_to<unsigned>;
  { P::n } -> std::convertible_to<unsigned>;
  { P::nu_1 } -> std::convertible_to<unsigned>;
  { P::nu_2 } -> std::convertible_to<unsigned>;
  { P::p } -> std::convertible_to<std::uint64_t>;
  { P::q2_bits } -> std::convertible_to<unsigned>;
  { P::t_gsw } -> std::convertible_to<unsigned>;
  { P::t_conv } -> std::convertible_to<unsigned>;
  { P::t_exp_left } -> std::convertible_to<unsigned>;
  { P::t_exp_right } -> std::convertible_to<unsigned>;
  { P::instances } -> std::convertible_to<std::uint64_t>;
  { P::db_item_size } -> std::convertible_to<std::uint64_t>;
  { P::num_records } -> std::convertible_to<std::uint64_t>;
  { P::record_size } -> std::convertible_to<std::uint64_t>;
};

/// P::query_buckets when P declares it, else 1 (one bucket per query: the plain protocol).
template <class P>
constexpr unsigned query_buckets_of() {
  if constexpr (requires { P::query_buckets; }) return P::query_buckets;
  else return 1;
}

namespace detail {
constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }
}  // namespace detail

/// P::rows_stored when P declares it, else `needed` (the rows holding P's records).
template <class P>
constexpr std::uint64_t rows_stored_of(std::uint64_t needed) {
  if constexpr (requires { P::rows_stored; }) return P::rows_stored;
  else return needed;
}

/// The parameter type an object is labelled with on the wire (params hash, record capacity):
/// P itself, or P::wire_params for an internal computation type (variant.hpp: SpiralStream /
/// SpiralPack compute with a spiral-shaped or n = 1 inner type but write the outer params' hash).
template <class P>
struct WireOf {
  using type = P;
};
template <class P>
  requires requires { typename P::wire_params; }
struct WireOf<P> {
  using type = typename P::wire_params;
};

/// Derived constants of a parameter type. All public members are constexpr.
template <SpiralParams P>
struct Derived {
  using ring = typename P::ring;
  static constexpr std::size_t d = ring::poly_len;
  static constexpr std::size_t num_primes = ring::num_primes;
  static constexpr unsigned n = P::n;
  static constexpr unsigned nu_1 = P::nu_1;
  static constexpr unsigned nu_2 = P::nu_2;

  static constexpr u128 q = modulus<ring>();
  /// q_bits = bitlen(q) = ceil(log2 q) (q is odd, never a power of two).
  static constexpr unsigned q_bits = bit_length(q);
  /// Gadget base bits for length t: ceil(q_bits / t) (= ceil(log2(q)/t)).
  static constexpr unsigned base_bits(unsigned t) { return (q_bits + t - 1) / t; }
  static constexpr unsigned bits_gsw = base_bits(P::t_gsw);
  static constexpr unsigned bits_conv = base_bits(P::t_conv);
  static constexpr unsigned bits_exp_left = base_bits(P::t_exp_left);
  static constexpr unsigned bits_exp_right = base_bits(P::t_exp_right);

  static constexpr std::uint64_t p = P::p;
  static constexpr unsigned log2_p = ceil_log2(P::p);
  static constexpr std::uint64_t q1 = 4 * P::p;
  static constexpr unsigned q1_bits = log2_p + 2;
  static constexpr std::uint64_t q2 = largest_ntt_prime_below(P::q2_bits, d);
  /// Δ = floor(q / p)
  static constexpr u128 delta = q / P::p;

  // ---- item layout ------------------------------------------------------------------------
  static constexpr std::uint64_t pt_bits = std::uint64_t{n} * n * d * log2_p;  // bits per plaintext
  static constexpr std::uint64_t item_bits = 8 * P::db_item_size;
  static constexpr std::uint64_t instances = P::instances;
  static constexpr std::uint64_t items_per_pt = item_bits <= pt_bits ? pt_bits / item_bits : 1;
  static constexpr std::uint64_t dim0 = std::uint64_t{1} << nu_1;
  static constexpr std::uint64_t dim_rest = std::uint64_t{1} << nu_2;
  static constexpr std::uint64_t num_pts = dim0 * dim_rest;  // plaintexts per instance (hypercube)
  /// first-dimension rows the database stores: plaintext pt sits at row pt >> nu_2, so the
  /// ceil(num_records / items_per_pt) plaintexts holding records fill the first rows_stored rows;
  /// the rows after them are zero plaintexts, neither stored nor multiplied (FORMATS.md §3)
  static constexpr std::uint64_t rows_needed =
      detail::ceil_div(detail::ceil_div(P::num_records, items_per_pt), dim_rest);
  static constexpr std::uint64_t rows_stored = rows_stored_of<P>(rows_needed < dim0 ? rows_needed : dim0);
  static constexpr std::uint64_t stored_pts = rows_stored * dim_rest;  // plaintexts per instance stored
  static constexpr std::uint64_t num_items = stored_pts * items_per_pt;  // capacity

  // ---- query expansion schedule -----------------------------------------------------------
  static constexpr std::uint64_t num_gsw_digits = std::uint64_t{nu_2} * P::t_gsw;
  /// buckets whose indices one query ct carries (G); the schedule below is for all of them:
  /// bucket g's selectors at even positions 2(g·dim0 + x), its digits at odd 2(g·digits + y)
  static constexpr unsigned query_buckets = query_buckets_of<P>();
  static constexpr unsigned log2_query_buckets = ceil_log2(query_buckets);
  static constexpr std::uint64_t packed_dim0 = std::uint64_t{query_buckets} << nu_1;
  static constexpr std::uint64_t packed_gsw_digits = std::uint64_t{query_buckets} * num_gsw_digits;
  /// rounds done on the odd (GSW) branch, round 0 included
  static constexpr unsigned rounds_right = 1 + (packed_gsw_digits > 1 ? ceil_log2(packed_gsw_digits) : 0);
  /// total expansion rounds
  static constexpr unsigned rounds = (nu_1 + log2_query_buckets + 1 > rounds_right)
                                         ? nu_1 + log2_query_buckets + 1
                                         : rounds_right;
  static constexpr unsigned log2_d = ceil_log2(d);

  // ---- sizes (bytes), see FORMATS.md -------------------------------------------------------
  static constexpr std::uint64_t header_bytes = 32;
  static constexpr std::uint64_t seed_bytes = 32;
  static constexpr std::uint64_t poly_q_bytes = detail::ceil_div(std::uint64_t{d} * q_bits, 8);
  // variants (FORMATS.md §3): stream = no expansion keys, the query holds the 2^nu_1
  // first-dimension and nu_2·t_gsw digit cts; pack = computation with n_comp = 1 plus n packing
  // key-switching matrices (n·n·t_conv polys).
  static constexpr bool is_stream = P::variant == Variant::stream || P::variant == Variant::stream_pack;
  static constexpr bool is_pack = P::variant == Variant::pack || P::variant == Variant::stream_pack;
  static constexpr unsigned n_comp = is_pack ? 1u : n;
  static constexpr std::uint64_t expansion_polys =
      std::uint64_t{rounds - 1} * P::t_exp_left + std::uint64_t{rounds_right} * P::t_exp_right;
  // ScalToMat keys only for n_comp > 1 (at 1 the matrix secret is the scalar one: keys.hpp)
  static constexpr std::uint64_t conversion_polys =
      (n_comp > 1 ? std::uint64_t{n_comp} * n_comp * P::t_conv : 0) + std::uint64_t{2} * n_comp * P::t_conv;
  static constexpr std::uint64_t packing_polys = is_pack ? std::uint64_t{n} * n * P::t_conv : 0;
  static constexpr std::uint64_t pp_polys = (is_stream ? 0 : expansion_polys) + conversion_polys + packing_polys;
  static constexpr std::uint64_t public_params_bytes =
      header_bytes + seed_bytes + detail::ceil_div(pp_polys * d * q_bits, 8);
  static constexpr std::uint64_t query_polys = is_stream ? dim0 + num_gsw_digits : 1;
  static constexpr std::uint64_t query_bytes =
      header_bytes + seed_bytes + detail::ceil_div(query_polys * d * q_bits, 8);
  static constexpr std::uint64_t response_payload_bits =
      instances * d * (std::uint64_t{n} * P::q2_bits + std::uint64_t{n} * n * q1_bits);
  static constexpr std::uint64_t response_bytes = header_bytes + detail::ceil_div(response_payload_bits, 8);
  static constexpr std::uint64_t db_words = instances * stored_pts * n * n * d * num_primes;  // uint32 each
  static constexpr std::uint64_t preprocessed_db_bytes = header_bytes + 4 * db_words;
  static constexpr std::uint64_t client_state_bytes = header_bytes + seed_bytes;

  // ---- lazy reduction bound of the first-dimension kernel ---------------------------------
  /// number of products (each < (p_i - 1)^2) that can be added to a value < p_i without
  /// overflowing a uint64 accumulator
  static constexpr std::uint64_t lazy_terms = max_lazy_terms<ring>();

  // ---- checks -------------------------------------------------------------------------------
  static constexpr bool primes_ok() {
    for (std::size_t i = 0; i < num_primes; ++i) {
      const std::uint64_t pi = ring::primes[i];
      if (pi >= (std::uint64_t{1} << 32) || !is_prime(pi) || pi % (2 * d) != 1) return false;
      for (std::size_t j = 0; j < i; ++j)
        if (ring::primes[j] == pi) return false;
    }
    return true;
  }
  static_assert(d >= 1024 && d <= 8192 && std::has_single_bit(d), "poly_len must be a power of two in [1024, 8192]");
  static_assert(num_primes >= 1 && num_primes <= 3, "1..3 CRT primes supported by the protocol layer");
  static_assert(primes_ok(), "each prime must be < 2^32, prime, distinct and ≡ 1 mod 2*poly_len");
  static_assert(q_bits <= 100, "q must stay below 2^100 (gadget/CRT arithmetic uses 128-bit integers)");
  static_assert(P::noise_width > 0.0 && P::noise_width < 1000.0, "noise_width out of range");
  static_assert(P::secret_dist != SecretDist::sparse_ternary ||
                    (P::secret_plus + P::secret_minus > 0 && P::secret_plus + P::secret_minus <= d),
                "sparse_ternary needs 0 < secret_plus + secret_minus <= poly_len");
  static_assert(n >= 1 && n <= 8, "n in [1, 8]");
  static_assert(nu_1 >= 1 && nu_2 <= 20 && nu_1 + nu_2 <= 30, "nu_1 >= 1, nu_1 + nu_2 <= 30");
  // p ≤ 2^30: q1 = 4p ≤ 2^32 keeps every response coefficient and the client's rounding in
  // 64-bit words, and the item layout's log2_p-bit fields in one BitReader word. The database
  // stores a centred coefficient v ∈ [−p/2, p/2) as p_i − |v| or v without reducing mod p_i
  // (database.hpp plaintext_polys), hence p/2 < every CRT prime.
  static_assert(P::p >= 2 && std::has_single_bit(static_cast<std::uint64_t>(P::p)) && log2_p <= 30,
                "p must be a power of two in [2, 2^30]");
  static_assert(P::p / 2 < min_prime<ring>(), "p/2 must be below every CRT prime (centred database coefficients)");
  // q2 < 2^48: the client's NTT and pointwise products mod q2 (native kernels for q2 ≥ 2^30)
  // take moduli below 2^50; 4p < q2 needs q2_bits ≥ log2_p + 3.
  static_assert(P::q2_bits >= 14 && P::q2_bits <= 48 && q2 != 0, "q2_bits in [14, 48] with an NTT-friendly prime below 2^q2_bits");
  static_assert(u128{q2} < q && q1 < q2, "need 4p < q2 < q");
  static_assert(P::t_gsw >= 1 && P::t_conv >= 1 && P::t_exp_left >= 1 && P::t_exp_right >= 1, "gadget lengths >= 1");
  static_assert(P::t_gsw <= q_bits && P::t_conv <= q_bits && P::t_exp_left <= q_bits && P::t_exp_right <= q_bits,
                "gadget length larger than log2 q");
  static_assert(rounds <= log2_d, "query expansion needs at most log2(poly_len) rounds");
  static_assert(2 * packed_dim0 <= d && 2 * packed_gsw_digits <= d, "the query polynomial cannot hold all indices");
  static_assert(query_buckets >= 1 && std::has_single_bit(query_buckets), "query_buckets must be a power of two >= 1");
  static_assert(query_buckets == 1 || !is_stream, "query_buckets > 1 needs query expansion (not a stream variant)");
  static_assert(P::db_item_size >= 1, "db_item_size >= 1");
  static_assert(instances >= 1 && instances * pt_bits >= item_bits &&
                    (instances == 1 || (instances - 1) * pt_bits < item_bits),
                "instances must be max(1, ceil(8*db_item_size / plaintext bits))");
  static_assert(P::record_size >= 1 && P::record_size <= P::db_item_size, "record_size must be in [1, db_item_size]");
  static_assert(P::num_records >= 1 && P::num_records <= num_pts * items_per_pt, "num_records exceeds the database capacity");
  static_assert(rows_stored >= 1 && rows_stored <= dim0 && rows_stored >= rows_needed,
                "rows_stored must be in [rows holding num_records, 2^nu_1]");
  static_assert(lazy_terms >= 1, "first-dimension accumulator bound");
};

}  // namespace spiralpir
