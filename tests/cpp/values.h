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

}  // namespace rill::test
