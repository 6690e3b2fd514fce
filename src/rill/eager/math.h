// Typed calls of the elementwise ops that gradient rules and eager's own
// compositions use (mul(a, b) rather than binary(op("mul"), a, b)): each op is
// looked up by name once, here, so a rule never names an op by string.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "rill/core/scalar.h"
#include "rill/core/tensor.h"
#include "rill/ops/op_schema.h"

namespace rill::eager {

Tensor add(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, Scalar b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, Scalar b);
/** b - a. */
Tensor rsub(const Tensor& a, Scalar b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, Scalar b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, Scalar b);
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, Scalar b);
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor trunc(const Tensor& x);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, Scalar b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, Scalar b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, Scalar b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, Scalar b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, Scalar b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, Scalar b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
/** Special functions (ops/special.cpp). */
Tensor lgamma(const Tensor& x);
Tensor digamma(const Tensor& x);
/** The n-th derivative of digamma. */
Tensor polygamma(int64_t n, const Tensor& x);
Tensor erfinv(const Tensor& x);
/** exp(-|x|) I0(x), exp(-|x|) I1(x), I0(x) (the modified Bessel functions of the first kind). */
Tensor special_i0e(const Tensor& x);
Tensor special_i1e(const Tensor& x);
Tensor special_i1(const Tensor& x);
Tensor special_modified_bessel_i0(const Tensor& x);
Tensor special_zeta(const Tensor& s, const Tensor& q);
/** The gradient of an activation (ops/elementwise.h's kActivationOps: silu, gelu, ...) at x, by its own backward
 * op `<activation>_backward(grad, x)` with the forward call's numbers and attrs. */
Tensor activation_backward(const OpSchema& activation, const Tensor& grad, const Tensor& x,
                           std::span<const Scalar> scalars, AttrsSym attrs);
/** cumsum along dim. */
Tensor cumsum(const Tensor& x, int64_t dim);
/** The gradient of cumsum along dim for the output gradient grad: grad summed from the end. */
Tensor cumsum_backward(const Tensor& grad, int64_t dim);
/** The gradient of cumprod(x) along dim for the output gradient grad, exact where x has zeros. */
Tensor cumprod_backward(const Tensor& x, const Tensor& grad, int64_t dim);
/** Sum over dims (empty: all). */
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim);
/** Mean over dims (empty: all). */
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim);
/** Product over dims (empty: all). */
Tensor prod(const Tensor& x, std::optional<int64_t> dim, bool keepdim);

}  // namespace rill::eager
