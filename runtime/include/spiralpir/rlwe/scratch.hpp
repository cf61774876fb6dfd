// spiralpir/rlwe/scratch.hpp — per-thread scratch for the ciphertext kernels (key switching,
// external products), reused across calls so a hot loop allocates nothing. Contents unspecified;
// a slot must not be used by two nested users at once.
//   rlwe::scratch<R>(slot, count)      -> std::vector<PolyNtt<R>>& with at least count polynomials
//   rlwe::scratch_words(slot, count)   -> at least count 64-byte aligned words
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "spiralpir/core/aligned.hpp"
#include "spiralpir/rlwe/types.hpp"

namespace spiralpir::rlwe {

template <class R>
std::vector<Pn<R>>& scratch(std::size_t slot, std::size_t count) {
  thread_local std::vector<std::vector<Pn<R>>> bufs;
  if (bufs.size() <= slot) bufs.resize(slot + 1);
  if (bufs[slot].size() < count) bufs[slot].resize(count);
  return bufs[slot];
}

inline std::uint64_t* scratch_words(std::size_t slot, std::size_t count) {
  thread_local std::vector<AlignedBuffer<std::uint64_t>> bufs;
  if (bufs.size() <= slot) bufs.resize(slot + 1);
  if (bufs[slot].size() < count) bufs[slot] = AlignedBuffer<std::uint64_t>(count);
  return bufs[slot].data();
}

}  // namespace spiralpir::rlwe
