// Reduction ops: sum, mean, amax, amin, max, min (all elements), argmax, argmin,
// and max_dim / min_dim (values and indices over one dim). Semantics follow PyTorch.
//
// Attrs, by op (every attr that affects inference is here; the ops take no scalars):
//   sum, mean        [dim: ints?, keepdim: bool, dtype: DType?]
//                    dim None or empty = every dim; dtype None: the input's (int64 for integers).
//   prod             [dtype: DType?]   every element, dtypes as sum's.
//   prod_dim         [dim: int, keepdim: bool, dtype: DType?]   one dim: prod(x, dim), an overload of prod.
//   var, std         [dim: ints?, correction: double?, keepdim: bool]   correction None: 1; PyTorch's
//                    var.correction. var_dim, std_dim [dim: ints?, unbiased: bool, keepdim: bool] and
//                    var_unbiased, std_unbiased [unbiased: bool] are its legacy overloads var.dim and var
//                    (unbiased: correction 1, else 0), one kernel and rule for the three (moment_args).
//   any, all         [dim: ints?, keepdim: bool]   bool out (uint8 for uint8 input, as in PyTorch).
//   logsumexp        [dim: ints, keepdim: bool]   Note [Composite ops]
//   norm             [dim: ints, keepdim: bool, ord: double]   the vector p-norm; Note [Composite ops]
//   cumsum, cumprod  [dim: int, dtype: DType?]   same shape out; dtype None: the input's (int64 for integers).
//   cumsum_backward  (grad) [dim: int]   grad summed from the end along dim: cumsum's gradient.
//   cumprod_backward (input, grad) [dim: int]   the gradient of cumprod, exact with zeros in the input.
//   amax, amin       [dim: ints?, keepdim: bool]
//   max, min         [dim: ints?, keepdim: bool]   dim None or empty and keepdim False (torch.max(x));
//                    a dim goes through max_dim / min_dim, overloads of the same Python name.
//   argmax, argmin   [dim: int?, keepdim: bool]   None = flattened input.
//   max_dim, min_dim [dim: int, keepdim: bool]     outputs (values, int64 indices).
//
// Note [Composite ops]
// logsumexp and norm have schemas (inference, so errors and result metas are
// the same everywhere) and gradient rules, but no kernel (OpSchema::composite): the functional layer
// computes their forward with other ops (amax, exp, sum, ...) and records one
// node under their name, whose rule gives PyTorch's gradient (e.g. norm's zero
// gradient at a zero vector, which the composition's sqrt would turn into NaN). eager::call runs that
// forward for a call of the op itself (composite_call in eager/functional.cpp), so the bindings generated from
// logsumexp's signature call it as they call any op. argsort, topk and kthvalue (ops/sort.cpp) are composite
// too, but recorded as their pieces (a sort and views of it), whose gradients are theirs.
#include <string>
#include <utility>

#include "rill/ops/op_schema.h"
#include "rill/ops/reduce.h"
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

// The dims a reduction's `int[1]? dim` attr (attr 0) names: None reads as empty, every dim.
const std::vector<int64_t>& reduced_dims(const Attrs& attrs) {
  static const std::vector<int64_t> kEvery;
  const auto* dims = std::get_if<std::vector<int64_t>>(&attrs.values.at(0));
  return dims ? *dims : kEvery;
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

// sum, mean, prod over the dims of mask: the output meta, and the dtype= conversion.
InferResult sum_like(const InferContext& c, const std::vector<bool>& mask, bool keepdim) {
  const TensorMeta& x = *c.inputs[0];
  const std::string& name = c.op.name;
  const DType* dtype = optional_attr_of<DType>(c.op, c.attrs, "dtype");
  DType out;
  if (dtype) {
    out = *dtype;
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
  if (dtype) casts.push_back(out);  // torch converts the input first, then reduces
  return {{make_contiguous_meta(reduced_shape(x.shape, mask, keepdim), out, x.device)}, casts};
}

// sum, mean.
InferResult infer_sum_mean(const InferContext& c) {
  check_attrs(c);
  return sum_like(c, reduced_mask(reduced_dims(c.attrs), c.inputs[0]->ndim(), c.op.name), c.attrs.get_bool(1));
}

// prod over every element, prod_dim along one dim.
InferResult infer_prod(const InferContext& c) {
  check_attrs(c);
  const bool one_dim = c.op.name == "prod_dim";
  std::vector<int64_t> dims;
  if (one_dim) dims.push_back(c.attr<int64_t>("dim"));
  return sum_like(c, reduced_mask(dims, c.inputs[0]->ndim(), "prod"), one_dim && c.attr<bool>("keepdim"));
}

// amax, amin, max, min: same dtype out.
InferResult infer_extreme(const InferContext& c) {
  check_attrs(c);
  const TensorMeta& x = *c.inputs[0];
  const std::string& name = c.op.name;
  const std::vector<int64_t>& dims = reduced_dims(c.attrs);
  // max(x) and min(x) take no dim (a TypeError, as PyTorch's parser raises): the dim forms are max_dim, min_dim.
  RILL_CHECK((dims.empty() && !c.attrs.get_bool(1)) || (name != "max" && name != "min"), Type, "[", name,
             "] reduces over every element and takes no keepdim; for the values and indices along a dim pass one "
             "int dim, or use a", name, "() to reduce over several dims");
  std::vector<bool> mask = reduced_mask(dims, x.ndim(), name);
  check_nonempty(x, mask, !dims.empty(), name);
  return {{make_contiguous_meta(reduced_shape(x.shape, mask, c.attrs.get_bool(1)), x.dtype, x.device)}, {}};
}

// argmax, argmin: int64 indices into the dim, or into the flattened input when no dim is given.
InferResult infer_arg(const InferContext& c) {
  check_attrs(c);
  const TensorMeta& x = *c.inputs[0];
  const std::string& name = c.op.name;
  const int64_t* dim = optional_attr_of<int64_t>(c.op, c.attrs, "dim");
  bool keepdim = c.attrs.get_bool(1);
  RILL_CHECK(x.dtype != DType::kBool, Runtime, "[", name, "] does not support bool input; convert it with .int()");
  Shape shape;
  if (!dim) {
    RILL_CHECK(x.numel != 0, Index, "[", name, "] Expected reduction dim to be specified for input.numel() == 0.");
    if (keepdim) shape.assign(x.shape.size(), 1);
  } else {
    std::vector<bool> mask = reduced_mask({*dim}, x.ndim(), name);
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

// var, std: floating input, same dtype out.
InferResult infer_var(const InferContext& c) {
  check_attrs(c);
  const TensorMeta& x = *c.inputs[0];
  RILL_CHECK(dtype_is_floating(x.dtype), Runtime, "[", c.op.name, "] std and var only support floating point and "
             "complex dtypes, got ", dtype_name(x.dtype), "; convert the input with .float()");
  const MomentArgs args = moment_args(c.op, c.attrs);
  std::vector<bool> mask = reduced_mask(args.dims, x.ndim(), c.op.name);
  return {{make_contiguous_meta(reduced_shape(x.shape, mask, args.keepdim), x.dtype, x.device)}, {}};
}

// any, all: the input is read as bool.
InferResult infer_any_all(const InferContext& c) {
  check_attrs(c);
  const TensorMeta& x = *c.inputs[0];
  std::vector<bool> mask = reduced_mask(reduced_dims(c.attrs), x.ndim(), c.op.name);
  DType out = x.dtype == DType::kUInt8 ? DType::kUInt8 : DType::kBool;
  return {{make_contiguous_meta(reduced_shape(x.shape, mask, c.attrs.get_bool(1)), out, x.device)}, {DType::kBool}};
}

// logsumexp: integers become float32; norm: floating input only.
InferResult infer_composite(const InferContext& c) {
  check_attrs(c);
  const TensorMeta& x = *c.inputs[0];
  if (c.op.name == "norm")
    RILL_CHECK(dtype_is_floating(x.dtype), Runtime, "[norm] linalg.vector_norm: Expected a floating point or "
               "complex tensor as input. Got ", dtype_name(x.dtype), "; convert the input with .float()");
  std::vector<bool> mask = reduced_mask(c.attrs.get_ints(0), x.ndim(), c.op.name);
  DType out = to_floating_checked(c, x.dtype);
  return {{make_contiguous_meta(reduced_shape(x.shape, mask, c.attrs.get_bool(1)), out, x.device)}, {out}};
}

// cumsum, cumprod: same shape; bool and integers accumulate in int64 unless a dtype is given. cumsum_backward:
// the grad's dtype.
InferResult infer_scan(const InferContext& c) {
  check_attrs(c);
  const TensorMeta& x = *c.inputs[0];
  normalize_dim(c.attr<int64_t>("dim"), x.ndim(), c.op.name.c_str());
  DType out = dtype_is_floating(x.dtype) || c.op.name == "cumsum_backward" ? x.dtype : DType::kInt64;
  if (c.op.name != "cumsum_backward")
    if (const DType* dtype = optional_attr_of<DType>(c.op, c.attrs, "dtype")) out = *dtype;
  return {{make_contiguous_meta(x.shape, out, x.device)}, {out}};
}

// cumprod_backward(input, grad): input's shape and dtype.
InferResult infer_cumprod_backward(const InferContext& c) {
  check_attrs(c);
  const TensorMeta& x = *c.inputs[0];
  normalize_dim(c.attrs.get_int(0), x.ndim(), "cumprod");
  RILL_ASSERT(c.inputs[1]->shape == x.shape, "[cumprod_backward] grad and input shapes differ");
  return {{make_contiguous_meta(x.shape, x.dtype, x.device)}, {x.dtype, x.dtype}};
}

// A kept axis stays split (at its place in the output); sum over a split axis gives each rank a summand (mean
// would give a summand scaled by the rank's share, so it has no such signature); both are linear: P -> P.
std::vector<SbpSignature> sbp_sum_mean(const SbpContext& c) {
  const std::vector<bool> mask = reduced_mask(reduced_dims(c.attrs), c.inputs[0]->ndim(), c.op.name);
  const bool keepdim = c.attr<bool>("keepdim");
  std::vector<int64_t> axis_map(mask.size());
  int64_t next = 0;
  for (size_t k = 0; k < mask.size(); ++k) {
    if (mask[k]) axis_map[k] = -1;
    else axis_map[k] = keepdim ? static_cast<int64_t>(k) : next++;
  }
  return ops::mapped_axes_sbp(axis_map, c.op.name == "sum");
}

}  // namespace

MomentArgs moment_args(const OpSchema& op, const Attrs& attrs) {
  MomentArgs args;
  const bool legacy = op.overload_of == "var" || op.overload_of == "std";
  if (legacy) args.correction = attr_of<bool>(op, attrs, "unbiased") ? 1.0 : 0.0;
  else if (const auto* c = optional_attr_of<double>(op, attrs, "correction")) args.correction = *c;
  if (op.name.ends_with("_unbiased")) return args;  // every element
  if (const auto* dims = optional_attr_of<std::vector<int64_t>>(op, attrs, "dim")) args.dims = *dims;
  args.keepdim = attr_of<bool>(op, attrs, "keepdim");
  return args;
}

void register_reduce_ops() {
  const OpFlags k;
  OpFlags composite;
  composite.composite = true;
  // dim None or empty: every dim.
  const OpFlags py = {.function = true, .method = true};
  for (const char* n : {"sum", "mean"})
    ops::define(std::string(n) + "(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> "
                "Tensor", infer_sum_mean, py, "reduction over dim (None: every dim)").sbp = sbp_sum_mean;
  // prod takes one int dim or none, as PyTorch's prod.dim_int and prod: prod(x, [0]) is a TypeError.
  OpFlags py_out = py;
  py_out.out = true;
  ops::define("prod_dim(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", infer_prod,
              py_out, "product along dim").overload_of = "prod";
  ops::define("prod(Tensor self, *, ScalarType? dtype=None) -> Tensor", infer_prod, py, "product of every element");
  // var and std: PyTorch's three overloads each, tried in this order (Note [Overloads] in
  // python/src/schema_bindings.cpp): var(x, 0, False) has more positional arguments than var takes, and var(x,
  // False) a bool no int[1]? dim takes, so both reach the legacy forms; unbiased and correction together fit none.
  for (const char* n : {"var", "std"}) {
    const std::string name = n;
    ops::define(name + "(Tensor self, int[1]? dim=None, *, float? correction=None, bool keepdim=False) -> Tensor",
                infer_var, py_out, "dividing by max(N - correction, 0) over dim (None: every dim)");
    ops::define(name + "_dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor", infer_var,
                py_out, "dividing by N - 1 (unbiased) or N over dim").overload_of = name;
    ops::define(name + "_unbiased(Tensor self, bool unbiased=True) -> Tensor", infer_var, py,
                "dividing by N - 1 (unbiased) or N over every element").overload_of = name;
  }
  OpFlags py_no_grad = py;
  py_no_grad.differentiable = false;
  for (const char* n : {"any", "all"})
    ops::define(std::string(n) + "(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor", infer_any_all,
                py_no_grad, "logical reduction, bool out");
  OpFlags composite_py_out = py_out;
  composite_py_out.composite = true;
  ops::define("logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor", infer_composite, composite_py_out,
              "log(sum(exp(x))) over dim, shifted by the maximum");
  ops::define("norm(Tensor self, int[] dim, bool keepdim, float ord) -> Tensor", infer_composite, composite,
              "the vector ord-norm over dim");
  OpFlags scan = py_out;
  scan.inplace = true;
  for (const char* n : {"cumsum", "cumprod"})
    ops::define(std::string(n) + "(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", infer_scan, scan,
                "running reduction along dim, in dtype (None: the input's, int64 for integers)");
  ops::define("cumsum_backward(Tensor grad, int dim) -> Tensor", infer_scan, k, "grad summed from the end along dim");
  ops::define("cumprod_backward(Tensor self, Tensor grad, int dim) -> Tensor", infer_cumprod_backward, k, "");
  // max, min: three overloads each, as in PyTorch: max(x, dim, keepdim) -> (values, indices), defined first
  // since max(x)'s int[1]? dim would take its int too (Note [Overloads] in python/src/schema_bindings.cpp),
  // max(x) over every element, and max(x, other), which is maximum.
  for (const char* n : {"max", "min"})
    ops::define(std::string(n) + "_dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
                infer_extreme_dim, py, "values and indices of the extremes along dim").overload_of = n;
  for (const char* n : {"amax", "amin", "max", "min"})
    ops::define(std::string(n) + "(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor", infer_extreme, py,
                "largest / smallest value over dim (max, min: over every element)");
  for (const char* n : {"argmax", "argmin"})
    ops::define(std::string(n) + "(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", infer_arg, py_no_grad,
                "index of the largest / smallest value");
}

}  // namespace rill
