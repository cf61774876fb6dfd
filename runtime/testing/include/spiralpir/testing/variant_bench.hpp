// spiralpir/testing/variant_bench.hpp — the benchmark body for SpiralStream / SpiralPack /
// SpiralStreamPack builds (run_bench<P> in bench_driver.hpp dispatches here when
// P::variant != spiral), and the streaming measurement for every variant.
//
// Same options and JSON keys as bench_driver.hpp (stages: expansion, conversion, first_dimension,
// folding, modswitch — for pack variants modswitch includes the packing), plus:
//   "variant", "server_cpu_seconds" (process CPU time of the answer)
//   "streaming": {"prepare_seconds" (one-time: parse + expansion + conversion, median),
//                 "per_database_seconds" (median of answer_prepared: first dimension + folding +
//                 packing + modulus switching), "throughput_bytes_per_second" (db_bytes /
//                 per_database_seconds), "stages": {first_dimension, folding, packing, modswitch},
//                 "first_dimension_bytes_per_second" (preprocessed_db_bytes / first-dimension s),
//                 "first_dimension_cpu_seconds", "first_dimension_bytes_per_cpu_second" (process
//                 CPU time: with 1 thread on a loaded machine, the figure that measures the kernel)}
//   "noise" (--noise): the computation stages of the noise hook (expansion = the uploaded cts for
//   stream), plus "packing" (the final (n+1)×n cts, rounded) and "modswitch".
#pragma once

#include "spiralpir/testing/bench_driver.hpp"
#include "spiralpir/spiral/variants.hpp"

namespace spiralpir {

/// Streaming measurement shared by the vanilla and variant benchmarks (declared in
/// bench_driver.hpp): prepare once, answer `trials` times with the prepared query; checks every
/// decoded plaintext.
template <SpiralParams P, class ClientT, class Expect>
bench_detail::StreamingStats measure_streaming(const Server<P>& server, const PublicParams<P>& pp, ClientT& client,
                                 std::uint64_t records, unsigned trials, Csprng& rng, Expect&& expected,
                                 const std::function<std::vector<std::uint8_t>(const std::vector<std::uint8_t>&)>& decode) {
  using clock = std::chrono::steady_clock;
  bench_detail::StreamingStats out;
  const std::uint64_t idx = rng.uniform_mod(records);
  const auto qb = client.query(idx);
  const auto t0 = clock::now();
  const PreparedQuery<P> pq = prepare_query(server, pp, qb.data(), qb.size());
  out.prepare = std::chrono::duration<double>(clock::now() - t0).count();
  std::vector<double> tot, cpu, fdc;
  std::vector<std::vector<double>> st(4);
  for (unsigned t = 0; t < trials; ++t) {
    double s4[4] = {};
    const double c0 = bench_detail::process_cpu_seconds();
    const auto a = clock::now();
    std::vector<std::uint8_t> resp;
    if constexpr (P::variant != Variant::spiral) {
      // process CPU time of the first dimension alone (a loaded machine stretches wall time)
      struct FdMark : StageObserver<typename VariantOf<P>::Comp> {
        double at = 0;
        void on_first_dimension(const std::vector<rlwe::MatN<typename P::ring>>&) override {
          at = bench_detail::process_cpu_seconds();
        }
      } mark;
      resp = server.answer_prepared(pq, server.database(), s4, &mark);
      fdc.push_back(mark.at - c0);
    } else {
      resp = answer_prepared(server, pq, s4);
    }
    tot.push_back(std::chrono::duration<double>(clock::now() - a).count());
    cpu.push_back(bench_detail::process_cpu_seconds() - c0);
    for (int s = 0; s < 4; ++s) st[s].push_back(s4[s]);
    out.correct = out.correct && decode(resp) == expected(idx);
  }
  out.per_db = bench_detail::median(tot);
  out.per_db_cpu = bench_detail::median(cpu);
  out.fd_cpu = bench_detail::median(fdc);
  for (int s = 0; s < 4; ++s) out.stages[s] = bench_detail::median(st[s]);
  return out;
}

template <SpiralParams P>
int run_variant_bench(int argc, char** argv) {
  using D = Derived<P>;
  using V = VariantOf<P>;
  using C = typename V::Comp;
  using DB = Database<C>;
  using clock = std::chrono::steady_clock;
  using bench_detail::json_num;
  auto secs = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  try {
    const bench_detail::Options opt = bench_detail::parse(argc, argv);
    const std::uint64_t records = opt.records ? opt.records : P::num_records;
    if (records == 0 || records > D::num_items)
      throw ArgumentError("bench: --records must be in [1, " + std::to_string(D::num_items) + "]");
    const unsigned threads = resolve_threads(opt.threads);

    std::size_t phys_inst = DB::D::instances, phys_j = DB::J;
    const double budget = opt.max_db_gib * 1073741824.0;
    const bool implicit = opt.implicit || static_cast<double>(D::preprocessed_db_bytes) > budget;
    if (implicit) {  // over the computation instances (pack: its sub-databases)
      const auto l = bench_detail::implicit_db_layout(static_cast<double>(D::preprocessed_db_bytes),
                                                      DB::D::instances, DB::J, budget);
      phys_inst = l.phys_inst;
      phys_j = l.phys_j;
    }
    Seed data_seed;
    os_entropy(data_seed.data(), data_seed.size());
    // random computation plaintexts (C's instances: sub-databases for pack)
    auto source = [&](std::uint64_t inst, std::uint64_t pt, std::uint8_t* out) {
      Csprng g(data_seed, inst * D::num_pts + pt);
      g.fill(out, DB::pt_bytes);
    };
    Server<P> server(threads);
    const auto tb0 = clock::now();
    server.database().build(source, records, threads, phys_inst, phys_j);
    const double db_build = secs(tb0, clock::now());

    const auto t0 = clock::now();
    Client<P> client;
    const auto t1 = clock::now();
    const auto ppb = client.public_params();
    const auto t2 = clock::now();
    const auto pp = PublicParams<P>::load(ppb.data(), ppb.size(), threads);
    const auto t3 = clock::now();

    // P's plaintexts of an item = C's computation plaintexts concatenated (instance-major; for
    // pack the n² sub-databases of an instance are its matrix entries in order)
    auto expected_pts = [&](std::uint64_t item) {
      const auto loc = ItemLocation<C>::of(VariantClientCore<P>::comp_item(item));
      std::vector<std::uint8_t> e(DB::D::instances * DB::pt_bytes);
      const std::uint64_t pj = loc.j % server.database().phys_j();
      for (std::size_t inst = 0; inst < DB::D::instances; ++inst)
        source(inst % server.database().phys_instances(), loc.i * DB::J + pj, e.data() + inst * DB::pt_bytes);
      return e;
    };
    auto decode = [&](const std::vector<std::uint8_t>& resp) {
      return client.core().decode_plaintexts(resp.data(), resp.size());
    };

    Csprng rng;
    std::vector<double> total, q_t, d_t, cpu_t;
    std::vector<std::vector<double>> stage(kNumStages);
    bool correct = true;
    std::size_t qbytes = 0, rbytes = 0;
    for (unsigned t = 0; t < opt.trials; ++t) {
      const std::uint64_t idx = rng.uniform_mod(records);
      const auto a = clock::now();
      const auto qb = client.query(idx);
      const auto b = clock::now();
      double st[kNumStages] = {};
      const double cpu0 = bench_detail::process_cpu_seconds();
      const auto resp = server.answer(pp, qb.data(), qb.size(), st);
      const auto c = clock::now();
      cpu_t.push_back(bench_detail::process_cpu_seconds() - cpu0);
      const auto pts = decode(resp);
      const auto e = clock::now();
      correct = correct && pts == expected_pts(idx);
      q_t.push_back(secs(a, b));
      total.push_back(secs(b, c));
      d_t.push_back(secs(c, e));
      for (std::size_t s = 0; s < kNumStages; ++s) stage[s].push_back(st[s]);
      qbytes = qb.size();
      rbytes = resp.size();
    }
    const bench_detail::StreamingStats stream =
        measure_streaming<P>(server, pp, client, records, opt.trials, rng, expected_pts, decode);
    correct = correct && stream.correct;

    std::vector<std::pair<std::string, NoiseStat>> noise;
    if (opt.noise) {
      const std::uint64_t idx = rng.uniform_mod(records);
      const auto qb = client.query(idx);
      NoiseMeter<C> meter(client.core().comp(), VariantClientCore<P>::comp_item(idx));
      const auto pq = server.prepare(pp, qb.data(), qb.size(), &meter);
      std::vector<rlwe::MatN<typename P::ring>> finals;
      const auto resp = server.answer_prepared(pq, server.database(), nullptr, &meter, &finals);
      noise = meter.results();
      NoiseMeter<P> outer(client.core().outer(), idx);
      outer.on_first_dimension(finals);
      outer.on_response(resp.data(), resp.size());
      const auto& o = outer.results();
      if constexpr (V::pack) noise.emplace_back("packing", o[0].second);
      noise.emplace_back("modswitch", o[1].second);
      correct = correct && decode(resp) == expected_pts(idx);
    }

    bench_detail::Report r;
    r.correct = correct;
    r.variant = variant_name(P::variant);
    r.threads = threads;
    r.trials = opt.trials;
    r.server_s = bench_detail::median(total);
    r.server_cpu_s = bench_detail::median(cpu_t);
    r.stage_names = bench_detail::split_names(kStageNames);
    for (std::size_t s = 0; s < kNumStages; ++s) r.stage_s.push_back(bench_detail::median(stage[s]));
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
