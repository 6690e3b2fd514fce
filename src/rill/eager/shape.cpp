// Shape ops in the functional API: cat, tril/triu and the diagonal view.
#include "rill/eager/functional.h"

namespace rill::eager {

Tensor cat(std::span<const Tensor> tensors, int64_t dim) {
  static const OpSchema& op = eager::op("cat");
  return call1(op, tensors, {}, make_attrs({dim}));
}

Tensor triangle(const Tensor& x, int64_t diagonal, bool upper) {
  static const OpSchema& tril = eager::op("tril");
  static const OpSchema& triu = eager::op("triu");
  return call1(upper ? triu : tril, {&x, 1}, {}, make_attrs({diagonal}));
}

Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  static const OpSchema& op = eager::op("diagonal");
  return view_call(op, x, make_attrs({offset, dim1, dim2}));
}

}  // namespace rill::eager
