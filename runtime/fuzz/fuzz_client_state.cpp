// Fuzz target: loading a saved client state, every variant. An accepted state must save back to
// the same bytes (the state is exactly the master seed under its header).
#include <cstring>

#include "fuzz_sets.hpp"

using namespace spiralpir;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::for_each_set([&]<class P>() {
    fuzz::accepted([&] {
      const Client<P> c = Client<P>::load(data, size);
      const auto back = c.save();
      if (back.size() != size || std::memcmp(back.data(), data, size) != 0) fuzz::violated("client state round trip");
    });
  });
  return 0;
}
