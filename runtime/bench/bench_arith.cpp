// spiral_runtime_bench — per-path timings of the ring kernels, for every supported ring shape.
//   ntt_forward/<path>/<poly_len>/<bits>, ntt_inverse/<path>/<poly_len>/<bits>   one residue
//   mul_add/<path>/2048/<bits>        acc = acc + a·b mod p over 2048 coefficients (reduced)
//   mul_add_lazy/<path>/2048/<bits>   acc += a·b over 2048 coefficients (no reduction)
//   reduce/<path>/2048/<bits>         2048 64-bit words → [0, p) (a key switch's final reduction)
//   gadget/<path>/2048/<t>/<residues> the t digits of 2048 coefficients of SPIRAL's two-prime ring,
//                                     for one residue or both (an expansion or conversion step)
//   dot/<path>/2048/<m>/<k>           m lazy dot products of k terms over 2048 words (a key switch)
//   automorph/2048                    τ_k of one residue (coefficients)
//   automorph_ntt/2048                τ_k of one residue in the NTT domain (a slot permutation:
//                                     the expansion's b halves)
//   split_ntt/<path>/2048             the expansion's split of one b residue in the NTT domain
// <path> ∈ {native, avx2, avx512} (only the ones this CPU/environment allows, and only primes
// that path's kernels take); <bits> is the prime's bit length. Example: spiral_runtime_bench --benchmark_filter='ntt_forward/.*/2048/28'
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "spiralpir/arith/automorphism.hpp"
#include "spiralpir/arith/dot.hpp"
#include "spiralpir/arith/gadget.hpp"
#include "spiralpir/arith/modarith.hpp"
#include "spiralpir/arith/ntt.hpp"
#include "spiralpir/arith/pointwise.hpp"
#include "spiralpir/arith/ring.hpp"
#include "spiralpir/core/aligned.hpp"

namespace {

using namespace spiralpir;

struct Shape {
  std::size_t n;
  std::uint64_t p;
};

// One prime per distinct (poly_len, bits) of the rings the tests cover, SPIRAL's first.
const std::vector<Shape> kShapes = {
    {2048, 268369921ULL},        {1024, 134215681ULL},    {1024, 1073707009ULL}, {4096, 1073692673ULL},
    {8192, 1073692673ULL},       {2048, 4294955009ULL},   {2048, 35184372060161ULL},
    {2048, 1125899906826241ULL},
};

AlignedBuffer<std::uint64_t> random_words(std::size_t n, std::uint64_t bound, unsigned seed) {
  std::mt19937_64 g(seed);
  AlignedBuffer<std::uint64_t> v(n);
  for (auto& x : v) x = g() % bound;
  return v;
}

void bench_ntt(benchmark::State& st, Shape s, Path path, bool forward) {
  const NttTable tab = NttTable::make(s.p, s.n);
  auto a = random_words(s.n, s.p, 1);
  for (auto _ : st) {
    // Both directions map [0, p) to [0, p), so the same buffer can be transformed repeatedly.
    if (forward)
      ntt_forward(a.data(), tab, path);
    else
      ntt_inverse(a.data(), tab, path);
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()));
}

void bench_mul_add(benchmark::State& st, Shape s, Path path, bool lazy) {
  constexpr std::size_t n = 2048;
  auto a = random_words(n, s.p, 2), b = random_words(n, s.p, 3), acc = random_words(n, s.p, 4);
  for (auto _ : st) {
    if (lazy) {
      // The unreduced sums wrap around after ~2^8 runs; harmless, only the time is measured.
      pointwise_mul_add_lazy(acc.data(), a.data(), b.data(), n, path);
    } else {
      pointwise_mul_add(acc.data(), a.data(), b.data(), n, s.p, path);
    }
    benchmark::DoNotOptimize(acc.data());
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * n));
}

void bench_reduce(benchmark::State& st, Shape s, Path path) {
  constexpr std::size_t n = 2048;
  auto src = random_words(n, ~std::uint64_t{0}, 5);
  AlignedBuffer<std::uint64_t> a(n);
  for (auto _ : st) {
    std::copy(src.begin(), src.end(), a.begin());
    reduce_words(a.data(), n, s.p, path);
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * n));
}

using SpiralRing = RingSpec<2048, 268369921ULL, 67104769ULL>;

void bench_gadget(benchmark::State& st, Path path, unsigned t, bool both) {
  constexpr std::size_t n = SpiralRing::poly_len;
  constexpr GadgetWordRing ring = GadgetWordRing::of<SpiralRing>();
  auto r0 = random_words(n, ring.p0, 6), r1 = random_words(n, ring.p1, 7);
  std::vector<AlignedBuffer<std::uint64_t>> out(2 * t);
  std::vector<std::uint64_t*> outs(2 * t, nullptr);
  for (unsigned k = 0; k < t; ++k) {
    out[2 * k] = AlignedBuffer<std::uint64_t>(n);
    outs[2 * k] = out[2 * k].data();
    if (both) {
      out[2 * k + 1] = AlignedBuffer<std::uint64_t>(n);
      outs[2 * k + 1] = out[2 * k + 1].data();
    }
  }
  const unsigned bits = gadget_base_bits<SpiralRing>(t);
  for (auto _ : st) {
    gadget_decompose_words(ring, n, r0.data(), r1.data(), bits, t, outs.data(), path);
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()));
}

void bench_dot(benchmark::State& st, Path path, std::size_t m, std::size_t k) {
  constexpr std::size_t n = 2048;
  std::vector<AlignedBuffer<std::uint64_t>> dig, key, acc;
  std::vector<const std::uint64_t*> dp, kp;
  std::vector<std::uint64_t*> ap;
  for (std::size_t j = 0; j < k; ++j) dig.push_back(random_words(n, 268369921ULL, 8 + static_cast<unsigned>(j)));
  for (std::size_t j = 0; j < m * k; ++j) key.push_back(random_words(n, 268369921ULL, 99 + static_cast<unsigned>(j)));
  for (std::size_t r = 0; r < m; ++r) acc.push_back(random_words(n, 1, 0));
  for (auto& v : dig) dp.push_back(v.data());
  for (auto& v : key) kp.push_back(v.data());
  for (auto& v : acc) ap.push_back(v.data());
  for (auto _ : st) {
    dot_mac_lazy(m, ap.data(), dp.data(), kp.data(), k, n, path);  // sums wrap: only the time counts
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()));
}

void bench_automorph(benchmark::State& st) {
  constexpr std::size_t n = 2048;
  auto a = random_words(n, 268369921ULL, 9);
  AlignedBuffer<std::uint64_t> out(n);
  for (auto _ : st) {
    automorph_residue(a.data(), out.data(), n / 2 + 1, n, 268369921ULL);  // round 1's k
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()));
}

void bench_automorph_ntt(benchmark::State& st) {
  constexpr std::size_t n = 2048;
  auto a = random_words(n, 268369921ULL, 9);
  AlignedBuffer<std::uint64_t> out(n);
  const std::vector<std::uint32_t> perm = automorph_ntt_permutation<SpiralRing>(n / 2 + 1);  // round 1's k
  for (auto _ : st) {
    automorph_ntt_residue(a.data(), out.data(), perm.data(), n);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()));
}

void bench_split_ntt(benchmark::State& st, Path path) {
  constexpr std::size_t n = 2048;
  constexpr std::uint64_t p = 268369921ULL;
  auto cur = random_words(n, p, 11), tau = random_words(n, p, 12), w = random_words(n, p, 13);
  AlignedBuffer<std::uint64_t> hi(n);
  for (auto _ : st) {  // cur keeps changing: every call is a full split of values below p
    split_halves_ntt(cur.data(), tau.data(), hi.data(), w.data(), n, p, path);
    benchmark::DoNotOptimize(hi.data());
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()));
}

// Streaming read: bytes per second of one thread reading 64-bit words (a sum vectorised for
// the widest instruction set the CPU has, as the first-dimension kernel reads). 1 GiB is far
// larger than the last-level cache (the first dimension's memory traffic); the smaller sizes
// show up to where data stays cache resident. The cost model (optimizer/models/cost.py) divides the
// preprocessed database bytes by the 1 GiB figure.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
std::uint64_t sum_words(const std::uint64_t* p, std::size_t words) {
  std::uint64_t s[8] = {};
  for (std::size_t i = 0; i + 8 <= words; i += 8)
    for (std::size_t l = 0; l < 8; ++l) s[l] += p[i + l];
  std::uint64_t t = 0;
  for (std::uint64_t x : s) t += x;
  return t;
}

void bench_stream_read(benchmark::State& st, std::size_t mib) {
  const std::size_t words = mib * (std::size_t{1} << 20) / sizeof(std::uint64_t);
  AlignedBuffer<std::uint64_t> buf(words);
  for (std::size_t i = 0; i < words; ++i) buf.data()[i] = i * 0x9E3779B97F4A7C15ULL;
  for (auto _ : st) {
    benchmark::DoNotOptimize(sum_words(buf.data(), words));
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * words * sizeof(std::uint64_t)));
}

void register_all() {
  for (std::size_t mib : {4, 16, 64, 1024})  // cache-resident sizes, then memory
    benchmark::RegisterBenchmark(("stream_read/" + std::to_string(mib)).c_str(), bench_stream_read, mib)
        ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("automorph/2048", bench_automorph);
  benchmark::RegisterBenchmark("automorph_ntt/2048", bench_automorph_ntt);
  for (Path path : available_paths()) {
    const std::string pn = path_name(path);
    benchmark::RegisterBenchmark(("split_ntt/" + pn + "/2048").c_str(), bench_split_ntt, path);
    for (unsigned t : {2u, 3u, 4u, 5u, 6u, 14u, 18u})
      for (bool both : {false, true})
        benchmark::RegisterBenchmark(("gadget/" + pn + "/2048/" + std::to_string(t) + (both ? "/2" : "/1")).c_str(),
                                     bench_gadget, path, t, both);
    for (std::size_t m : {2u, 3u})
      for (std::size_t k : {2u, 3u, 4u, 5u, 6u, 8u, 10u, 12u, 14u, 18u})
        benchmark::RegisterBenchmark(
            ("dot/" + pn + "/2048/" + std::to_string(m) + "/" + std::to_string(k)).c_str(), bench_dot, path, m, k);
    for (const Shape& s : kShapes) {
      const std::string tail = pn + "/" + std::to_string(s.n) + "/" + std::to_string(bit_length(s.p));
      // A prime outside a vector kernel's range would silently time the native kernel: skip it.
      if (ntt_path_supports(path, NttTable::make(s.p, s.n))) {
        benchmark::RegisterBenchmark(("ntt_forward/" + tail).c_str(), bench_ntt, s, path, true);
        benchmark::RegisterBenchmark(("ntt_inverse/" + tail).c_str(), bench_ntt, s, path, false);
      }
      if (s.n == 2048 && (path == Path::native || s.p < (1ULL << 30))) {
        benchmark::RegisterBenchmark(("mul_add/" + tail).c_str(), bench_mul_add, s, path, false);
        if (s.p < (1ULL << 32))
          benchmark::RegisterBenchmark(("mul_add_lazy/" + tail).c_str(), bench_mul_add, s, path, true);
        benchmark::RegisterBenchmark(("reduce/" + tail).c_str(), bench_reduce, s, path);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
