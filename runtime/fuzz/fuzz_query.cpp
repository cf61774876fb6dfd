// Fuzz target: the server's query parser of every variant (the scalar Regev ct of spiral/pack,
// the uploaded first-dimension and GSW-digit cts of the stream variants).
#include "fuzz_sets.hpp"

using namespace spiralpir;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::for_each_set([&]<class P>() {
    using V = VariantOf<P>;
    fuzz::accepted([&] {
      if constexpr (V::stream) {
        using R = typename P::ring;
        std::vector<RegevCt<R>> first, digits;
        std::vector<rlwe::MatN<R>> direct;
        QueryPreparation<P>::parse_stream_query(data, size, 1, first, digits, direct);
        if (digits.size() != std::size_t{P::nu_2} * P::t_gsw) fuzz::violated("stream query digit count");
      } else {
        (void)ServerStages<typename V::Comp>::parse_query(data, size);
      }
    });
  });
  return 0;
}
