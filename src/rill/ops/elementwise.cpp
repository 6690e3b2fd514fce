// Elementwise ops: unary, activations, rounding, clamp, binary (tensor-tensor and
// tensor-scalar), floor division and remainders, bitwise and logical ops,
// comparisons, where, lerp, addcmul/addcdiv and cast. Outputs take the broadcast
// shape and the promoted dtype.
//
// Number arguments are scalars, by op: softplus [beta, threshold], leaky_relu
// [negative_slope], elu [alpha], hardtanh [min_val, max_val], clamp_scalar [min,
// max] (attrs [has_min, has_max] say which are given), lerp_scalar [weight],
// addcmul / addcdiv [value]. Attrs: gelu [approximate: "none" | "tanh"],
// round_decimals [decimals]. Each activation has a `<name>_backward(grad, input)`
// op with the same numbers and attrs, used by its gradient rule.
#include "rill/ops/elementwise.h"

#include <string>
#include <utility>

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
  DType t = to_floating_checked(c, c.inputs[0]->dtype);
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
  DType t = result_type_checked(c);
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
  DType t = to_floating_checked(c, result_type_checked(c));
  std::vector<DType> casts(c.inputs.size(), t);
  return {{dense_like(broadcast_inputs(c), t, c.inputs[0])}, casts};
}

// eq, ne, lt, le, gt, ge: compare in the promoted dtype, produce bool.
InferResult infer_compare(const InferContext& c) {
  check_same_device(c);
  DType t = result_type_checked(c);
  std::vector<DType> casts(c.inputs.size(), t);
  return {{dense_like(broadcast_inputs(c), DType::kBool, c.inputs[0])}, casts};
}

// where(cond, a, b)
InferResult infer_where(const InferContext& c) {
  check_same_device(c);
  RILL_CHECK(c.inputs[0]->dtype == DType::kBool, Type,
             "[where] expected condition to be a bool tensor, got ", dtype_name(c.inputs[0]->dtype),
             "; use cond.bool() or a comparison such as x > 0");
  DType t = result_type_checked(c, c.inputs.subspan(1), c.scalars);
  return {{dense_like(broadcast_inputs(c), t, c.inputs[0])}, {DType::kBool, t, t}};
}

// cast(x, dtype): any layout in, the output may be any layout (copy_ writes into views).
InferResult infer_cast(const InferContext& c) {
  return {{dense_like(c.inputs[0]->shape, c.attrs.get_dtype(0), c.inputs[0])}, {}};
}

[[noreturn]] void fail_dtype(const InferContext& c, DType t, const char* hint) {
  RILL_FAIL(NotImplemented, "[", c.op.name, "] is not implemented for ", dtype_name(t), " tensors", hint);
}

// floor, ceil, trunc, round: integers pass through unchanged, bool is rejected (as in PyTorch).
InferResult infer_rounding(const InferContext& c) {
  DType t = c.inputs[0]->dtype;
  if (t == DType::kBool) fail_dtype(c, t, "; convert the input with .int() or .float()");
  if (c.op.name == "round_decimals" && !dtype_is_floating(t))
    fail_dtype(c, t, "; round(decimals=...) needs a floating tensor, convert the input with .float()");
  return {{dense_like(c.inputs[0]->shape, t, c.inputs[0])}, {}};
}

// silu, gelu, softplus, leaky_relu, elu: floating tensors only; hardtanh also takes integers.
InferResult infer_activation(const InferContext& c) {
  DType t = c.inputs[0]->dtype;
  const bool ints_ok = c.op.name == "hardtanh";
  if (!dtype_is_floating(t) && !(ints_ok && t != DType::kBool))
    fail_dtype(c, t, "; convert the input with .float()");
  if (c.op.name == "gelu") {
    const std::string& a = c.attrs.get_string(0);
    RILL_CHECK(a == "none" || a == "tanh", Runtime, "[gelu] approximate argument must be either none or tanh, got '",
               a, "'");
  }
  return {{dense_like(c.inputs[0]->shape, t, c.inputs[0])}, {}};
}

// <activation>_backward(grad, input): the input's dtype, the broadcast shape.
InferResult infer_activation_backward(const InferContext& c) {
  DType t = c.inputs[1]->dtype;
  return {{dense_like(broadcast_inputs(c), t, c.inputs[1])}, {t, t}};
}

// clamp(x, min=number, max=number): the numbers given take part in promotion (an int tensor clamped to 1.5
// becomes float32, as in PyTorch).
InferResult infer_clamp_scalar(const InferContext& c) {
  const bool has_min = c.attrs.get_bool(0), has_max = c.attrs.get_bool(1);
  RILL_CHECK(has_min || has_max, Runtime, "[clamp] At least one of 'min' or 'max' must not be None");
  std::vector<Scalar> given;
  if (has_min) given.push_back(c.scalars[0]);
  if (has_max) given.push_back(c.scalars[1]);
  DType t = result_type_checked(c, c.inputs, given);
  if (t == DType::kBool) fail_dtype(c, t, "; convert the input with .int()");
  return {{dense_like(c.inputs[0]->shape, t, c.inputs[0])}, {t}};
}

// floor_divide, remainder, fmod (and _scalar forms): promoted dtype, no bool.
InferResult infer_divmod(const InferContext& c) {
  check_same_device(c);
  DType t = result_type_checked(c);
  if (t == DType::kBool) fail_dtype(c, t, "; convert the inputs with .int()");
  std::vector<DType> casts(c.inputs.size(), t);
  return {{dense_like(broadcast_inputs(c), t, c.inputs[0])}, casts};
}

// bitwise_and/or/xor (and _scalar forms), bitwise_not: integer and bool dtypes only.
InferResult infer_bitwise(const InferContext& c) {
  check_same_device(c);
  DType t = result_type_checked(c);
  if (dtype_is_floating(t)) fail_dtype(c, t, "; bitwise ops take integer and bool tensors only");
  std::vector<DType> casts(c.inputs.size(), t);
  return {{dense_like(broadcast_inputs(c), t, c.inputs[0])}, casts};
}

// logical_and/or/xor/not: every input read as bool, bool out.
InferResult infer_logical(const InferContext& c) {
  check_same_device(c);
  std::vector<DType> casts(c.inputs.size(), DType::kBool);
  return {{dense_like(broadcast_inputs(c), DType::kBool, c.inputs[0])}, casts};
}

// lerp(start, end, weight): start and end of one floating dtype; a tensor weight has it too, unless 0-dim.
InferResult infer_lerp(const InferContext& c) {
  check_same_device(c);
  DType t = c.inputs[0]->dtype;
  if (!dtype_is_floating(t)) fail_dtype(c, t, "; convert the inputs with .float()");
  RILL_CHECK(c.inputs[1]->dtype == t, Runtime, "[lerp] expected dtype ", dtype_name(t), " for `end` but got dtype ",
             dtype_name(c.inputs[1]->dtype), "; convert it with .to(", dtype_name(t), ")");
  if (c.inputs.size() == 3)
    RILL_CHECK(c.inputs[2]->dtype == t || c.inputs[2]->ndim() == 0, Runtime, "[lerp] expected dtype ",
               dtype_name(t), " for `weight` but got dtype ", dtype_name(c.inputs[2]->dtype), "; convert it with .to(",
               dtype_name(t), ")");
  std::vector<DType> casts(c.inputs.size(), t);
  return {{dense_like(broadcast_inputs(c), t, c.inputs[0])}, casts};
}

// addcmul / addcdiv(input, tensor1, tensor2, value): promoted over the tensors (value does not widen).
InferResult infer_addc(const InferContext& c) {
  check_same_device(c);
  if (c.op.name == "addcdiv")
    RILL_CHECK(dtype_is_floating(c.inputs[1]->dtype) || dtype_is_floating(c.inputs[2]->dtype), Runtime,
               "[addcdiv] Integer division with addcdiv is no longer supported; convert tensor1 or tensor2 with "
               ".float(), or use (tensor1 // tensor2) for floor division");
  DType t = result_type_checked(c, c.inputs, {});
  std::vector<DType> casts(c.inputs.size(), t);
  return {{dense_like(broadcast_inputs(c), t, c.inputs[0])}, casts};
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

  define_all(kRoundingOps, 1, 0, infer_rounding);
  ops::define({"round_decimals", 1, 0, {"decimals"}, infer_rounding, true});
  for (std::string_view n : kActivationOps) {
    const int scalars = (n == "softplus" || n == "hardtanh") ? 2 : (n == "leaky_relu" || n == "elu") ? 1 : 0;
    std::vector<std::string> attrs;
    if (n == "gelu") attrs.push_back("approximate");
    ops::define({std::string(n), 1, scalars, attrs, infer_activation, true});
    ops::define({std::string(n) + "_backward", 2, scalars, attrs, infer_activation_backward, true});
  }
  ops::define({"clamp_scalar", 1, 2, {"has_min", "has_max"}, infer_clamp_scalar, true});
  ops::define({"clamp", 3, 0, {}, infer_binary_arith, true});
  ops::define({"clamp_min", 2, 0, {}, infer_binary_arith, true});
  ops::define({"clamp_max", 2, 0, {}, infer_binary_arith, true});
  const std::pair<const std::vector<std::string_view>*, InferFn> families[] = {{&kDivModOps, infer_divmod},
                                                                              {&kBitwiseOps, infer_bitwise}};
  for (const auto& [names, infer] : families) {
    for (std::string_view n : *names) {
      const std::string name(n);
      ops::define({name, 2, 0, {}, infer, true});
      ops::define({name + "_scalar", 1, 1, {}, infer, true});
      ops::define({std::string("r").append(name).append("_scalar"), 1, 1, {}, infer, true});
    }
  }
  ops::define({"bitwise_not", 1, 0, {}, infer_bitwise, true});
  define_all(kLogicalOps, 2, 0, infer_logical);
  ops::define({"logical_not", 1, 0, {}, infer_logical, true});
  ops::define({"atan2", 2, 0, {}, infer_binary_div, true});
  ops::define({"lerp", 3, 0, {}, infer_lerp, true});
  ops::define({"lerp_scalar", 2, 1, {}, infer_lerp, true});
  ops::define({"addcmul", 3, 1, {}, infer_addc, true});
  ops::define({"addcdiv", 3, 1, {}, infer_addc, true});
  ops::define({"cast", 1, 0, {"dtype"}, infer_cast, true});
}

}  // namespace rill
