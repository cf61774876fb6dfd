// NTT entry points: range checks (debug builds), path selection, fallbacks.
#include <stdexcept>
#include <string>

#include "debug_check.hpp"
#include "ntt_kernels.hpp"

namespace spiralpir {

detail::NttView detail::ntt_view(const NttTable& t) {
  detail::NttView v{};
  v.p = t.p;
  v.n = t.n;
  v.ifma = cpu_features().avx512ifma;
  v.fwd = t.fwd.data();
  v.fwd_shoup32 = t.fwd_shoup32.data();
  v.fwd_shoup52 = t.fwd_shoup52.data();
  v.inv = t.inv.data();
  v.inv_shoup32 = t.inv_shoup32.data();
  v.inv_shoup52 = t.inv_shoup52.data();
  v.n_inv = t.n_inv;
  v.n_inv_shoup32 = t.n_inv_shoup32;
  v.n_inv_shoup52 = t.n_inv_shoup52;
  v.last_inv = t.last_inv;
  v.last_inv_shoup32 = t.last_inv_shoup32;
  v.last_inv_shoup52 = t.last_inv_shoup52;
  for (int s = 0; s < 3; ++s) {
    v.tail_fwd[s] = t.tail_fwd[s].data();
    v.tail_fwd_shoup52[s] = t.tail_fwd_shoup52[s].data();
    v.tail_inv[s] = t.tail_inv[s].data();
    v.tail_inv_shoup52[s] = t.tail_inv_shoup52[s].data();
  }
  return v;
}

namespace {

using NativeKernel = void (*)(std::uint64_t*, const NttTable&, bool);
using VectorKernel = void (*)(std::uint64_t*, const detail::NttView&, bool);

// The vector kernels keep lazy values in 32-bit halves of their lanes (p < 2^30, so 4p < 2^32)
// unless an IFMA kernel runs (52-bit limbs, p < 2^50).
bool vector_prime_ok(Path path, const NttTable& t) {
  if (path == Path::native) return true;
  if (t.n < 16) return false;  // the vector kernels work on 16-word blocks
  if (path == Path::avx512 && cpu_features().avx512ifma) return t.p < (1ULL << 50);
  return t.p < (1ULL << 30);
}

void dispatch(std::uint64_t* a, const NttTable& t, Path path, bool forward, bool reduce) {
  if (!vector_prime_ok(path, t)) path = Path::native;
  [[maybe_unused]] VectorKernel vk = nullptr;
  switch (path) {
#ifdef SPIRALPIR_HAVE_AVX512
    case Path::avx512:
      vk = forward ? detail::ntt_forward_avx512 : detail::ntt_inverse_avx512;
      break;
#endif
#ifdef SPIRALPIR_HAVE_AVX2
    case Path::avx2:
      vk = forward ? detail::ntt_forward_avx2 : detail::ntt_inverse_avx2;
      break;
#endif
    default:
      break;
  }
  if (vk != nullptr) {
    vk(a, detail::ntt_view(t), reduce);
    return;
  }
  const NativeKernel nk = forward ? detail::ntt_forward_native : detail::ntt_inverse_native;
  nk(a, t, reduce);
}

Path require(Path path) {
  if (!path_available(path))
    throw std::runtime_error(std::string("spiralpir: NTT path ") + path_name(path) +
                             " is not available: " + path_missing(path));
  return path;
}

void run(std::uint64_t* a, const NttTable& t, Path path, bool forward, bool reduce) {
  const std::uint64_t in_bound = forward ? 4 * t.p : 2 * t.p;
  const std::uint64_t out_bound = reduce ? t.p : in_bound;
  detail::check_below(a, t.n, in_bound, forward ? "ntt_forward (input)" : "ntt_inverse (input)");
  dispatch(a, t, path, forward, reduce);
  detail::check_below(a, t.n, out_bound, forward ? "ntt_forward (output)" : "ntt_inverse (output)");
}

}  // namespace

bool ntt_path_supports(Path path, const NttTable& t) { return path_compiled(path) && vector_prime_ok(path, t); }

void ntt_forward(std::uint64_t* a, const NttTable& t) { run(a, t, active_path(), true, true); }
void ntt_forward_lazy(std::uint64_t* a, const NttTable& t) { run(a, t, active_path(), true, false); }
void ntt_inverse(std::uint64_t* a, const NttTable& t) { run(a, t, active_path(), false, true); }
void ntt_inverse_lazy(std::uint64_t* a, const NttTable& t) { run(a, t, active_path(), false, false); }

void ntt_forward(std::uint64_t* a, const NttTable& t, Path path) { run(a, t, require(path), true, true); }
void ntt_forward_lazy(std::uint64_t* a, const NttTable& t, Path path) { run(a, t, require(path), true, false); }
void ntt_inverse(std::uint64_t* a, const NttTable& t, Path path) { run(a, t, require(path), false, true); }
void ntt_inverse_lazy(std::uint64_t* a, const NttTable& t, Path path) { run(a, t, require(path), false, false); }

}  // namespace spiralpir
