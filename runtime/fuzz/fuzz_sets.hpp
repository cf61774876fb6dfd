// The parameter sets the fuzz targets decode under: the checked-in demo build's CI-sized set
// (generated/demo, the set the service tests serve) in each of the four variants, and with
// n = 2 as spiral and stream. Every object carries its set's params hash, so one input reaches
// the deep parser of at most one set and the others reject it at the header.
#pragma once

#include <cstddef>
#include <cstdint>

#include "params.hpp"  // generated/demo: demo_ci_params
#include "spiralpir/spiral/service.hpp"

namespace spiralpir::fuzz {

struct stream_set : demo_ci_params {
  static constexpr Variant variant = Variant::stream;
};
struct pack_set : demo_ci_params {
  static constexpr Variant variant = Variant::pack;
};
struct stream_pack_set : demo_ci_params {
  static constexpr Variant variant = Variant::stream_pack;
};
/// n = 2: matrix ciphertexts (ScalToMat, n×n plaintexts); stream's first dimension then goes
/// through ScalToMat instead of the direct 1×1 path
struct spiral_n2_set : demo_ci_params {
  static constexpr unsigned n = 2;
};
struct stream_n2_set : spiral_n2_set {
  static constexpr Variant variant = Variant::stream;
};

/// Calls f.template operator()<P>() for every set.
template <class F>
void for_each_set(F&& f) {
  f.template operator()<demo_ci_params>();
  f.template operator()<stream_set>();
  f.template operator()<pack_set>();
  f.template operator()<stream_pack_set>();
  f.template operator()<spiral_n2_set>();
  f.template operator()<stream_n2_set>();
}

/// Runs f; a spiralpir::Error is the documented rejection of bad input. Anything else (another
/// exception type, a crash, a sanitizer report) escapes to libFuzzer as a finding.
template <class F>
bool accepted(F&& f) {
  try {
    f();
    return true;
  } catch (const Error&) {
    return false;
  }
}

/// A broken invariant of an accepted input: abort so libFuzzer records the input.
[[noreturn]] void violated(const char* what);

}  // namespace spiralpir::fuzz
