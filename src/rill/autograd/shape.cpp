// Gradients of the shape ops (ops/shape.cpp): cat and tril/triu. The other shape
// functions (eager/shape.cpp) are compositions of views, cat and index_select,
// so their gradients come from the pieces.
#include "rill/autograd/rules.h"

namespace rill::autograd {
namespace {

// cat: each input gets its slice of the gradient (a skipped 1-D empty input gets none).
std::vector<Tensor> cat_backward(const GradContext& c) {
  const Tensor& g = c.grad();
  const int64_t dim = normalize_dim(c.attr<int64_t>("dim"), g.ndim(), "cat");
  std::vector<Tensor> out(c.num_inputs());
  int64_t offset = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const TensorMeta& m = c.input_meta(i);
    if (m.ndim() == 1 && m.numel == 0 && g.ndim() != 1) continue;
    const int64_t size = m.shape[dim];
    if (c.needs_grad(i)) out[i] = eager::narrow(g, dim, offset, size);
    offset += size;
  }
  return out;
}

std::vector<Tensor> tril_backward(const GradContext& c) {
  return {eager::triangle(c.grad(), c.attr<int64_t>("diagonal"), false)};
}

std::vector<Tensor> triu_backward(const GradContext& c) {
  return {eager::triangle(c.grad(), c.attr<int64_t>("diagonal"), true)};
}

}  // namespace

void register_shape_rules() {
  define_rule("cat", {"CatBackward0", cat_backward});
  define_rule("tril", {"TrilBackward0", tril_backward});
  define_rule("triu", {"TriuBackward0", triu_backward});
}

}  // namespace rill::autograd
