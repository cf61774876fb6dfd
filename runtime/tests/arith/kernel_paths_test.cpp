// Every kernel path called directly — the native, AVX2 and AVX-512 functions behind the
// dispatchers, not through them, so SPIRALPIR_DISABLE_* and the dispatchers' own fallbacks hide
// nothing — against plain 128-bit references written here (no library arithmetic), on random
// inputs and on the extremes each kernel accepts: 0, p − 1, the lazy input bounds (NTT forward
// [0, 4p), inverse [0, 2p)), residues up to 2^32 − 1 in the lazy accumulators.
// A path is skipped only when the CPU lacks it (CI's machine has all of them); a path this build
// did not compile has no test at all.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dot_kernels.hpp"
#include "gadget_kernels.hpp"
#include "ntt_kernels.hpp"
#include "pointwise_kernels.hpp"
#include "spiralpir/arith/dot.hpp"
#include "spiralpir/arith/gadget.hpp"
#include "spiralpir/arith/ntt.hpp"
#include "test_rings.hpp"

namespace spiralpir {
namespace {

using u64 = std::uint64_t;
using Vec = std::vector<u64>;

#define SPIRALPIR_REQUIRE_CPU(has, what)                  \
  do {                                                    \
    if (!(has)) GTEST_SKIP() << "this CPU lacks " << (what); \
  } while (0)

// ---- 128-bit references ----------------------------------------------------------------------

u64 ref_pow(u64 a, u64 e, u64 p) {
  u128 r = 1, b = a % p;
  for (; e; e >>= 1, b = b * b % p)
    if (e & 1) r = r * b % p;
  return static_cast<u64>(r);
}

unsigned ref_bitrev(std::size_t j, std::size_t n) {
  unsigned r = 0;
  for (std::size_t b = 1; b < n; b <<= 1) r = (r << 1) | ((j & b) ? 1u : 0u);
  return r;
}

/// A(ψ^(2·bitrev(j)+1)) for every slot j: the transform's definition (ntt.hpp), by Horner.
Vec ref_forward(const Vec& a, u64 p, u64 psi) {
  const std::size_t n = a.size();
  Vec out(n);
  for (std::size_t j = 0; j < n; ++j) {
    const u64 x = ref_pow(psi, 2 * ref_bitrev(j, n) + 1, p);
    u128 acc = 0;
    for (std::size_t k = n; k-- > 0;) acc = (acc * x + a[k] % p) % p;
    out[j] = static_cast<u64>(acc);
  }
  return out;
}

/// The coefficients whose forward transform is `e`: n^{-1} Σ_j e_j · ψ^(−(2·bitrev(j)+1)·k).
Vec ref_inverse(const Vec& e, u64 p, u64 psi) {
  const std::size_t n = e.size();
  const u64 psi_inv = ref_pow(psi, p - 2, p), n_inv = ref_pow(n % p, p - 2, p);
  Vec out(n, 0);
  for (std::size_t j = 0; j < n; ++j) {
    const u64 x = ref_pow(psi_inv, 2 * ref_bitrev(j, n) + 1, p);
    u128 w = 1;
    for (std::size_t k = 0; k < n; ++k, w = w * x % p)
      out[k] = static_cast<u64>((out[k] + static_cast<u128>(e[j] % p) * w) % p);
  }
  for (auto& v : out) v = static_cast<u64>(static_cast<u128>(v) * n_inv % p);
  return out;
}

// ---- paths -----------------------------------------------------------------------------------

// [[maybe_unused]]: a build without a vector family has no test calling its check
[[maybe_unused]] bool cpu_avx2() { return cpu_features().avx2; }
[[maybe_unused]] bool cpu_avx512() {
  const CpuFeatures& f = cpu_features();
  return f.avx512f && f.avx512dq && f.avx512bw && f.avx512vl;
}
[[maybe_unused]] bool cpu_ifma() { return cpu_avx512() && cpu_features().avx512ifma; }

/// random words below `bound`, then the extremes: 0, 1, bound − 1, p − 1, p (when < bound)
Vec inputs(std::size_t n, u64 bound, u64 p) {
  Vec v = test::random_below(n, bound);
  const u64 ext[] = {0, 1, bound - 1, p - 1, p < bound ? p : 0, bound - 1};
  for (std::size_t i = 0; i < std::size(ext) && i < n; ++i) v[(i * 7) % n] = ext[i];
  return v;
}
Vec filled(std::size_t n, u64 x) { return Vec(n, x); }

// ---- NTT -------------------------------------------------------------------------------------

using NttKernel = void (*)(u64*, const NttTable&, const detail::NttView&, bool);

void check_ntt(const std::string& what, NttKernel fwd, NttKernel inv, u64 p, std::size_t n) {
  SCOPED_TRACE(what + " p=" + std::to_string(p) + " n=" + std::to_string(n));
  const NttTable t = NttTable::make(p, n);
  detail::NttView v = detail::ntt_view(t);
  const bool ifma_view = what.find("ifma") != std::string::npos;
  v.ifma = ifma_view;
  for (int round = 0; round < 4; ++round) {
    // forward: inputs anywhere in [0, 4p), including all-(4p − 1) and all-0
    const Vec a = round == 0 ? filled(n, 4 * p - 1) : round == 1 ? filled(n, 0) : inputs(n, 4 * p, p);
    const Vec want = ref_forward(a, p, t.psi);
    for (bool reduce : {true, false}) {
      Vec got = a;
      fwd(got.data(), t, v, reduce);
      for (std::size_t j = 0; j < n; ++j) {
        ASSERT_LT(got[j], reduce ? p : 4 * p) << "forward slot " << j << (reduce ? "" : " (lazy)");
        ASSERT_EQ(got[j] % p, want[j]) << "forward slot " << j << (reduce ? "" : " (lazy)");
      }
    }
    // inverse: inputs anywhere in [0, 2p)
    const Vec e = round == 0 ? filled(n, 2 * p - 1) : round == 1 ? filled(n, 0) : inputs(n, 2 * p, p);
    const Vec iwant = ref_inverse(e, p, t.psi);
    for (bool reduce : {true, false}) {
      Vec got = e;
      inv(got.data(), t, v, reduce);
      for (std::size_t k = 0; k < n; ++k) {
        ASSERT_LT(got[k], reduce ? p : 2 * p) << "inverse coefficient " << k << (reduce ? "" : " (lazy)");
        ASSERT_EQ(got[k] % p, iwant[k]) << "inverse coefficient " << k << (reduce ? "" : " (lazy)");
      }
    }
  }
}

// primes below 2^28 and 2^30 (every vector kernel), below 2^50 (IFMA) and 2^62 (native only)
u64 prime(unsigned bits, std::size_t n) { return largest_ntt_prime_below(bits, n); }
constexpr std::size_t kNttLens[] = {16, 64, 1024};

TEST(KernelPaths, NttNative) {
  const NttKernel f = [](u64* a, const NttTable& t, const detail::NttView&, bool r) { detail::ntt_forward_native(a, t, r); };
  const NttKernel i = [](u64* a, const NttTable& t, const detail::NttView&, bool r) { detail::ntt_inverse_native(a, t, r); };
  for (std::size_t n : kNttLens)
    for (unsigned bits : {28u, 30u, 50u, 62u}) check_ntt("native", f, i, prime(bits, n), n);
  check_ntt("native", f, i, 268369921ULL, 2048);  // SPIRAL's first prime
}

#ifdef SPIRALPIR_HAVE_AVX2
TEST(KernelPaths, NttAvx2) {
  SPIRALPIR_REQUIRE_CPU(cpu_avx2(), "AVX2");
  const NttKernel f = [](u64* a, const NttTable&, const detail::NttView& v, bool r) { detail::ntt_forward_avx2(a, v, r); };
  const NttKernel i = [](u64* a, const NttTable&, const detail::NttView& v, bool r) { detail::ntt_inverse_avx2(a, v, r); };
  for (std::size_t n : kNttLens)
    for (unsigned bits : {28u, 30u}) check_ntt("avx2", f, i, prime(bits, n), n);
  check_ntt("avx2", f, i, 268369921ULL, 2048);
}
#endif

#ifdef SPIRALPIR_HAVE_AVX512
TEST(KernelPaths, NttAvx512) {
  SPIRALPIR_REQUIRE_CPU(cpu_avx512(), "AVX-512 F/DQ/BW/VL");
  const NttKernel f = [](u64* a, const NttTable&, const detail::NttView& v, bool r) { detail::ntt_forward_avx512(a, v, r); };
  const NttKernel i = [](u64* a, const NttTable&, const detail::NttView& v, bool r) { detail::ntt_inverse_avx512(a, v, r); };
  for (std::size_t n : kNttLens)
    for (unsigned bits : {28u, 30u}) check_ntt("avx512", f, i, prime(bits, n), n);
  check_ntt("avx512", f, i, 268369921ULL, 2048);
}
TEST(KernelPaths, NttAvx512Ifma) {
  SPIRALPIR_REQUIRE_CPU(cpu_ifma(), "AVX-512 IFMA");
  const NttKernel f = [](u64* a, const NttTable&, const detail::NttView& v, bool r) { detail::ntt_forward_avx512(a, v, r); };
  const NttKernel i = [](u64* a, const NttTable&, const detail::NttView& v, bool r) { detail::ntt_inverse_avx512(a, v, r); };
  for (std::size_t n : kNttLens)
    for (unsigned bits : {28u, 30u, 40u, 50u}) check_ntt("avx512-ifma", f, i, prime(bits, n), n);
}
#endif

// ---- pointwise -------------------------------------------------------------------------------

using MulKernel = void (*)(u64*, const u64*, const u64*, std::size_t, u64, bool);
using LazyKernel = void (*)(u64*, const u64*, const u64*, std::size_t);

// 67 words: a whole number of vectors and a scalar tail
constexpr std::size_t kWords = 67;

/// Products a·b whose Barrett quotient estimate (pointwise_kernels.hpp: with L = bit_length(p),
/// ((x >> (L−1))·⌊2^(2L)/p⌋) >> (L+1)) falls 2 short of ⌊x/p⌋, the case that needs a kernel's
/// second final subtraction (rare: none among random inputs for SPIRAL's primes, many for
/// p = 7681); the first `count` found, scanning down from p − 1 (at most 2^22 products).
void barrett_worst(u64 p, std::size_t count, Vec& a, Vec& b) {
  const unsigned L = bit_length(p);
  const u128 mu = (u128{1} << (2 * L)) / p;
  a.clear();
  b.clear();
  if (p >= (1ULL << 30)) return;  // the vector kernels' Barrett takes p < 2^30
  std::size_t budget = std::size_t{1} << 22;
  for (u64 x = p - 1; x > 0 && a.size() < count && budget > 0; --x)
    for (u64 y = p - 1; y > 0 && a.size() < count && budget > 0; --y, --budget) {
      const u128 prod = static_cast<u128>(x) * y;
      if (prod / p - (((prod >> (L - 1)) * mu) >> (L + 1)) == 2) {
        a.push_back(x);
        b.push_back(y);
      }
    }
}

void check_mul(const char* what, MulKernel k, u64 p) {
  SCOPED_TRACE(std::string(what) + " p=" + std::to_string(p));
  Vec worst_a, worst_b;
  barrett_worst(p, kWords, worst_a, worst_b);
  for (int round = 0; round < 5; ++round) {
    Vec a = round == 0 ? filled(kWords, p - 1) : inputs(kWords, p, p);
    Vec b = round == 0 ? filled(kWords, p - 1) : round == 1 ? filled(kWords, 0) : inputs(kWords, p, p);
    Vec acc = round == 0 ? filled(kWords, p - 1) : inputs(kWords, p, p);
    if (round == 4) {  // the Barrett worst cases, at every position (vector lanes and the tail)
      for (std::size_t z = 0; z < worst_a.size(); ++z) {
        a[z] = worst_a[z];
        b[z] = worst_b[z];
        acc[z] = 0;
      }
    }
    for (bool accumulate : {false, true}) {
      Vec out = accumulate ? acc : filled(kWords, 0xdeadbeefULL % p);
      k(out.data(), a.data(), b.data(), kWords, p, accumulate);
      for (std::size_t z = 0; z < kWords; ++z) {
        const u128 x = static_cast<u128>(a[z]) * b[z] + (accumulate ? acc[z] : 0);
        ASSERT_EQ(out[z], static_cast<u64>(x % p)) << "word " << z << (accumulate ? " (accumulate)" : "");
      }
    }
  }
}

void check_lazy(const char* what, LazyKernel k) {
  SCOPED_TRACE(what);
  const u64 top = 0xffffffffULL;  // the largest residue the lazy kernels accept
  for (int round = 0; round < 3; ++round) {
    const Vec a = round == 0 ? filled(kWords, top) : inputs(kWords, top + 1, top);
    const Vec b = round == 0 ? filled(kWords, top) : inputs(kWords, top + 1, top);
    // acc as large as a·b allows without leaving 64 bits: (2^32 − 1)^2 + 2^33 − 2 = 2^64 − 1
    Vec acc = round == 0 ? filled(kWords, 2 * top) : test::random_below(kWords, 1ULL << 31);
    if (round == 2) acc = filled(kWords, 0);
    const Vec before = acc;
    k(acc.data(), a.data(), b.data(), kWords);
    for (std::size_t z = 0; z < kWords; ++z) {
      const u128 x = static_cast<u128>(a[z]) * b[z] + before[z];
      ASSERT_EQ(x >> 64, 0u) << "test bound";
      ASSERT_EQ(acc[z], static_cast<u64>(x)) << "word " << z;
    }
  }
}

TEST(KernelPaths, PointwiseNative) {
  // single-word Barrett (p < 2^32) and 128-bit products (p up to 2^50)
  for (unsigned bits : {2u, 13u, 20u, 28u, 30u, 32u, 40u, 50u}) {
    const u64 p = bits == 2 ? 3 : bits == 13 ? 7681 : prime(bits, 16);
    check_mul("native", detail::pointwise_mul_native, p);
  }
  check_lazy("native", detail::pointwise_mul_add_lazy_native);
}

#ifdef SPIRALPIR_HAVE_AVX2
TEST(KernelPaths, PointwiseAvx2) {
  SPIRALPIR_REQUIRE_CPU(cpu_avx2(), "AVX2");
  const MulKernel k = [](u64* o, const u64* a, const u64* b, std::size_t n, u64 p, bool acc) {
    detail::pointwise_mul_avx2(o, a, b, n, detail::Barrett30(p), acc);
  };
  for (u64 p : {u64{3}, u64{7681}, u64{65537}, prime(28, 16), u64{268369921}, prime(30, 16)}) check_mul("avx2", k, p);
  check_lazy("avx2", detail::pointwise_mul_add_lazy_avx2);
}
#endif

#ifdef SPIRALPIR_HAVE_AVX512
TEST(KernelPaths, PointwiseAvx512) {
  SPIRALPIR_REQUIRE_CPU(cpu_avx512(), "AVX-512 F/DQ/BW/VL");
  const MulKernel k = [](u64* o, const u64* a, const u64* b, std::size_t n, u64 p, bool acc) {
    detail::pointwise_mul_avx512(o, a, b, n, detail::Barrett30(p), acc);
  };
  for (u64 p : {u64{3}, u64{7681}, u64{65537}, prime(28, 16), u64{268369921}, prime(30, 16)}) check_mul("avx512", k, p);
  check_lazy("avx512", detail::pointwise_mul_add_lazy_avx512);
}
#endif

// ---- reduction of 64-bit words ---------------------------------------------------------------

using ReduceKernel = void (*)(u64*, std::size_t, const detail::Reduce32&);

/// any 64-bit word → x mod p: random words (every bit length), the multiples of p and their
/// neighbours near 2^32 and 2^64, and the extremes
void check_reduce(const char* what, ReduceKernel kern) {
  for (u64 p : {u64{2}, u64{3}, u64{7681}, prime(28, 16), u64{67104769}, u64{268369921}, prime(31, 16),
                prime(32, 16)}) {
    SCOPED_TRACE(std::string(what) + " p=" + std::to_string(p));
    Vec v = test::random_below(1003, ~u64{0});
    for (std::size_t i = 0; i < 300; ++i) v[i] >>= i % 64;  // short words too
    const u64 top = ~u64{0} / p * p, mid = (u64{1} << 32) / p * p;
    const u64 ext[] = {0, 1, p - 1, p, p + 1, 2 * p - 1, 2 * p, mid - 1, mid, mid + p - 1, (u64{1} << 32) - 1,
                       u64{1} << 32, top - 1, top, ~u64{0}, ~u64{0} - 1, u64{1} << 63, (u64{1} << 63) - 1};
    for (std::size_t i = 0; i < std::size(ext); ++i) v[400 + i] = ext[i];
    Vec got = v;
    kern(got.data(), got.size(), detail::Reduce32(p));
    for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(got[i], v[i] % p) << "word " << i << " = " << v[i];
  }
}

#ifdef SPIRALPIR_HAVE_AVX2
TEST(KernelPaths, ReduceWordsAvx2) {
  SPIRALPIR_REQUIRE_CPU(cpu_avx2(), "AVX2");
  check_reduce("avx2", detail::reduce_words_avx2);
}
#endif

#ifdef SPIRALPIR_HAVE_AVX512
TEST(KernelPaths, ReduceWordsAvx512) {
  SPIRALPIR_REQUIRE_CPU(cpu_avx512(), "AVX-512 F/DQ/BW/VL");
  check_reduce("avx512", detail::reduce_words_avx512);
}
#endif

// ---- the expansion's split and sum -----------------------------------------------------------

using SplitKernel = void (*)(u64*, const u64*, u64*, std::size_t, std::size_t, u64);
using SumKernel = void (*)(u64*, const u64*, const u64*, std::size_t, u64);  // a + b or a − b

/// hi = x^{-m}·(cur − tau), cur = cur + tau, against the negacyclic shift written out here,
/// for every shift class (block-aligned or not, straddling blocks) and hi null; the plain sum
/// and difference over a length off the vector width, in place over their first operand too
void check_split(const char* what, SplitKernel split, SumKernel add, SumKernel sub) {
  constexpr std::size_t n = 64;
  for (u64 p : {u64{3}, u64{7681}, u64{268369921}, prime(50, 16), (u64{1} << 61) - 1}) {
    for (std::size_t m : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{4},
                          std::size_t{5}, std::size_t{8}, std::size_t{13}, std::size_t{32}, n - 1}) {
      for (bool with_hi : {true, false}) {
        SCOPED_TRACE(std::string(what) + " p=" + std::to_string(p) + " m=" + std::to_string(m) +
                     (with_hi ? "" : " (no hi)"));
        const Vec cur = inputs(n + 3, p, p), tau = inputs(n + 3, p, p);
        Vec want_hi(n), want_cur(n);
        for (std::size_t j = 0; j < n; ++j) {
          const u64 u = static_cast<u64>((static_cast<u128>(cur[j]) + p - tau[j]) % p);
          if (j >= m)
            want_hi[j - m] = u;
          else
            want_hi[j + n - m] = (p - u) % p;
          want_cur[j] = static_cast<u64>((static_cast<u128>(cur[j]) + tau[j]) % p);
        }
        Vec got = cur, hi(n, 7);
        split(got.data(), tau.data(), with_hi ? hi.data() : nullptr, m, n, p);
        for (std::size_t j = 0; j < n; ++j) {
          ASSERT_EQ(got[j], want_cur[j]) << "cur " << j;
          ASSERT_EQ(hi[j], with_hi ? want_hi[j] : 7) << "hi " << j;
        }
        ASSERT_EQ(got[n], cur[n]) << "past n";
        Vec sum(n + 3, 9);
        add(sum.data(), cur.data(), tau.data(), n + 1, p);
        for (std::size_t j = 0; j <= n; ++j)
          ASSERT_EQ(sum[j], static_cast<u64>((static_cast<u128>(cur[j]) + tau[j]) % p)) << "sum " << j;
        ASSERT_EQ(sum[n + 1], 9u) << "sum past its end";
        Vec diff = cur;
        sub(diff.data(), diff.data(), tau.data(), n + 1, p);
        for (std::size_t j = 0; j <= n; ++j)
          ASSERT_EQ(diff[j], static_cast<u64>((static_cast<u128>(cur[j]) + p - tau[j]) % p)) << "diff " << j;
        ASSERT_EQ(diff[n + 1], cur[n + 1]) << "diff past its end";
      }
    }
  }
}

TEST(KernelPaths, SplitNative) {
  check_split(
      "native",
      [](u64* c, const u64* t, u64* h, std::size_t m, std::size_t n, u64 p) {
        detail::split_halves_native(c, t, h, m, n, p, 0, n);
      },
      detail::add_mod_native, detail::sub_mod_native);
}

#ifdef SPIRALPIR_HAVE_AVX2
TEST(KernelPaths, SplitAvx2) {
  SPIRALPIR_REQUIRE_CPU(cpu_avx2(), "AVX2");
  check_split("avx2", detail::split_halves_avx2, detail::add_mod_avx2, detail::sub_mod_avx2);
}
#endif

#ifdef SPIRALPIR_HAVE_AVX512
TEST(KernelPaths, SplitAvx512) {
  SPIRALPIR_REQUIRE_CPU(cpu_avx512(), "AVX-512 F/DQ/BW/VL");
  check_split("avx512", detail::split_halves_avx512, detail::add_mod_avx512, detail::sub_mod_avx512);
}
#endif

using SplitNttKernel = void (*)(u64*, const u64*, u64*, const u64*, std::size_t, u64);

/// the NTT-domain split: hi = w·(cur − tau), cur = cur + tau, against 128-bit arithmetic, with
/// lengths off the vector width (tails), the extremes p − 1 and hi null
void check_split_ntt(const char* what, SplitNttKernel split, u64 max_p) {
  for (u64 p : {u64{3}, u64{7681}, u64{67104769}, u64{268369921}, prime(30, 16), prime(50, 16)}) {
    if (p >= max_p) continue;
    for (std::size_t n : {std::size_t{64}, std::size_t{67}}) {
      for (bool with_hi : {true, false}) {
        SCOPED_TRACE(std::string(what) + " p=" + std::to_string(p) + " n=" + std::to_string(n) +
                     (with_hi ? "" : " (no hi)"));
        const Vec cur = inputs(n + 1, p, p), tau = inputs(n + 1, p, p), w = inputs(n + 1, p, p - 1);
        Vec got = cur, hi(n + 1, 7);
        split(got.data(), tau.data(), with_hi ? hi.data() : nullptr, w.data(), n, p);
        for (std::size_t j = 0; j < n; ++j) {
          const u128 u = (static_cast<u128>(cur[j]) + p - tau[j]) % p;
          ASSERT_EQ(got[j], static_cast<u64>((static_cast<u128>(cur[j]) + tau[j]) % p)) << "cur " << j;
          ASSERT_EQ(hi[j], with_hi ? static_cast<u64>(u * w[j] % p) : 7) << "hi " << j;
        }
        ASSERT_EQ(got[n], cur[n]) << "cur past n";
        ASSERT_EQ(hi[n], 7u) << "hi past n";
      }
    }
  }
}

TEST(KernelPaths, SplitNttNative) { check_split_ntt("native", detail::split_halves_ntt_native, u64{1} << 50); }

#ifdef SPIRALPIR_HAVE_AVX2
TEST(KernelPaths, SplitNttAvx2) {
  SPIRALPIR_REQUIRE_CPU(cpu_avx2(), "AVX2");
  check_split_ntt(
      "avx2",
      [](u64* c, const u64* t, u64* h, const u64* w, std::size_t n, u64 p) {
        detail::split_halves_ntt_avx2(c, t, h, w, n, detail::Barrett30(p));
      },
      u64{1} << 30);
}
#endif

#ifdef SPIRALPIR_HAVE_AVX512
TEST(KernelPaths, SplitNttAvx512) {
  SPIRALPIR_REQUIRE_CPU(cpu_avx512(), "AVX-512 F/DQ/BW/VL");
  check_split_ntt(
      "avx512",
      [](u64* c, const u64* t, u64* h, const u64* w, std::size_t n, u64 p) {
        detail::split_halves_ntt_avx512(c, t, h, w, n, detail::Barrett30(p));
      },
      u64{1} << 30);
}
#endif

// ---- lazy dot products -----------------------------------------------------------------------

using DotKernel = void (*)(std::size_t, u64* const*, const u64* const*, const u64* const*, std::size_t,
                           std::size_t);

/// acc[r] += Σ_j dig[j] · key[r·k + j]; `bound` for the digits and keys, `acc_bound` for acc
void check_dot(const char* what, DotKernel kern, std::size_t m, std::size_t k, u64 bound, u64 acc_bound,
               bool at_bounds) {
  SCOPED_TRACE(std::string(what) + " m=" + std::to_string(m) + " k=" + std::to_string(k) +
               (at_bounds ? " (at the bounds)" : ""));
  constexpr std::size_t n = 64;
  std::vector<Vec> dig(k), key(m * k), acc(m);
  for (auto& v : dig) v = at_bounds ? filled(n, bound - 1) : inputs(n, bound, bound - 1);
  for (auto& v : key) v = at_bounds ? filled(n, bound - 1) : inputs(n, bound, bound - 1);
  for (auto& v : acc) v = at_bounds ? filled(n, acc_bound - 1) : test::random_below(n, acc_bound);
  std::vector<Vec> want = acc;
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t z = 0; z < n; ++z) {
      u128 s = want[r][z];
      for (std::size_t j = 0; j < k; ++j) s += static_cast<u128>(dig[j][z]) * key[r * k + j][z];
      ASSERT_EQ(s >> 64, 0u) << "test bound";
      want[r][z] = static_cast<u64>(s);
    }
  std::vector<u64*> ap(m);
  std::vector<const u64*> dp(k), kp(m * k);
  for (std::size_t r = 0; r < m; ++r) ap[r] = acc[r].data();
  for (std::size_t j = 0; j < k; ++j) dp[j] = dig[j].data();
  for (std::size_t j = 0; j < m * k; ++j) kp[j] = key[j].data();
  kern(m, ap.data(), dp.data(), kp.data(), k, n);
  for (std::size_t r = 0; r < m; ++r) ASSERT_EQ(acc[r], want[r]) << "row " << r;
}

void check_dot_all(const char* what, DotKernel kern) {
  const u64 top = 1ULL << 32;
  for (std::size_t m = 1; m <= kDotMaxRows; ++m) {
    // one term of two 32-bit maxima plus the largest acc that still fits: 2^64 − 1 in total
    check_dot(what, kern, m, 1, top, 2 * (top - 1) + 1, true);
    // SPIRAL's 28-bit prime at its lazy term count: k·(p − 1)^2 + acc < 2^64
    const u64 p = 268369921ULL;
    const std::size_t lazy = static_cast<std::size_t>((~u64{0}) / ((p - 1) * (p - 1))) - 1;
    check_dot(what, kern, m, lazy, p, p, true);
    check_dot(what, kern, m, 7, p, p, false);
  }
}

TEST(KernelPaths, DotNative) { check_dot_all("native", detail::dot_mac_lazy_native); }

/// the fused sum-and-reduce: acc (garbage on entry, never read) = Σ dig · key mod p, at the
/// 64-bit bound (one term of 32-bit maxima; SPIRAL's prime at its lazy count) and at random
using DotReduceKernel = void (*)(std::size_t, u64* const*, const u64* const*, const u64* const*, std::size_t,
                                 std::size_t, u64);

void check_dot_reduce(const char* what, DotReduceKernel kern) {
  struct Case {
    u64 p;
    std::size_t k;
    bool at_bounds;
  };
  const u64 p28 = 268369921ULL, p32 = prime(32, 16);
  const std::size_t lazy28 = static_cast<std::size_t>((~u64{0}) / ((p28 - 1) * (p28 - 1)));
  for (std::size_t m = 1; m <= kDotMaxRows; ++m)
    for (const Case& c : {Case{p32, 1, true}, Case{p28, lazy28, true}, Case{p28, 7, false}, Case{7681, 3, false}}) {
      SCOPED_TRACE(std::string(what) + " m=" + std::to_string(m) + " k=" + std::to_string(c.k) + " p=" +
                   std::to_string(c.p));
      constexpr std::size_t n = 64;
      std::vector<Vec> dig(c.k), key(m * c.k), acc(m, test::random_below(n, ~u64{0}));
      for (auto& v : dig) v = c.at_bounds ? filled(n, c.p - 1) : inputs(n, c.p, c.p - 1);
      for (auto& v : key) v = c.at_bounds ? filled(n, c.p - 1) : inputs(n, c.p, c.p - 1);
      std::vector<u64*> ap(m);
      std::vector<const u64*> dp(c.k), kp(m * c.k);
      for (std::size_t r = 0; r < m; ++r) ap[r] = acc[r].data();
      for (std::size_t j = 0; j < c.k; ++j) dp[j] = dig[j].data();
      for (std::size_t j = 0; j < m * c.k; ++j) kp[j] = key[j].data();
      kern(m, ap.data(), dp.data(), kp.data(), c.k, n, c.p);
      for (std::size_t r = 0; r < m; ++r)
        for (std::size_t z = 0; z < n; ++z) {
          u128 s = 0;
          for (std::size_t j = 0; j < c.k; ++j) s += static_cast<u128>(dig[j][z]) * key[r * c.k + j][z];
          ASSERT_EQ(s >> 64, 0u) << "test bound";
          ASSERT_EQ(acc[r][z], static_cast<u64>(s % c.p)) << "row " << r << " word " << z;
        }
    }
}

TEST(KernelPaths, DotReduceNative) {  // the dispatcher's fallback: zero, native sums, native reduction
  check_dot_reduce("native", [](std::size_t m, u64* const* acc, const u64* const* dig, const u64* const* key,
                                std::size_t k, std::size_t n, u64 p) {
    dot_mac_reduce(m, acc, dig, key, k, n, p, Path::native);
  });
}

#ifdef SPIRALPIR_HAVE_AVX2
TEST(KernelPaths, DotAvx2) {
  SPIRALPIR_REQUIRE_CPU(cpu_avx2(), "AVX2");
  check_dot_all("avx2", detail::dot_mac_lazy_avx2);
}
#endif

#ifdef SPIRALPIR_HAVE_AVX512
TEST(KernelPaths, DotAvx512) {
  SPIRALPIR_REQUIRE_CPU(cpu_avx512(), "AVX-512 F/DQ/BW/VL");
  check_dot_all("avx512", detail::dot_mac_lazy_avx512);
}

TEST(KernelPaths, DotReduceAvx512) {
  SPIRALPIR_REQUIRE_CPU(cpu_avx512(), "AVX-512 F/DQ/BW/VL");
  check_dot_reduce("avx512", [](std::size_t m, u64* const* acc, const u64* const* dig, const u64* const* key,
                                std::size_t k, std::size_t n, u64 p) {
    detail::dot_mac_reduce_avx512(m, acc, dig, key, k, n, detail::Reduce32(p));
  });
}
#endif

// ---- gadget decomposition words --------------------------------------------------------------

using GadgetKernel = void (*)(const GadgetWordRing&, std::size_t, const u64*, const u64*, unsigned, unsigned,
                              u64* const*);

/// The balanced base-2^bits digits of the centred lift of (r0, r1), by 128-bit CRT and division.
void check_gadget(const char* what, GadgetKernel kern, const GadgetWordRing& g, unsigned bits, unsigned t) {
  SCOPED_TRACE(std::string(what) + " q=" + std::to_string(g.q) + " bits=" + std::to_string(bits) +
               " t=" + std::to_string(t));
  constexpr std::size_t n = 64;
  const u64 p0 = g.p0, p1 = g.two_primes ? g.p1 : g.p0, q = g.q;
  // x values: random, then 0, 1, q − 1, ⌊q/2⌋, ⌊q/2⌋ + 1 and digit boundaries ±2^(bits·k)/2
  std::vector<u128> xs(n);
  const Vec r = test::random_below(n, q);
  for (std::size_t z = 0; z < n; ++z) xs[z] = r[z];
  const u64 special[] = {0, 1, q - 1, q / 2, q / 2 + 1, (u64{1} << (bits - 1)), q - (u64{1} << (bits - 1))};
  for (std::size_t i = 0; i < std::size(special); ++i) xs[i] = special[i];
  Vec r0(n), r1(n);
  for (std::size_t z = 0; z < n; ++z) {
    r0[z] = static_cast<u64>(xs[z] % p0);
    r1[z] = static_cast<u64>(xs[z] % p1);
  }
  std::vector<Vec> outs(2 * t, Vec(n, 0));
  std::vector<u64*> op(2 * t);
  for (std::size_t k = 0; k < 2 * t; ++k) op[k] = (k % 2 == 1 && !g.two_primes) ? nullptr : outs[k].data();
  kern(g, n, r0.data(), r1.data(), bits, t, op.data());
  using i128 = __int128;
  for (std::size_t z = 0; z < n; ++z) {
    i128 v = static_cast<i128>(xs[z]);
    if (xs[z] > q / 2) v -= q;
    const i128 base = i128{1} << bits, half = base / 2;
    for (unsigned k = 0; k < t; ++k) {
      i128 dg;
      if (k + 1 == t) {
        dg = v;
      } else {
        dg = ((v % base) + base) % base;
        if (dg >= half) dg -= base;
        v = (v - dg) / base;
      }
      const u64 w0 = static_cast<u64>(((dg % p0) + p0) % p0), w1 = static_cast<u64>(((dg % p1) + p1) % p1);
      ASSERT_EQ(outs[2 * k][z], w0) << "coefficient " << z << " digit " << k << " (first prime)";
      if (g.two_primes) {
        ASSERT_EQ(outs[2 * k + 1][z], w1) << "coefficient " << z << " digit " << k << " (last prime)";
      }
    }
  }
}

void check_gadget_all(const char* what, GadgetKernel kern) {
  // two primes of similar size; the first four times the second (the default 2048 ring: the
  // first residue needs a Barrett reduction mod the second); one prime
  const GadgetWordRing rings[] = {GadgetWordRing::of<test::Ring2048>(),
                                  GadgetWordRing::of<RingSpec<2048, 268369921ULL, 67104769ULL>>(),
                                  GadgetWordRing::of<RingSpec<2048, 268369921ULL>>()};
  for (unsigned t : {2u, 3u, 4u, 8u, 56u})
    for (const GadgetWordRing& g : rings) {
      const unsigned bits = (bit_length(g.q - 1) + t - 1) / t;
      if (bits >= 1 && bits <= 62 && g.reach(bits) != GadgetWordRing::Reach::too_wide)
        check_gadget(what, kern, g, bits, t);
    }
}

TEST(KernelPaths, GadgetNative) { check_gadget_all("native", detail::gadget_words_native); }

#ifdef SPIRALPIR_HAVE_AVX2
TEST(KernelPaths, GadgetAvx2) {
  SPIRALPIR_REQUIRE_CPU(cpu_avx2(), "AVX2");
  check_gadget_all("avx2", detail::gadget_words_avx2);
}
#endif

#ifdef SPIRALPIR_HAVE_AVX512
TEST(KernelPaths, GadgetAvx512) {
  SPIRALPIR_REQUIRE_CPU(cpu_avx512(), "AVX-512 F/DQ/BW/VL");
  check_gadget_all("avx512", detail::gadget_words_avx512);
}
#endif

}  // namespace
}  // namespace spiralpir
