// Fuzz target: the assembly of a split query from the shards' shares (shard_split.hpp), every
// variant. Input: one byte choosing S (1 or 2), then the 2^S shares, each a u32 little-endian
// length and that many bytes (the last share takes what is left). A share the assembly accepts
// must be read in place within its bytes: every first-dimension slice is gathered (ASan watches).
#include <algorithm>
#include <cstring>
#include <vector>

#include "fuzz_sets.hpp"
#include "spiralpir/spiral/shard_split.hpp"

using namespace spiralpir;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const unsigned bits = 1 + data[0] % 2;
  const std::size_t count = std::size_t{1} << bits;
  // each share in its own exactly-sized, 4-byte aligned buffer: an overread leaves it
  std::vector<std::vector<std::uint32_t>> bufs(count);
  std::vector<const std::uint8_t*> ptrs(count);
  std::vector<std::size_t> lens(count);
  std::size_t at = 1;
  for (std::size_t x = 0; x < count; ++x) {
    std::size_t len = size - at;
    if (x + 1 < count && size - at >= 4) {
      std::uint32_t want = 0;
      std::memcpy(&want, data + at, 4);
      at += 4;
      len = std::min<std::size_t>(want, size - at);
    } else if (x + 1 < count) {
      len = 0;
    }
    bufs[x].resize((len + 3) / 4);
    if (len) std::memcpy(bufs[x].data(), data + at, len);
    ptrs[x] = reinterpret_cast<const std::uint8_t*>(bufs[x].data());
    lens[x] = len;
    at += len;
  }
  fuzz::for_each_set([&]<class P>() {
    using C = typename VariantOf<P>::Comp;
    using FD = FirstDim<C>;
    if constexpr (C::nu_1 >= 2) {
      fuzz::accepted([&] {
        const auto pq = ShardSplit<P>::assemble(ptrs.data(), lens.data(), count, bits, 1);
        if (pq.gsw.size() != C::nu_2 || pq.first.empty()) fuzz::violated("assembled shares' shape");
        std::uint32_t sum = 0;  // every word the first dimension would read (the sanitizers watch)
        for (std::size_t g = 0; g < FD::NG; ++g)
          for (std::size_t zt = 0; zt < FD::ZT; ++zt) {
            const auto rows = pq.first.rows(g, zt);
            for (std::size_t i = 0; i < FD::I; ++i)
              for (std::size_t k = 0; k < FD::Query::row_words(g); ++k) sum += rows(i)[k];
          }
        [[maybe_unused]] volatile std::uint32_t kept = sum;
      });
    }
  });
  return 0;
}
