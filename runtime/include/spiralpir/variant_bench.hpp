// spiralpir/variant_bench.hpp — the benchmark body for SpiralStream / SpiralPack /
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

#include "spiralpir/bench_driver.hpp"
#include "spiralpir/variants.hpp"

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
        void on_first_dimension(const std::vector<proto::MatN<typename P::ring>>&) override {
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
      std::vector<proto::MatN<typename P::ring>> finals;
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
    const char* path = FirstDim<C>::use_avx512() ? "avx512" : "portable";
    std::string hash;
    {
      static const char* hex = "0123456789abcdef";
      for (auto b : params_hash<P>()) { hash += hex[b >> 4]; hash += hex[b & 15]; }
    }
    if (opt.json) {
      std::ostringstream o;
      o << "{\"correct\":" << (correct ? "true" : "false") << ",\"variant\":\"" << variant_name(P::variant)
        << "\",\"server_seconds\":" << json_num(server_s)
        << ",\"server_cpu_seconds\":" << json_num(bench_detail::median(cpu_t)) << ",\"threads\":" << threads
        << ",\"stages\":{";
      for (std::size_t s = 0; s < kNumStages; ++s)
        o << (s ? "," : "") << "\"" << names[s] << "\":" << json_num(bench_detail::median(stage[s]));
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
      std::printf("spiralpir bench  %s  params %s  records %llu x %llu B  threads %u  trials %u  kernel %s%s\n",
                  variant_name(P::variant), hash.c_str(), static_cast<unsigned long long>(records),
                  static_cast<unsigned long long>(P::record_size), threads, opt.trials, path,
                  server.database().implicit() ? "  (implicit db)" : "");
      std::printf("  correct               %s\n", correct ? "yes" : "NO");
      std::printf("  server (median)       %.4f s   throughput %.1f MB/s\n", server_s, db_bytes / server_s / 1e6);
      for (std::size_t s = 0; s < kNumStages; ++s)
        std::printf("    %-19s %.4f s\n", names[s].c_str(), bench_detail::median(stage[s]));
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
}

}  // namespace spiralpir
