// spiralpir/bench_driver.hpp — `int spiralpir::run_bench<P>(argc, argv)`, the body of every
// generated benchmark executable (and of `spiralpir bench`).
//
// Options:
//   --threads T     server threads (default 0 = all cores)
//   --trials K      queries to answer (default 3); times are medians over trials
//   --records N     number of records (default P::num_records; CI-sized override)
//   --json          one JSON object on stdout (keys below) instead of a table
//   --noise         also measure per-stage noise with the test-only hook (one extra query)
//   --implicit-db   force SPIRAL's implicit-database convention; it is used automatically when
//                   the preprocessed database would exceed --max-db-gib (default 8)
//   --max-db-gib G  memory budget for the preprocessed database
// The database is random (every plaintext of the params' shape filled from a CSPRNG), indices are
// uniform in [0, records), and every decoded plaintext is checked against the expected one.
// JSON keys: correct, server_seconds, threads, stages{name: seconds}, query_bytes,
// response_bytes, public_params_bytes, db_bytes, preprocessed_db_bytes,
// throughput_bytes_per_second, implicit_db, plus server_cpu_seconds (process CPU time of the
// answer: on a loaded machine a better figure than wall time), stages_cpu{name: seconds}, trials, records, record_size,
// client_seconds{keygen, public_params, query, decode}, public_params_expand_seconds,
// db_build_seconds, peak_memory_bytes, kernel_path, params_hash, noise{stage: {variance,
// log2_variance, max_abs, count}} (with --noise).
#pragma once

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "spiralpir/noise.hpp"
#include "spiralpir/service.hpp"

namespace spiralpir {

namespace bench_detail {
/// Physical layout of the benchmark's implicit (cyclic) database: keep >= 1 GiB of distinct
/// data, repeating whole instances first so every answer task still streams its full, distinct
/// slice from memory; only if one instance alone is over the budget are folding indices repeated
/// (j mod phys_j). Repeating folding indices first left slices cache-resident and flattered speed.
struct ImplicitLayout {
  std::size_t phys_inst, phys_j;
};
inline ImplicitLayout implicit_db_layout(double db_bytes, std::size_t instances, std::size_t J, double budget) {
  const double gib = 1073741824.0;
  const double per_inst = db_bytes / static_cast<double>(instances);
  ImplicitLayout l{1, J};
  while (l.phys_inst < instances && per_inst * static_cast<double>(l.phys_inst) < gib) ++l.phys_inst;
  if (per_inst * static_cast<double>(l.phys_inst) > budget) {
    l.phys_inst = 1;
    const double per_j = per_inst / static_cast<double>(J);
    l.phys_j = 1;
    while (l.phys_j < J && per_j * static_cast<double>(l.phys_j) < gib) l.phys_j *= 2;
  }
  return l;
}
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}
inline double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
inline std::uint64_t peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::uint64_t>(ru.ru_maxrss) * 1024;
}
inline std::string json_num(double x) {
  if (!std::isfinite(x)) return "null";
  std::ostringstream o;
  o.precision(9);
  o << x;
  return o.str();
}
/// streaming figures (one query prepared once, then answered per database), both benchmarks
struct StreamingStats {
  double prepare = 0, per_db = 0, per_db_cpu = 0, fd_cpu = 0;  // fd_cpu: variants only (0 = not measured)
  double stages[4] = {0, 0, 0, 0};                              // first_dimension, folding, packing, modswitch
  bool correct = true;
};
inline constexpr const char* kStreamingStageNames[4] = {"first_dimension", "folding", "packing", "modswitch"};
/// the "streaming" JSON object (keys in the file comment of variant_bench.hpp)
inline void write_streaming_json(std::ostream& o, const StreamingStats& st, double db_bytes, double pre_bytes) {
  o << ",\"streaming\":{\"prepare_seconds\":" << json_num(st.prepare)
    << ",\"per_database_seconds\":" << json_num(st.per_db)
    << ",\"per_database_cpu_seconds\":" << json_num(st.per_db_cpu)
    << ",\"throughput_bytes_per_second\":" << json_num(st.per_db > 0 ? db_bytes / st.per_db : 0)
    << ",\"first_dimension_bytes_per_second\":" << json_num(st.stages[0] > 0 ? pre_bytes / st.stages[0] : 0)
    << ",\"first_dimension_cpu_seconds\":" << json_num(st.fd_cpu)
    << ",\"first_dimension_bytes_per_cpu_second\":" << json_num(st.fd_cpu > 0 ? pre_bytes / st.fd_cpu : 0)
    << ",\"stages\":{";
  for (int s = 0; s < 4; ++s) o << (s ? "," : "") << "\"" << kStreamingStageNames[s] << "\":" << json_num(st.stages[s]);
  o << "}}";
}
inline void print_streaming(const StreamingStats& st, double db_bytes, double pre_bytes) {
  std::printf("  streaming: prepare (one-time) %.4f s, per database %.4f s, throughput %.1f MB/s\n", st.prepare,
              st.per_db, st.per_db > 0 ? db_bytes / st.per_db / 1e6 : 0.0);
  for (int s = 0; s < 4; ++s) std::printf("    %-19s %.4f s\n", kStreamingStageNames[s], st.stages[s]);
  std::printf("  first dimension streams the preprocessed db at %.2f GB/s", st.stages[0] > 0 ? pre_bytes / st.stages[0] / 1e9 : 0.0);
  if (st.fd_cpu > 0) std::printf(" (%.2f GB per CPU second)", pre_bytes / st.fd_cpu / 1e9);
  std::printf("\n");
}
struct Options {
  unsigned threads = 0;
  unsigned trials = 3;
  std::uint64_t records = 0;
  bool json = false, noise = false, implicit = false;
  double max_db_gib = 8;
};
inline Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw ArgumentError("bench: " + a + " needs a value");
      return argv[++i];
    };
    auto num = [&](const std::string& v) -> std::uint64_t {
      char* end = nullptr;
      const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0') throw ArgumentError("bench: " + a + " expects a number, got '" + v + "'");
      return x;
    };
    if (a == "--threads") o.threads = static_cast<unsigned>(num(next()));
    else if (a == "--trials") o.trials = static_cast<unsigned>(num(next()));
    else if (a == "--records") o.records = num(next());
    else if (a == "--json") o.json = true;
    else if (a == "--noise") o.noise = true;
    else if (a == "--implicit-db") o.implicit = true;
    else if (a == "--max-db-gib") o.max_db_gib = std::strtod(next().c_str(), nullptr);
    else if (a == "--help" || a == "-h")
      throw ArgumentError(
          "usage: bench [--threads T] [--trials K] [--records N] [--json] [--noise] [--implicit-db] [--max-db-gib G]");
    else throw ArgumentError("bench: unknown option " + a);
  }
  if (o.trials == 0) throw ArgumentError("bench: --trials must be >= 1");
  return o;
}
}  // namespace bench_detail

template <SpiralParams P>
int run_variant_bench(int argc, char** argv);  // variant_bench.hpp (issue 8)
template <SpiralParams P, class ClientT, class Expect>
bench_detail::StreamingStats measure_streaming(
    const Server<P>& server, const PublicParams<P>& pp, ClientT& client, std::uint64_t records, unsigned trials,
    Csprng& rng, Expect&& expected,
    const std::function<std::vector<std::uint8_t>(const std::vector<std::uint8_t>&)>& decode);  // variant_bench.hpp

/// records process CPU time at each stage boundary (the observer hooks run between stages)
template <SpiralParams P>
struct CpuStageClock : StageObserver<P> {
  using R = typename P::ring;
  double marks[kNumStages] = {};
  double start = 0;
  void begin() {
    start = bench_detail::process_cpu_seconds();
    for (auto& m : marks) m = 0;
  }
  void on_expansion(const std::vector<RegevCt<R>>&, const std::vector<RegevCt<R>>&) override {
    marks[0] = bench_detail::process_cpu_seconds();
  }
  void on_conversion(const std::vector<proto::MatN<R>>&, const std::vector<proto::MatN<R>>&) override {
    marks[1] = bench_detail::process_cpu_seconds();
  }
  void on_first_dimension(const std::vector<proto::MatN<R>>&) override { marks[2] = marks[3] = bench_detail::process_cpu_seconds(); }
  void on_fold(unsigned, const std::vector<proto::MatN<R>>&) override { marks[3] = bench_detail::process_cpu_seconds(); }
  /// per-stage CPU seconds given the CPU time at the end of the answer
  std::array<double, kNumStages> stages(double end) const {
    std::array<double, kNumStages> out{};
    double prev = start;
    for (std::size_t i = 0; i < 4; ++i) {
      out[i] = marks[i] - prev;
      prev = marks[i];
    }
    out[4] = end - prev;
    return out;
  }
};

template <SpiralParams P>
int run_bench(int argc, char** argv) {
  if constexpr (P::variant != Variant::spiral) {  // issue 8: stream / pack / stream_pack
    return run_variant_bench<P>(argc, argv);
  } else {
  using D = Derived<P>;
  using clock = std::chrono::steady_clock;
  using bench_detail::json_num;
  auto secs = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  try {
    const bench_detail::Options opt = bench_detail::parse(argc, argv);
    const std::uint64_t records = opt.records ? opt.records : P::num_records;
    if (records == 0 || records > D::num_items)
      throw ArgumentError("bench: --records must be in [1, " + std::to_string(D::num_items) + "]");
    const unsigned threads = resolve_threads(opt.threads);

    // database: random plaintexts; implicit (cyclic) when too large for the budget
    using DB = Database<P>;
    std::size_t phys_inst = D::instances, phys_j = DB::J;
    const double budget = opt.max_db_gib * 1073741824.0;
    const bool implicit = opt.implicit || static_cast<double>(D::preprocessed_db_bytes) > budget;
    if (implicit) {
      const auto l = bench_detail::implicit_db_layout(static_cast<double>(D::preprocessed_db_bytes), D::instances,
                                                      DB::J, budget);
      phys_inst = l.phys_inst;
      phys_j = l.phys_j;
    }
    Seed data_seed;
    os_entropy(data_seed.data(), data_seed.size());
    auto source = [&](std::uint64_t inst, std::uint64_t pt, std::uint8_t* out) {
      Csprng g(data_seed, inst * D::num_pts + pt);
      g.fill(out, DB::pt_bytes);
    };
    Server<P> server(threads);
    const auto tb0 = clock::now();
    server.database().build(source, records, threads, phys_inst, phys_j);
    const double db_build = secs(tb0, clock::now());

    // client
    const auto t0 = clock::now();
    Client<P> client;
    const auto t1 = clock::now();
    const auto ppb = client.public_params();
    const auto t2 = clock::now();
    const auto pp = PublicParams<P>::load(ppb.data(), ppb.size(), threads);
    const auto t3 = clock::now();

    Csprng rng;
    std::vector<double> total, q_t, d_t, cpu_t;
    std::vector<std::vector<double>> stage(kNumStages), stage_cpu(kNumStages);
    bool correct = true;
    std::size_t qbytes = 0, rbytes = 0;
    auto expected_pts = [&](std::uint64_t item) {
      const auto loc = ItemLocation<P>::of(item);
      std::vector<std::uint8_t> e(D::instances * DB::pt_bytes);
      const std::uint64_t pj = loc.j % server.database().phys_j();
      for (std::size_t inst = 0; inst < D::instances; ++inst)
        source(inst % server.database().phys_instances(), loc.i * DB::J + pj, e.data() + inst * DB::pt_bytes);
      return e;
    };
    for (unsigned t = 0; t < opt.trials; ++t) {
      const std::uint64_t idx = rng.uniform_mod(records);
      const auto a = clock::now();
      const auto qb = client.query(idx);
      const auto b = clock::now();
      double st[kNumStages] = {};
      CpuStageClock<P> cpu_clock;
      cpu_clock.begin();
      const auto resp = server.answer(pp, qb.data(), qb.size(), st, &cpu_clock);
      const auto c = clock::now();
      const double cpu_end = bench_detail::process_cpu_seconds();
      cpu_t.push_back(cpu_end - cpu_clock.start);
      const auto cs = cpu_clock.stages(cpu_end);
      for (std::size_t s = 0; s < kNumStages; ++s) stage_cpu[s].push_back(cs[s]);
      const auto pts = client.core().decode_plaintexts(resp.data(), resp.size());
      const auto e = clock::now();
      correct = correct && pts == expected_pts(idx);
      q_t.push_back(secs(a, b));
      total.push_back(secs(b, c));
      d_t.push_back(secs(c, e));
      for (std::size_t s = 0; s < kNumStages; ++s) stage[s].push_back(st[s]);
      qbytes = qb.size();
      rbytes = resp.size();
    }

    // the streaming setting, measured exactly as for the variants (answer_prepared: every stage
    // after the one-time expansion and conversion), so that ratios are like for like
    const bench_detail::StreamingStats stream = measure_streaming<P>(
        server, pp, client, records, opt.trials, rng, expected_pts,
        [&](const std::vector<std::uint8_t>& r) { return client.core().decode_plaintexts(r.data(), r.size()); });
    correct = correct && stream.correct;

    std::vector<std::pair<std::string, NoiseStat>> noise;
    if (opt.noise) {
      const std::uint64_t idx = rng.uniform_mod(records);
      const auto qb = client.query(idx);
      NoiseMeter<P> meter(client.core(), idx);
      const auto resp = server.answer(pp, qb.data(), qb.size(), nullptr, &meter);
      meter.on_response(resp.data(), resp.size());
      correct = correct && client.core().decode_plaintexts(resp.data(), resp.size()) == expected_pts(idx);
      noise = meter.results();
    }

    const double server_s = bench_detail::median(total);
    const double db_bytes = static_cast<double>(records) * static_cast<double>(P::record_size);
    std::vector<std::string> names;
    {
      std::string s = kStageNames, cur;
      for (char ch : s) {
        if (ch == ',') { names.push_back(cur); cur.clear(); } else cur += ch;
      }
      names.push_back(cur);
    }
    const char* path = FirstDim<P>::use_avx512() ? "avx512" : "portable";
    std::string hash;
    {
      static const char* hex = "0123456789abcdef";
      for (auto b : params_hash<P>()) { hash += hex[b >> 4]; hash += hex[b & 15]; }
    }
    if (opt.json) {
      std::ostringstream o;
      o << "{\"correct\":" << (correct ? "true" : "false") << ",\"server_seconds\":" << json_num(server_s)
        << ",\"server_cpu_seconds\":" << json_num(bench_detail::median(cpu_t)) << ",\"threads\":" << threads
        << ",\"stages\":{";
      for (std::size_t s = 0; s < kNumStages; ++s)
        o << (s ? "," : "") << "\"" << names[s] << "\":" << json_num(bench_detail::median(stage[s]));
      o << "},\"stages_cpu\":{";
      for (std::size_t s = 0; s < kNumStages; ++s)
        o << (s ? "," : "") << "\"" << names[s] << "\":" << json_num(bench_detail::median(stage_cpu[s]));
      o << "},\"query_bytes\":" << qbytes << ",\"response_bytes\":" << rbytes
        << ",\"public_params_bytes\":" << ppb.size() << ",\"db_bytes\":" << records * P::record_size
        << ",\"preprocessed_db_bytes\":" << D::preprocessed_db_bytes
        << ",\"throughput_bytes_per_second\":" << json_num(server_s > 0 ? db_bytes / server_s : 0)
        << ",\"implicit_db\":" << (server.database().implicit() ? "true" : "false") << ",\"trials\":" << opt.trials
        << ",\"records\":" << records << ",\"record_size\":" << P::record_size << ",\"client_seconds\":{\"keygen\":"
        << json_num(secs(t0, t1)) << ",\"public_params\":" << json_num(secs(t1, t2))
        << ",\"query\":" << json_num(bench_detail::median(q_t)) << ",\"decode\":" << json_num(bench_detail::median(d_t))
        << "},\"public_params_expand_seconds\":" << json_num(secs(t2, t3)) << ",\"db_build_seconds\":"
        << json_num(db_build) << ",\"peak_memory_bytes\":" << bench_detail::peak_rss_bytes() << ",\"kernel_path\":\""
        << path << "\",\"params_hash\":\"" << hash << "\"";
      bench_detail::write_streaming_json(o, stream, db_bytes, static_cast<double>(D::preprocessed_db_bytes));
      if (opt.noise) {
        o << ",\"noise\":{";
        for (std::size_t s = 0; s < noise.size(); ++s)
          o << (s ? "," : "") << "\"" << noise[s].first << "\":{\"variance\":" << json_num(noise[s].second.variance())
            << ",\"log2_variance\":" << json_num(noise[s].second.log2_variance())
            << ",\"max_abs\":" << json_num(noise[s].second.max_abs) << ",\"count\":" << noise[s].second.count << "}";
        o << "}";
      }
      o << "}\n";
      std::cout << o.str();
    } else {
      std::printf("spiralpir bench  params %s  records %llu x %llu B  threads %u  trials %u  kernel %s%s\n", hash.c_str(),
                  static_cast<unsigned long long>(records), static_cast<unsigned long long>(P::record_size), threads,
                  opt.trials, path, server.database().implicit() ? "  (implicit db)" : "");
      std::printf("  correct               %s\n", correct ? "yes" : "NO");
      std::printf("  server (median)       %.4f s   throughput %.1f MB/s   (process CPU %.4f s)\n", server_s,
                  db_bytes / server_s / 1e6, bench_detail::median(cpu_t));
      for (std::size_t s = 0; s < kNumStages; ++s)
        std::printf("    %-19s %.4f s   (CPU %.4f s)\n", names[s].c_str(), bench_detail::median(stage[s]),
                    bench_detail::median(stage_cpu[s]));
      bench_detail::print_streaming(stream, db_bytes, static_cast<double>(D::preprocessed_db_bytes));
      std::printf("  client keygen %.4f s, public params %.4f s, query %.4f s, decode %.4f s\n", secs(t0, t1),
                  secs(t1, t2), bench_detail::median(q_t), bench_detail::median(d_t));
      std::printf("  server: public params expand %.4f s, db build %.2f s\n", secs(t2, t3), db_build);
      std::printf("  sizes: query %zu B, response %zu B, public params %zu B, preprocessed db %llu B\n", qbytes, rbytes,
                  ppb.size(), static_cast<unsigned long long>(D::preprocessed_db_bytes));
      std::printf("  peak memory %.1f MiB\n", static_cast<double>(bench_detail::peak_rss_bytes()) / 1048576.0);
      for (const auto& [name, st] : noise)
        std::printf("  noise %-18s var 2^%.2f  max |e| %.4g  (%llu coeffs)\n", name.c_str(), st.log2_variance(),
                    st.max_abs, static_cast<unsigned long long>(st.count));
    }
    return correct ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error: %s\n", e.what());
    return 3;
  }
  }  // vanilla
}

}  // namespace spiralpir

#include "spiralpir/variant_bench.hpp"
