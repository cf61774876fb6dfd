// spiralpir/core/wipe.hpp — erasing secrets from memory with stores the compiler keeps (a plain
// memset of memory that is freed next is dead code to the optimiser and removed).
//
// API (namespace spiralpir):
//   secure_wipe(void* p, size_t n)     zero n bytes (explicit_bzero)
//   Wiped<T>                           owns a trivially copyable T (a seed, a small array),
//                                      zeroed on destruction; get(), operator*, operator->
//   WipingAllocator<T, Upstream>       std allocator that zeroes every block before handing it
//                                      back to Upstream (std::allocator<T> by default)
//   SecretVector<T>                    std::vector<T, WipingAllocator<T>>: secret coefficients,
//                                      noise, messages (a reallocation wipes the old block too)
//   WipedBuffer<T>                     an AlignedBuffer<T> zeroed on destruction (secret
//                                      operands of the NTT kernels)
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <vector>

#include "spiralpir/core/aligned.hpp"

namespace spiralpir {

void secure_wipe(void* p, std::size_t n) noexcept;

template <class T>
class Wiped {
  static_assert(std::is_trivially_copyable_v<T>, "Wiped holds plain data only");

 public:
  Wiped() = default;
  explicit Wiped(const T& v) : v_(v) {}
  Wiped(const Wiped&) = default;
  Wiped& operator=(const Wiped&) = default;
  ~Wiped() { secure_wipe(&v_, sizeof(T)); }

  T& get() noexcept { return v_; }
  const T& get() const noexcept { return v_; }
  T& operator*() noexcept { return v_; }
  const T& operator*() const noexcept { return v_; }
  T* operator->() noexcept { return &v_; }
  const T* operator->() const noexcept { return &v_; }

 private:
  T v_{};
};

template <class T, class Upstream = std::allocator<T>>
struct WipingAllocator : Upstream {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = WipingAllocator<U, typename std::allocator_traits<Upstream>::template rebind_alloc<U>>;
  };
  WipingAllocator() = default;
  explicit WipingAllocator(const Upstream& u) noexcept : Upstream(u) {}
  template <class U, class UU>
  WipingAllocator(const WipingAllocator<U, UU>& o) noexcept : Upstream(static_cast<const UU&>(o)) {}

  void deallocate(T* p, std::size_t n) noexcept {
    secure_wipe(p, n * sizeof(T));
    Upstream::deallocate(p, n);
  }
};
template <class T, class U, class A, class B>
bool operator==(const WipingAllocator<T, A>& a, const WipingAllocator<U, B>& b) noexcept {
  return static_cast<const A&>(a) == static_cast<const B&>(b);
}

template <class T>
using SecretVector = std::vector<T, WipingAllocator<T>>;

template <class T>
class WipedBuffer : public AlignedBuffer<T> {
 public:
  using AlignedBuffer<T>::AlignedBuffer;
  WipedBuffer(const WipedBuffer&) = default;
  WipedBuffer(WipedBuffer&&) noexcept = default;  // the source is left empty
  WipedBuffer& operator=(const WipedBuffer&) = delete;
  WipedBuffer& operator=(WipedBuffer&&) = delete;
  ~WipedBuffer() { secure_wipe(this->data(), this->size() * sizeof(T)); }
};

}  // namespace spiralpir
