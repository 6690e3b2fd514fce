// Special functions (torch.special and the gamma family of torch): the gamma
// functions (digamma, lgamma, polygamma, mvlgamma, the regularised incomplete
// gammas), erfinv and the error-function relatives, Bessel and Airy functions,
// the Hurwitz zeta function, the classical orthogonal polynomials, and the
// floating-point helpers nextafter and frexp. Integer and bool inputs are
// computed in floating point (float32), as in PyTorch; the names are PyTorch's
// aten names (special_<name> is rill.special.<name>, bound in special.py).
//
// frexp is bound in Python (a named pair) over _frexp. Attrs: _polygamma [n] (rill.polygamma(n, x) binds it with its arguments
// swapped, so that x is the tensor of the method form), mvlgamma [p].
#include <string>
#include <string_view>
#include <vector>

#include "rill/ops/op_schema.h"
#include "rill/ops/type_promotion.h"

namespace rill {
namespace {

MetaSym dense_like(const Shape& shape, DType dtype, const MetaSym& like) {
  return make_contiguous_meta(shape, dtype, like->device);
}

// digamma, erfinv, special_i1, ...: integer inputs are computed in float32.
InferResult infer_special_unary(const InferContext& c) {
  DType t = to_floating_checked(c, c.inputs[0]->dtype);
  return {{dense_like(c.inputs[0]->shape, t, c.inputs[0])}, {t}};
}

InferResult infer_polygamma(const InferContext& c) {
  const int64_t n = c.attr<int64_t>("n");
  RILL_CHECK(n >= 0, Runtime, "[polygamma] polygamma(n, x) does not support negative n, got n=", n);
  return infer_special_unary(c);
}

InferResult infer_mvlgamma(const InferContext& c) {
  const int64_t p = c.attr<int64_t>("p");
  RILL_CHECK(p >= 1, Runtime, "[mvlgamma] p has to be greater than or equal to 1, got p=", p);
  return infer_special_unary(c);
}

Shape broadcast_inputs(const InferContext& c) {
  Shape shape = c.inputs[0]->shape;
  for (size_t i = 1; i < c.inputs.size(); ++i)
    shape = broadcast_shapes(shape, c.inputs[i]->shape, c.op.name.c_str());
  return shape;
}

void check_same_device(const InferContext& c) {
  for (const MetaSym& m : c.inputs)
    RILL_CHECK(m->device == c.inputs[0]->device, Runtime, "[", c.op.name,
               "] expected all tensors on the same device, got ", c.inputs[0]->device.str(), " and ",
               m->device.str());
}

// igamma, special_zeta, the polynomials: the promoted dtype, made floating.
InferResult infer_special_binary(const InferContext& c) {
  check_same_device(c);
  DType t = to_floating_checked(c, result_type_checked(c));
  std::vector<DType> casts(c.inputs.size(), t);
  return {{dense_like(broadcast_inputs(c), t, c.inputs[0])}, casts};
}

// nextafter: floating operands only, of the promoted dtype.
InferResult infer_nextafter(const InferContext& c) {
  check_same_device(c);
  DType t = result_type_checked(c);
  RILL_CHECK(dtype_is_floating(t), NotImplemented, "[nextafter] is not implemented for ", dtype_name(t),
             " tensors; convert the inputs with .float()");
  return {{dense_like(broadcast_inputs(c), t, c.inputs[0])}, {t, t}};
}

// frexp: (mantissa of the input's floating dtype, int32 exponent).
InferResult infer_frexp(const InferContext& c) {
  DType t = c.inputs[0]->dtype;
  RILL_CHECK(dtype_is_floating(t), Type, "[frexp] torch.frexp() only supports floating-point dtypes, got ",
             dtype_name(t), "; convert the input with .float()");
  return {{dense_like(c.inputs[0]->shape, t, c.inputs[0]), dense_like(c.inputs[0]->shape, DType::kInt32, c.inputs[0])},
          {}};
}

void define_each(const std::vector<std::string_view>& names, std::string_view args, InferFn infer, OpFlags flags,
                 std::string_view doc) {
  for (std::string_view n : names) ops::define(std::string(n).append(args), infer, flags, doc);
}

}  // namespace

void register_special_ops() {
  const OpFlags full = {.strided_output = true, .function = true, .method = true, .inplace = true, .out = true,
                        .elementwise = true};
  const OpFlags function_out = {.strided_output = true, .function = true, .out = true, .elementwise = true};
  define_each({"digamma", "lgamma", "erfinv"}, "(Tensor self) -> Tensor", infer_special_unary, full,
              "a special function, elementwise (integers become float32)");
  ops::define("_polygamma(Tensor self, int n) -> Tensor", infer_polygamma, full,
              "the n-th derivative of digamma (rill.polygamma(n, input) swaps the arguments)");
  ops::define("mvlgamma(Tensor self, int p) -> Tensor", infer_mvlgamma, full,
              "the multivariate log-gamma function of dimension p");
  define_each({"igamma", "igammac"}, "(Tensor self, Tensor other) -> Tensor", infer_special_binary, full,
              "the regularised lower (igamma) or upper (igammac) incomplete gamma function");
  ops::define("nextafter(Tensor self, Tensor other) -> Tensor", infer_nextafter, full,
              "the next representable value after self towards other");
  OpFlags frexp_flags = {.strided_output = true, .function = true, .method = true, .elementwise = true};
  ops::define("_frexp(Tensor self) -> (Tensor mantissa, Tensor exponent)", infer_frexp, frexp_flags,
              "self = mantissa * 2^exponent, |mantissa| in [0.5, 1) (rill.frexp names the pair)");
  define_each({"special_erfcx", "special_log_ndtr", "special_ndtri", "special_i1", "special_i1e",
               "special_i0e"},
              "(Tensor self) -> Tensor", infer_special_unary, function_out,
              "a special function, elementwise (integers become float32)");
  // PyTorch names the argument self for some of these and x for the others.
  define_each({"special_bessel_j0", "special_bessel_j1", "special_bessel_y0", "special_bessel_y1",
               "special_modified_bessel_i0", "special_modified_bessel_i1", "special_modified_bessel_k0",
               "special_modified_bessel_k1"},
              "(Tensor self) -> Tensor", infer_special_unary, function_out,
              "a Bessel function, elementwise (integers become float32)");
  define_each({"special_airy_ai", "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1",
               "special_spherical_bessel_j0"},
              "(Tensor x) -> Tensor", infer_special_unary, function_out,
              "a Bessel or Airy function, elementwise (integers become float32)");
  ops::define("special_zeta(Tensor self, Tensor other) -> Tensor", infer_special_binary, function_out,
              "the Hurwitz zeta function zeta(self, other)");
  define_each({"special_chebyshev_polynomial_t", "special_chebyshev_polynomial_u", "special_chebyshev_polynomial_v",
               "special_chebyshev_polynomial_w", "special_shifted_chebyshev_polynomial_t",
               "special_shifted_chebyshev_polynomial_u", "special_shifted_chebyshev_polynomial_v",
               "special_shifted_chebyshev_polynomial_w", "special_hermite_polynomial_h",
               "special_hermite_polynomial_he", "special_laguerre_polynomial_l", "special_legendre_polynomial_p"},
              "(Tensor x, Tensor n) -> Tensor", infer_special_binary, function_out,
              "an orthogonal polynomial of degree n (truncated to an integer) at x");
}

}  // namespace rill
