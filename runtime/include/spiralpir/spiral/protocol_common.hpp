// spiralpir/spiral/protocol_common.hpp — helpers shared by the protocol headers (client, server,
// keys): a deterministic parallel_for, lazy dot products of NTT polynomials, monomial
// multiplication, seeded uniform polynomials, and q-bit polynomial (de)serialisation.
#pragma once

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include "spiralpir/core/cpu_features.hpp"
#include "spiralpir/arith/crt.hpp"
#include "spiralpir/spiral/format.hpp"
#include "spiralpir/arith/gadget.hpp"
#include "spiralpir/arith/pointwise.hpp"
#include "spiralpir/spiral/params.hpp"
#include "spiralpir/arith/poly.hpp"
#include "spiralpir/arith/random.hpp"
#include "spiralpir/arith/ring.hpp"

namespace spiralpir {

/// Number of threads to use: `requested`, or all hardware threads when 0.
inline unsigned resolve_threads(unsigned requested) {
  if (requested != 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : hw;
}

namespace detail_pool {

inline std::uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

/// Benchmark-only estimate of the wall time on an uncontended machine (thread_scaling bench).
/// When enabled, every task's thread CPU time is recorded, the job's schedule is replayed with
/// `threads` threads that each take the next task index when free (what the pool does when no
/// thread is preempted), and adjust_ns() receives (replayed job time − the caller's CPU time in
/// the job). So (caller thread CPU time + adjust_ns) estimates the uncontended wall time of any
/// stretch of code on the calling thread. Two clock reads per task while enabled.
struct CriticalPath {
  static std::atomic<bool>& enabled() {
    static std::atomic<bool> on{false};
    return on;
  }
  static std::atomic<std::int64_t>& adjust_ns() {
    static std::atomic<std::int64_t> ns{0};
    return ns;
  }
  /// makespan of tasks `ns` (in index order) on `threads` greedy threads
  static std::uint64_t replay(const std::vector<std::uint64_t>& ns, unsigned threads) {
    std::vector<std::uint64_t> free_at(threads, 0);
    for (const std::uint64_t d : ns) {
      auto it = std::min_element(free_at.begin(), free_at.end());
      *it += d;
    }
    return *std::max_element(free_at.begin(), free_at.end());
  }
};

/// A persistent pool of worker threads, parked on a condition variable between jobs (spawning
/// threads on every parallel_for cost tens of microseconds per call and a fresh malloc arena).
/// One job runs at a time (callers from several threads take turns); a job started from inside a
/// running job (nested parallel_for) runs serially on the calling thread. Workers are created on
/// demand and never exceed the largest thread count asked for. After fork() the child, which has
/// none of the parent's workers, builds a fresh pool.
class Pool {
 public:
  using TaskFn = void (*)(void*, std::size_t);

  static Pool& instance() {
    static std::atomic<Pool*> current{nullptr};
    static std::mutex create_mu;
    Pool* p = current.load(std::memory_order_acquire);
    if (p != nullptr && p->pid_ == ::getpid()) return *p;
    std::lock_guard<std::mutex> g(create_mu);
    p = current.load(std::memory_order_acquire);
    if (p == nullptr || p->pid_ != ::getpid()) {
      // the old pool (a forked parent's) is left alone: its threads do not exist in this process
      p = new Pool();  // lives until exit; workers are detached and parked
      current.store(p, std::memory_order_release);
    }
    return *p;
  }

  /// true on a pool worker, and on a caller while it runs tasks of its own job
  static bool& inside() {
    thread_local bool flag = false;
    return flag;
  }

  /// Runs fn(ctx, i) for i in [0, count) on `threads` threads (the caller is one of them). The
  /// first exception thrown by a task is rethrown once every participant has stopped.
  void run(unsigned threads, std::size_t count, TaskFn fn, void* ctx) {
    std::lock_guard<std::mutex> job_guard(job_mu_);
    std::unique_lock<std::mutex> lk(mu_);
    while (workers_ + 1 < threads) {
      std::thread(&Pool::worker_loop, this).detach();
      ++workers_;
    }
    fn_ = fn;
    ctx_ = ctx;
    count_ = count;
    next_.store(0, std::memory_order_relaxed);
    err_ = nullptr;
    slots_ = threads - 1;
    profile_ = CriticalPath::enabled().load(std::memory_order_relaxed);
    if (profile_) task_ns_.assign(count, 0);
    ++generation_;
    lk.unlock();
    wake_.notify_all();
    inside() = true;
    const std::uint64_t c0 = profile_ ? thread_cpu_ns() : 0;
    work();
    const std::uint64_t caller_ns = profile_ ? thread_cpu_ns() - c0 : 0;
    inside() = false;
    lk.lock();
    slots_ = 0;  // late wakers find nothing to join
    done_.wait(lk, [&] { return active_ == 0; });
    if (profile_)
      CriticalPath::adjust_ns() += static_cast<std::int64_t>(CriticalPath::replay(task_ns_, threads)) -
                                   static_cast<std::int64_t>(caller_ns);
    fn_ = nullptr;
    std::exception_ptr err = std::exchange(err_, nullptr);
    lk.unlock();
    if (err) std::rethrow_exception(err);
  }

 private:
  Pool() : pid_(::getpid()) {}

  void work() {
    try {
      for (;;) {
        const std::size_t i = next_.fetch_add(1, std::memory_order_relaxed);
        if (i >= count_) break;
        if (profile_) {
          const std::uint64_t t0 = thread_cpu_ns();
          fn_(ctx_, i);
          task_ns_[i] = thread_cpu_ns() - t0;
        } else {
          fn_(ctx_, i);
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> g(mu_);
      if (!err_) err_ = std::current_exception();
      next_.store(count_, std::memory_order_relaxed);
    }
  }

  void worker_loop() {
    inside() = true;
    std::unique_lock<std::mutex> lk(mu_);
    std::uint64_t seen = generation_;
    for (;;) {
      wake_.wait(lk, [&] { return generation_ != seen; });
      seen = generation_;
      if (slots_ == 0) continue;  // the job needs no more threads (or is already over)
      --slots_;
      ++active_;
      lk.unlock();
      work();
      lk.lock();
      if (--active_ == 0) done_.notify_one();
    }
  }

  const pid_t pid_;
  std::mutex job_mu_;  // one job at a time
  std::mutex mu_;      // guards everything below except next_
  std::condition_variable wake_, done_;
  unsigned workers_ = 0, slots_ = 0, active_ = 0;
  std::uint64_t generation_ = 0;
  TaskFn fn_ = nullptr;
  void* ctx_ = nullptr;
  std::size_t count_ = 0;
  std::atomic<std::size_t> next_{0};
  std::exception_ptr err_;
  bool profile_ = false;
  std::vector<std::uint64_t> task_ns_;  // profiling: CPU time of each task
};

}  // namespace detail_pool

/// Runs fn(i) for i in [0, count) on `threads` threads (dynamic scheduling, persistent pool).
/// Every task must write only its own outputs, so the result does not depend on the thread count.
/// The first exception thrown by a task is rethrown after every thread stopped. Nested calls (from
/// inside a task) run serially.
template <class Fn>
void parallel_for(unsigned threads, std::size_t count, Fn&& fn) {
  if (count == 0) return;
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(std::min<std::size_t>(count, 1u << 16))));
  if (threads == 1 || detail_pool::Pool::inside()) {
    for (std::size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  using F = std::remove_reference_t<Fn>;
  detail_pool::Pool::instance().run(
      threads, count, [](void* ctx, std::size_t i) { (*static_cast<F*>(ctx))(i); },
      const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
}

namespace proto {

inline bool detail_decomp_avx512() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool ok = path_available(Path::avx512);
  return ok;
#else
  return false;
#endif
}

template <class R>
using Pn = PolyNtt<R>;
template <class R>
using Pc = PolyCoeff<R>;
template <class R>
using MatN = PolyMatrix<PolyNtt<R>>;

namespace detail_dot {
// acc_m[z] += Σ_{k in [k0,k1)} dig_k[z] · key_{m,k}[z] for m < M, all inputs < 2^32 (residues),
// accumulators unreduced (the caller bounds k1 − k0 by the lazy bound).
template <std::size_t M>
[[gnu::always_inline]] inline void mac_body(std::uint64_t* const* acc, const std::uint64_t* const* dig,
                                            const std::uint64_t* const* key, std::size_t K, std::size_t n) {
  constexpr std::size_t B = 32;  // lanes per block (4 zmm)
  for (std::size_t z0 = 0; z0 < n; z0 += B) {
    std::uint64_t a[M][B];
    for (std::size_t m = 0; m < M; ++m)
      for (std::size_t l = 0; l < B; ++l) a[m][l] = acc[m][z0 + l];
    for (std::size_t k = 0; k < K; ++k) {
      const std::uint64_t* dk = dig[k] + z0;
      for (std::size_t m = 0; m < M; ++m) {
        const std::uint64_t* kk = key[m * K + k] + z0;
        for (std::size_t l = 0; l < B; ++l)
          a[m][l] += static_cast<std::uint64_t>(static_cast<std::uint32_t>(dk[l])) * static_cast<std::uint32_t>(kk[l]);
      }
    }
    for (std::size_t m = 0; m < M; ++m)
      for (std::size_t l = 0; l < B; ++l) acc[m][z0 + l] = a[m][l];
  }
}
template <std::size_t M>
void mac_native(std::uint64_t* const* acc, const std::uint64_t* const* dig, const std::uint64_t* const* key,
                std::size_t K, std::size_t n) {
  mac_body<M>(acc, dig, key, K, n);
}
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// explicit vpmuludq (the compiler would otherwise emit the slow 64-bit vpmullq); the masked-zero
// form sidesteps GCC 12's -Wmaybe-uninitialized false positive in its intrinsic headers
template <std::size_t M>
__attribute__((target("avx512f"))) void mac_avx512(std::uint64_t* const* acc, const std::uint64_t* const* dig,
                                                   const std::uint64_t* const* key, std::size_t K, std::size_t n) {
  constexpr std::size_t U = 4;  // zmm per block: 32 lanes
  for (std::size_t z0 = 0; z0 < n; z0 += 8 * U) {
    __m512i a[M][U];
    for (std::size_t m = 0; m < M; ++m)
      for (std::size_t u = 0; u < U; ++u) a[m][u] = _mm512_loadu_si512(acc[m] + z0 + 8 * u);
    for (std::size_t k = 0; k < K; ++k) {
      const std::uint64_t* dk = dig[k] + z0;
      __m512i dv[U];
      for (std::size_t u = 0; u < U; ++u) dv[u] = _mm512_loadu_si512(dk + 8 * u);
      for (std::size_t m = 0; m < M; ++m) {
        const std::uint64_t* kk = key[m * K + k] + z0;
        for (std::size_t u = 0; u < U; ++u)
          a[m][u] = _mm512_add_epi64(a[m][u], _mm512_maskz_mul_epu32(0xFF, dv[u], _mm512_loadu_si512(kk + 8 * u)));
      }
    }
    for (std::size_t m = 0; m < M; ++m)
      for (std::size_t u = 0; u < U; ++u) _mm512_storeu_si512(acc[m] + z0 + 8 * u, a[m][u]);
  }
}
#endif
}  // namespace detail_dot

/// One residue (prime i) of a fused dot product: acc[m][z] = Σ_{k<K} dig[k][z] · key[m·K + k][z]
/// mod p_i for m < M, all inputs < p_i; reduced every max_lazy_terms<R>() terms and at the end,
/// so every output word lies in [0, p_i) whatever the summation order was.
template <class R, std::size_t M>
void dot_residue(std::size_t i, std::uint64_t* const* acc, std::size_t K, const std::uint64_t* const* dig,
                 const std::uint64_t* const* key) {
  constexpr std::size_t lazy = max_lazy_terms<R>();
  static_assert(lazy >= 1, "ring primes too large for lazy accumulation");
  static_assert(R::poly_len % 32 == 0);
  static_assert(R::primes[0] < (1ULL << 32) && R::primes[R::num_primes - 1] < (1ULL << 32),
                "the fused dot kernel multiplies 32-bit residues");
  for (std::size_t m = 0; m < M; ++m) std::fill(acc[m], acc[m] + R::poly_len, std::uint64_t{0});
  std::vector<const std::uint64_t*> kc;
  for (std::size_t k0 = 0; k0 < K; k0 += lazy) {
    const std::size_t kn = std::min(lazy, K - k0);
    const std::uint64_t* const* kb = key;
    if (kn != K) {  // regroup the keys of this chunk as [m·kn + k]
      kc.resize(M * kn);
      for (std::size_t m = 0; m < M; ++m)
        for (std::size_t k = 0; k < kn; ++k) kc[m * kn + k] = key[m * K + k0 + k];
      kb = kc.data();
    }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (detail_decomp_avx512())
      detail_dot::mac_avx512<M>(acc, dig + k0, kb, kn, R::poly_len);
    else
#endif
      detail_dot::mac_native<M>(acc, dig + k0, kb, kn, R::poly_len);
    for (std::size_t m = 0; m < M; ++m) reduce_words(acc[m], R::poly_len, R::primes[i]);
  }
}

/// outs[m] = Σ_{k<K} dig(k) · key(m, k) for m < M (NTT domain): the M products share one pass
/// over the digits; reduced every max_lazy_terms<R>() terms and at the end.
template <class R, std::size_t M, class FD, class FK>
void dot_multi(const std::array<Pn<R>*, M>& outs, std::size_t K, FD&& dig, FK&& key) {
  std::vector<const std::uint64_t*> dp(K), kp(M * K);
  for (std::size_t i = 0; i < R::num_primes; ++i) {
    std::uint64_t* acc[M];
    for (std::size_t m = 0; m < M; ++m) acc[m] = outs[m]->residue(i);
    for (std::size_t k = 0; k < K; ++k) {
      dp[k] = dig(k).residue(i);
      for (std::size_t m = 0; m < M; ++m) kp[m * K + k] = key(m, k).residue(i);
    }
    dot_residue<R, M>(i, acc, K, dp.data(), kp.data());
  }
}

/// out = Σ_{k<K} a(k) · b(k) in the NTT domain, reducing every max_lazy_terms<R>() terms.
template <class R, class FA, class FB>
void dot(Pn<R>& out, std::size_t K, FA&& a, FB&& b) {
  dot_multi<R, 1>({&out}, K, a, [&](std::size_t, std::size_t k) -> decltype(auto) { return b(k); });
}

/// One residue of x^{-m} · a (coefficient domain, 0 <= m < d, values < p): o = s shifted.
inline void mul_monomial_inv_residue(const std::uint64_t* s, std::uint64_t* o, std::size_t m, std::size_t d,
                                     std::uint64_t p) {
  for (std::size_t j = 0; j + m < d; ++j) o[j] = s[j + m];
  for (std::size_t j = d - m; j < d; ++j) {
    const std::uint64_t v = s[j + m - d];
    o[j] = v == 0 ? 0 : p - v;
  }
}

/// x^{-m} · a (coefficient domain), 0 <= m < d.
template <class R>
Pc<R> mul_monomial_inv(const Pc<R>& a, std::size_t m) {
  Pc<R> out;
  for (std::size_t i = 0; i < R::num_primes; ++i)
    mul_monomial_inv_residue(a.residue(i), out.residue(i), m, R::poly_len, R::primes[i]);
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

/// Garner CRT reconstruction constants of a ring: inv[i][j] = p_j^{-1} mod p_i (j < i).
template <class R>
struct Garner {
  static constexpr std::size_t np = R::num_primes;
  struct Tab {
    std::uint64_t inv[np][np]{};
    std::uint64_t inv_shoup[np][np]{};
  };
  static constexpr Tab make() {
    Tab t{};
    for (std::size_t i = 0; i < np; ++i)
      for (std::size_t j = 0; j < i; ++j) {
        t.inv[i][j] = inv_mod(R::primes[j] % R::primes[i], R::primes[i]);
        t.inv_shoup[i][j] = shoup_precompute(t.inv[i][j], R::primes[i]);
      }
    return t;
  }
  static constexpr Tab tab = make();
  /// x in [0, q) from its residues (no 128-bit division)
  static u128 compose(const std::uint64_t* r) {
    std::uint64_t v[np];
    for (std::size_t i = 0; i < np; ++i) {
      const std::uint64_t p = R::primes[i];
      std::uint64_t t = r[i];
      for (std::size_t j = 0; j < i; ++j) {
        const std::uint64_t vj = v[j] >= p ? v[j] % p : v[j];
        t = t >= vj ? t - vj : t + p - vj;
        t = mul_shoup(t, tab.inv[i][j], tab.inv_shoup[i][j], p);
      }
      v[i] = t;
    }
    u128 x = v[np - 1];
    for (std::size_t i = np - 1; i-- > 0;) x = x * R::primes[i] + v[i];
    return x;
  }
};

namespace detail_decomp {

/// Fast path for rings with one or two primes below 2^32 and q < 2^62: everything fits int64 and
/// vectorizes (32x32-bit products only).
template <class R>
inline constexpr bool fast_ok = (R::num_primes == 1 || R::num_primes == 2) && R::primes[0] < (1ULL << 32) &&
                                R::primes[R::num_primes - 1] < (1ULL << 32) && modulus<R>() < (u128{1} << 62) &&
                                R::primes[0] < 3 * R::primes[R::num_primes - 1];

/// centered values v[z] ∈ (−q/2, q/2] of a coefficient-domain polynomial (CRT by Garner with a
/// 32-bit Shoup multiplication)
template <class R>
[[gnu::always_inline]] inline void centered_body(const std::uint64_t* r0, const std::uint64_t* r1, std::int64_t* v) {
  constexpr std::size_t d = R::poly_len;
  constexpr std::uint64_t q = static_cast<std::uint64_t>(modulus<R>());
  if constexpr (R::num_primes == 1) {
    for (std::size_t z = 0; z < d; ++z) {
      const std::uint64_t x = r0[z];
      v[z] = static_cast<std::int64_t>(x) - (x > q / 2 ? static_cast<std::int64_t>(q) : 0);
    }
  } else {
    constexpr std::uint64_t p0 = R::primes[0], p1 = R::primes[1];
    constexpr std::uint64_t w = inv_mod(p0 % p1, p1);
    constexpr std::uint64_t ws = static_cast<std::uint64_t>((static_cast<u128>(w) << 32) / p1);  // < 2^32
    for (std::size_t z = 0; z < d; ++z) {
      const std::uint64_t a = r0[z], b = r1[z];
      const std::uint64_t am = a >= p1 ? a - p1 : a;  // p0 may exceed p1
      const std::uint64_t am2 = am >= p1 ? am - p1 : am;
      std::uint64_t t = b >= am2 ? b - am2 : b + p1 - am2;  // (r1 − r0) mod p1, < 2^32
      const std::uint64_t qh = (t * ws) >> 32;
      std::uint64_t k = t * w - qh * p1;  // in [0, 2p1)
      k = k >= p1 ? k - p1 : k;
      const std::uint64_t x = a + p0 * k;  // < q
      v[z] = static_cast<std::int64_t>(x) - (x > q / 2 ? static_cast<std::int64_t>(q) : 0);
    }
  }
}

/// digit k of every coefficient (v updated in place), stored mod the primes Mask selects (bit 0:
/// the first prime, into o0; bit 1: the second one, into o1)
template <class R, unsigned Mask>
[[gnu::always_inline]] inline void digit_body(std::int64_t* v, unsigned bits, bool last, std::uint64_t* o0,
                                              std::uint64_t* o1) {
  constexpr std::size_t d = R::poly_len;
  constexpr std::int64_t p0 = static_cast<std::int64_t>(R::primes[0]);
  constexpr std::int64_t p1 = static_cast<std::int64_t>(R::primes[R::num_primes - 1]);
  constexpr bool w0 = (Mask & 1) != 0, w1 = (Mask & 2) != 0 && R::num_primes == 2;
  const std::int64_t base = std::int64_t{1} << bits, half = base >> 1, mask = base - 1;
  if (last) {
    for (std::size_t z = 0; z < d; ++z) {
      const std::int64_t dg = v[z];
      if constexpr (w0) o0[z] = static_cast<std::uint64_t>(dg + (dg < 0 ? p0 : 0));
      if constexpr (w1) o1[z] = static_cast<std::uint64_t>(dg + (dg < 0 ? p1 : 0));
    }
    return;
  }
  for (std::size_t z = 0; z < d; ++z) {
    std::int64_t dg = v[z] & mask;
    dg -= dg >= half ? base : 0;
    v[z] = (v[z] - dg) >> bits;
    if constexpr (w0) o0[z] = static_cast<std::uint64_t>(dg + (dg < 0 ? p0 : 0));
    if constexpr (w1) o1[z] = static_cast<std::uint64_t>(dg + (dg < 0 ? p1 : 0));
  }
}

template <class R, unsigned Mask>
void decompose_fast_native(const std::uint64_t* r0, const std::uint64_t* r1, std::int64_t* v, unsigned bits,
                           unsigned t, std::uint64_t* const* outs) {
  centered_body<R>(r0, r1, v);
  for (unsigned k = 0; k < t; ++k) digit_body<R, Mask>(v, bits, k + 1 == t, outs[2 * k], outs[2 * k + 1]);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
template <class R, unsigned Mask>
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"))) void decompose_fast_avx512(
    const std::uint64_t* r0, const std::uint64_t* r1, std::int64_t* v, unsigned bits, unsigned t,
    std::uint64_t* const* outs) {
  centered_body<R>(r0, r1, v);
  for (unsigned k = 0; k < t; ++k) digit_body<R, Mask>(v, bits, k + 1 == t, outs[2 * k], outs[2 * k + 1]);
}
#endif

inline bool use_avx512() { return detail_decomp_avx512(); }

template <class R, unsigned Mask>
void decompose_fast(const std::uint64_t* r0, const std::uint64_t* r1, unsigned bits, unsigned t,
                    std::uint64_t* const* outs) {
  thread_local AlignedBuffer<std::int64_t> v(R::poly_len);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (use_avx512()) {
    decompose_fast_avx512<R, Mask>(r0, r1, v.data(), bits, t, outs);
    return;
  }
#endif
  decompose_fast_native<R, Mask>(r0, r1, v.data(), bits, t, outs);
}

}  // namespace detail_decomp

/// Balanced base-2^bits decomposition of every coefficient (centered in (−q/2, q/2]) into t
/// digits (the top digit takes the rest), in the coefficient domain, residues [i0, i1) only:
/// digit k mod p_i is written to out(k, i), a pointer to poly_len words. Σ_k digit_k·2^(bits·k)
/// ≡ x (mod q). Server-side only (public data; not constant time).
template <class R, class Out>
void decompose_coeff(const Pc<R>& x, unsigned bits, unsigned t, std::size_t i0, std::size_t i1, Out&& out) {
  constexpr std::size_t d = R::poly_len, np = R::num_primes;
  const u128 q = modulus<R>();
  if (t == 0 || bits == 0 || (t > 1 && bits > 62) || std::uint64_t{bits} * t < bit_length(q))
    throw std::invalid_argument("decompose_ntt: need t >= 1, 1 <= base bits <= 62 and bits·t >= log2 q");
  if (i0 >= i1 || i1 > np) throw std::invalid_argument("decompose_coeff: bad residue range");
  if (t == 1) {  // the "decomposition" is x itself
    for (std::size_t i = i0; i < i1; ++i) std::copy(x.residue(i), x.residue(i) + d, out(0u, i));
    return;
  }
  if constexpr (detail_decomp::fast_ok<R>) {
    std::vector<std::uint64_t*> outs(2 * t, nullptr);
    for (unsigned k = 0; k < t; ++k) {
      if (i0 == 0) outs[2 * k] = out(k, std::size_t{0});
      if (i1 == np) outs[2 * k + 1] = out(k, np - 1);
    }
    const std::uint64_t* r0 = x.residue(0);
    const std::uint64_t* r1 = x.residue(np - 1);
    if (i0 == 0 && i1 == np)
      detail_decomp::decompose_fast<R, 3>(r0, r1, bits, t, outs.data());
    else if (i0 == 0)
      detail_decomp::decompose_fast<R, 1>(r0, r1, bits, t, outs.data());
    else
      detail_decomp::decompose_fast<R, 2>(r0, r1, bits, t, outs.data());
  } else {
    const u128 half_q = q / 2;
    const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
    const std::int64_t base = std::int64_t{1} << bits, half = base >> 1;
    std::uint64_t r[np];
    for (std::size_t z = 0; z < d; ++z) {
      for (std::size_t i = 0; i < np; ++i) r[i] = x(i, z);
      const u128 xv = Garner<R>::compose(r);
      i128 v = xv > half_q ? static_cast<i128>(xv) - static_cast<i128>(q) : static_cast<i128>(xv);
      for (unsigned k = 0; k < t; ++k) {
        std::int64_t dg;
        if (k + 1 < t) {
          dg = static_cast<std::int64_t>(static_cast<std::uint64_t>(v) & mask);
          dg -= (dg >= half) ? base : 0;
          v = (v - dg) >> bits;
        } else {
          dg = static_cast<std::int64_t>(v);
        }
        for (std::size_t i = i0; i < i1; ++i) {
          const std::int64_t p = static_cast<std::int64_t>(R::primes[i]);
          std::int64_t m = dg;
          if (m >= p || m <= -p) m %= p;  // only for very wide digits (base > p_i)
          out(k, i)[z] = static_cast<std::uint64_t>(m + (m < 0 ? p : 0));
        }
      }
    }
  }
}

/// decompose_coeff over every residue, each digit moved to the NTT domain: digit k goes to
/// out0[k·stride] (existing polynomials are overwritten; no allocation).
template <class R>
void decompose_ntt_into(const Pc<R>& x, unsigned bits, unsigned t, Pn<R>* out0, std::size_t stride) {
  constexpr std::size_t np = R::num_primes;
  decompose_coeff<R>(x, bits, t, 0, np,
                     [&](unsigned k, std::size_t i) { return out0[std::size_t{k} * stride].residue(i); });
  const auto& tb = tables<R>();
  for (unsigned k = 0; k < t; ++k)
    for (std::size_t i = 0; i < np; ++i) ntt_forward(out0[std::size_t{k} * stride].residue(i), tb.ntt[i]);
}

/// One residue of decompose_ntt_into: digit k mod p_prime, NTT domain, written to outs[k]
/// (poly_len words each).
template <class R>
void decompose_residue_ntt(const Pc<R>& x, unsigned bits, unsigned t, std::size_t prime, std::uint64_t* const* outs) {
  decompose_coeff<R>(x, bits, t, prime, prime + 1, [&](unsigned k, std::size_t) { return outs[k]; });
  const auto& tb = tables<R>();
  for (unsigned k = 0; k < t; ++k) ntt_forward(outs[k], tb.ntt[prime]);
}

template <class R>
std::vector<Pn<R>> decompose_ntt(const Pc<R>& x, unsigned bits, unsigned t) {
  std::vector<Pn<R>> out(t);
  decompose_ntt_into<R>(x, bits, t, out.data(), 1);
  return out;
}

/// Per-thread scratch polynomials (reused across calls; contents unspecified).
template <class R>
std::vector<Pn<R>>& scratch(std::size_t slot, std::size_t count) {
  thread_local std::vector<std::vector<Pn<R>>> bufs;
  if (bufs.size() <= slot) bufs.resize(slot + 1);
  if (bufs[slot].size() < count) bufs[slot].resize(count);
  return bufs[slot];
}

/// Per-thread scratch words, 64-byte aligned (reused across calls; contents unspecified).
inline std::uint64_t* scratch_words(std::size_t slot, std::size_t count) {
  thread_local std::vector<AlignedBuffer<std::uint64_t>> bufs;
  if (bufs.size() <= slot) bufs.resize(slot + 1);
  if (bufs[slot].size() < count) bufs[slot] = AlignedBuffer<std::uint64_t>(count);
  return bufs[slot].data();
}

/// One residue of τ_k: dst(x) = src(x^k) mod (x^d + 1, p), k odd, values < p.
inline void automorph_residue(const std::uint64_t* src, std::uint64_t* dst, std::uint64_t k, std::size_t d,
                              std::uint64_t p) {
  const std::size_t mask = 2 * d - 1;
  std::size_t e = 0;
  for (std::size_t j = 0; j < d; ++j, e = (e + k) & mask) {
    const std::uint64_t v = src[j];
    if (e < d) dst[e] = v; else dst[e - d] = v == 0 ? 0 : p - v;
  }
}

/// τ_k(a) = a(x^k) in the coefficient domain, k odd.
template <class R>
Pc<R> automorph_coeff(const Pc<R>& a, std::uint64_t k) {
  Pc<R> out;
  for (std::size_t i = 0; i < R::num_primes; ++i)
    automorph_residue(a.residue(i), out.residue(i), k, R::poly_len, R::primes[i]);
  return out;
}

}  // namespace proto
}  // namespace spiralpir
