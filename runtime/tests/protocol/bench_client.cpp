// Client-side costs: key generation, public parameters, query generation and response decoding
// (minimum wall time over repetitions, one thread). The response is a random well-formed one:
// decoding does the same work whatever the server computed.
//   spiralpir_client_bench [repetitions]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../variants/variant_params.hpp"
#include "spiralpir/spiral/service.hpp"
#include "test_params.hpp"

using namespace spiralpir;
using namespace spiralpir::testing;

namespace {

template <class F>
double min_seconds(int reps, F&& f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

template <class P>
std::vector<std::uint8_t> random_response(Csprng& rng) {
  using D = Derived<P>;
  std::vector<std::uint8_t> out(D::response_bytes, 0);
  write_header<P>(out.data(), ObjectKind::response, D::response_bytes - kHeaderBytes);
  BitWriter w(out.data() + kHeaderBytes);
  for (std::uint64_t inst = 0; inst < D::instances; ++inst) {
    for (std::size_t z = 0; z < std::size_t{P::n} * D::d; ++z) w.put(rng.uniform_mod(D::q2), P::q2_bits);
    for (std::size_t z = 0; z < std::size_t{P::n} * P::n * D::d; ++z) w.put(rng.uniform_mod(D::q1), D::q1_bits);
  }
  return out;
}

template <class P>
void bench(const char* name, int reps) {
  Csprng rng;
  Seed master;
  rng.fill(master.data(), master.size());
  const double keygen = min_seconds(reps, [&] { const Client<P> c(master); });
  const Client<P> client(master);
  const double pp = min_seconds(std::max(1, reps / 4), [&] { (void)client.public_params(); });
  std::uint64_t idx = 0;
  const double query = min_seconds(reps, [&] {
    idx = (idx * 7 + 3) % P::num_records;
    (void)client.query(idx, rng);
  });
  const auto resp = random_response<P>(rng);
  std::vector<std::uint8_t> rec(P::record_size);
  const double decode = min_seconds(reps, [&] {
    idx = (idx * 7 + 3) % P::num_records;
    client.decode(idx, resp.data(), resp.size(), rec.data(), rec.size());
  });
  std::printf("%-34s keygen %8.3f ms  public params %8.1f ms  query %8.3f ms  decode %8.3f ms\n", name,
              keygen * 1e3, pp * 1e3, query * 1e3, decode * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  bench<insecure_spiral_2e20x256b>("spiral_2e20x256b", reps);
  bench<insecure_spiral_2e14x100kb>("spiral_2e14x100kb", reps);
  bench<insecure_large_p_ci>("large_p_ci (3 primes)", reps);
  bench<insecure_sparse_n2_ci>("sparse_n2_ci", reps);
  bench<insecure_stream_2e20x256b_ci>("stream_2e20x256b_ci", reps);
  bench<insecure_pack_2e20x256b_ci>("pack_2e20x256b_ci", reps);
  return 0;
}
