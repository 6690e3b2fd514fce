#include "rill/eager/math.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "rill/eager/functional.h"
#include "rill/ops/elementwise.h"

namespace rill::eager {
namespace {

// An op's name as a template argument, so each function below looks its schema up once.
template <size_t N>
struct Name {
  char text[N];
  constexpr Name(const char (&s)[N]) { std::copy_n(s, N, text); }
};

template <Name kName>
const OpSchema& schema() {
  static const OpSchema& o = op(kName.text);
  return o;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary(schema<"add">(), a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(schema<"sub">(), a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(schema<"mul">(), a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(schema<"div">(), a, b); }
Tensor floor_divide(const Tensor& a, const Tensor& b) { return binary(schema<"floor_divide">(), a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary(schema<"pow">(), a, b); }
Tensor eq(const Tensor& a, const Tensor& b) { return binary(schema<"eq">(), a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary(schema<"ne">(), a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary(schema<"lt">(), a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary(schema<"le">(), a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary(schema<"gt">(), a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary(schema<"ge">(), a, b); }
Tensor logical_and(const Tensor& a, const Tensor& b) { return binary(schema<"logical_and">(), a, b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return binary(schema<"logical_or">(), a, b); }
Tensor add(const Tensor& a, Scalar b) { return binary_scalar(schema<"add_scalar">(), a, b); }
Tensor sub(const Tensor& a, Scalar b) { return binary_scalar(schema<"sub_scalar">(), a, b); }
Tensor rsub(const Tensor& a, Scalar b) { return binary_scalar(schema<"rsub_scalar">(), a, b); }
Tensor mul(const Tensor& a, Scalar b) { return binary_scalar(schema<"mul_scalar">(), a, b); }
Tensor div(const Tensor& a, Scalar b) { return binary_scalar(schema<"div_scalar">(), a, b); }
Tensor pow(const Tensor& a, Scalar b) { return binary_scalar(schema<"pow_scalar">(), a, b); }
Tensor eq(const Tensor& a, Scalar b) { return binary_scalar(schema<"eq_scalar">(), a, b); }
Tensor ne(const Tensor& a, Scalar b) { return binary_scalar(schema<"ne_scalar">(), a, b); }
Tensor lt(const Tensor& a, Scalar b) { return binary_scalar(schema<"lt_scalar">(), a, b); }
Tensor le(const Tensor& a, Scalar b) { return binary_scalar(schema<"le_scalar">(), a, b); }
Tensor gt(const Tensor& a, Scalar b) { return binary_scalar(schema<"gt_scalar">(), a, b); }
Tensor ge(const Tensor& a, Scalar b) { return binary_scalar(schema<"ge_scalar">(), a, b); }
Tensor neg(const Tensor& x) { return unary(schema<"neg">(), x); }
Tensor lgamma(const Tensor& x) { return unary(schema<"lgamma">(), x); }
Tensor digamma(const Tensor& x) { return unary(schema<"digamma">(), x); }
Tensor polygamma(int64_t n, const Tensor& x) {
  std::vector<AttrValue> attrs;
  attrs.emplace_back(n);
  return call1(schema<"_polygamma">(), std::span<const Tensor>(&x, 1), {}, make_attrs(std::move(attrs)));
}
Tensor erfinv(const Tensor& x) { return unary(schema<"erfinv">(), x); }
Tensor special_i0e(const Tensor& x) { return unary(schema<"special_i0e">(), x); }
Tensor special_i1e(const Tensor& x) { return unary(schema<"special_i1e">(), x); }
Tensor special_i1(const Tensor& x) { return unary(schema<"special_i1">(), x); }
Tensor special_modified_bessel_i0(const Tensor& x) { return unary(schema<"special_modified_bessel_i0">(), x); }
Tensor special_zeta(const Tensor& s, const Tensor& q) { return binary(schema<"special_zeta">(), s, q); }
Tensor abs(const Tensor& x) { return unary(schema<"abs">(), x); }
Tensor sign(const Tensor& x) { return unary(schema<"sign">(), x); }
Tensor exp(const Tensor& x) { return unary(schema<"exp">(), x); }
Tensor log(const Tensor& x) { return unary(schema<"log">(), x); }
Tensor sqrt(const Tensor& x) { return unary(schema<"sqrt">(), x); }
Tensor sin(const Tensor& x) { return unary(schema<"sin">(), x); }
Tensor cos(const Tensor& x) { return unary(schema<"cos">(), x); }
Tensor trunc(const Tensor& x) { return unary(schema<"trunc">(), x); }

Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce(schema<"sum">(), x, dims, keepdim);
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce(schema<"mean">(), x, dims, keepdim);
}

Tensor prod(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  std::vector<AttrValue> attrs;  // not a braced list: GCC 12 warns falsely on a braced variant list here
  if (dim) {
    attrs.emplace_back(*dim);
    attrs.emplace_back(keepdim);
  }
  attrs.emplace_back(std::monostate{});  // dtype None
  return call1(dim ? schema<"prod_dim">() : schema<"prod">(), {&x, 1}, {}, make_attrs(std::move(attrs)));
}

Tensor cumsum(const Tensor& x, int64_t dim) { return scan(schema<"cumsum">(), x, dim); }

Tensor cumsum_backward(const Tensor& grad, int64_t dim) {
  std::vector<AttrValue> attrs;  // not a braced list: GCC 12 warns falsely on a braced variant list here
  attrs.emplace_back(dim);
  return call1(schema<"cumsum_backward">(), {&grad, 1}, {}, make_attrs(std::move(attrs)));
}

Tensor cumprod_backward(const Tensor& x, const Tensor& grad, int64_t dim) {
  Tensor in[2] = {contiguous(x), contiguous(grad)};
  std::vector<AttrValue> attrs;  // not a braced list: GCC 12 warns falsely on a braced variant list here
  attrs.emplace_back(dim);
  return call1(schema<"cumprod_backward">(), in, {}, make_attrs(std::move(attrs)));
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
