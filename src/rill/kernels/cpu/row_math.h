// Reductions and maps over one dense row, shared by the nn kernels (softmax.cpp,
// norm.cpp): max, sum, dot, and exp(x - m) with its sum. Values are read as
// OpMath<T> (16-bit floats in float). float32 rows use AVX-512 and libmvec's
// 16-lane expf where the build has them (Note [Vector math] in elementwise.cpp);
// other types, and builds without them, use plain loops with several
// accumulators, as vectorising a floating sum needs reassociation the compiler
// may not do on its own.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "rill/core/dtype.h"

#if defined(RILL_HAVE_LIBMVEC) && defined(__AVX512F__)
#include <immintrin.h>
#define RILL_ROW_MATH_AVX512 1
extern "C" __m512 _ZGVeN16v_expf(__m512);  // glibc's libmvec: 16-lane expf
#endif

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

#if defined(RILL_ROW_MATH_AVX512)
/** Lanes [0, r) set (r < 16). */
inline __mmask16 tail_mask(int64_t r) { return static_cast<__mmask16>((1u << r) - 1); }

// Horizontal sum and max of 16 lanes. GCC 12's _mm512_reduce_*_ps trip -Wmaybe-uninitialized inside its own
// header, so the lanes go through memory instead (off the hot loop: once per row).
inline float lanes_sum(__m512 v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  float s[4] = {0, 0, 0, 0};
  for (int i = 0; i < 16; ++i) s[i % 4] += t[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

inline float lanes_max(__m512 v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  float m = t[0];
  for (int i = 1; i < 16; ++i) m = std::max(m, t[i]);
  return m;
}

template <>
inline float max<float>(const float* x, int64_t n) {
  __m512 v = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t i = 0;
  // The masked form with all lanes set: GCC 12's _mm512_max_ps trips -Wmaybe-uninitialized in its header.
  for (; i + 16 <= n; i += 16) v = _mm512_mask_max_ps(v, 0xFFFF, v, _mm512_loadu_ps(x + i));
  if (i < n) v = _mm512_mask_max_ps(v, tail_mask(n - i), v, _mm512_maskz_loadu_ps(tail_mask(n - i), x + i));
  return lanes_max(v);
}

template <>
inline float sum<float>(const float* x, int64_t n) {
  __m512 a = _mm512_setzero_ps(), b = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a = _mm512_add_ps(a, _mm512_loadu_ps(x + i));
    b = _mm512_add_ps(b, _mm512_loadu_ps(x + i + 16));
  }
  for (; i + 16 <= n; i += 16) a = _mm512_add_ps(a, _mm512_loadu_ps(x + i));
  if (i < n) a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(tail_mask(n - i), x + i));
  return lanes_sum(_mm512_add_ps(a, b));
}

template <>
inline float dot<float>(const float* x, const float* y, int64_t n) {
  __m512 a = _mm512_setzero_ps(), b = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), a);
    b = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(y + i + 16), b);
  }
  for (; i + 16 <= n; i += 16) a = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), a);
  if (i < n) {
    __mmask16 k = tail_mask(n - i);
    a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, x + i), _mm512_maskz_loadu_ps(k, y + i), a);
  }
  return lanes_sum(_mm512_add_ps(a, b));
}

template <>
inline float centered_squares<float>(const float* x, float m, int64_t n) {
  const __m512 vm = _mm512_set1_ps(m);
  __m512 a = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + i), vm);
    a = _mm512_fmadd_ps(d, d, a);
  }
  if (i < n) {
    __mmask16 k = tail_mask(n - i);
    __m512 d = _mm512_maskz_sub_ps(k, _mm512_maskz_loadu_ps(k, x + i), vm);
    a = _mm512_fmadd_ps(d, d, a);
  }
  return lanes_sum(a);
}

template <>
inline float exp_sum<float>(const float* x, float m, float* out, int64_t n) {
  const __m512 vm = _mm512_set1_ps(m);
  __m512 s = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 e = _ZGVeN16v_expf(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
    if (out) _mm512_storeu_ps(out + i, e);
    s = _mm512_add_ps(s, e);
  }
  if (i < n) {
    __mmask16 k = tail_mask(n - i);
    __m512 e = _ZGVeN16v_expf(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), vm));
    if (out) _mm512_mask_storeu_ps(out + i, k, e);
    s = _mm512_mask_add_ps(s, k, s, e);
  }
  return lanes_sum(s);
}
#endif

}  // namespace rill::cpu::row
