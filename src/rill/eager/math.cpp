#include "rill/eager/math.h"

#include <string>
#include <unordered_map>

#include "rill/eager/functional.h"
#include "rill/ops/elementwise.h"

namespace rill::eager {

Tensor add(const Tensor& a, const Tensor& b) {
  static const OpSchema& o = op("add");
  return binary(o, a, b);
}

Tensor sub(const Tensor& a, const Tensor& b) {
  static const OpSchema& o = op("sub");
  return binary(o, a, b);
}

Tensor mul(const Tensor& a, const Tensor& b) {
  static const OpSchema& o = op("mul");
  return binary(o, a, b);
}

Tensor div(const Tensor& a, const Tensor& b) {
  static const OpSchema& o = op("div");
  return binary(o, a, b);
}

Tensor floor_divide(const Tensor& a, const Tensor& b) {
  static const OpSchema& o = op("floor_divide");
  return binary(o, a, b);
}

Tensor pow(const Tensor& a, const Tensor& b) {
  static const OpSchema& o = op("pow");
  return binary(o, a, b);
}

Tensor eq(const Tensor& a, const Tensor& b) {
  static const OpSchema& o = op("eq");
  return binary(o, a, b);
}

Tensor ne(const Tensor& a, const Tensor& b) {
  static const OpSchema& o = op("ne");
  return binary(o, a, b);
}

Tensor lt(const Tensor& a, const Tensor& b) {
  static const OpSchema& o = op("lt");
  return binary(o, a, b);
}

Tensor le(const Tensor& a, const Tensor& b) {
  static const OpSchema& o = op("le");
  return binary(o, a, b);
}

Tensor gt(const Tensor& a, const Tensor& b) {
  static const OpSchema& o = op("gt");
  return binary(o, a, b);
}

Tensor ge(const Tensor& a, const Tensor& b) {
  static const OpSchema& o = op("ge");
  return binary(o, a, b);
}

Tensor logical_and(const Tensor& a, const Tensor& b) {
  static const OpSchema& o = op("logical_and");
  return binary(o, a, b);
}

Tensor logical_or(const Tensor& a, const Tensor& b) {
  static const OpSchema& o = op("logical_or");
  return binary(o, a, b);
}

Tensor add(const Tensor& a, Scalar b) {
  static const OpSchema& o = op("add_scalar");
  return binary_scalar(o, a, b);
}

Tensor sub(const Tensor& a, Scalar b) {
  static const OpSchema& o = op("sub_scalar");
  return binary_scalar(o, a, b);
}

Tensor rsub(const Tensor& a, Scalar b) {
  static const OpSchema& o = op("rsub_scalar");
  return binary_scalar(o, a, b);
}

Tensor mul(const Tensor& a, Scalar b) {
  static const OpSchema& o = op("mul_scalar");
  return binary_scalar(o, a, b);
}

Tensor div(const Tensor& a, Scalar b) {
  static const OpSchema& o = op("div_scalar");
  return binary_scalar(o, a, b);
}

Tensor pow(const Tensor& a, Scalar b) {
  static const OpSchema& o = op("pow_scalar");
  return binary_scalar(o, a, b);
}

Tensor eq(const Tensor& a, Scalar b) {
  static const OpSchema& o = op("eq_scalar");
  return binary_scalar(o, a, b);
}

Tensor ne(const Tensor& a, Scalar b) {
  static const OpSchema& o = op("ne_scalar");
  return binary_scalar(o, a, b);
}

Tensor lt(const Tensor& a, Scalar b) {
  static const OpSchema& o = op("lt_scalar");
  return binary_scalar(o, a, b);
}

Tensor le(const Tensor& a, Scalar b) {
  static const OpSchema& o = op("le_scalar");
  return binary_scalar(o, a, b);
}

Tensor gt(const Tensor& a, Scalar b) {
  static const OpSchema& o = op("gt_scalar");
  return binary_scalar(o, a, b);
}

Tensor ge(const Tensor& a, Scalar b) {
  static const OpSchema& o = op("ge_scalar");
  return binary_scalar(o, a, b);
}

Tensor neg(const Tensor& x) {
  static const OpSchema& o = op("neg");
  return unary(o, x);
}

Tensor abs(const Tensor& x) {
  static const OpSchema& o = op("abs");
  return unary(o, x);
}

Tensor sign(const Tensor& x) {
  static const OpSchema& o = op("sign");
  return unary(o, x);
}

Tensor exp(const Tensor& x) {
  static const OpSchema& o = op("exp");
  return unary(o, x);
}

Tensor log(const Tensor& x) {
  static const OpSchema& o = op("log");
  return unary(o, x);
}

Tensor sqrt(const Tensor& x) {
  static const OpSchema& o = op("sqrt");
  return unary(o, x);
}

Tensor sin(const Tensor& x) {
  static const OpSchema& o = op("sin");
  return unary(o, x);
}

Tensor cos(const Tensor& x) {
  static const OpSchema& o = op("cos");
  return unary(o, x);
}

Tensor trunc(const Tensor& x) {
  static const OpSchema& o = op("trunc");
  return unary(o, x);
}

Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  static const OpSchema& o = op("sum");
  return reduce(o, x, dims, keepdim);
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  static const OpSchema& o = op("mean");
  return reduce(o, x, dims, keepdim);
}

Tensor prod(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  static const OpSchema& o = op("prod");
  return reduce(o, x, dims, keepdim);
}

Tensor cumsum(const Tensor& x, int64_t dim, bool reverse) {
  static const OpSchema& o = op("cumsum");
  return scan(o, x, dim, std::nullopt, reverse);
}

Tensor cumprod_backward(const Tensor& x, const Tensor& grad, int64_t dim) {
  static const OpSchema& o = op("cumprod_backward");
  Tensor in[2] = {contiguous(x), contiguous(grad)};
  return call1(o, in, {}, make_attrs({dim}));
}

Tensor activation_backward(const OpSchema& activation, const Tensor& grad, const Tensor& x,
                           std::span<const Scalar> scalars, AttrsSym attrs) {
  static const std::unordered_map<const OpSchema*, const OpSchema*> backward_of = [] {
    std::unordered_map<const OpSchema*, const OpSchema*> m;
    for (std::string_view name : kActivationOps) m[&op(name)] = &op(std::string(name) + "_backward");
    return m;
  }();
  auto it = backward_of.find(&activation);
  RILL_ASSERT(it != backward_of.end(), "[", activation.name, "] is not an activation with a backward op");
  Tensor in[2] = {grad, x};
  return call1(*it->second, in, scalars, attrs);
}

}  // namespace rill::eager
