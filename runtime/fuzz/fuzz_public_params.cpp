// Fuzz target: the server's parser of a client's public parameters, every variant.
#include "fuzz_sets.hpp"

using namespace spiralpir;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::for_each_set([&]<class P>() {
    fuzz::accepted([&] { (void)PublicParams<P>::load(data, size, 1); });
  });
  return 0;
}
