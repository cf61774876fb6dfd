// spiralpir/testing/noise.hpp — TEST-ONLY noise instrumentation. NoiseMeter decrypts the server's
// intermediate ciphertexts with the client's secret key and records the measured noise after
// each stage. It needs the secret: never use it outside tests and benchmarks.
//
// Stages (keys of results()):
//   expansion          first-dimension scalar Regev cts after coefficient expansion (left keys)
//   expansion_right    GSW-digit scalar Regev cts after expansion (right keys)
//   conversion         first-dimension matrix Regev cts after ScalToMat
//   conversion_gsw     GSW cts after RegevToGSW (every column against μ·S·G)
//   first_dimension    the 2^nu_2 (per instance) cts after the first dimension
//   fold_r             the cts after fold round r (r = 0 … nu_2−1)
//   modswitch          the response after split modulus switching, in units of q1 (the client's
//                      decoding fails when |e| ≥ 2)
// Noise is the centered difference between the decrypted phase and the exact expected message
// (expansion, conversion) or the nearest multiple of Δ (first dimension, folds), over every
// coefficient of every ciphertext of the stage.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "spiralpir/spiral/client_core.hpp"
#include "spiralpir/spiral/stages.hpp"

namespace spiralpir {

struct NoiseStat {
  double sum_sq = 0;
  double max_abs = 0;
  std::uint64_t count = 0;
  void add(double e) {
    sum_sq += e * e;
    max_abs = std::max(max_abs, std::fabs(e));
    ++count;
  }
  double variance() const { return count ? sum_sq / static_cast<double>(count) : 0.0; }
  double log2_variance() const { return count && sum_sq > 0 ? std::log2(variance()) : -INFINITY; }
};

template <SpiralParams P>
class NoiseMeter : public StageObserver<P> {
 public:
  using R = typename P::ring;
  using D = Derived<P>;
  using Pc = rlwe::Pc<R>;
  using Pn = rlwe::Pn<R>;
  using MatN = rlwe::MatN<R>;

  NoiseMeter(const ClientCore<P>& client, std::uint64_t item) : c_(client), loc_(ItemLocation<P>::of(item)) {}

  const std::vector<std::pair<std::string, NoiseStat>>& results() const { return stats_; }

  void on_expansion(const std::vector<RegevCt<R>>& first, const std::vector<RegevCt<R>>& digits) override {
    NoiseStat a, b;
    // rows past the stored ones are neither expanded nor converted (zero cts, no noise to measure)
    for (std::size_t i = 0; i < first.size() && i < D::rows_stored; ++i)
      scalar_noise(first[i], i == loc_.i ? D::delta : u128{0}, a);
    for (std::size_t g = 0; g < digits.size(); ++g) scalar_noise(digits[g], gsw_message(g), b);
    stats_.emplace_back("expansion", a);
    stats_.emplace_back("expansion_right", b);
  }

  void on_conversion(const std::vector<MatN>& first_mats, const std::vector<MatN>& gsw) override {
    NoiseStat a, b;
    for (std::size_t i = 0; i < first_mats.size() && i < D::rows_stored; ++i) {
      for (unsigned col = 0; col < P::n; ++col)
        for (unsigned row = 0; row < P::n; ++row) {
          Pc expect;
          if (i == loc_.i && row == col) set_const(expect, D::delta);
          add_diff(phase(first_mats[i], row, col), expect, a);
        }
    }
    for (unsigned f = 0; f < P::nu_2; ++f) {
      const bool bit = ((loc_.j >> (P::nu_2 - 1 - f)) & 1) != 0;
      for (unsigned blk = 0; blk <= P::n; ++blk)
        for (unsigned k = 0; k < P::t_gsw; ++k) {
          const unsigned col = blk * P::t_gsw + k;
          const u128 zk = pow2_mod128(D::bits_gsw * k, D::q);
          for (unsigned row = 0; row < P::n; ++row) {
            Pc expect;
            if (bit) {
              if (blk == 0) {
                // −z^k · s_row
                const u128 neg = zk == 0 ? u128{0} : D::q - zk;
                expect = scalar_mul(c_.secret().s[row], neg);
              } else if (blk - 1 == row) {
                set_const(expect, zk);
              }
            }
            add_diff(phase(gsw[f], row, col), expect, b);
          }
        }
    }
    stats_.emplace_back("conversion", a);
    stats_.emplace_back("conversion_gsw", b);
  }

  void on_first_dimension(const std::vector<MatN>& cts) override { stats_.emplace_back("first_dimension", rounded(cts)); }

  void on_fold(unsigned r, const std::vector<MatN>& cts) override {
    stats_.emplace_back("fold_" + std::to_string(r), rounded(cts));
  }

  /// modulus-switching noise of a response, in units of q1
// GCC 12 reports a false -Warray-bounds on the vector's growth here for some parameter sets
// (streampack_2e18x30kb's full-size bench failed to compile under -Werror); the element is
// appended to a live vector like every other stage's
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#endif
  void on_response(const std::uint8_t* buf, std::size_t len) {
    NoiseStat s;
    c_.decode_plaintexts(buf, len, [&](std::int64_t e) { s.add(static_cast<double>(e)); });
    stats_.emplace_back("modswitch", s);
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

 private:
  u128 gsw_message(std::size_t g) const {
    const std::size_t f = g / P::t_gsw, k = g % P::t_gsw;
    const bool bit = ((loc_.j >> (P::nu_2 - 1 - f)) & 1) != 0;
    return bit ? pow2_mod128(D::bits_gsw * static_cast<unsigned>(k), D::q) : u128{0};
  }
  static void set_const(Pc& p, u128 v) {
    const auto r = crt_decompose<R>(v);
    for (std::size_t i = 0; i < R::num_primes; ++i) p(i, 0) = r[i];
  }
  static void add_diff(const Pc& ph, const Pc& expect, NoiseStat& s) {
    Pc diff = ph;
    diff -= expect;
    for (std::size_t z = 0; z < D::d; ++z) s.add(static_cast<double>(centered_coeff(diff, z)));
  }
  void scalar_noise(const RegevCt<R>& ct, u128 m0, NoiseStat& s) const {
    // phase = b − s_reg·a
    Pc ph = from_ntt(ct.b);
    ph -= from_ntt(to_ntt(ct.a) * c_.secret().s_reg_ntt);
    Pc expect;
    set_const(expect, m0);
    add_diff(ph, expect, s);
  }
  Pc phase(const MatN& m, unsigned row, unsigned col) const {
    Pn x = m.at(row + 1, col);
    x -= m.at(0, col) * c_.secret().s_ntt[row];
    return from_ntt(std::move(x));
  }
  /// noise against the nearest message: e = x − Δ·M with M = round(x·p/q) mod p
  NoiseStat rounded(const std::vector<MatN>& cts) const {
    NoiseStat s;
    for (const MatN& m : cts)
      for (unsigned row = 0; row < P::n; ++row)
        for (unsigned col = 0; col < P::n; ++col) {
          const Pc ph = phase(m, row, col);
          for (std::size_t z = 0; z < D::d; ++z) {
            const u128 x = coeff(ph, z);
            const std::uint64_t M = round_modswitch<R>(x, P::p);
            const u128 dm = D::delta * M;
            const u128 e = x >= dm ? x - dm : x + (D::q - dm);
            s.add(static_cast<double>(centered_lift<R>(e)));
          }
        }
    return s;
  }

  const ClientCore<P>& c_;
  ItemLocation<P> loc_;
  std::vector<std::pair<std::string, NoiseStat>> stats_;
};

}  // namespace spiralpir
