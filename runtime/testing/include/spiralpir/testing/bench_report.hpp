// spiralpir/testing/bench_report.hpp — what a benchmark run reports and how (bench_driver.hpp
// runs it): options, the report record, its JSON object and its table, and the helpers they need
// (medians, process CPU time, the implicit database's layout). JSON keys: bench_driver.hpp.
#pragma once

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "spiralpir/core/parallel.hpp"
#include "spiralpir/spiral/first_dim.hpp"
#include "spiralpir/testing/noise.hpp"

namespace spiralpir {

namespace bench_detail {
/// Physical layout of the benchmark's implicit (cyclic) database: keep >= `distinct` bytes (default
/// 1 GiB) of distinct data, repeating whole instances first so every answer task still streams its
/// full, distinct slice from memory; only if one instance alone is over the budget are folding
/// indices repeated (j mod phys_j). Repeating folding indices first left slices cache-resident and
/// flattered speed. (Calibration asks for a small `distinct` on purpose: it times those repeats.)
struct ImplicitLayout {
  std::size_t phys_inst, phys_j;
};
inline constexpr double kImplicitDistinctBytes = 1073741824.0;
inline ImplicitLayout implicit_db_layout(double db_bytes, std::size_t instances, std::size_t J, double budget,
                                         double distinct = kImplicitDistinctBytes) {
  const double per_inst = db_bytes / static_cast<double>(instances);
  ImplicitLayout l{1, J};
  while (l.phys_inst < instances && per_inst * static_cast<double>(l.phys_inst) < distinct) ++l.phys_inst;
  if (per_inst * static_cast<double>(l.phys_inst) > budget) {
    l.phys_inst = 1;
    const double per_j = per_inst / static_cast<double>(J);
    l.phys_j = 1;
    while (l.phys_j < J && per_j * static_cast<double>(l.phys_j) < distinct) l.phys_j *= 2;
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
/// The calling thread's CPU time plus the pool's critical-path adjustment (core/parallel.hpp
/// CriticalPath, while enabled): the difference over a stretch of code estimates its wall time on
/// an uncontended machine, so several-thread runs stay comparable while other processes load it.
inline double uncontended_seconds() {
  return 1e-9 * static_cast<double>(static_cast<std::int64_t>(detail_pool::thread_cpu_ns()) +
                                    detail_pool::CriticalPath::adjust_ns().load());
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
/// streaming figures (one query prepared once, then answered per database)
struct StreamingStats {
  double prepare = 0, per_db = 0, per_db_cpu = 0, fd_cpu = 0;  // fd_cpu: variants only (0 = not measured)
  double stages[4] = {0, 0, 0, 0};                              // first_dimension, folding, packing, modswitch
  bool correct = true;
};
inline constexpr const char* kStreamingStageNames[4] = {"first_dimension", "folding", "packing", "modswitch"};
/// the "streaming" JSON object (keys in the file comment of bench_driver.hpp)
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
  double implicit_distinct_mib = kImplicitDistinctBytes / 1048576.0;
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
    else if (a == "--implicit-distinct-mib") {
      const std::string v = next();
      char* end = nullptr;
      o.implicit_distinct_mib = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(o.implicit_distinct_mib > 0))
        throw ArgumentError("bench: --implicit-distinct-mib expects a number > 0, got '" + v + "'");
    } else if (a == "--help" || a == "-h")
      throw ArgumentError(
          "usage: bench [--threads T] [--trials K] [--records N] [--json] [--noise] [--implicit-db] [--max-db-gib G] "
          "[--implicit-distinct-mib M]");
    else throw ArgumentError("bench: unknown option " + a);
  }
  if (o.trials == 0) throw ArgumentError("bench: --trials must be >= 1");
  return o;
}
/// What a benchmark run reports;
/// write_report_json / print_report render it (JSON keys in this file's comment).
struct Report {
  bool correct = false;
  const char* variant = nullptr;  // variants only: vanilla's JSON has no "variant" key
  unsigned threads = 0, trials = 0;
  double server_s = 0, server_cpu_s = 0;
  double server_uncontended_s = 0;  // several threads: the uncontended wall estimate (0: not measured)
  std::vector<std::string> stage_names;
  std::vector<double> stage_s, stage_cpu_s;  // stage_cpu_s empty when not measured
  std::size_t query_bytes = 0, response_bytes = 0, public_params_bytes = 0;
  std::uint64_t records = 0, record_size = 0, preprocessed_db_bytes = 0;
  bool implicit_db = false;
  std::size_t phys_instances = 0, phys_j = 0;  // the implicit database's stored instances and folding indices
  double keygen_s = 0, public_params_s = 0, query_s = 0, decode_s = 0, expand_s = 0, db_build_s = 0;
  const char* kernel_path = "";
  std::string params_hash;
  StreamingStats stream;
  bool noise_measured = false;
  std::vector<std::pair<std::string, NoiseStat>> noise;
  double db_bytes() const { return static_cast<double>(records) * static_cast<double>(record_size); }
};
/// "a,b,c" -> {"a", "b", "c"}
inline std::vector<std::string> split_names(const char* csv) {
  std::vector<std::string> names(1);
  for (const char* c = csv; *c; ++c) {
    if (*c == ',') names.emplace_back();
    else names.back() += *c;
  }
  return names;
}
template <class Bytes>
std::string hex(const Bytes& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (auto b : bytes) { out += digits[b >> 4]; out += digits[b & 15]; }
  return out;
}
inline void write_report_json(std::ostream& o, const Report& r) {
  auto stages = [&](const char* key, const std::vector<double>& v) {
    o << ",\"" << key << "\":{";
    for (std::size_t s = 0; s < v.size(); ++s) o << (s ? "," : "") << "\"" << r.stage_names[s] << "\":" << json_num(v[s]);
    o << "}";
  };
  o << "{\"correct\":" << (r.correct ? "true" : "false");
  if (r.variant) o << ",\"variant\":\"" << r.variant << "\"";
  o << ",\"server_seconds\":" << json_num(r.server_s) << ",\"server_cpu_seconds\":" << json_num(r.server_cpu_s)
    << ",\"threads\":" << r.threads;
  if (r.server_uncontended_s > 0) o << ",\"server_uncontended_seconds\":" << json_num(r.server_uncontended_s);
  stages("stages", r.stage_s);
  if (!r.stage_cpu_s.empty()) stages("stages_cpu", r.stage_cpu_s);
  o << ",\"query_bytes\":" << r.query_bytes << ",\"response_bytes\":" << r.response_bytes
    << ",\"public_params_bytes\":" << r.public_params_bytes << ",\"db_bytes\":" << r.records * r.record_size
    << ",\"preprocessed_db_bytes\":" << r.preprocessed_db_bytes
    << ",\"throughput_bytes_per_second\":" << json_num(r.server_s > 0 ? r.db_bytes() / r.server_s : 0)
    << ",\"implicit_db\":" << (r.implicit_db ? "true" : "false");
  if (r.implicit_db)
    o << ",\"implicit_layout\":{\"instances\":" << r.phys_instances << ",\"folding\":" << r.phys_j << "}";
  o << ",\"trials\":" << r.trials
    << ",\"records\":" << r.records << ",\"record_size\":" << r.record_size << ",\"client_seconds\":{\"keygen\":"
    << json_num(r.keygen_s) << ",\"public_params\":" << json_num(r.public_params_s) << ",\"query\":" << json_num(r.query_s)
    << ",\"decode\":" << json_num(r.decode_s) << "},\"public_params_expand_seconds\":" << json_num(r.expand_s)
    << ",\"db_build_seconds\":" << json_num(r.db_build_s) << ",\"peak_memory_bytes\":" << peak_rss_bytes()
    << ",\"kernel_path\":\"" << r.kernel_path << "\",\"params_hash\":\"" << r.params_hash << "\"";
  write_streaming_json(o, r.stream, r.db_bytes(), static_cast<double>(r.preprocessed_db_bytes));
  if (r.noise_measured) {
    o << ",\"noise\":{";
    for (std::size_t s = 0; s < r.noise.size(); ++s)
      o << (s ? "," : "") << "\"" << r.noise[s].first << "\":{\"variance\":" << json_num(r.noise[s].second.variance())
        << ",\"log2_variance\":" << json_num(r.noise[s].second.log2_variance())
        << ",\"max_abs\":" << json_num(r.noise[s].second.max_abs) << ",\"count\":" << r.noise[s].second.count << "}";
    o << "}";
  }
  o << "}\n";
}
inline void print_report(const Report& r) {
  std::printf("spiralpir bench  %s%sparams %s  records %llu x %llu B  threads %u  trials %u  kernel %s%s\n",
              r.variant ? r.variant : "", r.variant ? "  " : "", r.params_hash.c_str(),
              static_cast<unsigned long long>(r.records), static_cast<unsigned long long>(r.record_size), r.threads,
              r.trials, r.kernel_path, r.implicit_db ? "  (implicit db)" : "");
  std::printf("  correct               %s\n", r.correct ? "yes" : "NO");
  std::printf("  server (median)       %.4f s   throughput %.1f MB/s", r.server_s, r.db_bytes() / r.server_s / 1e6);
  if (!r.stage_cpu_s.empty()) std::printf("   (process CPU %.4f s)", r.server_cpu_s);
  std::printf("\n");
  for (std::size_t s = 0; s < r.stage_s.size(); ++s) {
    std::printf("    %-19s %.4f s", r.stage_names[s].c_str(), r.stage_s[s]);
    if (!r.stage_cpu_s.empty()) std::printf("   (CPU %.4f s)", r.stage_cpu_s[s]);
    std::printf("\n");
  }
  print_streaming(r.stream, r.db_bytes(), static_cast<double>(r.preprocessed_db_bytes));
  std::printf("  client keygen %.4f s, public params %.4f s, query %.4f s, decode %.4f s\n", r.keygen_s,
              r.public_params_s, r.query_s, r.decode_s);
  std::printf("  server: public params expand %.4f s, db build %.2f s\n", r.expand_s, r.db_build_s);
  std::printf("  sizes: query %zu B, response %zu B, public params %zu B, preprocessed db %llu B\n", r.query_bytes,
              r.response_bytes, r.public_params_bytes, static_cast<unsigned long long>(r.preprocessed_db_bytes));
  std::printf("  peak memory %.1f MiB\n", static_cast<double>(peak_rss_bytes()) / 1048576.0);
  for (const auto& [name, st] : r.noise)
    std::printf("  noise %-18s var 2^%.2f  max |e| %.4g  (%llu coeffs)\n", name.c_str(), st.log2_variance(), st.max_abs,
                static_cast<unsigned long long>(st.count));
}
/// The database, the parameters' identity and the first-dimension kernel path (K: the type the
/// first dimension runs on — P, or a variant's computation type).
template <SpiralParams P, SpiralParams K, class ServerT>
void describe_instance(Report& r, const ServerT& server, std::uint64_t records) {
  r.records = records;
  r.record_size = P::record_size;
  r.preprocessed_db_bytes = Derived<P>::preprocessed_db_bytes;
  r.implicit_db = server.database().implicit();
  r.phys_instances = server.database().phys_instances();
  r.phys_j = server.database().phys_j();
  r.kernel_path = FirstDim<K>::kernel_path() == Path::native ? "portable" : path_name(FirstDim<K>::kernel_path());
  r.params_hash = hex(params_hash<P>());
}
/// Prints the report (JSON with --json); the driver's exit status: 0 if every answer decoded.
inline int emit_report(const Report& r, bool json) {
  if (json) {
    std::ostringstream o;
    write_report_json(o, r);
    std::cout << o.str();
  } else {
    print_report(r);
  }
  return r.correct ? 0 : 1;
}
}  // namespace bench_detail

}  // namespace spiralpir
