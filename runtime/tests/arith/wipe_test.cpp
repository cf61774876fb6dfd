// The wiping types of core/wipe.hpp: the memory they give back is zero at the moment it is given
// back (checked in the storage itself, or by the upstream allocator before it frees a block).
#include <gtest/gtest.h>

#include <algorithm>
#include <new>
#include <vector>

#include "spiralpir/arith/poly.hpp"
#include "spiralpir/arith/random.hpp"
#include "spiralpir/arith/uniform.hpp"
#include "spiralpir/core/wipe.hpp"
#include "test_rings.hpp"

using namespace spiralpir;

namespace {

// An upstream allocator that records, for every block handed back, whether it was all zero.
struct Recorder {
  std::size_t blocks = 0, zero_blocks = 0;
};
template <class T>
struct CheckingAllocator {
  using value_type = T;
  Recorder* rec;
  explicit CheckingAllocator(Recorder* r) : rec(r) {}
  template <class U>
  CheckingAllocator(const CheckingAllocator<U>& o) : rec(o.rec) {}
  T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T* p, std::size_t n) {
    const auto* b = reinterpret_cast<const unsigned char*>(p);
    ++rec->blocks;
    rec->zero_blocks += std::all_of(b, b + n * sizeof(T), [](unsigned char c) { return c == 0; });
    std::allocator<T>().deallocate(p, n);
  }
  bool operator==(const CheckingAllocator& o) const { return rec == o.rec; }
};

}  // namespace

TEST(Wipe, WipedValueIsZeroAfterDestruction) {
  alignas(Wiped<Seed>) unsigned char storage[sizeof(Wiped<Seed>)];
  auto* w = new (storage) Wiped<Seed>();
  for (std::size_t i = 0; i < 32; ++i) (*w)->at(i) = static_cast<std::uint8_t>(0xA0 + i);
  EXPECT_EQ(w->get()[5], 0xA5);
  w->~Wiped<Seed>();
  // read the storage through a pointer the optimiser cannot follow (the object's lifetime ended)
  const unsigned char* p = storage;
  __asm__ volatile("" : "+r"(p) : : "memory");
  EXPECT_TRUE(std::all_of(p, p + sizeof storage, [](unsigned char c) { return c == 0; }));
}

TEST(Wipe, WipingAllocatorZeroesEveryBlockItReturns) {
  Recorder rec;
  {
    using Alloc = WipingAllocator<std::uint64_t, CheckingAllocator<std::uint64_t>>;
    std::vector<std::uint64_t, Alloc> v{Alloc(CheckingAllocator<std::uint64_t>(&rec))};
    for (std::uint64_t i = 1; i <= 1000; ++i) v.push_back(0x5555555555555555ULL ^ i);  // several reallocations
  }
  EXPECT_GE(rec.blocks, 5u);
  EXPECT_EQ(rec.zero_blocks, rec.blocks);
  // control: the same without wiping hands back nonzero blocks, so the check can fail
  Recorder plain;
  {
    std::vector<std::uint64_t, CheckingAllocator<std::uint64_t>> v{CheckingAllocator<std::uint64_t>(&plain)};
    for (std::uint64_t i = 1; i <= 1000; ++i) v.push_back(0x5555555555555555ULL ^ i);
  }
  EXPECT_LT(plain.zero_blocks, plain.blocks);
}

TEST(Wipe, SecureWipeAndPolynomialWipe) {
  std::vector<unsigned char> buf(100, 0xEE);
  secure_wipe(buf.data() + 10, 50);
  for (std::size_t i = 0; i < buf.size(); ++i) EXPECT_EQ(buf[i], (i >= 10 && i < 60) ? 0 : 0xEE) << i;
  using R = spiralpir::test::Ring2048;
  Csprng rng(Seed{}, 1);
  auto a = uniform_poly_coeff<R>(rng);
  a.wipe();
  EXPECT_TRUE(std::all_of(a.data(), a.data() + a.size(), [](std::uint64_t x) { return x == 0; }));
}
