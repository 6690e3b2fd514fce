// Elementwise ops: unary, activations, rounding, clamp, binary (tensor-tensor and
// tensor-scalar), floor division and remainders, bitwise and logical ops,
// comparisons, where, lerp, addcmul/addcdiv and cast. Outputs take the broadcast
// shape and the promoted dtype.
//
// Number arguments are scalars, by op: softplus [beta, threshold], leaky_relu
// [negative_slope], elu [alpha], hardtanh [min_val, max_val], clamp_scalar [min,
// max] (either may be none: Scalar::is_none), lerp_scalar [weight],
// addcmul / addcdiv [value]. Attrs: gelu [approximate: "none" | "tanh"],
// round_decimals [decimals]. Each activation has a `<name>_backward(grad, input)`
// op with the same numbers and attrs, used by its gradient rule.
#include "rill/ops/elementwise.h"

#include <string>
#include <unordered_map>
#include <utility>

#include "rill/ops/op_schema.h"
#include "rill/ops/type_promotion.h"

namespace rill {
namespace {

MetaSym dense_like(const Shape& shape, DType dtype, const MetaSym& like) {
  return make_contiguous_meta(shape, dtype, like->device);
}

// copy_, fill_: self, written in place.
InferResult infer_written(const InferContext& c) { return {{c.inputs[0]}, {}}; }

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
// becomes float32, as in PyTorch); a None one takes no part.
InferResult infer_clamp_scalar(const InferContext& c) {
  RILL_CHECK(!c.scalars[0].is_none() || !c.scalars[1].is_none(), Runtime,
             "[clamp] At least one of 'min' or 'max' must not be None");
  DType t = result_type_checked(c);
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

// One signature per name of a family: fmt's "{}" is replaced by each name. overload: each op is bound as an
// overload of the name (Note [Overloads] in python/src/schema_bindings.cpp). Returns the ops, by name.
std::unordered_map<std::string_view, OpSchema*> define_family(const std::vector<std::string_view>& names,
                                                              std::string_view fmt, InferFn infer, OpFlags flags,
                                                              std::string_view doc, bool overload = false) {
  const size_t at = fmt.find("{}");
  std::unordered_map<std::string_view, OpSchema*> ops;
  for (std::string_view n : names) {
    OpSchema& op = ops::define(std::string(fmt.substr(0, at)).append(n).append(fmt.substr(at + 2)), infer, flags, doc);
    if (overload) op.overload_of = n;
    ops[n] = &op;
  }
  return ops;
}

// Linear elementwise ops keep partial sums (Note [SBP signatures] in ops/sbp.cpp): the sum of the ranks'
// differences is the difference of the sums; a summand times (or over) a whole value is a summand of the result.
std::vector<SbpSignature> sbp_linear(const SbpContext& c) {
  std::vector<SbpSignature> out = ops::elementwise_sbp(c);
  const Sbp P = Sbp::partial_sum(), B = Sbp::broadcast();
  const std::string& name = c.op.name;
  if (c.inputs.size() == 1) {  // neg, mul_scalar, div_scalar
    out.push_back({{P}, {P}});
  } else if (name == "add" || name == "sub") {
    out.push_back({{P, P}, {P}});
  } else {
    out.push_back({{P, B}, {P}});
    if (name == "mul") out.push_back({{B, P}, {P}});
  }
  return out;
}

// A binary family with numbers: `{}(Tensor self, Tensor other)`, `{}_scalar(Tensor self, Scalar other)` and
// `r{}_scalar(Scalar self, Tensor other)` (number op tensor; Python's reflected operators), the first two with
// their flags, overloads of one Python name; other: the second argument's name.
// Returns the tensor-op-tensor and tensor-op-number forms, by name.
struct BinaryFamily {
  std::unordered_map<std::string_view, OpSchema*> tensor, scalar;
};
BinaryFamily define_binary_family(const std::vector<std::string_view>& names, InferFn infer, OpFlags flags,
                                  OpFlags scalar_flags, std::string_view other = "other",
                                  OpFlags reflected_flags = {.strided_output = true, .elementwise = true}) {
  const std::string o(other);
  BinaryFamily out;
  out.tensor = define_family(names, "{}(Tensor self, Tensor " + o + ") -> Tensor", infer, flags,
                             "elementwise on the broadcast shape and the promoted dtype");
  out.scalar = define_family(names, "{}_scalar(Tensor self, Scalar " + o + ") -> Tensor", infer, scalar_flags,
                             "tensor op number", true);
  define_family(names, "r{}_scalar(Scalar self, Tensor " + o + ") -> Tensor", infer, reflected_flags,
                "number op tensor", true);
  return out;
}

}  // namespace

void register_elementwise_ops() {
  const OpFlags k = {.strided_output = true, .elementwise = true};  // internal: bound by hand where Python needs it
  const OpFlags py = {.strided_output = true, .function = true, .method = true, .inplace = true,
                      .elementwise = true};
  OpFlags py_out = py;
  py_out.out = true;
  auto unary = define_family(kUnarySameOps, "{}(Tensor self) -> Tensor", infer_unary_same, py,
                             "elementwise, same dtype out");
  auto unary_float = define_family(kUnaryFloatOps, "{}(Tensor self) -> Tensor", infer_unary_float, py,
                                   "elementwise, computed in floating point (integers become float32)");
  // rill.nn.functional's too: relu (with inplace=, as PyTorch's), sigmoid, tanh.
  unary.at("relu")->flags.nn_functional = unary.at("relu")->flags.nn_inplace = true;
  unary_float.at("sigmoid")->flags.nn_functional = unary_float.at("tanh")->flags.nn_functional = true;
  // add and sub take alpha (python/src/ops.cpp); maximum and minimum have no in-place form.
  OpFlags no_inplace = py_out;
  no_inplace.inplace = false;
  const BinaryFamily add_sub = define_binary_family({"add", "sub"}, infer_binary_arith, k, k);
  const BinaryFamily mul = define_binary_family({"mul"}, infer_binary_arith, py_out, py_out);
  const OpFlags function = {.strided_output = true, .function = true, .elementwise = true};
  define_binary_family({"pow"}, infer_binary_arith, py_out, py_out, "exponent", function);  // pow(2, x) too
  define_binary_family({"maximum", "minimum"}, infer_binary_arith, no_inplace, no_inplace);
  const BinaryFamily div = define_binary_family({"div"}, infer_binary_div, py_out, py_out);
  for (OpSchema* op : {add_sub.tensor.at("add"), add_sub.tensor.at("sub"), mul.tensor.at("mul"), div.tensor.at("div"),
                       mul.scalar.at("mul"), div.scalar.at("div"), unary.at("neg")})
    op->sbp = sbp_linear;
  OpFlags compare = py;
  compare.inplace = false;
  compare.differentiable = false;
  define_family(kCompareOps, "{}(Tensor self, Tensor other) -> Tensor", infer_compare, compare,
                "elementwise comparison, bool out");
  define_family(kCompareOps, "{}_scalar(Tensor self, Scalar other) -> Tensor", infer_compare, compare,
                "tensor compared with a number, bool out", true);
  ops::define("where(Tensor condition, Tensor self, Tensor other) -> Tensor", infer_where, k,
              "self where condition holds, else other");

  define_family({"floor", "ceil", "trunc"}, "{}(Tensor self) -> Tensor", infer_rounding, py,
                "rounding; integers pass through");
  ops::define("round(Tensor self) -> Tensor", infer_rounding, py, "round half to even; integers pass through");
  ops::define("round_decimals(Tensor self, *, int decimals) -> Tensor", infer_rounding, py,
              "round half to even at 10^-decimals").overload_of = "round";
  // The activations of rill.nn.functional (PyTorch has no torch.<name> or Tensor.<name> for them).
  const OpFlags activation = {.strided_output = true, .nn_functional = true, .elementwise = true};
  OpFlags activation_inplace = activation;
  activation_inplace.nn_inplace = true;
  ops::define("silu(Tensor self) -> Tensor", infer_activation, activation_inplace, "x * sigmoid(x)");
  ops::define("silu_backward(Tensor grad_output, Tensor self) -> Tensor", infer_activation_backward, k, "");
  ops::define("gelu(Tensor self, *, str approximate=\"none\") -> Tensor", infer_activation, activation,
              "x * Phi(x), or its tanh approximation");
  ops::define("gelu_backward(Tensor grad_output, Tensor self, *, str approximate=\"none\") -> Tensor",
              infer_activation_backward, k, "");
  ops::define("softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor", infer_activation, activation,
              "log(1 + exp(beta * x)) / beta, linear above threshold");
  ops::define("softplus_backward(Tensor grad_output, Tensor self, Scalar beta, Scalar threshold) -> Tensor",
              infer_activation_backward, k, "");
  ops::define("leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor", infer_activation, activation_inplace,
              "x, or negative_slope * x below 0");
  ops::define("leaky_relu_backward(Tensor grad_output, Tensor self, Scalar negative_slope) -> Tensor",
              infer_activation_backward, k, "");
  ops::define("elu(Tensor self, Scalar alpha=1) -> Tensor", infer_activation, activation_inplace,
              "x, or alpha * (exp(x) - 1) below 0");
  ops::define("elu_backward(Tensor grad_output, Tensor self, Scalar alpha) -> Tensor", infer_activation_backward, k,
              "");
  ops::define("hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor", infer_activation,
              activation_inplace,
              "x clamped to [min_val, max_val]");
  ops::define("hardtanh_backward(Tensor grad_output, Tensor self, Scalar min_val, Scalar max_val) -> Tensor",
              infer_activation_backward, k, "");
  ops::define("nan_to_num(Tensor self, float? nan=0.0, float? posinf=None, float? neginf=None) -> Tensor",
              infer_unary_same, py_out, "NaN, +inf and -inf replaced (defaults: 0, the dtype's largest and lowest)");
  OpFlags functional = {.strided_output = true, .function = true, .method = true, .nn_functional = true,
                        .elementwise = true};
  ops::define("hardshrink(Tensor self, Scalar lambd=0.5) -> Tensor", infer_activation, functional,
              "x where |x| > lambd, else 0");
  // clamp: PyTorch's clamp(Tensor self, Scalar? min=None, Scalar? max=None) and clamp.Tensor, whose one-bound
  // calls are clamp_min and clamp_max (bound under clamp's arguments, and clamp_min(x, 0.5) as clamp_scalar:
  // kOverloadsByArgumentName in python/src/schema_bindings.cpp). A number and a tensor bound together are a
  // TypeError, as in PyTorch.
  ops::define("clamp_scalar(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", infer_clamp_scalar, py_out,
              "x clamped to number bounds (None: no bound on that side)").overload_of = "clamp";
  ops::define("clamp(Tensor self, Tensor min, Tensor max) -> Tensor", infer_binary_arith, py_out,
              "x clamped to tensor bounds");
  ops::define("clamp_min(Tensor self, Tensor min) -> Tensor", infer_binary_arith, py_out, "max(x, min)");
  ops::define("clamp_max(Tensor self, Tensor max) -> Tensor", infer_binary_arith, py_out, "min(x, max)");
  OpFlags divisor = py_out;
  divisor.integer_divisor = true;
  define_binary_family({"floor_divide", "fmod"}, infer_divmod, py_out, divisor);
  define_binary_family({"remainder"}, infer_divmod, py_out, divisor, "other", function);  // remainder(2, x) too
  define_binary_family(kBitwiseOps, infer_bitwise, py_out, py_out);
  ops::define("bitwise_not(Tensor self) -> Tensor", infer_bitwise, py, "~x on integer and bool tensors");
  define_family(kLogicalOps, "{}(Tensor self, Tensor other) -> Tensor", infer_logical, py_out,
                "elementwise logical op, bool out");
  ops::define("logical_not(Tensor self) -> Tensor", infer_logical, py, "not x, bool out");
  ops::define("atan2(Tensor self, Tensor other) -> Tensor", infer_binary_div, py_out,
              "the angle of (other, self), elementwise");
  ops::define("logaddexp(Tensor self, Tensor other) -> Tensor", infer_binary_div, no_inplace,
              "log(exp(self) + exp(other)), without overflow");
  ops::define("lerp(Tensor self, Tensor end, Tensor weight) -> Tensor", infer_lerp, py,
              "self + weight * (end - self)");
  ops::define("lerp_scalar(Tensor self, Tensor end, Scalar weight) -> Tensor", infer_lerp, py,
              "self + weight * (end - self), a number weight").overload_of = "lerp";
  ops::define("addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", infer_addc, py,
              "self + value * tensor1 * tensor2");
  ops::define("addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", infer_addc, py,
              "self + value * tensor1 / tensor2");
  ops::define("cast(Tensor self, ScalarType dtype) -> Tensor", infer_cast, k, "self converted to dtype");
  // The in-place writes eager::copy_ and eager::fill_ (a cast and a fill into self), so their gradients are
  // rules like any op's.
  const OpFlags write = {.composite = true};
  ops::define("copy_(Tensor self, Tensor src) -> Tensor", infer_written, write, "src written into self");
  ops::define("fill_(Tensor self, Scalar value) -> Tensor", infer_written, write, "self filled with value");
}

}  // namespace rill
