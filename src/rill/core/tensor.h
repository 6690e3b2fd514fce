// Tensor: a handle (shared pointer) to a TensorImpl = interned meta + storage +
// offset. Views share storage. A tensor exists with its meta as soon as the op
// that produces it is issued; its memory is written when the instruction runs.
#pragma once

#include <memory>

#include "rill/core/storage.h"
#include "rill/core/tensor_meta.h"

namespace rill {

/** A tensor's autograd state (grad, grad_fn, hooks, view base); defined by the autograd layer, which is
 * the only one that creates or reads it (core stays below autograd, docs/architecture.md §1). */
struct AutogradMeta;

/** The shared state of a tensor. */
class TensorImpl {
 public:
  TensorImpl(MetaSym meta, std::shared_ptr<Storage> storage, int64_t offset)
      : meta_(meta), storage_(std::move(storage)), offset_(offset) {}
  MetaSym meta() const { return meta_; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  /** Offset of element 0 in storage, in elements. */
  int64_t offset() const { return offset_; }
  bool requires_grad() const { return requires_grad_; }
  void set_requires_grad(bool v) { requires_grad_ = v; }
  /** Autograd state, or null for a tensor autograd never touched. */
  AutogradMeta* autograd_meta() const { return autograd_meta_.get(); }
  /** The owning pointer to the autograd state. */
  const std::shared_ptr<AutogradMeta>& autograd_meta_ptr() const { return autograd_meta_; }
  void set_autograd_meta(std::shared_ptr<AutogradMeta> m) { autograd_meta_ = std::move(m); }

 private:
  MetaSym meta_;
  std::shared_ptr<Storage> storage_;
  int64_t offset_;
  bool requires_grad_ = false;
  std::shared_ptr<AutogradMeta> autograd_meta_;  // deleter captured where autograd creates it
};

/** A reference-counted handle to a tensor. */
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  /** A new tensor with fresh (lazily allocated) dense storage. */
  static Tensor empty(MetaSym meta);
  /** A view: new meta over this tensor's storage at offset (elements). */
  Tensor view_as_meta(MetaSym meta, int64_t offset) const;

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  MetaSym meta() const { return impl_->meta(); }
  const Shape& shape() const { return impl_->meta()->shape; }
  const Strides& strides() const { return impl_->meta()->strides; }
  DType dtype() const { return impl_->meta()->dtype; }
  Device device() const { return impl_->meta()->device; }
  int64_t ndim() const { return impl_->meta()->ndim(); }
  int64_t numel() const { return impl_->meta()->numel; }
  bool is_contiguous() const { return impl_->meta()->contiguous; }
  int64_t offset() const { return impl_->offset(); }
  const std::shared_ptr<Storage>& storage() const { return impl_->storage(); }
  /** Pointer to element 0 (allocates the storage if needed). Only for code that runs kernels. */
  void* data_ptr() const {
    return static_cast<char*>(impl_->storage()->data()) + impl_->offset() * dtype_itemsize(dtype());
  }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

}  // namespace rill
