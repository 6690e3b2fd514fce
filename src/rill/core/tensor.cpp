#include "rill/core/tensor.h"

namespace rill {

Tensor Tensor::empty(MetaSym meta) {
  size_t nbytes = static_cast<size_t>(meta->numel * dtype_itemsize(meta->dtype));
  auto storage = std::make_shared<Storage>(nbytes, meta->device);
  return Tensor(std::make_shared<TensorImpl>(meta, std::move(storage), 0));
}

Tensor Tensor::view_as_meta(MetaSym meta, int64_t offset) const {
  return Tensor(std::make_shared<TensorImpl>(meta, impl_->storage(), offset));
}

}  // namespace rill
