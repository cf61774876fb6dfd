// Portable negacyclic NTT: Harvey's lazy butterflies with 64-bit Shoup multiplication.
//   forward: Cooley–Tukey, values stay in [0, 4p) (X is brought below 2p before each add).
//   inverse: Gentleman–Sande, values stay in [0, 2p); the last stage folds in 1/n.
#include "ntt_kernels.hpp"
#include "spiralpir/arith/modarith.hpp"

namespace spiralpir::detail {

void ntt_forward_native(std::uint64_t* a, const NttTable& tab, bool reduce) {
  const std::size_t n = tab.n;
  const std::uint64_t p = tab.p, two_p = 2 * p;
  std::size_t t = n;
  for (std::size_t m = 1; m < n; m <<= 1) {
    t >>= 1;
    for (std::size_t i = 0; i < m; ++i) {
      const std::uint64_t w = tab.fwd[m + i], ws = tab.fwd_shoup[m + i];
      std::uint64_t* x = a + 2 * i * t;
      std::uint64_t* y = x + t;
      for (std::size_t j = 0; j < t; ++j) {
        std::uint64_t u = x[j];
        u = u >= two_p ? u - two_p : u;
        const std::uint64_t v = mul_shoup_lazy(y[j], w, ws, p);  // [0, 2p)
        x[j] = u + v;
        y[j] = u - v + two_p;
      }
    }
  }
  if (reduce) {
    for (std::size_t j = 0; j < n; ++j) {
      std::uint64_t u = a[j];
      u = u >= two_p ? u - two_p : u;
      a[j] = u >= p ? u - p : u;
    }
  }
}

void ntt_inverse_native(std::uint64_t* a, const NttTable& tab, bool reduce) {
  const std::size_t n = tab.n;
  const std::uint64_t p = tab.p, two_p = 2 * p;
  std::size_t t = 1;
  for (std::size_t m = n >> 1; m > 1; m >>= 1) {
    for (std::size_t i = 0; i < m; ++i) {
      const std::uint64_t w = tab.inv[m + i], ws = tab.inv_shoup[m + i];
      std::uint64_t* x = a + 2 * i * t;
      std::uint64_t* y = x + t;
      for (std::size_t j = 0; j < t; ++j) {
        const std::uint64_t u = x[j], v = y[j];
        const std::uint64_t s = u + v;
        x[j] = s >= two_p ? s - two_p : s;
        y[j] = mul_shoup_lazy(u - v + two_p, w, ws, p);
      }
    }
    t <<= 1;
  }
  // Last stage (m = 1, t = n/2) with the 1/n scaling merged into both outputs.
  std::uint64_t* x = a;
  std::uint64_t* y = a + t;
  for (std::size_t j = 0; j < t; ++j) {
    const std::uint64_t u = x[j], v = y[j];
    std::uint64_t s = mul_shoup_lazy(u + v, tab.n_inv, tab.n_inv_shoup, p);
    std::uint64_t d = mul_shoup_lazy(u - v + two_p, tab.last_inv, tab.last_inv_shoup, p);
    if (reduce) {
      s = s >= p ? s - p : s;
      d = d >= p ? d - p : d;
    }
    x[j] = s;
    y[j] = d;
  }
}

}  // namespace spiralpir::detail
