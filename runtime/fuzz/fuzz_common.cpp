// Shared by every fuzz target.
#include <cstdio>
#include <cstdlib>

#include "fuzz_sets.hpp"

namespace spiralpir::fuzz {

void violated(const char* what) {
  std::fprintf(stderr, "spiralpir fuzz: invariant broken: %s\n", what);
  std::abort();
}

}  // namespace spiralpir::fuzz
