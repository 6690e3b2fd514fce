// Reading a tensor's values in a test: its elements in row-major order, after a sync.
#pragma once

#include <vector>

#include "rill/eager/functional.h"

namespace rill::test {

/** t's elements as T, waiting for the ops that write it. */
template <typename T>
std::vector<T> values(const Tensor& t) {
  Tensor c = eager::contiguous(t);
  eager::wait_readable(c);
  const T* p = static_cast<const T*>(c.data_ptr());
  return std::vector<T>(p, p + c.numel());
}

/** A float32 tensor of shape whose kernel raises (mvlgamma(x, p) needs every x > (p - 1) / 2): an error found
 * while the kernel runs, reaching the reader at its next sync point. */
inline Tensor failing_kernel(const Shape& shape) {
  Tensor small = eager::full(shape, Scalar(0.1), DType::kFloat32);
  return eager::call1(eager::op("mvlgamma"), {&small, 1}, {}, make_attrs({int64_t{3}}));
}

}  // namespace rill::test
