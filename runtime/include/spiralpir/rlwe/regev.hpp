// spiralpir/rlwe/regev.hpp — the Regev encryption step shared by keys and queries.
//   rlwe::regev_body<R>(a, s, noise, g, m) -> Pn<R>: b = a·s + e + m in the NTT domain, e drawn
//       from `noise` with sampler g (then m added, if not null). With a uniform `a` (expanded from
//       a public seed) the pair (a, b) is a Regev encryption of m under s: phase b − s·a = e + m.
//       The noise stream is consumed exactly once per call (d Gaussian samples), so a seeded
//       generator reproduces the same ciphertexts. The noise is wiped once added.
#pragma once

#include "spiralpir/arith/random.hpp"
#include "spiralpir/arith/sample.hpp"
#include "spiralpir/rlwe/types.hpp"

namespace spiralpir::rlwe {

template <class R>
Pn<R> regev_body(const Pn<R>& a, const Pn<R>& s, Csprng& noise, const GaussianSampler& g, const Pn<R>* m = nullptr) {
  Pn<R> b = a * s;
  Pn<R> e = to_ntt(gaussian_poly<R>(noise, g));
  b += e;
  e.wipe();
  if (m != nullptr) b += *m;
  return b;
}

}  // namespace spiralpir::rlwe
