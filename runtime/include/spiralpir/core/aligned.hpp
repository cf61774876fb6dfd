// aligned.hpp — 64-byte aligned, zero-initialised (unless asked not to), fixed-size heap buffer.
//
// API: AlignedBuffer<T>(n), AlignedBuffer<T>(n, Uninitialised{}), size(), data(), operator[],
// begin()/end(); copyable, movable.
// Every polynomial and table lives in one of these so that vector kernels may use aligned
// loads (64 bytes = one zmm register).
#pragma once

#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace spiralpir {

inline constexpr std::size_t kAlignment = 64;

template <class T>
class AlignedBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "AlignedBuffer holds plain data only");

 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t n) : AlignedBuffer(n, Uninitialised{}) {
    if (n != 0) std::memset(static_cast<void*>(data_), 0, bytes(n));
  }
  // a copy is written once, by the memcpy (zeroing it first cost a second pass over every copied
  // polynomial)
  AlignedBuffer(const AlignedBuffer& o) : AlignedBuffer(o.size_, Uninitialised{}) {
    if (size_ != 0) std::memcpy(static_cast<void*>(data_), o.data_, bytes(size_));
  }
  AlignedBuffer(AlignedBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  AlignedBuffer& operator=(const AlignedBuffer& o) {
    if (this != &o) {
      if (size_ != o.size_) *this = AlignedBuffer(o.size_, Uninitialised{});
      if (size_ != 0) std::memcpy(static_cast<void*>(data_), o.data_, bytes(size_));
    }
    return *this;
  }
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  ~AlignedBuffer() { release(); }

  std::size_t size() const noexcept { return size_; }
  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  T* begin() noexcept { return data_; }
  T* end() noexcept { return data_ + size_; }
  const T* begin() const noexcept { return data_; }
  const T* end() const noexcept { return data_ + size_; }

  /// contents unspecified: for a buffer its owner writes in full before reading
  struct Uninitialised {};
  AlignedBuffer(std::size_t n, Uninitialised) : size_(n) {
    if (n != 0) data_ = static_cast<T*>(::operator new[](bytes(n), std::align_val_t{kAlignment}));
  }

 private:
  static std::size_t bytes(std::size_t n) {
    // Round up so the allocation is a whole number of cache lines.
    return (n * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
  }
  void release() noexcept {
    if (data_ != nullptr) ::operator delete[](data_, std::align_val_t{kAlignment});
    data_ = nullptr;
    size_ = 0;
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace spiralpir
