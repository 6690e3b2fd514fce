// Shape ops that need a kernel: cat (the other shape ops, stack, split, flip,
// repeat, roll, diag, ..., are views or compositions in autograd/shape.cpp).
//
// Attrs, by op:
//   cat          [dim: int]        inputs: any number; promoted to their result type.
//   tril, triu   [diagonal: int]   the lower / upper triangle of the last two dims, the rest zeroed.
#include "rill/ops/op_schema.h"
#include "rill/ops/type_promotion.h"

namespace rill {
namespace {

// PyTorch's legacy rule: a 1-D empty tensor (shape [0]) may be concatenated with anything and is skipped.
bool skipped_in_cat(const TensorMeta& m) { return m.ndim() == 1 && m.numel == 0; }

InferResult infer_cat(const InferContext& c) {
  RILL_CHECK(!c.inputs.empty(), Value, "[cat] expected a non-empty list of Tensors");
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    RILL_CHECK(c.inputs[i]->ndim() > 0, Runtime, "[cat] zero-dimensional tensor (at position ", i,
               ") cannot be concatenated; unsqueeze it first or use stack()");
    RILL_CHECK(c.inputs[i]->device == c.inputs[0]->device, Runtime,
               "[cat] expected all tensors on the same device");
  }
  // Type promotion over every tensor (all have dimensions, checked above).
  DType t = result_type_checked(c);
  const TensorMeta* ref = nullptr;
  for (const MetaSym& m : c.inputs)
    if (!skipped_in_cat(*m)) {
      ref = m.get();
      break;
    }
  std::vector<DType> casts(c.inputs.size(), t);
  if (!ref) return {{make_contiguous_meta({0}, t, c.inputs[0]->device)}, casts};
  const int64_t dim = normalize_dim(c.attrs.get_int(0), ref->ndim(), "cat");
  Shape out = ref->shape;
  out[dim] = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const TensorMeta& m = *c.inputs[i];
    if (skipped_in_cat(m)) continue;
    RILL_CHECK(m.ndim() == ref->ndim(), Runtime, "[cat] Tensors must have same number of dimensions: got ",
               ref->ndim(), " and ", m.ndim());
    for (int64_t d = 0; d < ref->ndim(); ++d)
      RILL_CHECK(d == dim || m.shape[d] == ref->shape[d], Runtime, "[cat] Sizes of tensors must match except in "
                 "dimension ", dim, ". Expected size ", ref->shape[d], " but got size ", m.shape[d],
                 " for tensor number ", i, " in the list.");
    out[dim] += m.shape[dim];
  }
  return {{make_contiguous_meta(out, t, ref->device)}, casts};
}

InferResult infer_triangle(const InferContext& c) {
  const TensorMeta& x = *c.inputs[0];
  RILL_CHECK(x.ndim() >= 2, Runtime, "[", c.op.name, "] input tensor must have at least 2 dimensions, got ",
             x.ndim());
  return {{make_contiguous_meta(x.shape, x.dtype, x.device)}, {}};
}

}  // namespace

void register_shape_ops() {
  const OpFlags strided = {.strided_output = true};
  ops::define("cat(Tensor[] tensors, int dim) -> Tensor", infer_cat, {}, "tensors joined along dim");
  ops::define("tril(Tensor self, int diagonal) -> Tensor", infer_triangle, strided, "the lower triangle");
  ops::define("triu(Tensor self, int diagonal) -> Tensor", infer_triangle, strided, "the upper triangle");
}

}  // namespace rill
