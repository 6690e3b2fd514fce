// Reductions and maps over one dense row, shared by the nn kernels (softmax.cpp,
// norm.cpp): max, sum, dot, and exp(x - m) with its sum. Values are read as
// OpMath<T> (16-bit floats in float). float32 rows go to the row kernels built for
// this CPU (isa_rows.h: AVX2 or AVX-512 and libmvec's expf, Note [Vector math] in
// elementwise.cpp); other types use plain loops with several accumulators, as
// vectorising a floating sum needs reassociation the compiler may not do on its own.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "rill/core/dtype.h"
#include "rill/kernels/cpu/isa_rows.h"

namespace rill::cpu::row {

/** max of x[0..n) (n >= 1); NaN propagates through the later exp, as in PyTorch. */
template <typename T>
OpMath<T> max(const T* x, int64_t n) {
  using A = OpMath<T>;
  A m = -std::numeric_limits<A>::infinity();
  for (int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<A>(x[i]));
  return m;
}

/** sum of x[0..n). */
template <typename T>
OpMath<T> sum(const T* x, int64_t n) {
  using A = OpMath<T>;
  A s[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) s[k] += static_cast<A>(x[i + k]);
  for (; i < n; ++i) s[0] += static_cast<A>(x[i]);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

/** sum of a[i] * b[i]. */
template <typename T>
OpMath<T> dot(const T* a, const T* b, int64_t n) {
  using A = OpMath<T>;
  A s[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) s[k] += static_cast<A>(a[i + k]) * static_cast<A>(b[i + k]);
  for (; i < n; ++i) s[0] += static_cast<A>(a[i]) * static_cast<A>(b[i]);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

/** sum of (x[i] - m)^2. */
template <typename T>
OpMath<T> centered_squares(const T* x, OpMath<T> m, int64_t n) {
  using A = OpMath<T>;
  A s[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) {
      A d = static_cast<A>(x[i + k]) - m;
      s[k] += d * d;
    }
  for (; i < n; ++i) {
    A d = static_cast<A>(x[i]) - m;
    s[0] += d * d;
  }
  return (s[0] + s[1]) + (s[2] + s[3]);
}

/** out[i] = exp(x[i] - m) (out may be null: only the sum), returns the sum of those. */
template <typename T>
OpMath<T> exp_sum(const T* x, OpMath<T> m, OpMath<T>* out, int64_t n) {
  using A = OpMath<T>;
  double s = 0;  // one running sum: in double, so a long row loses no digits to it
  for (int64_t i = 0; i < n; ++i) {
    A e = std::exp(static_cast<A>(x[i]) - m);
    if (out) out[i] = e;
    s += static_cast<double>(e);
  }
  return static_cast<A>(s);
}

template <>
inline float max<float>(const float* x, int64_t n) {
  return row_kernels().row_max(x, n);
}

template <>
inline float sum<float>(const float* x, int64_t n) {
  return row_kernels().row_sum(x, n);
}

template <>
inline float dot<float>(const float* a, const float* b, int64_t n) {
  return row_kernels().row_dot(a, b, n);
}

template <>
inline float centered_squares<float>(const float* x, float m, int64_t n) {
  return row_kernels().row_centered_squares(x, m, n);
}

template <>
inline float exp_sum<float>(const float* x, float m, float* out, int64_t n) {
  return row_kernels().row_exp_sum(x, m, out, n);
}

}  // namespace rill::cpu::row
