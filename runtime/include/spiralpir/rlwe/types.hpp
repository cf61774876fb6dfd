// spiralpir/rlwe/types.hpp — short names for the ring elements RLWE ciphertexts are made of, in
// namespace spiralpir::rlwe: Pc<R> (coefficient domain), Pn<R> (NTT domain), MatN<R> (a matrix of
// NTT-domain polynomials: a matrix Regev or GSW ciphertext).
#pragma once

#include "spiralpir/arith/poly.hpp"

namespace spiralpir::rlwe {

template <class R>
using Pn = PolyNtt<R>;
template <class R>
using Pc = PolyCoeff<R>;
template <class R>
using MatN = PolyMatrix<PolyNtt<R>>;

}  // namespace spiralpir::rlwe
