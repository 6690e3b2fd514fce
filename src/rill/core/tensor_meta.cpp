#include "rill/core/tensor_meta.h"

namespace rill {

TensorMeta::TensorMeta(Shape shape_in, Strides strides_in, DType dtype_in, Device device_in)
    : shape(std::move(shape_in)), strides(std::move(strides_in)), dtype(dtype_in), device(device_in) {
  numel = shape_numel(shape);
  contiguous = strides_are_contiguous(shape, strides);
}

size_t TensorMeta::hash() const {
  size_t h = static_cast<size_t>(dtype) * 31 + static_cast<size_t>(device.type) * 7 + device.index;
  for (int64_t s : shape) hash_combine(h, static_cast<size_t>(s));
  for (int64_t s : strides) hash_combine(h, static_cast<size_t>(s) * 0x51);
  return h;
}

std::string TensorMeta::str() const { return std::string(dtype_name(dtype)) + shape_str(shape); }

MetaSym make_contiguous_meta(const Shape& shape, DType dtype, Device device) {
  return MetaSym::intern(TensorMeta(shape, contiguous_strides(shape), dtype, device));
}

MetaSym make_meta(const Shape& shape, const Strides& strides, DType dtype, Device device) {
  return MetaSym::intern(TensorMeta(shape, strides, dtype, device));
}

}  // namespace rill
