// NTT tables: ψ, bit-reversed powers, Shoup companions for every kernel family.
#include <stdexcept>
#include <string>

#include "spiralpir/arith/modarith.hpp"
#include "spiralpir/arith/ntt.hpp"

namespace spiralpir {
namespace {

std::size_t bit_reverse(std::size_t x, unsigned bits) {
  std::size_t r = 0;
  for (unsigned i = 0; i < bits; ++i) {
    r = (r << 1) | (x & 1);
    x >>= 1;
  }
  return r;
}

std::uint64_t shoup_bits(std::uint64_t w, std::uint64_t p, unsigned bits) {
  return static_cast<std::uint64_t>((static_cast<u128>(w) << bits) / p);
}

// The smallest primitive 2n-th root of unity: any ψ with ψ^n = −1 has order exactly 2n
// (n is a power of two), and the primitive ones are the odd powers of one of them.
std::uint64_t smallest_primitive_root(std::uint64_t p, std::size_t n) {
  const std::uint64_t e = (p - 1) / (2 * n);
  std::uint64_t psi = 0;
  for (std::uint64_t g = 2; g < p; ++g) {
    std::uint64_t c = pow_mod(g, e, p);
    if (pow_mod(c, n, p) == p - 1) {
      psi = c;
      break;
    }
  }
  if (psi == 0) throw std::invalid_argument("no primitive 2n-th root of unity mod " + std::to_string(p));
  std::uint64_t best = psi, sq = mul_mod(psi, psi, p), cur = psi;
  for (std::size_t k = 1; k < n; ++k) {
    cur = mul_mod(cur, sq, p);
    if (cur < best) best = cur;
  }
  return best;
}

}  // namespace

NttTable NttTable::make(std::uint64_t p, std::size_t n) {
  if (n < 2 || (n & (n - 1)) != 0) throw std::invalid_argument("NTT length must be a power of two");
  if (!is_prime(p) || p % (2 * n) != 1 || p >= (1ULL << 62))
    throw std::invalid_argument("NTT modulus must be a prime < 2^62 with p = 1 mod 2n");
  NttTable t;
  t.p = p;
  t.n = n;
  t.log_n = static_cast<unsigned>(bit_length(n) - 1);
  t.psi = smallest_primitive_root(p, n);
  for (auto* buf : {&t.fwd, &t.fwd_shoup, &t.fwd_shoup32, &t.fwd_shoup52, &t.inv, &t.inv_shoup, &t.inv_shoup32,
                    &t.inv_shoup52})
    *buf = AlignedBuffer<std::uint64_t>(n);
  const bool narrow = p < (1ULL << 32), ifma = p < (1ULL << 50);
  for (std::size_t k = 0; k < n; ++k) {
    std::uint64_t w = pow_mod(t.psi, bit_reverse(k, t.log_n), p);
    std::uint64_t wi = inv_mod(w, p);
    t.fwd[k] = w;
    t.inv[k] = wi;
    t.fwd_shoup[k] = shoup_precompute(w, p);
    t.inv_shoup[k] = shoup_precompute(wi, p);
    t.fwd_shoup32[k] = narrow ? shoup_bits(w, p, 32) : 0;
    t.inv_shoup32[k] = narrow ? shoup_bits(wi, p, 32) : 0;
    t.fwd_shoup52[k] = ifma ? shoup_bits(w, p, 52) : 0;
    t.inv_shoup52[k] = ifma ? shoup_bits(wi, p, 52) : 0;
  }
  t.n_inv = inv_mod(n % p, p);
  t.last_inv = mul_mod(t.inv[1], t.n_inv, p);
  t.n_inv_shoup = shoup_precompute(t.n_inv, p);
  t.last_inv_shoup = shoup_precompute(t.last_inv, p);
  t.n_inv_shoup32 = narrow ? shoup_bits(t.n_inv, p, 32) : 0;
  t.last_inv_shoup32 = narrow ? shoup_bits(t.last_inv, p, 32) : 0;
  t.n_inv_shoup52 = ifma ? shoup_bits(t.n_inv, p, 52) : 0;
  t.last_inv_shoup52 = ifma ? shoup_bits(t.last_inv, p, 52) : 0;
  if (ifma && n >= 16) {
    for (unsigned s = 0; s < 3; ++s) {
      const std::size_t dist = std::size_t{1} << s, m = n / (2 * dist);
      for (auto* buf : {&t.tail_fwd[s], &t.tail_fwd_shoup52[s], &t.tail_inv[s], &t.tail_inv_shoup52[s]})
        *buf = AlignedBuffer<std::uint64_t>(n / 2);
      for (std::size_t block = 0; block < n; block += 16) {
        std::size_t lane = 0;
        for (std::size_t e = 0; e < 16; ++e) {
          if ((e & dist) != 0) continue;
          const std::size_t k = m + (block + e) / (2 * dist), slot = block / 2 + lane++;
          t.tail_fwd[s][slot] = t.fwd[k];
          t.tail_fwd_shoup52[s][slot] = t.fwd_shoup52[k];
          t.tail_inv[s][slot] = t.inv[k];
          t.tail_inv_shoup52[s][slot] = t.inv_shoup52[k];
        }
      }
    }
  }
  return t;
}

std::uint64_t ntt_slot_exponent(const NttTable& t, std::size_t slot) {
  return 2 * bit_reverse(slot, t.log_n) + 1;
}

}  // namespace spiralpir
