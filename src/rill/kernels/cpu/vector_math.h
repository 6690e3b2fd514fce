// Dense float32 loops on 16-lane vectors, for the transcendental elementwise ops
// (Note [Vector math] in elementwise.cpp). Where glibc's libmvec and AVX-512 are
// available, RILL_VECTOR_MATH is defined and the _ZGVeN16v_* functions (the x86-64
// vector ABI names of expf, logf, ...) can be called on __m512 values.
#pragma once

#include <initializer_list>

#include "rill/kernels/cpu/loops.h"

#if defined(RILL_HAVE_LIBMVEC) && defined(__AVX512F__)
#include <immintrin.h>
#define RILL_VECTOR_MATH 1
extern "C" __m512 _ZGVeN16v_expf(__m512);
extern "C" __m512 _ZGVeN16v_logf(__m512);
extern "C" __m512 _ZGVeN16v_tanhf(__m512);
extern "C" __m512 _ZGVeN16v_sinf(__m512);
extern "C" __m512 _ZGVeN16v_cosf(__m512);
extern "C" __m512 _ZGVeN16v_expm1f(__m512);
extern "C" __m512 _ZGVeN16v_log1pf(__m512);
extern "C" __m512 _ZGVeN16v_erff(__m512);
#endif

namespace rill::cpu {

#if defined(RILL_VECTOR_MATH)
/** True when every operand is a dense float32 tensor of out's shape (no broadcasting). */
inline bool all_dense_float32(const TensorArg& out, std::initializer_list<const TensorArg*> ins) {
  const TensorMeta& o = *out.meta;
  if (o.dtype != DType::kFloat32 || !o.contiguous) return false;
  for (const TensorArg* a : ins)
    if (a->meta->dtype != DType::kFloat32 || !a->meta->contiguous || a->meta->shape != o.shape) return false;
  return true;
}

/** out = vf(in) over 16-lane blocks, split over the intra-op pool; false (nothing done) unless every operand
 * is dense float32 of one shape. vf maps __m512 to __m512; the tail goes through masked loads. */
template <typename VF>
bool map_dense_float32(const TensorArg& out, const TensorArg& in, const VF& vf) {
  if (!all_dense_float32(out, {&in})) return false;
  const float* x = in.ptr<const float>();
  float* y = out.ptr<float>();
  parallel::parallel_for(0, out.meta->numel, kParallelGrain, [&](int64_t b, int64_t e) {
    int64_t i = b;
    for (; i + 16 <= e; i += 16) _mm512_storeu_ps(y + i, vf(_mm512_loadu_ps(x + i)));
    if (i < e) {
      __mmask16 m = static_cast<__mmask16>((1u << (e - i)) - 1);
      _mm512_mask_storeu_ps(y + i, m, vf(_mm512_maskz_loadu_ps(m, x + i)));
    }
  });
  return true;
}

/** out = vf(a, b) for two dense float32 inputs of out's shape (backward kernels: a is the gradient). */
template <typename VF>
bool map_dense_float32(const TensorArg& out, const TensorArg& a, const TensorArg& b, const VF& vf) {
  if (!all_dense_float32(out, {&a, &b})) return false;
  const float* x = a.ptr<const float>();
  const float* z = b.ptr<const float>();
  float* y = out.ptr<float>();
  parallel::parallel_for(0, out.meta->numel, kParallelGrain, [&](int64_t lo, int64_t e) {
    int64_t i = lo;
    for (; i + 16 <= e; i += 16) _mm512_storeu_ps(y + i, vf(_mm512_loadu_ps(x + i), _mm512_loadu_ps(z + i)));
    if (i < e) {
      __mmask16 m = static_cast<__mmask16>((1u << (e - i)) - 1);
      _mm512_mask_storeu_ps(y + i, m, vf(_mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, z + i)));
    }
  });
  return true;
}
#endif

}  // namespace rill::cpu
