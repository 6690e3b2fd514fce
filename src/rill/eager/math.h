// Typed calls of the elementwise ops that gradient rules and eager's own
// compositions use (mul(a, b) rather than binary(op("mul"), a, b)): each op is
// looked up by name once, here, so a rule never names an op by string.
#pragma once

#include <vector>

#include "rill/core/scalar.h"
#include "rill/core/tensor.h"

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
/** Sum over dims (empty: all). */
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim);
/** Mean over dims (empty: all). */
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim);
/** Product over dims (empty: all). */
Tensor prod(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim);

}  // namespace rill::eager
