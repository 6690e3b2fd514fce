// Elementwise ops: unary, binary (tensor-tensor and tensor-scalar), comparisons,
// where, and cast. Outputs take the broadcast shape and the promoted dtype.
#include "rill/ops/elementwise.h"

#include "rill/ops/op_schema.h"
#include "rill/ops/type_promotion.h"

namespace rill {
namespace {

MetaSym dense_like(const Shape& shape, DType dtype, const MetaSym& like) {
  return make_contiguous_meta(shape, dtype, like->device);
}

// abs, neg, relu: same dtype out.
InferResult infer_unary_same(const InferContext& c) {
  DType t = c.inputs[0]->dtype;
  RILL_CHECK(!(t == DType::kBool && c.op.name == "neg"), Type,
             "[neg] negation, the `-` operator, on a bool tensor is not supported; use `~` or "
             "logical_not() instead");
  return {{dense_like(c.inputs[0]->shape, t, c.inputs[0])}, {}};
}

// exp, log, sqrt, sigmoid, tanh: integer inputs are computed in float32.
InferResult infer_unary_float(const InferContext& c) {
  DType t = to_floating(c.inputs[0]->dtype);
  return {{dense_like(c.inputs[0]->shape, t, c.inputs[0])}, {t}};
}

void check_same_device(const InferContext& c) {
  for (const MetaSym& m : c.inputs)
    RILL_CHECK(m->device == c.inputs[0]->device, Runtime, "[", c.op.name,
               "] expected all tensors on the same device, got ", c.inputs[0]->device.str(), " and ",
               m->device.str());
}

// Like PyTorch, subtraction rejects a bool operand whatever the result dtype (x - True, bool_x - 1.5).
bool has_bool_operand(const InferContext& c) {
  for (const MetaSym& m : c.inputs)
    if (m->dtype == DType::kBool) return true;
  for (const Scalar& s : c.scalars)
    if (s.kind() == Scalar::Kind::kBool) return true;
  return false;
}

DType binary_dtype(const InferContext& c) {
  DType t = result_type(c.inputs, c.scalars);
  const std::string& n = c.op.name;
  if ((n == "sub" || n == "sub_scalar" || n == "rsub_scalar") && has_bool_operand(c))
    RILL_FAIL(Type, "[", n, "] subtraction, the `-` operator, with a bool tensor or a bool number is not "
              "supported; use `^` or logical_xor() instead, or convert with .int()");
  return t;
}

Shape broadcast_inputs(const InferContext& c) {
  Shape shape = c.inputs[0]->shape;
  for (size_t i = 1; i < c.inputs.size(); ++i)
    shape = broadcast_shapes(shape, c.inputs[i]->shape, c.op.name.c_str());
  return shape;
}

// add, sub, mul, pow, maximum, minimum (and their _scalar forms).
InferResult infer_binary_arith(const InferContext& c) {
  check_same_device(c);
  DType t = binary_dtype(c);
  std::vector<DType> casts(c.inputs.size(), t);
  return {{dense_like(broadcast_inputs(c), t, c.inputs[0])}, casts};
}

// div: true division, always floating.
InferResult infer_binary_div(const InferContext& c) {
  check_same_device(c);
  DType t = to_floating(result_type(c.inputs, c.scalars));
  std::vector<DType> casts(c.inputs.size(), t);
  return {{dense_like(broadcast_inputs(c), t, c.inputs[0])}, casts};
}

// eq, ne, lt, le, gt, ge: compare in the promoted dtype, produce bool.
InferResult infer_compare(const InferContext& c) {
  check_same_device(c);
  DType t = result_type(c.inputs, c.scalars);
  std::vector<DType> casts(c.inputs.size(), t);
  return {{dense_like(broadcast_inputs(c), DType::kBool, c.inputs[0])}, casts};
}

// where(cond, a, b)
InferResult infer_where(const InferContext& c) {
  check_same_device(c);
  RILL_CHECK(c.inputs[0]->dtype == DType::kBool, Type,
             "[where] expected condition to be a bool tensor, got ", dtype_name(c.inputs[0]->dtype),
             "; use cond.bool() or a comparison such as x > 0");
  DType t = result_type(c.inputs.subspan(1), c.scalars);
  return {{dense_like(broadcast_inputs(c), t, c.inputs[0])}, {DType::kBool, t, t}};
}

// cast(x, dtype): any layout in, the output may be any layout (copy_ writes into views).
InferResult infer_cast(const InferContext& c) {
  return {{dense_like(c.inputs[0]->shape, c.attrs.get_dtype(0), c.inputs[0])}, {}};
}

void define_all(const std::vector<std::string_view>& names, int inputs, int scalars, InferFn infer) {
  for (std::string_view n : names)
    ops::define({std::string(n), inputs, scalars, {}, infer, /*strided_output=*/true});
}

}  // namespace

void register_elementwise_ops() {
  define_all(kUnarySameOps, 1, 0, infer_unary_same);
  define_all(kUnaryFloatOps, 1, 0, infer_unary_float);
  define_all(kBinaryArithOps, 2, 0, infer_binary_arith);
  define_all({"div"}, 2, 0, infer_binary_div);
  define_all(kCompareOps, 2, 0, infer_compare);
  for (std::string_view n : kBinaryArithOps) {
    const std::string name(n);
    ops::define({name + "_scalar", 1, 1, {}, infer_binary_arith, true});
    ops::define({std::string("r").append(name).append("_scalar"), 1, 1, {}, infer_binary_arith, true});
  }
  ops::define({"div_scalar", 1, 1, {}, infer_binary_div, true});
  ops::define({"rdiv_scalar", 1, 1, {}, infer_binary_div, true});
  for (std::string_view n : kCompareOps) ops::define({std::string(n) + "_scalar", 1, 1, {}, infer_compare, true});
  ops::define({"where", 3, 0, {}, infer_where, true});
  ops::define({"cast", 1, 0, {"dtype"}, infer_cast, true});
}

}  // namespace rill
