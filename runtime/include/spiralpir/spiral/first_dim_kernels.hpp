// spiralpir/spiral/first_dim_kernels.hpp — the AVX-512 kernels of the first dimension
// (first_dim.hpp explains the layout and the lazy reduction), compiled in the runtime library
// with its AVX-512 flags (src/first_dim_avx512.cpp). Call them only when
// path_available(Path::avx512) (first_dim.hpp does); a library built without AVX-512 throws.
//
//   FirstDimTask                   one task's shape, as runtime values: n (1..8), the prime group
//                                  width w (1, 2), the folding indices per block nb (jblock(w)),
//                                  I = 2^nu_1, J = 2^nu_2, i per pass, the fold/reduction interval
//                                  `chunk`, whether accumulators are folded (else reduced exactly),
//                                  and the group's primes with their fold constants 2^32 mod p
//   first_dim_task_avx512(task, accs, q, blocks)
//       accs (J·(n+1)·n·w·8 words) = Σ_i q_i · D_i for every folding index, folded but not
//       reduced; q the task's query slice, blocks[b] the database words of block b (J / nb of them)
//   first_dim_reduce_store_task_avx512(task, accs, dst, count)   the task's epilogue: for every
//       e < count, dst[e][0..8) = accs[8e..8e+8) mod the prime of e (e mod w), streaming stores
//       (in vectors where task.vector_reduce says the prime allows it), then an sfence
//   first_dim_reduce_store_avx512(dst, acc, p, fold_const)   dst[0..8) = acc[0..8) mod p for a
//       prime whose one fold lands below 2^52 (vector_reducible), streaming stores
//   first_dim_stream_store_avx512(dst, src)   8 words, streaming store
#pragma once

#include <cstddef>
#include <cstdint>

namespace spiralpir {

struct FirstDimTask {
  unsigned n = 1;
  std::size_t w = 1, nb = 1, I = 1, J = 1, pass = 1, chunk = 1;
  bool fold = true;
  std::uint64_t prime[2] = {0, 0};
  std::uint64_t fold_const[2] = {0, 0};
  bool vector_reduce[2] = {false, false};
};

void first_dim_task_avx512(const FirstDimTask& task, std::uint64_t* accs, const std::uint32_t* q,
                           const std::uint32_t* const* blocks);
void first_dim_reduce_store_task_avx512(const FirstDimTask& task, std::uint64_t* accs, std::uint64_t* const* dst,
                                        std::size_t count);
void first_dim_reduce_store_avx512(std::uint64_t* dst, const std::uint64_t* acc, std::uint64_t p,
                                   std::uint64_t fold_const);
void first_dim_stream_store_avx512(std::uint64_t* dst, const std::uint64_t* src);

}  // namespace spiralpir
