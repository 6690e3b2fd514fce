// Shape ops that need a kernel: cat (the other shape ops, stack, split, flip,
// repeat, roll, diag, ..., are views or compositions in autograd/shape.cpp).
//
// Attrs, by op:
//   cat          [dim: int]        inputs: any number; promoted to their result type.
//   tril, triu   [diagonal: int]   the lower / upper triangle of the last two dims, the rest zeroed.
//   restride_scatter [size, stride: int[], offset: int]   self with src written into the restride view of it.
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

// Graph mode's write into part of a tensor (Note [Tracing memory] in graph/tracer.cpp): a value, so self is
// read whole and the output is self's copy, dense, with src in the elements restride(size, stride, offset)
// of it would view.
InferResult infer_restride_scatter(const InferContext& c) {
  const TensorMeta& self = *c.inputs[0];
  const TensorMeta& src = *c.inputs[1];
  const auto& size = c.attr<std::vector<int64_t>>("size");
  const auto& stride = c.attr<std::vector<int64_t>>("stride");
  const int64_t offset = c.attr<int64_t>("offset");
  RILL_CHECK(src.dtype == self.dtype, Runtime, "[restride_scatter] src is ", dtype_name(src.dtype), " but self is ",
             dtype_name(self.dtype));
  RILL_CHECK(size == src.shape, Runtime, "[restride_scatter] src has shape ", shape_str(src.shape),
             " but the view has shape ", shape_str(size));
  RILL_CHECK(size.size() == stride.size(), Runtime, "[restride_scatter] ", size.size(), " sizes but ", stride.size(),
             " strides");
  int64_t last = offset;
  for (size_t i = 0; i < size.size(); ++i) {
    RILL_CHECK(size[i] >= 0 && stride[i] >= 0, Runtime, "[restride_scatter] negative size or stride at dim ", i);
    if (size[i] > 0) last += (size[i] - 1) * stride[i];
  }
  RILL_CHECK(offset >= 0 && (src.numel == 0 || last < self.numel), Runtime, "[restride_scatter] the view reaches "
             "element ", last, " of a tensor of ", self.numel);
  return {{make_contiguous_meta(self.shape, self.dtype, self.device)}, {}};
}

}  // namespace

void register_shape_ops() {
  ops::define("cat(Tensor[] tensors, int dim=0) -> Tensor", infer_cat, {.function = true}, "tensors joined along dim");
  const OpFlags py = {.strided_output = true, .function = true, .method = true, .inplace = true};
  ops::define("tril(Tensor self, int diagonal=0) -> Tensor", infer_triangle, py, "the lower triangle");
  ops::define("triu(Tensor self, int diagonal=0) -> Tensor", infer_triangle, py, "the upper triangle");
  ops::define("restride_scatter(Tensor self, Tensor src, int[] size, int[] stride, int offset) -> Tensor",
              infer_restride_scatter, {.differentiable = false},
              "self with src written where restride(self, size, stride, offset) looks (self dense)");
}

}  // namespace rill
