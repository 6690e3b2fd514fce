// Reduction ops: sum, mean, amax, amin, max, min (all elements), argmax, argmin,
// and max_dim / min_dim (values and indices over one dim). Semantics follow PyTorch.
//
// Attrs, by op (every attr that affects inference is here; the ops take no scalars):
//   sum, mean        [dims: ints, keepdim: bool, dtype: DType, has_dtype: bool]
//                    dims empty = every dim; dtype is ignored unless has_dtype.
//   amax, amin       [dims: ints, keepdim: bool]
//   max, min         [dims: ints, keepdim: bool]   dims must be empty (torch.max(x));
//                    a dim goes through max_dim / min_dim.
//   argmax, argmin   [dims: ints, keepdim: bool]   at most one dim; empty = flattened input.
//   max_dim, min_dim [dim: int, keepdim: bool]     outputs (values, int64 indices).
#include <string>

#include "rill/ops/op_schema.h"
#include "rill/ops/type_promotion.h"

namespace rill {
namespace {

// The public name of an op in messages: max_dim is torch.max(x, dim).
std::string display_name(const OpSchema& op) {
  if (op.name == "max_dim") return "max";
  if (op.name == "min_dim") return "min";
  return op.name;
}

// Which dims of an ndim tensor dims reduces (empty dims: all). Raises on bad or repeated dims.
std::vector<bool> reduced_mask(const std::vector<int64_t>& dims, int64_t ndim, const std::string& name) {
  std::vector<bool> mask(static_cast<size_t>(ndim), dims.empty());
  std::vector<bool> seen(static_cast<size_t>(ndim > 0 ? ndim : 1), false);
  for (int64_t d : dims) {
    int64_t n = normalize_dim(d, ndim, name.c_str());
    RILL_CHECK(!seen[n], Runtime, "[", name, "] dim ", n, " appears multiple times in the list of dims");
    seen[n] = true;
    if (ndim > 0) mask[n] = true;
  }
  return mask;
}

Shape reduced_shape(const Shape& shape, const std::vector<bool>& mask, bool keepdim) {
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!mask[d]) out.push_back(shape[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

// amax and friends have no identity: every reduced dim must be non-empty.
void check_nonempty(const TensorMeta& x, const std::vector<bool>& mask, bool dims_given, const std::string& name) {
  if (x.numel != 0) return;
  RILL_CHECK(dims_given, Runtime, "[", name, "] Expected reduction dim to be specified for input.numel() == 0. "
             "Specify the reduction dim with the 'dim' argument.");
  for (size_t d = 0; d < mask.size(); ++d)
    RILL_CHECK(!mask[d] || x.shape[d] != 0, Index, "[", name, "] Expected reduction dim ", d,
               " to have non-zero size.");
}

void check_attrs(const InferContext& c) {
  RILL_ASSERT(c.attrs.size() == c.op.attr_names.size(), "[", c.op.name, "] expected ", c.op.attr_names.size(),
              " attrs, got ", c.attrs.size());
}

// sum, mean.
InferResult infer_sum_mean(const InferContext& c) {
  check_attrs(c);
  const TensorMeta& x = *c.inputs[0];
  const std::string& name = c.op.name;
  std::vector<bool> mask = reduced_mask(c.attrs.get_ints(0), x.ndim(), name);
  bool keepdim = c.attrs.get_bool(1);
  bool has_dtype = c.attrs.get_bool(3);
  DType out;
  if (has_dtype) {
    out = c.attrs.get_dtype(2);
    RILL_CHECK(name != "mean" || dtype_is_floating(out), Type,
               "[mean] could not infer output dtype. Optional dtype must be either a floating point or complex "
               "dtype. Got: ", dtype_name(out));
  } else if (name == "mean") {
    out = x.dtype;
    RILL_CHECK(dtype_is_floating(out), Type,
               "[mean] could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
               "Got: ", dtype_name(out), "; convert the input with .float() or pass dtype=rill.float32");
  } else {
    out = dtype_is_floating(x.dtype) ? x.dtype : DType::kInt64;  // bool and ints sum to int64
  }
  std::vector<DType> casts;
  if (has_dtype) casts.push_back(out);  // torch converts the input first, then reduces
  return {{make_contiguous_meta(reduced_shape(x.shape, mask, keepdim), out, x.device)}, casts};
}

// amax, amin, max, min: same dtype out.
InferResult infer_extreme(const InferContext& c) {
  check_attrs(c);
  const TensorMeta& x = *c.inputs[0];
  const std::string& name = c.op.name;
  const std::vector<int64_t>& dims = c.attrs.get_ints(0);
  RILL_CHECK(dims.empty() || (name != "max" && name != "min"), Runtime, "[", name,
             "] reduces over every element; for the values and indices along a dim use ", name, "_dim, or use a",
             name, "() to reduce over several dims");
  std::vector<bool> mask = reduced_mask(dims, x.ndim(), name);
  check_nonempty(x, mask, !dims.empty(), name);
  return {{make_contiguous_meta(reduced_shape(x.shape, mask, c.attrs.get_bool(1)), x.dtype, x.device)}, {}};
}

// argmax, argmin: int64 indices into the dim, or into the flattened input when no dim is given.
InferResult infer_arg(const InferContext& c) {
  check_attrs(c);
  const TensorMeta& x = *c.inputs[0];
  const std::string& name = c.op.name;
  const std::vector<int64_t>& dims = c.attrs.get_ints(0);
  bool keepdim = c.attrs.get_bool(1);
  RILL_CHECK(dims.size() <= 1, Type, "[", name, "] expected at most one dim, got ", dims.size(),
             "; flatten the input first to reduce over several dims");
  RILL_CHECK(x.dtype != DType::kBool, Runtime, "[", name, "] does not support bool input; convert it with .int()");
  Shape shape;
  if (dims.empty()) {
    RILL_CHECK(x.numel != 0, Index, "[", name, "] Expected reduction dim to be specified for input.numel() == 0.");
    if (keepdim) shape.assign(x.shape.size(), 1);
  } else {
    std::vector<bool> mask = reduced_mask(dims, x.ndim(), name);
    check_nonempty(x, mask, true, name);
    shape = reduced_shape(x.shape, mask, keepdim);
  }
  return {{make_contiguous_meta(shape, DType::kInt64, x.device)}, {}};
}

// max_dim, min_dim: (values, indices) along one dim.
InferResult infer_extreme_dim(const InferContext& c) {
  check_attrs(c);
  const TensorMeta& x = *c.inputs[0];
  std::string name = display_name(c.op);
  std::vector<bool> mask = reduced_mask({c.attrs.get_int(0)}, x.ndim(), name);
  check_nonempty(x, mask, true, name);
  Shape shape = reduced_shape(x.shape, mask, c.attrs.get_bool(1));
  return {{make_contiguous_meta(shape, x.dtype, x.device), make_contiguous_meta(shape, DType::kInt64, x.device)},
          {}};
}

}  // namespace

void register_reduce_ops() {
  const std::vector<std::string> with_dtype = {"dims", "keepdim", "dtype", "has_dtype"};
  const std::vector<std::string> dims_keepdim = {"dims", "keepdim"};
  ops::define({"sum", 1, 0, with_dtype, infer_sum_mean});
  ops::define({"mean", 1, 0, with_dtype, infer_sum_mean});
  for (const char* n : {"amax", "amin", "max", "min"}) ops::define({n, 1, 0, dims_keepdim, infer_extreme});
  ops::define({"argmax", 1, 0, dims_keepdim, infer_arg});
  ops::define({"argmin", 1, 0, dims_keepdim, infer_arg});
  ops::define({"max_dim", 1, 0, {"dim", "keepdim"}, infer_extreme_dim});
  ops::define({"min_dim", 1, 0, {"dim", "keepdim"}, infer_extreme_dim});
}

}  // namespace rill
