// spiralpir/spiral/service.hpp — the high-level C++ API over one compiled parameter type P, for
// every variant (P::variant; variant.hpp):
//
//   PublicParams<P>::load(buf, len[, threads])       parse a client's public params (public_params.hpp)
//   Client<P>(seed or nullptr)                       keys from a 32-byte seed (nullptr: OS entropy)
//     Client<P>::load(buf, len), save()              client state (secret!)
//     public_params(), query(record_index), decode(record_index, resp, len, out, record_size)
//   Server<P>(threads = 0 → all cores)
//     load_records(records, num_records, record_size, progress), save_db(path), map_db(path)
//     set_public_params(client_id, PublicParams)     many clients, stored by id
//     answer(client_id | PublicParams, query, len[, stage_seconds[5]]) -> response bytes
//     prepare(pp, query, len) -> PreparedQuery<P>;   answer_prepared(prepared[, stage_seconds[4]])
//   params_json<P>()                                 the compiled parameters + derived sizes
// Everything a caller can get wrong throws a spiralpir::Error subclass with a clear message.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>

#include "spiralpir/spiral/client.hpp"
#include "spiralpir/spiral/server.hpp"

namespace spiralpir {

/// The compiled parameters and their derived values, as one JSON object.
template <SpiralParams P>
std::string params_json() {
  using R = typename P::ring;
  using D = Derived<P>;
  std::ostringstream o;
  o.precision(17);
  o << "{\"variant\":\"" << variant_name(P::variant) << "\",\"poly_len\":" << R::poly_len << ",\"moduli\":[";
  for (std::size_t i = 0; i < R::num_primes; ++i) o << (i ? "," : "") << R::primes[i];
  o << "],\"noise_width\":" << P::noise_width << ",\"secret_dist\":\"" << secret_dist_name(P::secret_dist)
    << "\",\"secret_plus\":" << P::secret_plus << ",\"secret_minus\":" << P::secret_minus << ",\"n\":" << P::n
    << ",\"nu_1\":" << P::nu_1 << ",\"nu_2\":" << P::nu_2 << ",\"p\":" << P::p << ",\"q2_bits\":" << P::q2_bits
    << ",\"t_gsw\":" << P::t_gsw << ",\"t_conv\":" << P::t_conv << ",\"t_exp_left\":" << P::t_exp_left
    << ",\"t_exp_right\":" << P::t_exp_right << ",\"instances\":" << P::instances
    << ",\"db_item_size\":" << P::db_item_size << ",\"num_records\":" << P::num_records
    << ",\"record_size\":" << P::record_size << ",\"q2\":" << D::q2 << ",\"q_bits\":" << D::q_bits
    << ",\"items_per_plaintext\":" << D::items_per_pt << ",\"capacity\":" << D::num_items
    << ",\"public_params_bytes\":" << D::public_params_bytes << ",\"query_bytes\":" << D::query_bytes
    << ",\"response_bytes\":" << D::response_bytes << ",\"preprocessed_db_bytes\":" << D::preprocessed_db_bytes
    << ",\"lazy_terms\":" << D::lazy_terms << ",\"query_buckets\":" << D::query_buckets
    << ",\"params_hash\":\"";
  const auto& h = params_hash<P>();
  static const char* hex = "0123456789abcdef";
  for (auto b : h) o << hex[b >> 4] << hex[b & 15];
  o << "\",\"stages\":\"" << kStageNames << "\"}";
  return o.str();
}

}  // namespace spiralpir
