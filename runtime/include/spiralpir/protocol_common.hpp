// spiralpir/protocol_common.hpp — helpers shared by the protocol headers (client, server,
// keys): a deterministic parallel_for, lazy dot products of NTT polynomials, monomial
// multiplication, seeded uniform polynomials, and q-bit polynomial (de)serialisation.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "spiralpir/crt.hpp"
#include "spiralpir/format.hpp"
#include "spiralpir/gadget.hpp"
#include "spiralpir/pointwise.hpp"
#include "spiralpir/params.hpp"
#include "spiralpir/poly.hpp"
#include "spiralpir/random.hpp"
#include "spiralpir/ring.hpp"

namespace spiralpir {

/// Number of threads to use: `requested`, or all hardware threads when 0.
inline unsigned resolve_threads(unsigned requested) {
  if (requested != 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : hw;
}

/// Runs fn(i) for i in [0, count) on `threads` threads (dynamic scheduling). Every task must
/// write only its own outputs, so the result does not depend on the thread count. The first
/// exception thrown by a task is rethrown after all threads joined.
template <class Fn>
void parallel_for(unsigned threads, std::size_t count, Fn&& fn) {
  if (count == 0) return;
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(std::min<std::size_t>(count, 1u << 16))));
  if (threads == 1) {
    for (std::size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr err;
  std::mutex err_mu;
  auto worker = [&] {
    try {
      for (;;) {
        const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
        if (i >= count) break;
        fn(i);
      }
    } catch (...) {
      std::lock_guard<std::mutex> g(err_mu);
      if (!err) err = std::current_exception();
      next.store(count);
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (err) std::rethrow_exception(err);
}

namespace proto {

template <class R>
using Pn = PolyNtt<R>;
template <class R>
using Pc = PolyCoeff<R>;
template <class R>
using MatN = PolyMatrix<PolyNtt<R>>;

/// out = Σ_{k<K} a(k) · b(k) in the NTT domain, reducing every max_lazy_terms<R>() terms.
template <class R, class FA, class FB>
void dot(Pn<R>& out, std::size_t K, FA&& a, FB&& b) {
  constexpr std::size_t lazy = max_lazy_terms<R>();
  static_assert(lazy >= 1, "ring primes too large for lazy accumulation");
  for (std::size_t i = 0; i < R::num_primes; ++i) {
    std::uint64_t* acc = out.residue(i);
    std::fill(acc, acc + R::poly_len, std::uint64_t{0});
    std::size_t pending = 0;
    for (std::size_t k = 0; k < K; ++k) {
      if (pending == lazy) {
        reduce_words(acc, R::poly_len, R::primes[i]);
        pending = 0;
      }
      pointwise_mul_add_lazy(acc, a(k).residue(i), b(k).residue(i), R::poly_len);
      ++pending;
    }
    reduce_words(acc, R::poly_len, R::primes[i]);
  }
}

/// x^{-m} · a (coefficient domain), 0 <= m < d.
template <class R>
Pc<R> mul_monomial_inv(const Pc<R>& a, std::size_t m) {
  constexpr std::size_t d = R::poly_len;
  Pc<R> out;
  for (std::size_t i = 0; i < R::num_primes; ++i) {
    const std::uint64_t p = R::primes[i];
    const std::uint64_t* s = a.residue(i);
    std::uint64_t* o = out.residue(i);
    for (std::size_t j = 0; j + m < d; ++j) o[j] = s[j + m];
    for (std::size_t j = d - m; j < d; ++j) {
      const std::uint64_t v = s[j + m - d];
      o[j] = v == 0 ? 0 : p - v;
    }
  }
  return out;
}

/// A uniformly random polynomial from (seed, stream): each residue uniform mod p_i, used
/// directly as NTT-domain values (uniform in one domain is uniform in the other).
template <class R>
Pn<R> uniform_from_seed(const Seed& seed, std::uint64_t stream) {
  Csprng g(seed, stream);
  Pn<R> out;
  for (std::size_t i = 0; i < R::num_primes; ++i) {
    std::uint64_t* r = out.residue(i);
    for (std::size_t j = 0; j < R::poly_len; ++j) r[j] = g.uniform_mod(R::primes[i]);
  }
  return out;
}

/// c·a for a constant c in [0, q) (both domains).
template <class PolyT>
PolyT scaled(const PolyT& a, u128 c) {
  using R = typename PolyT::ring;
  PolyT out = a;
  for (std::size_t i = 0; i < R::num_primes; ++i) {
    const std::uint64_t p = R::primes[i];
    const std::uint64_t ci = static_cast<std::uint64_t>(c % p);
    std::uint64_t* r = out.residue(i);
    for (std::size_t j = 0; j < R::poly_len; ++j) r[j] = mul_mod(r[j], ci, p);
  }
  return out;
}

/// 2^e mod q
inline u128 pow2_mod(unsigned e, u128 q) {
  u128 x = 1 % q;
  for (unsigned i = 0; i < e; ++i) x = add_mod128(x, x, q);
  return x;
}

template <class R>
Pc<R> poly_from_small(std::span<const std::int64_t> c) {
  return Pc<R>::from_signed(c);
}

/// Appends a coefficient-domain polynomial: each coefficient in [0, q) as q_bits bits.
template <class R>
void put_poly_q(BitWriter& w, const Pc<R>& a, unsigned q_bits) {
  for (std::size_t j = 0; j < R::poly_len; ++j) w.put_u128(coeff(a, j), q_bits);
}
/// Reads one polynomial written by put_poly_q; rejects coefficients >= q.
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

/// The decomposition of a coefficient-domain polynomial, each digit moved to the NTT domain.
template <class R>
std::vector<Pn<R>> decompose_ntt(const Pc<R>& x, unsigned base_bits, unsigned t) {
  std::vector<Pc<R>> dig = gadget_decompose<R>(x, base_bits, t);
  std::vector<Pn<R>> out;
  out.reserve(t);
  for (auto& g : dig) out.push_back(to_ntt(std::move(g)));
  return out;
}

}  // namespace proto
}  // namespace spiralpir
