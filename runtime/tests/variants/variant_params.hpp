// Test-only variant parameter sets: SPIRAL's published rings/gadgets (insecure, see
// ../protocol/test_params.hpp) with the variant switched, at CI-sized nu.
#pragma once

#include "../protocol/test_params.hpp"

namespace spiralpir::testing {

struct insecure_stream_2e20x256b_ci : insecure_spiral_2e20x256b_ci {
  static constexpr Variant variant = Variant::stream;
};
struct insecure_pack_2e20x256b_ci : insecure_spiral_2e20x256b_ci {
  static constexpr Variant variant = Variant::pack;
};
struct insecure_streampack_2e20x256b_ci : insecure_spiral_2e20x256b_ci {
  static constexpr Variant variant = Variant::stream_pack;
};
/// large items over several instances, n = 2
struct insecure_streampack_2e14x100kb_ci : insecure_spiral_2e14x100kb_ci {
  static constexpr Variant variant = Variant::stream_pack;
};
struct insecure_pack_2e14x100kb_ci : insecure_spiral_2e14x100kb_ci {
  static constexpr Variant variant = Variant::pack;
};
struct insecure_stream_2e14x100kb_ci : insecure_spiral_2e14x100kb_ci {
  static constexpr Variant variant = Variant::stream;
};
/// pack with n = 3 (9 sub-databases) and a ternary secret
struct insecure_pack_n3_ci : insecure_spiral_2e20x256b_ci {
  static constexpr Variant variant = Variant::pack;
  static constexpr SecretDist secret_dist = SecretDist::ternary;
  static constexpr unsigned n = 3, nu_1 = 3, nu_2 = 2;
  static constexpr std::uint64_t num_records = 700;
};

/// stream with n = 1 (first-dimension cts encrypted under s_c, no ScalToMat), ternary secret
struct insecure_stream_n1_ci : insecure_ternary_n1_ci {
  static constexpr Variant variant = Variant::stream;
};

/// stream_pack at a large plaintext modulus (p = 2^24, q2 40 bits; ../protocol/test_params.hpp)
struct insecure_streampack_large_p_ci : insecure_large_p_ci {
  static constexpr Variant variant = Variant::stream_pack;
};

/// every variant at nu_2 = 0 and with records shorter than the item (../protocol/test_params.hpp)
template <class Base, Variant v>
struct as_variant : Base {
  static constexpr Variant variant = v;
};
using insecure_stream_nu2_zero_ci = as_variant<insecure_nu2_zero_ci, Variant::stream>;
using insecure_pack_nu2_zero_ci = as_variant<insecure_nu2_zero_ci, Variant::pack>;
using insecure_streampack_nu2_zero_ci = as_variant<insecure_nu2_zero_ci, Variant::stream_pack>;
using insecure_stream_short_records_ci = as_variant<insecure_short_records_ci, Variant::stream>;
using insecure_pack_short_records_ci = as_variant<insecure_short_records_ci, Variant::pack>;
using insecure_streampack_short_records_ci = as_variant<insecure_short_records_ci, Variant::stream_pack>;
using insecure_pack_short_records_multi_ci = as_variant<insecure_short_records_multi_ci, Variant::pack>;
using insecure_streampack_short_records_multi_ci = as_variant<insecure_short_records_multi_ci, Variant::stream_pack>;

}  // namespace spiralpir::testing
