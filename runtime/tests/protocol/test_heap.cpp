// heap.hpp: once a Server exists, memory an answer frees stays in the process, so the next
// answer's allocations do not fault their pages in again. Measured with the process's minor
// page-fault count around a second round of answer-like allocations (not under ASan: its
// allocator replaces glibc's, which is what heap.hpp configures).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstring>
#include <memory>
#include <vector>

#include "spiralpir/spiral/service.hpp"
#include "test_params.hpp"

using namespace spiralpir;

namespace {

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

/// allocates `count` blocks of `bytes` (touching every page), frees them; the faults it took
long allocate_touch_free(std::size_t count, std::size_t bytes) {
  const long before = minor_faults();
  std::vector<std::unique_ptr<char[]>> blocks;
  for (std::size_t i = 0; i < count; ++i) {
    blocks.emplace_back(new char[bytes]);
    std::memset(blocks.back().get(), static_cast<int>(i), bytes);
  }
  volatile char sink = 0;  // the blocks are observed: the allocations cannot be elided
  for (const auto& b : blocks) sink = static_cast<char>(sink + b[bytes - 1]);
  blocks.clear();
  return minor_faults() - before;
}

TEST(Heap, FreedMemoryIsReusedWithoutPageFaults) {
  Server<spiralpir::testing::insecure_spiral_2e20x256b_ci> server(1);  // the first Server configures the heap
  ASSERT_TRUE(retain_heap_between_answers());
  constexpr std::size_t kBlocks = 3000, kBytes = 32 << 10;  // ~94 MiB of 32 KiB polys
  const long first = allocate_touch_free(kBlocks, kBytes);
  const long second = allocate_touch_free(kBlocks, kBytes);
  // the first round faults its ~24,000 pages in; the second finds them in the heap
  EXPECT_GT(first, 10000);
  EXPECT_LT(second, 500) << "first round " << first << " faults";
}

}  // namespace
