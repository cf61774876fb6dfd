// spiralpir/testing/bench_driver.hpp — `int spiralpir::run_bench<P>(argc, argv)`, the body of every
// generated benchmark executable (and of `spiralpir bench`), for every variant.
//
// Options:
//   --threads T     server threads (default 0 = all cores)
//   --trials K      queries to answer (default 3), after one untimed warm-up answer; times are
//                   medians over trials
//   --records N     number of records (default P::num_records; CI-sized override)
//   --json          one JSON object on stdout (keys below) instead of a table
//   --noise         also measure per-stage noise with the test-only hook (one extra query)
//   --implicit-db   force SPIRAL's implicit-database convention; it is used automatically when
//                   the preprocessed database would exceed --max-db-gib (default 8)
//   --max-db-gib G  memory budget for the preprocessed database
//   --implicit-distinct-mib M  distinct data an implicit database keeps (default 1024): with a
//                   small M and --max-db-gib 0 it repeats folding indices, as the largest shapes do
// The database is `records` random records of record_size bytes, laid out by the library's record
// source; indices are uniform in [0, records), and every decoded record is checked against the
// bytes at index·record_size of the records the database was built from (bench_records.hpp) —
// never through the client's own index mapping. Randomness (records, keys, queries) comes from
// SPIRALPIR_TEST_SEED or its fixed default (test_seed.hpp); a wrong record prints the seed.
// JSON keys: correct, server_seconds, threads, stages{name: seconds} (expansion, conversion,
// first_dimension, folding, modswitch — for pack variants modswitch includes the packing),
// query_bytes, response_bytes, public_params_bytes, db_bytes, preprocessed_db_bytes,
// throughput_bytes_per_second, implicit_db, implicit_layout{instances, folding} (implicit only: the
// instances and folding indices stored; logical ones map to them cyclically), server_cpu_seconds (process CPU time of the answer:
// on a loaded machine a better figure than wall time), server_uncontended_seconds (several threads
// only: the answer's wall time on an uncontended machine, estimated from every pool task's thread
// CPU time replayed on the threads — core/parallel.hpp CriticalPath), trials, records, record_size,
// client_seconds{keygen, public_params, query, decode}, public_params_expand_seconds,
// db_build_seconds, peak_memory_bytes, kernel_path, params_hash,
//   "streaming": {"prepare_seconds" (one-time: parse + expansion + conversion, median),
//                 "per_database_seconds" (median of answer_prepared: first dimension + folding +
//                 packing + modulus switching), "per_database_cpu_seconds",
//                 "throughput_bytes_per_second" (db_bytes / per_database_seconds),
//                 "stages": {first_dimension, folding, packing, modswitch},
//                 "first_dimension_bytes_per_second" (preprocessed_db_bytes / first-dimension s),
//                 "first_dimension_cpu_seconds", "first_dimension_bytes_per_cpu_second"},
//   noise{stage: {variance, log2_variance, max_abs, count}} (with --noise: the stages of
//   noise.hpp; stream's "expansion" = the uploaded cts; pack adds "packing", the final cts).
// Vanilla SPIRAL also reports stages_cpu{name: seconds}; the other variants report "variant" and
// the first dimension's process CPU time in the streaming measurement.
#pragma once

#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "spiralpir/spiral/service.hpp"
#include "spiralpir/testing/bench_records.hpp"
#include "spiralpir/testing/bench_report.hpp"
#include "spiralpir/testing/noise.hpp"
#include "spiralpir/testing/test_seed.hpp"

namespace spiralpir {

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
  void on_conversion(const std::vector<rlwe::MatN<R>>&, const std::vector<rlwe::MatN<R>>&) override {
    marks[1] = bench_detail::process_cpu_seconds();
  }
  bool needs_first_matrices() const override { return false; }
  void on_first_dimension(const std::vector<rlwe::MatN<R>>&) override { marks[2] = marks[3] = bench_detail::process_cpu_seconds(); }
  void on_fold(unsigned, const std::vector<rlwe::MatN<R>>&) override { marks[3] = bench_detail::process_cpu_seconds(); }
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

/// The streaming measurement: prepare once, answer `trials` times with the prepared query; checks
/// every decoded record.
template <SpiralParams P>
bench_detail::StreamingStats measure_streaming(const Server<P>& server, const PublicParams<P>& pp, Client<P>& client,
                                               std::uint64_t records, unsigned trials, Csprng& rng,
                                               const BenchRecords<P>& expected) {
  using C = typename VariantOf<P>::Comp;
  using clock = std::chrono::steady_clock;
  constexpr bool vanilla = P::variant == Variant::spiral;
  bench_detail::StreamingStats out;
  const std::uint64_t idx = rng.uniform_mod(records);
  const auto qb = client.query(idx, rng);
  const auto t0 = clock::now();
  const PreparedQuery<P> pq = server.prepare(pp, qb.data(), qb.size());
  out.prepare = std::chrono::duration<double>(clock::now() - t0).count();
  std::vector<double> tot, cpu, fdc;
  std::vector<std::vector<double>> st(4);
  // process CPU time of the first dimension alone (a loaded machine stretches wall time)
  struct FdMark : StageObserver<C> {
    double at = 0;
    void on_first_dimension(const std::vector<rlwe::MatN<typename P::ring>>&) override {
      at = bench_detail::process_cpu_seconds();
    }
  };
  for (unsigned t = 0; t < trials; ++t) {
    double s4[4] = {};
    FdMark mark;
    const double c0 = bench_detail::process_cpu_seconds();
    const auto a = clock::now();
    const auto resp = server.answer_prepared(pq, server.database(), s4, vanilla ? nullptr : &mark);
    if (!vanilla) fdc.push_back(mark.at - c0);
    tot.push_back(std::chrono::duration<double>(clock::now() - a).count());
    cpu.push_back(bench_detail::process_cpu_seconds() - c0);
    for (int s = 0; s < 4; ++s) st[s].push_back(s4[s]);
    out.correct = expected.check(client, idx, resp) && out.correct;
  }
  out.per_db = bench_detail::median(tot);
  out.per_db_cpu = bench_detail::median(cpu);
  out.fd_cpu = bench_detail::median(fdc);
  for (int s = 0; s < 4; ++s) out.stages[s] = bench_detail::median(st[s]);
  return out;
}

/// Per-stage noise of one query (the test-only hook; needs the client's secrets).
template <SpiralParams P>
std::vector<std::pair<std::string, NoiseStat>> measure_noise(const Server<P>& server, const PublicParams<P>& pp,
                                                             Client<P>& client, std::uint64_t idx, Csprng& rng,
                                                             bool& correct, const BenchRecords<P>& expected) {
  using V = VariantOf<P>;
  const auto qb = client.query(idx, rng);
  NoiseMeter<typename V::Comp> meter(client.comp(), V::comp_item(idx));
  const auto pq = server.prepare(pp, qb.data(), qb.size(), &meter);
  std::vector<rlwe::MatN<typename P::ring>> finals;
  const auto resp = server.answer_prepared(pq, server.database(), nullptr, &meter, &finals);
  auto noise = meter.results();
  NoiseMeter<P> outer(client.outer(), idx);
  if constexpr (V::pack) {
    outer.on_first_dimension(finals);  // the packed cts
    noise.emplace_back("packing", outer.results().back().second);
  }
  outer.on_response(resp.data(), resp.size());
  noise.emplace_back("modswitch", outer.results().back().second);
  correct = expected.check(client, idx, resp) && correct;
  return noise;
}

template <SpiralParams P>
int run_bench(int argc, char** argv) {
  using D = Derived<P>;
  using V = VariantOf<P>;
  using C = typename V::Comp;
  using DB = Database<C>;
  using clock = std::chrono::steady_clock;
  constexpr bool vanilla = P::variant == Variant::spiral;
  auto secs = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  try {
    const bench_detail::Options opt = bench_detail::parse(argc, argv);
    const std::uint64_t records = opt.records ? opt.records : P::num_records;
    if (records == 0 || records > D::num_items)
      throw ArgumentError("bench: --records must be in [1, " + std::to_string(D::num_items) + "]");
    const unsigned threads = resolve_threads(opt.threads);

    // database: random computation plaintexts; implicit (cyclic) when too large for the budget
    std::size_t phys_inst = DB::D::instances, phys_j = DB::J;
    const double budget = opt.max_db_gib * 1073741824.0;
    const bool implicit = opt.implicit || static_cast<double>(D::preprocessed_db_bytes) > budget;
    if (implicit) {
      const auto l = bench_detail::implicit_db_layout(static_cast<double>(D::preprocessed_db_bytes),
                                                      DB::D::instances, DB::J, budget,
                                                      opt.implicit_distinct_mib * 1048576.0);
      phys_inst = l.phys_inst;
      phys_j = l.phys_j;
    }
    BenchRecords<P> db_records(testing::test_seed("bench records"), records);
    Server<P> server(threads);
    const auto tb0 = clock::now();
    server.database().build(V::comp_source(db_records.source()), records, threads, phys_inst, phys_j);
    const double db_build = secs(tb0, clock::now());
    db_records.served_by(server.database());

    // client
    const auto t0 = clock::now();
    Client<P> client(testing::test_seed("bench client"));
    const auto t1 = clock::now();
    const auto ppb = client.public_params();
    const auto t2 = clock::now();
    const auto pp = PublicParams<P>::load(ppb.data(), ppb.size(), threads);
    const auto t3 = clock::now();

    Csprng rng = testing::test_rng("bench queries");
    bool correct = true;
    {  // one untimed answer first: the trials time a warm server (pages of its buffers and of
       // the expanded public parameters touched, the thread pool started), as a serving one is
      const std::uint64_t idx = rng.uniform_mod(records);
      const auto qb = client.query(idx, rng);
      std::vector<std::uint8_t> rec(P::record_size);
      const auto resp = server.answer(pp, qb.data(), qb.size(), nullptr, nullptr);
      client.decode(idx, resp.data(), resp.size(), rec.data(), rec.size());
      correct = db_records.matches(idx, rec);
    }
    std::vector<double> total, q_t, d_t, cpu_t, unc_t;
    std::vector<std::vector<double>> stage(kNumStages), stage_cpu(kNumStages);
    // several threads: also the uncontended wall estimate (two clock reads per pool task)
    detail_pool::CriticalPath::enabled() = threads > 1;
    std::size_t qbytes = 0, rbytes = 0;
    for (unsigned t = 0; t < opt.trials; ++t) {
      const std::uint64_t idx = rng.uniform_mod(records);
      const auto a = clock::now();
      const auto qb = client.query(idx, rng);
      const auto b = clock::now();
      double st[kNumStages] = {};
      CpuStageClock<C> cpu_clock;
      const double u0 = bench_detail::uncontended_seconds();
      cpu_clock.begin();
      const auto resp = server.answer(pp, qb.data(), qb.size(), st, vanilla ? &cpu_clock : nullptr);
      const auto c = clock::now();
      const double cpu_end = bench_detail::process_cpu_seconds();
      unc_t.push_back(bench_detail::uncontended_seconds() - u0);
      cpu_t.push_back(cpu_end - cpu_clock.start);
      if (vanilla) {
        const auto cs = cpu_clock.stages(cpu_end);
        for (std::size_t s = 0; s < kNumStages; ++s) stage_cpu[s].push_back(cs[s]);
      }
      std::vector<std::uint8_t> rec(P::record_size);
      client.decode(idx, resp.data(), resp.size(), rec.data(), rec.size());
      const auto e = clock::now();
      correct = db_records.matches(idx, rec) && correct;
      q_t.push_back(secs(a, b));
      total.push_back(secs(b, c));
      d_t.push_back(secs(c, e));
      for (std::size_t s = 0; s < kNumStages; ++s) stage[s].push_back(st[s]);
      qbytes = qb.size();
      rbytes = resp.size();
    }
    detail_pool::CriticalPath::enabled() = false;
    const bench_detail::StreamingStats stream =
        measure_streaming<P>(server, pp, client, records, opt.trials, rng, db_records);
    correct = correct && stream.correct;

    std::vector<std::pair<std::string, NoiseStat>> noise;
    if (opt.noise) {
      const std::uint64_t idx = rng.uniform_mod(records);
      noise = measure_noise<P>(server, pp, client, idx, rng, correct, db_records);
    }
    if (!correct)
      std::fprintf(stderr, "bench: a decoded record differs from the database (SPIRALPIR_TEST_SEED=%llu)\n",
                   static_cast<unsigned long long>(testing::test_seed_value()));

    bench_detail::Report r;
    r.correct = correct;
    r.variant = vanilla ? nullptr : variant_name(P::variant);
    r.threads = threads;
    r.trials = opt.trials;
    r.server_s = bench_detail::median(total);
    r.server_cpu_s = bench_detail::median(cpu_t);
    if (threads > 1) r.server_uncontended_s = bench_detail::median(unc_t);
    r.stage_names = bench_detail::split_names(kStageNames);
    for (std::size_t s = 0; s < kNumStages; ++s) {
      r.stage_s.push_back(bench_detail::median(stage[s]));
      if (vanilla) r.stage_cpu_s.push_back(bench_detail::median(stage_cpu[s]));
    }
    r.query_bytes = qbytes;
    r.response_bytes = rbytes;
    r.public_params_bytes = ppb.size();
    bench_detail::describe_instance<P, C>(r, server, records);
    r.keygen_s = secs(t0, t1);
    r.public_params_s = secs(t1, t2);
    r.query_s = bench_detail::median(q_t);
    r.decode_s = bench_detail::median(d_t);
    r.expand_s = secs(t2, t3);
    r.db_build_s = db_build;
    r.stream = stream;
    r.noise_measured = opt.noise;
    r.noise = std::move(noise);
    return bench_detail::emit_report(r, opt.json);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error: %s\n", e.what());
    return 3;
  }
}

}  // namespace spiralpir
