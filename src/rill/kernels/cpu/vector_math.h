// Dense float32 loops through the row kernels built for this CPU (isa_rows.h), for the transcendental
// elementwise ops and the activations (Note [Vector math] in elementwise.cpp): the tensor is split over the
// intra-op pool and each piece handed to one row.
#pragma once

#include <initializer_list>

#include "rill/kernels/cpu/isa_rows.h"
#include "rill/kernels/cpu/loops.h"

namespace rill::cpu {

/** True when every operand is a dense float32 tensor of out's shape (no broadcasting). */
inline bool all_dense_float32(const TensorArg& out, std::initializer_list<const TensorArg*> ins) {
  const TensorMeta& o = *out.meta;
  if (o.dtype != DType::kFloat32 || !o.contiguous) return false;
  for (const TensorArg* a : ins)
    if (a->meta->dtype != DType::kFloat32 || !a->meta->contiguous || a->meta->shape != o.shape) return false;
  return true;
}

/** row(y, x, n) over out = f(in), split over the intra-op pool; false (nothing done) unless every operand is
 * dense float32 of one shape. */
template <typename Row>
bool map_dense_float32(const TensorArg& out, const TensorArg& in, const Row& row) {
  if (!all_dense_float32(out, {&in})) return false;
  const float* x = in.ptr<const float>();
  float* y = out.ptr<float>();
  parallel::parallel_for(0, out.meta->numel, kParallelGrain, [&](int64_t b, int64_t e) { row(y + b, x + b, e - b); });
  return true;
}

/** row(y, a, b, n) over out = f(a, b) for two dense float32 inputs of out's shape (backward kernels: a is the
 * gradient). */
template <typename Row>
bool map_dense_float32(const TensorArg& out, const TensorArg& a, const TensorArg& b, const Row& row) {
  if (!all_dense_float32(out, {&a, &b})) return false;
  const float* x = a.ptr<const float>();
  const float* z = b.ptr<const float>();
  float* y = out.ptr<float>();
  parallel::parallel_for(0, out.meta->numel, kParallelGrain,
                         [&](int64_t lo, int64_t e) { row(y + lo, x + lo, z + lo, e - lo); });
  return true;
}

}  // namespace rill::cpu
