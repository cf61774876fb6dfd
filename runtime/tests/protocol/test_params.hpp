// Test-only parameter sets. The insecure_* sets are SPIRAL's published choices (which estimate
// below 128 bits today) at reduced nu so that CI stays fast; never use them for real data.
#pragma once

#include "spiralpir/spiral/params.hpp"
#include "spiralpir/arith/ring.hpp"

namespace spiralpir::testing {

using spiral_ring = RingSpec<2048, 268369921ULL, 249561089ULL>;

/// SPIRAL 2^20 x 256 B (n=2, nu 9/6, p=256, q2 20 bits, t_gsw 8, t_conv 4, t_exp 8/56).
struct insecure_spiral_2e20x256b {
  using ring = spiral_ring;
  static constexpr Variant variant = Variant::spiral;
  static constexpr double noise_width = 6.4;
  static constexpr SecretDist secret_dist = SecretDist::gaussian;
  static constexpr unsigned secret_plus = 0, secret_minus = 0;
  static constexpr unsigned n = 2, nu_1 = 9, nu_2 = 6;
  static constexpr std::uint64_t p = 256;
  static constexpr unsigned q2_bits = 20;
  static constexpr unsigned t_gsw = 8, t_conv = 4, t_exp_left = 8, t_exp_right = 56;
  static constexpr std::uint64_t instances = 1, db_item_size = 256;
  static constexpr std::uint64_t num_records = 1 << 20, record_size = 256;
};
/// CI twin: same crypto, nu 4/2 (2^6 plaintexts, 2048 records).
struct insecure_spiral_2e20x256b_ci : insecure_spiral_2e20x256b {
  static constexpr unsigned nu_1 = 4, nu_2 = 2;
  static constexpr std::uint64_t num_records = 2000;
};

/// SPIRAL 2^14 x 100 KB (n=2, nu 9/5, p=512, q2 21 bits, t_gsw 9, t_conv 4, t_exp 16/56, 12 instances).
struct insecure_spiral_2e14x100kb {
  using ring = spiral_ring;
  static constexpr Variant variant = Variant::spiral;
  static constexpr double noise_width = 6.4;
  static constexpr SecretDist secret_dist = SecretDist::gaussian;
  static constexpr unsigned secret_plus = 0, secret_minus = 0;
  static constexpr unsigned n = 2, nu_1 = 9, nu_2 = 5;
  static constexpr std::uint64_t p = 512;
  static constexpr unsigned q2_bits = 21;
  static constexpr unsigned t_gsw = 9, t_conv = 4, t_exp_left = 16, t_exp_right = 56;
  static constexpr std::uint64_t instances = 12, db_item_size = 102400;
  static constexpr std::uint64_t num_records = 1 << 14, record_size = 102400;
};
/// CI twin: nu 2/1 (8 items of 100 KB over 12 instances).
struct insecure_spiral_2e14x100kb_ci : insecure_spiral_2e14x100kb {
  static constexpr unsigned nu_1 = 2, nu_2 = 1;
  static constexpr std::uint64_t num_records = 7;
};

/// Small ternary-secret set (exercises the other secret distributions and n = 1).
struct insecure_ternary_n1_ci : insecure_spiral_2e20x256b {
  static constexpr SecretDist secret_dist = SecretDist::ternary;
  static constexpr unsigned n = 1, nu_1 = 3, nu_2 = 3;
  static constexpr std::uint64_t num_records = 100;
};
struct insecure_sparse_n2_ci : insecure_spiral_2e20x256b {
  static constexpr SecretDist secret_dist = SecretDist::sparse_ternary;
  static constexpr unsigned secret_plus = 256, secret_minus = 256;
  static constexpr unsigned nu_1 = 3, nu_2 = 1;
  static constexpr std::uint64_t num_records = 500;
};

/// Large plaintext modulus p = 2^24 (above the former 2^16 cap): three CRT primes (q ~ 2^84),
/// q2 of 40 bits (> 2^32: q1 = 4p = 2^26), n = 2, CI-sized (2^5 plaintexts of 24 KiB).
using large_p_ring = RingSpec<2048, 268369921ULL, 268361729ULL, 268271617ULL>;
struct insecure_large_p_ci : insecure_spiral_2e20x256b {
  using ring = large_p_ring;
  static constexpr unsigned nu_1 = 3, nu_2 = 2;
  static constexpr std::uint64_t p = std::uint64_t{1} << 24;
  static constexpr unsigned q2_bits = 40;
  static constexpr unsigned t_gsw = 7, t_conv = 7, t_exp_left = 6, t_exp_right = 28;
  static constexpr std::uint64_t db_item_size = 24576, num_records = 30, record_size = 24576;
};

/// nu_2 = 0: no folding at all (the first dimension's output is the answer), n = 2.
struct insecure_nu2_zero_ci : insecure_spiral_2e20x256b {
  static constexpr unsigned nu_1 = 4, nu_2 = 0;
  static constexpr std::uint64_t num_records = 100;
};
/// Records shorter than the item (200 of 256 bytes): the record array's stride differs from the
/// plaintext's item stride, several items per plaintext.
struct insecure_short_records_ci : insecure_spiral_2e20x256b_ci {
  static constexpr std::uint64_t num_records = 1500, record_size = 200;
};
/// Records shorter than the item over several instances (100000 of 102400 bytes, 12 instances).
struct insecure_short_records_multi_ci : insecure_spiral_2e14x100kb_ci {
  static constexpr std::uint64_t record_size = 100000;
};

}  // namespace spiralpir::testing
