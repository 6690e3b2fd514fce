// Ops whose Python forms need more than their signature: square (pow with 2),
// the operators of floor division, remainders and the bitwise ops,
// and the norms (p may be 'fro'), with PyTorch's signatures. Ops whose signatures say it all (sin,
// remainder, lerp, addcmul, logsumexp, cumsum, the activations of rill.nn.functional, ...) are bound
// from them (schema_bindings.cpp).
#include <cmath>
#include <limits>

#include "bind.h"
#include "rill/ops/elementwise.h"

namespace rill::py {
namespace {

Scalar number_arg(nb::handle h, const char* op, const char* what) {
  auto s = scalar_from_object(h);
  RILL_CHECK(s.has_value(), Type, "[", op, "] ", what, " must be a number, got ", nb::inst_name(h).c_str());
  return *s;
}

std::vector<int64_t> dims_or_all(nb::handle dim, const char* op) {
  if (dim.is_none()) return {};
  return ints_from_object(dim, op);
}

Tensor unary_call(const OpSchema& op, const Tensor& x) { return eager::call1(op, {&x, 1}, {}, empty_attrs()); }

// p of torch.norm / ord of vector_norm: a number, inf, or 'fro' (the 2-norm).
double norm_order(nb::handle p, const char* op) {
  if (nb::isinstance<nb::str>(p)) {
    std::string s = nb::cast<std::string>(p);
    RILL_CHECK(s == "fro", NotImplemented, "[", op, "] p='", s, "' is not supported; use p='fro', a number or inf");
    return 2.0;
  }
  return number_arg(p, op, "p").to_double();
}

}  // namespace

void init_math_ops(nb::module_& m, nb::class_<Tensor>& cls) {
  // --- square ---
  static const OpSchema* pow_scalar = &eager::op("pow_scalar");
  auto square = [](const Tensor& x) { return eager::binary_scalar(*pow_scalar, x, Scalar(int64_t{2})); };
  m.def("square", square, nb::arg("input"));
  cls.def("square", square);
  cls.def("square_", [](const Tensor& x) -> const Tensor& {
    check_no_internal_overlap(x, "square");
    Scalar two[1] = {Scalar(int64_t{2})};
    return eager::inplace(*pow_scalar, {&x, 1}, two);
  }, nb::rv_policy::reference_internal);

  // --- binary ---
  def_operators(cls, make_binary("floor_divide"), "__floordiv__", "__rfloordiv__", "__ifloordiv__");
  def_operators(cls, make_binary("remainder"), "__mod__", "__rmod__", "__imod__");
  def_operators(cls, make_binary("bitwise_and"), "__and__", "__rand__", "__iand__");
  def_operators(cls, make_binary("bitwise_or"), "__or__", "__ror__", "__ior__");
  def_operators(cls, make_binary("bitwise_xor"), "__xor__", "__rxor__", "__ixor__");
  cls.def("__invert__", [](const Tensor& x) {
    RILL_CHECK(!dtype_is_floating(x.dtype()), Type, "[bitwise_not] ~ (operator.invert) is only implemented on "
               "integer and Boolean-type tensors, got ", dtype_name(x.dtype()));
    return unary_call(eager::op("bitwise_not"), x);
  });

  // --- reductions ---
  auto norm = [](const Tensor& x, nb::handle p, nb::handle dim, bool keepdim, std::optional<DType> dtype) {
    return eager::norm(x, norm_order(p, "norm"), dims_or_all(dim, "norm"), keepdim, dtype);
  };
  m.def("norm", norm, nb::arg("input"), nb::arg("p") = "fro", nb::arg("dim") = nb::none(),
        nb::arg("keepdim") = false, nb::arg("dtype") = nb::none());
  cls.def("norm", norm, nb::arg("p") = "fro", nb::arg("dim") = nb::none(), nb::arg("keepdim") = false,
          nb::arg("dtype") = nb::none());
  m.def("linalg_vector_norm", [](const Tensor& x, nb::handle ord, nb::handle dim, bool keepdim,
                                 std::optional<DType> dtype) {
    RILL_CHECK(!nb::isinstance<nb::str>(ord), Type, "[linalg.vector_norm] ord must be a number, got a string");
    return eager::norm(x, norm_order(ord, "linalg.vector_norm"), dims_or_all(dim, "linalg.vector_norm"), keepdim,
                          dtype);
  }, nb::arg("x"), nb::arg("ord") = 2, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
        nb::arg("dtype") = nb::none());
}

}  // namespace rill::py
