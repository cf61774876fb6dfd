// Full-size protocol benchmark (a command, not a test):
//   spiralpir_protocol_bench <2e20x256b|2e14x100kb|2e20x256b_ci|2e14x100kb_ci> [run_bench options]
// e.g. spiralpir_protocol_bench 2e20x256b --threads 1 --trials 3
#include <cstdio>
#include <cstring>
#include <string>

#include "spiralpir/testing/bench_driver.hpp"
#include "test_params.hpp"

int main(int argc, char** argv) {
  using namespace spiralpir::testing;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <2e20x256b|2e14x100kb|2e20x256b_ci|2e14x100kb_ci> [--threads T] [--trials K] [--json] [--noise]\n", argv[0]);
    return 2;
  }
  const std::string set = argv[1];
  argv[1] = argv[0];
  if (set == "2e20x256b") return spiralpir::run_bench<insecure_spiral_2e20x256b>(argc - 1, argv + 1);
  if (set == "2e14x100kb") return spiralpir::run_bench<insecure_spiral_2e14x100kb>(argc - 1, argv + 1);
  if (set == "2e20x256b_ci") return spiralpir::run_bench<insecure_spiral_2e20x256b_ci>(argc - 1, argv + 1);
  if (set == "2e14x100kb_ci") return spiralpir::run_bench<insecure_spiral_2e14x100kb_ci>(argc - 1, argv + 1);
  std::fprintf(stderr, "unknown set %s\n", set.c_str());
  return 2;
}
