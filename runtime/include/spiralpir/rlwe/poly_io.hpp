// spiralpir/rlwe/poly_io.hpp — polynomials of R_q on the wire: every coefficient in [0, q) as
// q_bits bits, LSB first (core/bits.hpp), coefficient 0 first.
//   rlwe::put_poly_q<R>(writer, a, q_bits)          appends a (coefficient domain)
//   rlwe::get_poly_q<R>(reader, q_bits, what)       reads one back; a coefficient >= q throws
//                                                  FormatError("<what>: coefficient out of range")
#pragma once

#include <cstddef>
#include <string>

#include "spiralpir/arith/crt.hpp"
#include "spiralpir/arith/poly.hpp"
#include "spiralpir/core/bits.hpp"
#include "spiralpir/core/error.hpp"
#include "spiralpir/rlwe/types.hpp"

namespace spiralpir::rlwe {

template <class R>
void put_poly_q(BitWriter& w, const Pc<R>& a, unsigned q_bits) {
  for (std::size_t j = 0; j < R::poly_len; ++j) w.put_u128(coeff(a, j), q_bits);
}

template <class R>
Pc<R> get_poly_q(BitReader& rd, unsigned q_bits, const char* what) {
  const u128 q = modulus<R>();
  Pc<R> out;
  for (std::size_t j = 0; j < R::poly_len; ++j) {
    const u128 v = rd.get_u128(q_bits);
    if (v >= q) throw FormatError(std::string(what) + ": coefficient out of range (>= q)");
    const auto r = crt_decompose<R>(v);
    for (std::size_t i = 0; i < R::num_primes; ++i) out(i, j) = r[i];
  }
  return out;
}

}  // namespace spiralpir::rlwe
