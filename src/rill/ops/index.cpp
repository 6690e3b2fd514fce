// Indexing ops: index (advanced indexing on the leading dims), index_put,
// gather and scatter. Out-of-range indices are found by the kernels (Note
// [Errors inside the VM] in vm/instruction.cpp); inference checks the rest.
//
// Inputs and attrs, by op:
//   index        [x, i_0, ..., i_k-1]            x[i_0, ..., i_k-1]: the k int64 indices all have one shape B
//                                                (the caller broadcasts them); output B + x.shape[k:].
//   index_put    [x, values, i_0, ..., i_k-1]    [accumulate: bool] a copy of x with x[i_0, ...] = values (or
//                                                += values); values has shape B + x.shape[k:] (the caller
//                                                expands it).
//   gather       [x, index]                      [dim: int] out[c] = x[c with c[dim] = index[c]]; an int32
//                                                index is converted to int64 first (also for scatter).
//   scatter      [x, index, src]                 [dim: int, reduce: "" | "add" | "multiply"] a copy of x with
//                                                out[c with c[dim] = index[c]] = src[c] (or reduced into it).
#include "rill/ops/op_schema.h"

namespace rill {
namespace {

void check_index_dtype(const TensorMeta& m, const char* op) {
  RILL_CHECK(dtype_is_integral(m.dtype), Index, "[", op, "] tensors used as indices must be long, int, byte or "
             "bool tensors, got ", dtype_name(m.dtype));
}

// The shared shape of the indices of index / index_put, starting at input first.
Shape index_shape(const InferContext& c, size_t first, const char* op) {
  const TensorMeta& x = *c.inputs[0];
  const int64_t k = static_cast<int64_t>(c.inputs.size() - first);
  RILL_CHECK(k <= x.ndim(), Index, "[", op, "] too many indices for tensor of dimension ", x.ndim(), " (got ", k,
             ")");
  Shape b = c.inputs.size() > first ? c.inputs[first]->shape : Shape{};
  for (size_t i = first; i < c.inputs.size(); ++i) {
    check_index_dtype(*c.inputs[i], op);
    RILL_CHECK(c.inputs[i]->shape == b, Index, "[", op, "] shape mismatch: indexing tensors could not be "
               "broadcast together with shapes ", shape_str(b), ", ", shape_str(c.inputs[i]->shape));
  }
  return b;
}

InferResult infer_index(const InferContext& c) {
  const TensorMeta& x = *c.inputs[0];
  Shape out = index_shape(c, 1, "index");
  out.insert(out.end(), x.shape.begin() + static_cast<int64_t>(c.inputs.size() - 1), x.shape.end());
  std::vector<DType> casts(c.inputs.size(), DType::kInt64);
  casts[0] = x.dtype;
  return {{make_contiguous_meta(out, x.dtype, x.device)}, casts};
}

InferResult infer_index_put(const InferContext& c) {
  RILL_CHECK(c.inputs.size() >= 2, Runtime, "[index_put] expected a tensor and values");
  const TensorMeta& x = *c.inputs[0];
  Shape want = index_shape(c, 2, "index_put");
  want.insert(want.end(), x.shape.begin() + static_cast<int64_t>(c.inputs.size() - 2), x.shape.end());
  RILL_CHECK(c.inputs[1]->shape == want, Runtime, "[index_put] shape mismatch: value tensor of shape ",
             shape_str(c.inputs[1]->shape), " cannot be broadcast to indexing result of shape ", shape_str(want));
  std::vector<DType> casts(c.inputs.size(), DType::kInt64);
  casts[0] = casts[1] = x.dtype;
  return {{make_contiguous_meta(x.shape, x.dtype, x.device)}, casts};
}

// gather / scatter: index has x's rank and fits in x (apart from dim) and in src.
int64_t check_gather_scatter(const InferContext& c, const char* op, const TensorMeta* src) {
  const TensorMeta& x = *c.inputs[0];
  const TensorMeta& index = *c.inputs[1];
  RILL_CHECK(index.dtype == DType::kInt64 || index.dtype == DType::kInt32, Runtime, "[", op,
             "] Expected dtype int32/int64 for index, got ", dtype_name(index.dtype), "; convert it with .long()");
  const int64_t dim = normalize_dim(c.attrs.get_int(0), x.ndim(), op);
  RILL_CHECK(index.ndim() == x.ndim() || (index.ndim() <= 1 && x.ndim() <= 1), Runtime, "[", op,
             "] Index tensor must have the same number of dimensions as input tensor");
  if (src)
    RILL_CHECK(src->ndim() == index.ndim() || (index.ndim() <= 1 && src->ndim() <= 1), Runtime, "[", op,
               "] Index tensor must have the same number of dimensions as src tensor");
  if (index.numel == 0) return dim;
  for (int64_t d = 0; d < index.ndim(); ++d) {
    RILL_CHECK(d == dim || index.shape[d] <= x.shape[d], Runtime, "[", op, "] Size does not match at dimension ",
               d, " expected index ", shape_str(index.shape), " to be smaller than self ", shape_str(x.shape),
               " apart from dimension ", dim);
    if (src)
      RILL_CHECK(index.shape[d] <= src->shape[d], Runtime, "[", op, "] Expected index ", shape_str(index.shape),
                 " to be smaller than self ", shape_str(x.shape), " apart from dimension ", dim,
                 " and to be smaller size than src ", shape_str(src->shape));
  }
  return dim;
}

InferResult infer_gather(const InferContext& c) {
  check_gather_scatter(c, "gather", nullptr);
  const TensorMeta& x = *c.inputs[0];
  return {{make_contiguous_meta(c.inputs[1]->shape, x.dtype, x.device)}, {x.dtype, DType::kInt64}};
}

InferResult infer_scatter(const InferContext& c) {
  const TensorMeta& x = *c.inputs[0];
  const TensorMeta& src = *c.inputs[2];
  RILL_CHECK(src.dtype == x.dtype, Runtime, "[scatter] Expected self.dtype to be equal to src.dtype, got ",
             dtype_name(x.dtype), " and ", dtype_name(src.dtype), "; convert src with .to(self.dtype)");
  const std::string& reduce = c.attrs.get_string(1);
  RILL_CHECK(reduce.empty() || reduce == "add" || reduce == "multiply", Runtime,
             "[scatter] reduce argument must be either add or multiply, got '", reduce, "'");
  check_gather_scatter(c, "scatter", &src);
  return {{make_contiguous_meta(x.shape, x.dtype, x.device)}, {x.dtype, DType::kInt64, x.dtype}};
}

}  // namespace

void register_index_ops() {
  const OpFlags k, strided = {.strided_output = true};
  ops::define("index(Tensor self, Tensor[] indices) -> Tensor", infer_index, k,
              "advanced indexing by integer or bool index tensors");
  ops::define("index_put(Tensor self, Tensor[] indices, Tensor values, bool accumulate) -> Tensor", infer_index_put,
              strided, "values written (or added) at the indexed positions of self");
  ops::define("gather(Tensor self, Tensor index, int dim) -> Tensor", infer_gather, k, "values of self along dim");
  ops::define("scatter(Tensor self, Tensor index, Tensor src, int dim, str reduce) -> Tensor", infer_scatter, strided,
              "src written (or reduced) into self along dim");
}

}  // namespace rill
