// spiralpir/spiral/packing.hpp — SpiralPack's packing step: per instance, the n² scalar (2×1)
// responses of the sub-databases (e = row·n + col) become one (n+1)×n matrix Regev ct under the
// packing target s̃, by key switching their first rows with the packing keys W_r (the digits of
// row r's ct against column r·t_conv + k) and adding their second rows in place.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "spiralpir/arith/dot.hpp"
#include "spiralpir/arith/gadget.hpp"
#include "spiralpir/spiral/public_params.hpp"

namespace spiralpir {

template <SpiralParams P>
struct PackingStep {
  using R = typename P::ring;
  using D = Derived<P>;
  using Pn = rlwe::Pn<R>;
  using MatN = rlwe::MatN<R>;

  static std::vector<MatN> pack(const std::vector<MatN>& cts, const PublicKeys<P>& pp, unsigned threads) {
    constexpr unsigned n = P::n;
    constexpr std::size_t nn = std::size_t{n} * n;
    constexpr std::size_t T = P::t_conv;
    if (cts.size() != D::instances * nn) throw std::logic_error("pack: wrong number of cts");
    std::vector<MatN> out(D::instances, MatN(n + 1, n));
    parallel_for(threads, D::instances * n, [&](std::size_t task) {
      const std::size_t inst = task / n, col = task % n;
      std::vector<Pn> dig;  // index r·T + k
      dig.reserve(n * T);
      for (unsigned r = 0; r < n; ++r) {
        auto g = gadget_decompose_ntt<R>(from_ntt(cts[inst * nn + r * n + col].at(0, 0)), D::bits_conv,
                                         static_cast<unsigned>(T));
        for (auto& x : g) dig.push_back(std::move(x));
      }
      MatN& o = out[inst];
      dot<R>(o.at(0, col), n * T, [&](std::size_t x) -> const Pn& { return dig[x]; },
                    [&](std::size_t x) -> const Pn& { return pp.pack_a[x]; });
      for (unsigned row = 0; row < n; ++row) {
        dot<R>(o.at(row + 1, col), n * T, [&](std::size_t x) -> const Pn& { return dig[x]; },
                      [&](std::size_t x) -> const Pn& { return pp.pack_b[x][row]; });
        o.at(row + 1, col) += cts[inst * nn + row * n + col].at(1, 0);
      }
    });
    return out;
  }
};

}  // namespace spiralpir
