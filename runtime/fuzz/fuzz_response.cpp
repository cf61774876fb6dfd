// Fuzz target: the client's decoding of a server response, every variant (a fixed client per
// set; the response is what a hostile or broken server sends).
#include <vector>

#include "fuzz_sets.hpp"

using namespace spiralpir;

namespace {
template <SpiralParams P>
const Client<P>& client() {
  static const Client<P> c(Seed{});  // fixed seed: runs are reproducible
  return c;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::for_each_set([&]<class P>() {
    const Client<P>& c = client<P>();
    std::vector<std::uint8_t> record(P::record_size);
    fuzz::accepted([&] { c.decode(P::num_records - 1, data, size, record.data(), record.size()); });
  });
  return 0;
}
