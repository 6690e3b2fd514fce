// TensorMeta: everything about a tensor but its memory (shape, strides, dtype,
// device). Interned as Symbol<TensorMeta>, so inference caches key on pointers.
#pragma once

#include "rill/core/device.h"
#include "rill/core/dtype.h"
#include "rill/core/shape.h"
#include "rill/util/symbol.h"

namespace rill {

/** Shape, strides, dtype and device of a tensor. */
struct TensorMeta {
  Shape shape;
  Strides strides;
  DType dtype = DType::kFloat32;
  Device device;
  int64_t numel = 1;        // derived from shape
  bool contiguous = true;   // derived from shape and strides

  TensorMeta() = default;
  TensorMeta(Shape shape, Strides strides, DType dtype, Device device);
  bool operator==(const TensorMeta& o) const {
    return dtype == o.dtype && device == o.device && shape == o.shape && strides == o.strides;
  }
  size_t hash() const;
  /** Number of dimensions. */
  int64_t ndim() const { return static_cast<int64_t>(shape.size()); }
  /** "float32[2, 3]" */
  std::string str() const;
};

/** An interned TensorMeta. */
using MetaSym = Symbol<TensorMeta>;

/** Interned meta of a dense row-major tensor. */
MetaSym make_contiguous_meta(const Shape& shape, DType dtype, Device device = {});
/** Interned meta with explicit strides. */
MetaSym make_meta(const Shape& shape, const Strides& strides, DType dtype, Device device = {});

}  // namespace rill
