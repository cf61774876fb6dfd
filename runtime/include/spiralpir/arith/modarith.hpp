// modarith.hpp — scalar modular arithmetic for word-sized moduli (p < 2^62).
//
// API (all constexpr, namespace spiralpir):
//   u128 / i128                 128-bit integer aliases (core/int128.hpp)
//   mul_mod(a,b,p), pow_mod(a,e,p), inv_mod(a,p), add_mod/sub_mod (inputs in [0,p))
//   is_prime(n)                 deterministic Miller–Rabin for n < 2^64
//   shoup_precompute(w,p)       floor(w·2^64/p), the Shoup companion of a constant w < p
//   mul_shoup_lazy(x,w,w',p)    x·w mod p in [0, 2p) for any 64-bit x
//   mul_shoup(x,w,w',p)         same, reduced to [0, p)
//   Barrett64(p).reduce(x)      x mod p for a 64-bit x
//   barrett_reduce128(x, p)     x mod p for a 128-bit x (exact, division-free after setup)
//   Barrett64(p).quotient(x), Barrett128(p).reduce(x), .quotient(x)   ⌊x/p⌋, x mod p, ⌊x/p⌋
//   (mul_shoup and the Barrett reductions are constant time in x: masked, not branching,
//   final subtractions; the setup divides, by the public modulus only)
//   bit_length(x), ceil_log2(x)   bits of x; the smallest k with 2^k >= x (x >= 1)
//   largest_ntt_prime_below(bits, poly_len)  the largest prime < 2^bits that is 1 mod 2·poly_len
//                                            (0 if none): SPIRAL's q2
//   add_mod128(a,b,q), pow2_mod128(e,q), inv_mod128(a,m)   the same for moduli up to 2^128
//                                (inv_mod128: a invertible mod m, m < 2^126; extended Euclid)
#pragma once

#include <cstdint>
#include <initializer_list>

#include "spiralpir/core/ct.hpp"
#include "spiralpir/core/int128.hpp"

namespace spiralpir {

constexpr unsigned bit_length(u128 x) {
  unsigned n = 0;
  while (x != 0) {
    ++n;
    x >>= 1;
  }
  return n;
}

constexpr unsigned ceil_log2(std::uint64_t x) {
  unsigned k = 0;
  while ((std::uint64_t{1} << k) < x) ++k;
  return k;
}

constexpr std::uint64_t mul_mod(std::uint64_t a, std::uint64_t b, std::uint64_t p) {
  return static_cast<std::uint64_t>(static_cast<u128>(a) * b % p);
}

constexpr std::uint64_t add_mod(std::uint64_t a, std::uint64_t b, std::uint64_t p) {
  std::uint64_t s = a + b;
  return s >= p ? s - p : s;
}

constexpr std::uint64_t sub_mod(std::uint64_t a, std::uint64_t b, std::uint64_t p) {
  return a >= b ? a - b : a + p - b;
}

constexpr std::uint64_t pow_mod(std::uint64_t a, std::uint64_t e, std::uint64_t p) {
  std::uint64_t r = 1 % p;
  a %= p;
  while (e != 0) {
    if (e & 1) r = mul_mod(r, a, p);
    a = mul_mod(a, a, p);
    e >>= 1;
  }
  return r;
}

// Inverse by Fermat: only valid for prime p (every modulus of a ring is prime).
constexpr std::uint64_t inv_mod(std::uint64_t a, std::uint64_t p) { return pow_mod(a, p - 2, p); }

constexpr bool is_prime(std::uint64_t n) {
  if (n < 2) return false;
  for (std::uint64_t s : {2ULL, 3ULL, 5ULL, 7ULL, 11ULL, 13ULL, 17ULL, 19ULL, 23ULL, 29ULL, 31ULL, 37ULL}) {
    if (n % s == 0) return n == s;
  }
  std::uint64_t d = n - 1;
  unsigned r = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++r;
  }
  // These 12 bases are a deterministic witness set for every n < 2^64.
  for (std::uint64_t a : {2ULL, 3ULL, 5ULL, 7ULL, 11ULL, 13ULL, 17ULL, 19ULL, 23ULL, 29ULL, 31ULL, 37ULL}) {
    std::uint64_t x = pow_mod(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (unsigned i = 1; i < r && composite; ++i) {
      x = mul_mod(x, x, n);
      if (x == n - 1) composite = false;
    }
    if (composite) return false;
  }
  return true;
}

constexpr std::uint64_t largest_ntt_prime_below(unsigned bits, std::uint64_t poly_len) {
  const std::uint64_t step = 2 * poly_len;
  const std::uint64_t top = std::uint64_t{1} << bits;
  if (top <= step + 1) return 0;
  for (std::uint64_t c = ((top - 2) / step) * step + 1; c > step; c -= step)  // c ≡ 1 mod step
    if (is_prime(c)) return c;
  return 0;
}

// (a + b) mod q for a, b ∈ [0, q), q ≤ 2^128 (the sum may wrap past 2^128).
constexpr u128 add_mod128(u128 a, u128 b, u128 q) {
  u128 s = a + b;
  return (s < a || s >= q) ? s - q : s;
}

// 2^e mod q by doubling (e is small: a gadget exponent).
constexpr u128 pow2_mod128(unsigned e, u128 q) {
  u128 x = 1 % q;
  for (unsigned i = 0; i < e; ++i) x = add_mod128(x, x, q);
  return x;
}

constexpr u128 inv_mod128(u128 a, u128 m) {
  i128 t = 0, newt = 1;
  i128 r = static_cast<i128>(m), newr = static_cast<i128>(a % m);
  while (newr != 0) {
    const i128 qt = r / newr;
    i128 tmp = t - qt * newt;
    t = newt;
    newt = tmp;
    tmp = r - qt * newr;
    r = newr;
    newr = tmp;
  }
  if (t < 0) t += static_cast<i128>(m);
  return static_cast<u128>(t);
}

constexpr std::uint64_t shoup_precompute(std::uint64_t w, std::uint64_t p) {
  return static_cast<std::uint64_t>((static_cast<u128>(w) << 64) / p);
}

// Shoup: q̂ = ⌊x·w'/2^64⌋ underestimates ⌊x·w/p⌋ by at most 1, so x·w − q̂·p ∈ [0, 2p).
constexpr std::uint64_t mul_shoup_lazy(std::uint64_t x, std::uint64_t w, std::uint64_t w_shoup,
                                       std::uint64_t p) {
  std::uint64_t q = static_cast<std::uint64_t>((static_cast<u128>(x) * w_shoup) >> 64);
  return x * w - q * p;
}

constexpr std::uint64_t mul_shoup(std::uint64_t x, std::uint64_t w, std::uint64_t w_shoup,
                                  std::uint64_t p) {
  return ct::reduce_once(mul_shoup_lazy(x, w, w_shoup, p), p);
}

// Barrett reduction of a 64-bit value: q̂ = ⌊x·m/2^64⌋ with m = ⌊2^64/p⌋ is ⌊x/p⌋ or one less,
// so one masked subtraction finishes (constant time). Any x < 2^64, any p in [2, 2^63).
struct Barrett64 {
  std::uint64_t p = 0, m = 0;
  constexpr Barrett64() = default;
  constexpr explicit Barrett64(std::uint64_t modulus) : p(modulus), m(~std::uint64_t{0} / modulus) {}
  constexpr std::uint64_t reduce(std::uint64_t x) const {
    const std::uint64_t q = static_cast<std::uint64_t>((static_cast<u128>(x) * m) >> 64);
    return ct::reduce_once(x - q * p, p);
  }
  /// ⌊x / p⌋, constant time in x
  constexpr std::uint64_t quotient(std::uint64_t x) const {
    const std::uint64_t q = static_cast<std::uint64_t>((static_cast<u128>(x) * m) >> 64);
    return q + (~ct::lt_mask(x - q * p, p) & 1);
  }
};

// Barrett reduction of a 128-bit value by a word modulus, via a 128-bit reciprocal
// m = ⌊2^128 / p⌋ split in two words. Used for lazily accumulated 128-bit sums.
struct Barrett128 {
  std::uint64_t p = 0;
  u128 m = 0;  // ⌊(2^128 − 1)/p⌋

  constexpr Barrett128() = default;
  constexpr explicit Barrett128(std::uint64_t modulus) : p(modulus), m(~static_cast<u128>(0) / modulus) {}

  constexpr std::uint64_t reduce(u128 x) const {
    const u128 r = x - estimate(x) * p;  // < 3p: two masked subtractions (constant time)
    return static_cast<std::uint64_t>(ct::reduce_once128(ct::reduce_once128(r, p), p));
  }
  /// ⌊x / p⌋, constant time in x
  constexpr u128 quotient(u128 x) const {
    u128 q = estimate(x);
    u128 r = x - q * p;
    for (int k = 0; k < 2; ++k) {
      const std::uint64_t ge = ~ct::lt_mask128(r, p);
      r -= p & ge;
      q += ge & 1;
    }
    return q;
  }

 private:
  // q̂ = high 128 bits of x·m; it is ⌊x/p⌋ or one or two less.
  constexpr u128 estimate(u128 x) const {
    std::uint64_t xl = static_cast<std::uint64_t>(x), xh = static_cast<std::uint64_t>(x >> 64);
    std::uint64_t ml = static_cast<std::uint64_t>(m), mh = static_cast<std::uint64_t>(m >> 64);
    u128 ll = static_cast<u128>(xl) * ml;
    u128 lh = static_cast<u128>(xl) * mh;
    u128 hl = static_cast<u128>(xh) * ml;
    u128 hh = static_cast<u128>(xh) * mh;
    u128 mid = (ll >> 64) + static_cast<std::uint64_t>(lh) + static_cast<std::uint64_t>(hl);
    return hh + (lh >> 64) + (hl >> 64) + (mid >> 64);
  }
};

constexpr std::uint64_t barrett_reduce128(u128 x, std::uint64_t p) { return Barrett128(p).reduce(x); }

}  // namespace spiralpir
