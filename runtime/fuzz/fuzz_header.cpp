// Fuzz target: the 32-byte object header (check_header) for every object kind and set, with and
// without an expected payload length. An accepted header must describe the buffer exactly and
// carry aux = 0 unless it is a preprocessed database.
#include "fuzz_sets.hpp"

using namespace spiralpir;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::for_each_set([&]<class P>() {
    using D = Derived<P>;
    const std::uint64_t exact[] = {D::client_state_bytes, D::public_params_bytes, D::query_bytes,
                                   D::response_bytes, D::preprocessed_db_bytes};
    for (std::uint16_t k = 1; k <= 5; ++k) {
      const auto kind = static_cast<ObjectKind>(k);
      for (const std::uint64_t expected : {std::uint64_t{0}, exact[k - 1] - kHeaderBytes}) {
        Header h{};
        if (!fuzz::accepted([&] { h = check_header<P>(data, size, kind, expected); })) continue;
        if (h.kind != kind || h.payload_len != size - kHeaderBytes) fuzz::violated("header length or kind");
        if (expected != 0 && h.payload_len != expected) fuzz::violated("header payload length");
        if (kind != ObjectKind::preprocessed_db && h.aux != 0) fuzz::violated("nonzero aux accepted");
      }
    }
  });
  return 0;
}
