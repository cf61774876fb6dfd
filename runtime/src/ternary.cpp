// Uniform and fixed-weight ternary secrets without secret-dependent branches or addresses.
#include <stdexcept>
#include <vector>

#include "spiralpir/arith/sample.hpp"

namespace spiralpir {
namespace {

// Branch-free compare-exchange: afterwards a <= b.
inline void cswap(std::uint64_t& a, std::uint64_t& b) {
  const std::uint64_t mask = 0 - static_cast<std::uint64_t>(a > b);
  const std::uint64_t t = (a ^ b) & mask;
  a ^= t;
  b ^= t;
}

// Bitonic sorting network: the sequence of compared indices depends only on n.
void bitonic_sort(SecretVector<std::uint64_t>& v) {
  const std::size_t n = v.size();
  for (std::size_t k = 2; k <= n; k <<= 1) {
    for (std::size_t j = k >> 1; j > 0; j >>= 1) {
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t l = i ^ j;
        if (l > i) {
          if ((i & k) == 0)
            cswap(v[i], v[l]);
          else
            cswap(v[l], v[i]);
        }
      }
    }
  }
}

}  // namespace

void sample_ternary(Csprng& rng, std::span<std::int64_t> out) {
  for (auto& v : out) {
    // ⌊r·3 / 2^64⌋ ∈ {0, 1, 2}, each with probability 1/3 ± 2^-64.
    const u128 t = static_cast<u128>(rng.next_u64()) * 3;
    v = static_cast<std::int64_t>(t >> 64) - 1;
  }
}

void sample_sparse_ternary(Csprng& rng, std::span<std::int64_t> out, std::size_t plus, std::size_t minus) {
  const std::size_t n = out.size();
  if (n == 0 || (n & (n - 1)) != 0) throw std::invalid_argument("sample_sparse_ternary: length must be a power of two");
  if (plus > n || minus > n - plus) throw std::invalid_argument("sample_sparse_ternary: plus + minus exceeds the length");
  // Low 2 bits: the value code (1 → +1, 2 → −1, 0 → 0); high 62 bits: a random sort key.
  SecretVector<std::uint64_t> keyed(n);  // the secret's positions: wiped when freed
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t code = i < plus ? 1 : (i < plus + minus ? 2 : 0);
    keyed[i] = (rng.next_u64() << 2) | code;
  }
  bitonic_sort(keyed);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t code = static_cast<std::int64_t>(keyed[i] & 3);
    // 0 → 0, 1 → 1, 2 → −1 without a branch: code − 3·(code >> 1).
    out[i] = code - 3 * (code >> 1);
  }
}

}  // namespace spiralpir
