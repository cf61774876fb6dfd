// poly.hpp — polynomials of R_q in CRT form, coefficient and NTT domain as distinct types.
//
// Layout (both types): residue-major uint64_t[num_primes · poly_len], 64-byte aligned;
// residue(i)[j] is coefficient (or NTT slot) j mod p_i, always in [0, p_i) between operations.
//
// API (namespace spiralpir, R a RingSpec):
//   PolyCoeff<R>, PolyNtt<R>         zero-initialised; data(), size(), residue(i) -> uint64_t*,
//                                    operator()(i, j) (prime i, coefficient j), operator==
//   PolyCoeff<R>::from_signed(span<const int64_t>)     e.g. noise (any int64)
//   PolyCoeff<R>::from_unsigned(span<const uint64_t>)  any uint64, reduced mod each p_i
//   coeff(PolyCoeff, j) -> u128 in [0, q);  centered_coeff(PolyCoeff, j) -> i128 in (−q/2, q/2]
//   to_ntt(PolyCoeff) -> PolyNtt;  from_ntt(PolyNtt) -> PolyCoeff  (rvalue overloads work in place)
//   to_ntt_into(PolyCoeff, PolyNtt&)  the same into an existing polynomial's words
//   both domains: a + b, a − b, −a, +=, −=, add/sub/neg, scalar_mul(a, uint64_t | u128)
//                                    (constant time in the coefficients: masked reductions)
//   wipe()                           zero the coefficients with stores the compiler keeps
//   NTT domain:   a * b = mul(a, b) (pointwise), mul_add(acc, a, b)  (acc += a·b, reduced)
//   LazyAccumulator<R, Terms>        sums up to Terms NTT-domain products without reducing;
//                                    static_assert(Terms <= max_lazy_terms<R>()); add_product(a, b),
//                                    count(), reduce() -> PolyNtt<R>, clear()
//   PolyMatrix<P>                    rows × cols polynomials (row-major, each aligned);
//                                    at(r, c), rows(), cols(), +, −, matmul(A, B) for PolyNtt
//                                    entries (lazy accumulation, reduced every max_lazy_terms).
#pragma once

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "spiralpir/core/aligned.hpp"
#include "spiralpir/core/ct.hpp"
#include "spiralpir/core/wipe.hpp"
#include "spiralpir/arith/crt.hpp"
#include "spiralpir/arith/modarith.hpp"
#include "spiralpir/arith/ntt.hpp"
#include "spiralpir/arith/pointwise.hpp"
#include "spiralpir/arith/ring.hpp"
#include "spiralpir/arith/tables.hpp"

namespace spiralpir {

namespace detail {

template <class R>
class PolyStorage {
 public:
  using ring = R;
  static constexpr std::size_t poly_len = R::poly_len;
  static constexpr std::size_t num_primes = R::num_primes;
  static constexpr std::size_t words = R::poly_len * R::num_primes;

  PolyStorage() : buf_(words) {}

  std::uint64_t* data() noexcept { return buf_.data(); }
  const std::uint64_t* data() const noexcept { return buf_.data(); }
  static constexpr std::size_t size() noexcept { return words; }
  std::uint64_t* residue(std::size_t i) noexcept { return buf_.data() + i * poly_len; }
  const std::uint64_t* residue(std::size_t i) const noexcept { return buf_.data() + i * poly_len; }
  std::uint64_t& operator()(std::size_t i, std::size_t j) noexcept { return buf_[i * poly_len + j]; }
  std::uint64_t operator()(std::size_t i, std::size_t j) const noexcept { return buf_[i * poly_len + j]; }
  /// zero the coefficients (secrets, noise) with stores the compiler keeps
  void wipe() noexcept { secure_wipe(buf_.data(), buf_.size() * sizeof(std::uint64_t)); }

 protected:
  explicit PolyStorage(AlignedBuffer<std::uint64_t>&& b) : buf_(std::move(b)) {}
  AlignedBuffer<std::uint64_t> buf_;

  bool equal(const PolyStorage& o) const {
    for (std::size_t i = 0; i < words; ++i)
      if (buf_[i] != o.buf_[i]) return false;
    return true;
  }
};

}  // namespace detail

template <class R>
class PolyNtt;

template <class R>
class PolyCoeff : public detail::PolyStorage<R> {
  using Base = detail::PolyStorage<R>;

 public:
  PolyCoeff() = default;
  /// contents unspecified: for outputs a kernel writes in full (saves zeroing them first)
  static PolyCoeff uninitialised() {
    return PolyCoeff(AlignedBuffer<std::uint64_t>(Base::words, AlignedBuffer<std::uint64_t>::Uninitialised{}));
  }

  /// constant time in the values (masks, Barrett reduction)
  static PolyCoeff from_signed(std::span<const std::int64_t> c) {
    if (c.size() != R::poly_len) throw std::invalid_argument("PolyCoeff::from_signed: wrong length");
    PolyCoeff out;
    for (std::size_t i = 0; i < R::num_primes; ++i) {
      const std::uint64_t p = R::primes[i];
      const Barrett64& br = detail::word_reducers<R>[i];
      std::uint64_t* r = out.residue(i);
      for (std::size_t j = 0; j < R::poly_len; ++j) {
        const auto v = static_cast<std::uint64_t>(c[j]);
        const std::uint64_t neg = 0 - (v >> 63);
        const std::uint64_t m = br.reduce((v ^ neg) - neg);  // |v| mod p (INT64_MIN is fine)
        r[j] = ct::select(neg, ct::neg_mod(m, p), m);
      }
    }
    return out;
  }

  static PolyCoeff from_unsigned(std::span<const std::uint64_t> c) {
    if (c.size() != R::poly_len) throw std::invalid_argument("PolyCoeff::from_unsigned: wrong length");
    PolyCoeff out;
    for (std::size_t i = 0; i < R::num_primes; ++i) {
      const Barrett64& br = detail::word_reducers<R>[i];
      for (std::size_t j = 0; j < R::poly_len; ++j) out(i, j) = br.reduce(c[j]);
    }
    return out;
  }

  bool operator==(const PolyCoeff& o) const { return this->equal(o); }

 private:
  explicit PolyCoeff(AlignedBuffer<std::uint64_t>&& b) : Base(std::move(b)) {}
  template <class S>
  friend PolyCoeff<S> from_ntt(PolyNtt<S>&& a);
  template <class S>
  friend PolyNtt<S> to_ntt(PolyCoeff<S>&& a);
};

template <class R>
class PolyNtt : public detail::PolyStorage<R> {
  using Base = detail::PolyStorage<R>;

 public:
  PolyNtt() = default;
  /// contents unspecified: for outputs a kernel writes in full (saves zeroing them first)
  static PolyNtt uninitialised() {
    return PolyNtt(AlignedBuffer<std::uint64_t>(Base::words, AlignedBuffer<std::uint64_t>::Uninitialised{}));
  }
  bool operator==(const PolyNtt& o) const { return this->equal(o); }

 private:
  explicit PolyNtt(AlignedBuffer<std::uint64_t>&& b) : Base(std::move(b)) {}
  template <class S>
  friend PolyNtt<S> to_ntt(PolyCoeff<S>&& a);
  template <class S>
  friend PolyCoeff<S> from_ntt(PolyNtt<S>&& a);
};

template <class P>
inline constexpr bool is_poly_v = false;
template <class R>
inline constexpr bool is_poly_v<PolyCoeff<R>> = true;
template <class R>
inline constexpr bool is_poly_v<PolyNtt<R>> = true;

// ---- domain changes -------------------------------------------------------------------------

template <class R>
PolyNtt<R> to_ntt(PolyCoeff<R>&& a) {
  const auto& t = tables<R>();
  for (std::size_t i = 0; i < R::num_primes; ++i) ntt_forward(a.residue(i), t.ntt[i]);
  return PolyNtt<R>(std::move(a.buf_));
}
template <class R>
PolyNtt<R> to_ntt(const PolyCoeff<R>& a) {
  return to_ntt(PolyCoeff<R>(a));
}
/// to_ntt(a) written into out's own words: no allocation (out is overwritten)
template <class R>
void to_ntt_into(const PolyCoeff<R>& a, PolyNtt<R>& out) {
  const auto& t = tables<R>();
  std::copy(a.data(), a.data() + a.size(), out.data());
  for (std::size_t i = 0; i < R::num_primes; ++i) ntt_forward(out.residue(i), t.ntt[i]);
}
template <class R>
PolyCoeff<R> from_ntt(PolyNtt<R>&& a) {
  const auto& t = tables<R>();
  for (std::size_t i = 0; i < R::num_primes; ++i) ntt_inverse(a.residue(i), t.ntt[i]);
  return PolyCoeff<R>(std::move(a.buf_));
}
template <class R>
PolyCoeff<R> from_ntt(const PolyNtt<R>& a) {
  return from_ntt(PolyNtt<R>(a));
}

// ---- coefficient read-out ---------------------------------------------------------------------

template <class R>
u128 coeff(const PolyCoeff<R>& a, std::size_t j) {
  std::uint64_t r[R::num_primes];
  for (std::size_t i = 0; i < R::num_primes; ++i) r[i] = a(i, j);
  return crt_compose<R>(r);
}
template <class R>
i128 centered_coeff(const PolyCoeff<R>& a, std::size_t j) {
  return centered_lift<R>(coeff(a, j));
}

// ---- ring operations, both domains --------------------------------------------------------------

template <class P, std::enable_if_t<is_poly_v<P>, int> = 0>
P& operator+=(P& a, const P& b) {
  using R = typename P::ring;
  for (std::size_t i = 0; i < R::num_primes; ++i)
    add_mod(a.residue(i), a.residue(i), b.residue(i), R::poly_len, R::primes[i]);
  return a;
}

template <class P, std::enable_if_t<is_poly_v<P>, int> = 0>
P& operator-=(P& a, const P& b) {
  using R = typename P::ring;
  for (std::size_t i = 0; i < R::num_primes; ++i)
    sub_mod(a.residue(i), a.residue(i), b.residue(i), R::poly_len, R::primes[i]);
  return a;
}

template <class P, std::enable_if_t<is_poly_v<P>, int> = 0>
P operator+(P a, const P& b) {
  return a += b;
}
template <class P, std::enable_if_t<is_poly_v<P>, int> = 0>
P operator-(P a, const P& b) {
  return a -= b;
}
template <class P, std::enable_if_t<is_poly_v<P>, int> = 0>
P operator-(P a) {
  using R = typename P::ring;
  for (std::size_t i = 0; i < R::num_primes; ++i) {
    const std::uint64_t p = R::primes[i];
    std::uint64_t* x = a.residue(i);
    for (std::size_t j = 0; j < R::poly_len; ++j) x[j] = ct::neg_mod(x[j], p);
  }
  return a;
}
template <class P, std::enable_if_t<is_poly_v<P>, int> = 0>
P add(const P& a, const P& b) {
  return a + b;
}
template <class P, std::enable_if_t<is_poly_v<P>, int> = 0>
P sub(const P& a, const P& b) {
  return a - b;
}
template <class P, std::enable_if_t<is_poly_v<P>, int> = 0>
P neg(const P& a) {
  return -a;
}

// Multiplication by the integer c (mod q): works in either domain since the NTT is linear.
template <class P, std::enable_if_t<is_poly_v<P>, int> = 0>
P scalar_mul(P a, u128 c) {
  using R = typename P::ring;
  for (std::size_t i = 0; i < R::num_primes; ++i) {
    const std::uint64_t p = R::primes[i];
    const std::uint64_t w = barrett_reduce128(c, p), ws = shoup_precompute(w, p);
    std::uint64_t* x = a.residue(i);
    for (std::size_t j = 0; j < R::poly_len; ++j) x[j] = mul_shoup(x[j], w, ws, p);
  }
  return a;
}
template <class P, std::enable_if_t<is_poly_v<P>, int> = 0>
P scalar_mul(P a, std::uint64_t c) {
  return scalar_mul(std::move(a), static_cast<u128>(c));
}

// ---- NTT-domain products -------------------------------------------------------------------------

template <class R>
PolyNtt<R> mul(const PolyNtt<R>& a, const PolyNtt<R>& b) {
  PolyNtt<R> out;
  for (std::size_t i = 0; i < R::num_primes; ++i)
    pointwise_mul(out.residue(i), a.residue(i), b.residue(i), R::poly_len, R::primes[i]);
  return out;
}
template <class R>
PolyNtt<R> operator*(const PolyNtt<R>& a, const PolyNtt<R>& b) {
  return mul(a, b);
}
template <class R>
void mul_add(PolyNtt<R>& acc, const PolyNtt<R>& a, const PolyNtt<R>& b) {
  for (std::size_t i = 0; i < R::num_primes; ++i)
    pointwise_mul_add(acc.residue(i), a.residue(i), b.residue(i), R::poly_len, R::primes[i]);
}

template <class R, std::size_t Terms>
class LazyAccumulator {
  static_assert(Terms >= 1, "a lazy accumulator sums at least one product");
  static_assert(Terms <= max_lazy_terms<R>(),
                "Terms exceeds max_lazy_terms<R>(): the uint64 accumulator could overflow");

 public:
  LazyAccumulator() : acc_(R::poly_len * R::num_primes) {}

  void add_product(const PolyNtt<R>& a, const PolyNtt<R>& b) {
    if (count_ >= Terms) throw std::logic_error("LazyAccumulator: more products than its static bound");
    ++count_;
    for (std::size_t i = 0; i < R::num_primes; ++i)
      pointwise_mul_add_lazy(acc_.data() + i * R::poly_len, a.residue(i), b.residue(i), R::poly_len);
  }
  std::size_t count() const noexcept { return count_; }
  const std::uint64_t* raw() const noexcept { return acc_.data(); }

  PolyNtt<R> reduce() const {
    PolyNtt<R> out;
    for (std::size_t i = 0; i < R::num_primes; ++i) {
      std::uint64_t* r = out.residue(i);
      const std::uint64_t* s = acc_.data() + i * R::poly_len;
      for (std::size_t j = 0; j < R::poly_len; ++j) r[j] = s[j];
      reduce_words(r, R::poly_len, R::primes[i]);
    }
    return out;
  }
  void clear() {
    for (auto& w : acc_) w = 0;
    count_ = 0;
  }

 private:
  AlignedBuffer<std::uint64_t> acc_;
  std::size_t count_ = 0;
};

// ---- matrices of polynomials -----------------------------------------------------------------------

template <class P>
class PolyMatrix {
  static_assert(is_poly_v<P>, "PolyMatrix holds PolyCoeff or PolyNtt");

 public:
  using poly_type = P;
  PolyMatrix() = default;
  PolyMatrix(std::size_t rows, std::size_t cols) : rows_(rows), cols_(cols), elems_(rows * cols) {}
  /// rows×cols of P::uninitialised(): contents unspecified, for outputs written in full
  static PolyMatrix uninitialised(std::size_t rows, std::size_t cols) {
    PolyMatrix m;
    m.rows_ = rows;
    m.cols_ = cols;
    m.elems_.reserve(rows * cols);
    for (std::size_t x = 0; x < rows * cols; ++x) m.elems_.push_back(P::uninitialised());
    return m;
  }

  std::size_t rows() const noexcept { return rows_; }
  std::size_t cols() const noexcept { return cols_; }
  P& at(std::size_t r, std::size_t c) { return elems_[check(r, c)]; }
  const P& at(std::size_t r, std::size_t c) const { return elems_[check(r, c)]; }
  P& operator()(std::size_t r, std::size_t c) { return at(r, c); }
  const P& operator()(std::size_t r, std::size_t c) const { return at(r, c); }
  bool operator==(const PolyMatrix& o) const { return rows_ == o.rows_ && cols_ == o.cols_ && elems_ == o.elems_; }

  PolyMatrix& operator+=(const PolyMatrix& o) {
    same_shape(o);
    for (std::size_t i = 0; i < elems_.size(); ++i) elems_[i] += o.elems_[i];
    return *this;
  }
  PolyMatrix& operator-=(const PolyMatrix& o) {
    same_shape(o);
    for (std::size_t i = 0; i < elems_.size(); ++i) elems_[i] -= o.elems_[i];
    return *this;
  }
  friend PolyMatrix operator+(PolyMatrix a, const PolyMatrix& b) { return a += b; }
  friend PolyMatrix operator-(PolyMatrix a, const PolyMatrix& b) { return a -= b; }

 private:
  std::size_t check(std::size_t r, std::size_t c) const {
    if (r >= rows_ || c >= cols_) throw std::out_of_range("PolyMatrix::at: index out of range");
    return r * cols_ + c;
  }
  void same_shape(const PolyMatrix& o) const {
    if (rows_ != o.rows_ || cols_ != o.cols_) throw std::invalid_argument("PolyMatrix: shapes differ");
  }

  std::size_t rows_ = 0, cols_ = 0;
  std::vector<P> elems_;
};

// C = A·B over R_q (NTT domain). Sums of up to max_lazy_terms<R>() products stay unreduced.
template <class R>
PolyMatrix<PolyNtt<R>> matmul(const PolyMatrix<PolyNtt<R>>& a, const PolyMatrix<PolyNtt<R>>& b) {
  if (a.cols() != b.rows()) throw std::invalid_argument("matmul: inner dimensions differ");
  PolyMatrix<PolyNtt<R>> c(a.rows(), b.cols());
  constexpr std::size_t lazy = max_lazy_terms<R>();
  for (std::size_t r = 0; r < a.rows(); ++r) {
    for (std::size_t col = 0; col < b.cols(); ++col) {
      PolyNtt<R>& out = c.at(r, col);
      for (std::size_t i = 0; i < R::num_primes; ++i) {
        std::uint64_t* acc = out.residue(i);
        std::size_t pending = 0;
        for (std::size_t k = 0; k < a.cols(); ++k) {
          if constexpr (lazy == 0) {
            pointwise_mul_add(acc, a.at(r, k).residue(i), b.at(k, col).residue(i), R::poly_len, R::primes[i]);
          } else {
            if (pending == lazy) {
              reduce_words(acc, R::poly_len, R::primes[i]);
              pending = 0;
            }
            pointwise_mul_add_lazy(acc, a.at(r, k).residue(i), b.at(k, col).residue(i), R::poly_len);
            ++pending;
          }
        }
        if constexpr (lazy != 0) reduce_words(acc, R::poly_len, R::primes[i]);
      }
    }
  }
  return c;
}

}  // namespace spiralpir
