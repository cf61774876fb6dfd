// Pointwise entry points: range checks (debug builds), path selection, fallbacks.
#include <stdexcept>
#include <string>

#include "debug_check.hpp"
#include "pointwise_kernels.hpp"
#include "spiralpir/arith/modarith.hpp"
#include "spiralpir/arith/pointwise.hpp"

namespace spiralpir {
namespace {

Path require(Path path) {
  if (!path_available(path))
    throw std::runtime_error(std::string("spiralpir: pointwise path ") + path_name(path) +
                             " is not available: " + path_missing(path));
  return path;
}

// out = a − b (sub) or a + b mod p; the vector kernels need p < 2^62 (their sums stay below 2^63)
void add_or_sub(bool sub, std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                std::uint64_t p, Path path) {
  detail::check_below(a, n, p, sub ? "sub_mod (a)" : "add_mod (a)");
  detail::check_below(b, n, p, sub ? "sub_mod (b)" : "add_mod (b)");
  if (p < (1ULL << 62)) {
    switch (require(path)) {
#ifdef SPIRALPIR_HAVE_AVX512
      case Path::avx512:
        return sub ? detail::sub_mod_avx512(out, a, b, n, p) : detail::add_mod_avx512(out, a, b, n, p);
#endif
#ifdef SPIRALPIR_HAVE_AVX2
      case Path::avx2:
        return sub ? detail::sub_mod_avx2(out, a, b, n, p) : detail::add_mod_avx2(out, a, b, n, p);
#endif
      default:
        break;
    }
  }
  return sub ? detail::sub_mod_native(out, a, b, n, p) : detail::add_mod_native(out, a, b, n, p);
}

void mul(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n, std::uint64_t p,
         Path path, bool accumulate) {
  detail::check_below(a, n, p, "pointwise_mul (a)");
  detail::check_below(b, n, p, "pointwise_mul (b)");
  if (accumulate) detail::check_below(out, n, p, "pointwise_mul_add (acc)");
  if (p >= (1ULL << 30)) path = Path::native;  // vector Barrett needs p < 2^30
  switch (path) {
#ifdef SPIRALPIR_HAVE_AVX512
    case Path::avx512:
      detail::pointwise_mul_avx512(out, a, b, n, detail::Barrett30(p), accumulate);
      return;
#endif
#ifdef SPIRALPIR_HAVE_AVX2
    case Path::avx2:
      detail::pointwise_mul_avx2(out, a, b, n, detail::Barrett30(p), accumulate);
      return;
#endif
    default:
      detail::pointwise_mul_native(out, a, b, n, p, accumulate);
  }
}

void mul_add_lazy(std::uint64_t* acc, const std::uint64_t* a, const std::uint64_t* b, std::size_t n, Path path) {
  detail::check_below(a, n, 1ULL << 32, "pointwise_mul_add_lazy (a)");
  detail::check_below(b, n, 1ULL << 32, "pointwise_mul_add_lazy (b)");
  switch (path) {
#ifdef SPIRALPIR_HAVE_AVX512
    case Path::avx512:
      detail::pointwise_mul_add_lazy_avx512(acc, a, b, n);
      return;
#endif
#ifdef SPIRALPIR_HAVE_AVX2
    case Path::avx2:
      detail::pointwise_mul_add_lazy_avx2(acc, a, b, n);
      return;
#endif
    default:
      detail::pointwise_mul_add_lazy_native(acc, a, b, n);
  }
}

}  // namespace

void pointwise_mul(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                   std::uint64_t p) {
  mul(out, a, b, n, p, active_path(), false);
}
void pointwise_mul_add(std::uint64_t* acc, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                       std::uint64_t p) {
  mul(acc, a, b, n, p, active_path(), true);
}
void pointwise_mul_add_lazy(std::uint64_t* acc, const std::uint64_t* a, const std::uint64_t* b, std::size_t n) {
  mul_add_lazy(acc, a, b, n, active_path());
}
void pointwise_mul(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                   std::uint64_t p, Path path) {
  mul(out, a, b, n, p, require(path), false);
}
void pointwise_mul_add(std::uint64_t* acc, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                       std::uint64_t p, Path path) {
  mul(acc, a, b, n, p, require(path), true);
}
void pointwise_mul_add_lazy(std::uint64_t* acc, const std::uint64_t* a, const std::uint64_t* b, std::size_t n,
                            Path path) {
  mul_add_lazy(acc, a, b, n, require(path));
}

void reduce_words(std::uint64_t* a, std::size_t n, std::uint64_t p) { reduce_words(a, n, p, active_path()); }

void reduce_words(std::uint64_t* a, std::size_t n, std::uint64_t p, Path path) {
  if (p < (1ULL << 32)) {  // the vector kernels split words in 32-bit halves
    switch (require(path)) {
#ifdef SPIRALPIR_HAVE_AVX512
      case Path::avx512:
        detail::reduce_words_avx512(a, n, detail::Reduce32(p));
        return;
#endif
#ifdef SPIRALPIR_HAVE_AVX2
      case Path::avx2:
        detail::reduce_words_avx2(a, n, detail::Reduce32(p));
        return;
#endif
      default:
        break;
    }
  }
  const Barrett64 br(p);
  for (std::size_t i = 0; i < n; ++i) a[i] = br.reduce(a[i]);
}

void split_halves(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi, std::size_t m, std::size_t n,
                  std::uint64_t p) {
  split_halves(cur, tau, hi, m, n, p, active_path());
}

void split_halves(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi, std::size_t m, std::size_t n,
                  std::uint64_t p, Path path) {
  detail::check_below(cur, n, p, "split_halves (cur)");
  detail::check_below(tau, n, p, "split_halves (tau)");
  if (m >= n) throw std::invalid_argument("split_halves: shift " + std::to_string(m) + " not below n");
  if (p < (1ULL << 62)) {  // the vector kernels keep every lane below 2^63
    switch (require(path)) {
#ifdef SPIRALPIR_HAVE_AVX512
      case Path::avx512:
        return detail::split_halves_avx512(cur, tau, hi, m, n, p);
#endif
#ifdef SPIRALPIR_HAVE_AVX2
      case Path::avx2:
        return detail::split_halves_avx2(cur, tau, hi, m, n, p);
#endif
      default:
        break;
    }
  }
  detail::split_halves_native(cur, tau, hi, m, n, p, 0, n);
}

void split_halves_ntt(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi, const std::uint64_t* w,
                      std::size_t n, std::uint64_t p) {
  split_halves_ntt(cur, tau, hi, w, n, p, active_path());
}

void split_halves_ntt(std::uint64_t* cur, const std::uint64_t* tau, std::uint64_t* hi, const std::uint64_t* w,
                      std::size_t n, std::uint64_t p, Path path) {
  detail::check_below(cur, n, p, "split_halves_ntt (cur)");
  detail::check_below(tau, n, p, "split_halves_ntt (tau)");
  if (hi != nullptr) detail::check_below(w, n, p, "split_halves_ntt (w)");
  if (p >= (1ULL << 50))
    throw std::invalid_argument("split_halves_ntt: modulus " + std::to_string(p) + " not below 2^50");
  switch (require(path)) {
#ifdef SPIRALPIR_HAVE_AVX512
    case Path::avx512:
      if (p < (1ULL << 30)) return detail::split_halves_ntt_avx512(cur, tau, hi, w, n, detail::Barrett30(p));
      break;
#endif
#ifdef SPIRALPIR_HAVE_AVX2
    case Path::avx2:
      if (p < (1ULL << 30)) return detail::split_halves_ntt_avx2(cur, tau, hi, w, n, detail::Barrett30(p));
      break;
#endif
    default:
      break;
  }
  detail::split_halves_ntt_native(cur, tau, hi, w, n, p);
}

void add_mod(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n, std::uint64_t p) {
  add_mod(out, a, b, n, p, active_path());
}

void add_mod(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n, std::uint64_t p,
             Path path) {
  add_or_sub(false, out, a, b, n, p, path);
}

void sub_mod(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n, std::uint64_t p) {
  sub_mod(out, a, b, n, p, active_path());
}

void sub_mod(std::uint64_t* out, const std::uint64_t* a, const std::uint64_t* b, std::size_t n, std::uint64_t p,
             Path path) {
  add_or_sub(true, out, a, b, n, p, path);
}

}  // namespace spiralpir
