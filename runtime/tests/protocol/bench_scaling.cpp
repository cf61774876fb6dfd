// Thread-scaling benchmark (a command, not a test): builds one database and one client, then
// answers the same queries at every listed thread count, interleaved trial by trial (so drifting
// machine load hits every thread count alike), checks that the responses are identical bit for
// bit, and prints the minimum wall time per stage per thread count and the speedup over the first.
//   spiralpir_thread_scaling <2e20x256b|2e14x100kb|2e20x256b_ci|2e14x100kb_ci> [--threads 1,2] [--trials 5]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "spiralpir/testing/bench_driver.hpp"
#include "test_params.hpp"

namespace {

using namespace spiralpir;

std::vector<unsigned> parse_list(const std::string& s) {
  std::vector<unsigned> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t comma = std::min(s.find(',', pos), s.size());
    const std::string item = s.substr(pos, comma - pos);
    char* end = nullptr;
    const unsigned long v = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v == 0 || v > 1024) throw ArgumentError("--threads: bad list '" + s + "'");
    out.push_back(static_cast<unsigned>(v));
    pos = comma + 1;
  }
  return out;
}

long minor_faults() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

/// At each stage boundary (the observer hooks run between stages, on the calling thread): minor
/// page faults, the uncontended estimate (caller thread CPU + pool job replay adjustment) and process CPU.
struct Mark {
  long faults = 0;
  double est = 0, cpu = 0;
  static Mark now() {
    return {minor_faults(), bench_detail::uncontended_seconds(), bench_detail::process_cpu_seconds()};
  }
};
template <SpiralParams P>
struct Marks : StageObserver<P> {
  using R = typename P::ring;
  Mark m[kNumStages + 1];
  void on_expansion(const std::vector<RegevCt<R>>&, const std::vector<RegevCt<R>>&) override { m[1] = Mark::now(); }
  void on_conversion(const std::vector<rlwe::MatN<R>>&, const std::vector<rlwe::MatN<R>>&) override {
    m[2] = Mark::now();
  }
  void on_first_dimension(const std::vector<rlwe::MatN<R>>&) override { m[3] = m[4] = Mark::now(); }
  void on_fold(unsigned, const std::vector<rlwe::MatN<R>>&) override { m[4] = Mark::now(); }
};

template <SpiralParams P>
int run(int argc, char** argv) {
  using D = Derived<P>;
  using DB = Database<P>;
  std::vector<unsigned> threads{1, 2};
  unsigned trials = 5;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = parse_list(argv[++i]);
    else if (a == "--trials" && i + 1 < argc) trials = static_cast<unsigned>(std::max(1l, std::strtol(argv[++i], nullptr, 10)));
    else throw ArgumentError("usage: <set> [--threads 1,2,...] [--trials K]");
  }
  const unsigned max_threads = *std::max_element(threads.begin(), threads.end());
  std::size_t phys_inst = D::instances, phys_j = DB::J;
  const double budget = 8.0 * 1073741824.0;
  if (static_cast<double>(D::preprocessed_db_bytes) > budget) {
    const auto l = bench_detail::implicit_db_layout(static_cast<double>(D::preprocessed_db_bytes), D::instances, DB::J,
                                                    budget);
    phys_inst = l.phys_inst;
    phys_j = l.phys_j;
  }
  Seed data_seed;
  os_entropy(data_seed.data(), data_seed.size());
  Server<P> server(max_threads);
  server.database().build(
      [&](std::uint64_t inst, std::uint64_t pt, std::uint8_t* out) {
        Csprng g(data_seed, inst * D::num_pts + pt);
        g.fill(out, DB::pt_bytes);
      },
      P::num_records, max_threads, phys_inst, phys_j);
  Client<P> client;
  const auto ppb = client.public_params();
  const auto pp = PublicParams<P>::load(ppb.data(), ppb.size(), max_threads);

  constexpr double inf = std::numeric_limits<double>::infinity();
  std::vector<std::array<double, kNumStages + 1>> best(threads.size());
  for (auto& b : best) b.fill(inf);
  Csprng rng;
  bool identical = true;
  std::vector<std::array<long, kNumStages + 1>> faults(threads.size());
  for (auto& f : faults) f.fill(std::numeric_limits<long>::max());
  std::vector<std::array<double, kNumStages + 1>> est(threads.size());
  for (auto& e : est) e.fill(inf);
  auto cpu = est;
  detail_pool::CriticalPath::enabled() = true;
  for (unsigned t = 0; t < trials; ++t) {
    const auto qb = client.query(rng.uniform_mod(P::num_records));
    std::vector<std::uint8_t> first;
    for (std::size_t k = 0; k < threads.size(); ++k) {
      const std::size_t x = (t % 2 == 0) ? k : threads.size() - 1 - k;  // alternate the order
      server.set_threads(threads[x]);
      double st[kNumStages] = {};
      Marks<P> mk;
      mk.m[0] = Mark::now();
      const auto a = std::chrono::steady_clock::now();
      const auto resp = server.answer(pp, qb.data(), qb.size(), st, &mk);
      const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
      mk.m[kNumStages] = Mark::now();
      for (std::size_t s = 0; s < kNumStages; ++s) {
        faults[x][s] = std::min(faults[x][s], mk.m[s + 1].faults - mk.m[s].faults);
        est[x][s] = std::min(est[x][s], mk.m[s + 1].est - mk.m[s].est);
        cpu[x][s] = std::min(cpu[x][s], mk.m[s + 1].cpu - mk.m[s].cpu);
      }
      faults[x][kNumStages] = std::min(faults[x][kNumStages], mk.m[kNumStages].faults - mk.m[0].faults);
      est[x][kNumStages] = std::min(est[x][kNumStages], mk.m[kNumStages].est - mk.m[0].est);
      cpu[x][kNumStages] = std::min(cpu[x][kNumStages], mk.m[kNumStages].cpu - mk.m[0].cpu);
      if (first.empty()) first = resp; else identical = identical && resp == first;
      for (std::size_t s = 0; s < kNumStages; ++s) best[x][s] = std::min(best[x][s], st[s]);
      best[x][kNumStages] = std::min(best[x][kNumStages], total);
    }
  }
  std::printf("thread scaling  records %llu x %llu B  trials %u  (minimum wall seconds; speedup vs %u thread%s)\n",
              static_cast<unsigned long long>(P::num_records), static_cast<unsigned long long>(P::record_size), trials,
              threads[0], threads[0] == 1 ? "" : "s");
  std::printf("  responses identical at every thread count: %s\n", identical ? "yes" : "NO");
  const char* names[kNumStages + 1] = {"expansion", "conversion", "first_dimension", "folding", "modswitch", "total"};
  std::printf("  %-16s", "stage");
  for (unsigned th : threads) std::printf("  %6u thr  speedup", th);
  std::printf("\n");
  using Table = std::vector<std::array<double, kNumStages + 1>>;
  auto print = [&](const char* title, const Table& v, bool ratio) {
    if (title != nullptr) std::printf("  %s\n", title);
    for (std::size_t s = 0; s <= kNumStages; ++s) {
      std::printf("  %-16s", names[s]);
      for (std::size_t k = 0; k < threads.size(); ++k)
        if (ratio) std::printf("  %8.4f  %6.2fx", v[k][s], v[0][s] / v[k][s]); else std::printf("  %8.0f %8s", v[k][s], "");
      std::printf("\n");
    }
  };
  print(nullptr, best, true);
  print("estimate for an uncontended machine (caller CPU, pool jobs replayed from task CPU times; minimum)", est, true);
  print("process CPU seconds (all threads; minimum) and 1-thread CPU / this CPU", cpu, true);
  Table f(threads.size());
  for (std::size_t k = 0; k < threads.size(); ++k)
    for (std::size_t s = 0; s <= kNumStages; ++s) f[k][s] = static_cast<double>(faults[k][s]);
  print("minor page faults per answer (minimum)", f, false);
  return identical ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace spiralpir::testing;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <2e20x256b|2e14x100kb|2e20x256b_ci|2e14x100kb_ci> [--threads 1,2] [--trials K]\n",
                 argv[0]);
    return 2;
  }
  const std::string set = argv[1];
  try {
    if (set == "2e20x256b") return run<insecure_spiral_2e20x256b>(argc - 2, argv + 2);
    if (set == "2e14x100kb") return run<insecure_spiral_2e14x100kb>(argc - 2, argv + 2);
    if (set == "2e20x256b_ci") return run<insecure_spiral_2e20x256b_ci>(argc - 2, argv + 2);
    if (set == "2e14x100kb_ci") return run<insecure_spiral_2e14x100kb_ci>(argc - 2, argv + 2);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr, "unknown set %s\n", set.c_str());
  return 2;
}
