// Views with gradients. A view is computed by eager (no instruction); in grad
// mode it also remembers its base (Note [Views and in-place] in node.h) and,
// when its input requires grad, gets a node mapping its gradient back to the
// input's shape: a reshape, the inverse transpose/permutation, a sum over
// expanded dims, or zeros with the gradient written into the same view.
#include "rill/autograd/functional.h"
#include "rill/autograd/rules.h"
#include "rill/ops/view.h"

namespace rill::autograd {
namespace {

using Fn = FunctionNode::Fn;

// Attach view bookkeeping and history to y = step(x). backward maps y's gradient to x's.
Tensor make_view(const Tensor& x, Tensor y, const char* name, Fn step, Fn backward) {
  if (!grad_enabled()) return y;
  AutogradMeta* xm = find_meta(x);
  AutogradMeta& ym = meta_of(y);
  if (xm && xm->view_base.defined()) {
    ym.view_base = xm->view_base;
    ym.view_replay = [outer = xm->view_replay, step](const Tensor& t) { return step(outer(t)); };
    ym.view_to_base = [outer = xm->view_to_base, backward](const Tensor& g) { return outer(backward(g)); };
  } else {
    ym.view_base = x;
    ym.view_replay = step;
    ym.view_to_base = backward;
  }
  ym.view_version = y.storage()->version();
  if (x.impl()->requires_grad()) set_history(y, make_view_node(name, std::move(backward), gradient_edge(x)), 0);
  return y;
}

// The backward of a view that picks elements (slice, select, narrow): zeros of the input's shape with the
// gradient written into the same view of them.
Fn scatter_backward(Shape shape, Fn step) {
  return [shape = std::move(shape), step = std::move(step)](const Tensor& g) {
    Tensor z = zeros(shape, g.dtype());
    eager::copy_(step(z), g);
    return z;
  };
}

Fn reshape_backward(const Tensor& x) {
  return [shape = x.shape()](const Tensor& g) { return eager::reshape(g, shape); };
}

}  // namespace

Tensor view(const Tensor& x, const Shape& shape) {
  return make_view(x, eager::view(x, shape), "ViewBackward0",
                   [shape](const Tensor& t) { return eager::view(t, shape); }, reshape_backward(x));
}

Tensor reshape(const Tensor& x, const Shape& shape) {
  if (view::view(*x.meta(), shape)) return view(x, shape);
  return view(clone(x), shape);
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1, const char* node_name) {
  Fn step = [dim0, dim1](const Tensor& t) { return eager::transpose(t, dim0, dim1); };
  return make_view(x, eager::transpose(x, dim0, dim1), node_name, step, step);
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  Tensor y = eager::permute(x, dims);  // validates dims
  std::vector<int64_t> inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) inverse[normalize_dim(dims[i], x.ndim(), "permute")] = int64_t(i);
  return make_view(x, y, "PermuteBackward0", [dims](const Tensor& t) { return eager::permute(t, dims); },
                   [inverse](const Tensor& g) { return eager::permute(g, inverse); });
}

Tensor expand(const Tensor& x, const Shape& sizes) {
  Tensor y = eager::expand(x, sizes);
  return make_view(x, y, "ExpandBackward0", [sizes](const Tensor& t) { return eager::expand(t, sizes); },
                   [shape = x.shape()](const Tensor& g) { return sum_to(g, shape); });
}

Tensor slice(const Tensor& x, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step) {
  Fn fwd = [=](const Tensor& t) { return eager::slice(t, dim, start, stop, step); };
  return make_view(x, fwd(x), "SliceBackward0", fwd, scatter_backward(x.shape(), fwd));
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  Fn fwd = [=](const Tensor& t) { return eager::narrow(t, dim, start, length); };
  return make_view(x, fwd(x), "SliceBackward0", fwd, scatter_backward(x.shape(), fwd));
}

Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  Fn fwd = [=](const Tensor& t) { return eager::select(t, dim, index); };
  return make_view(x, fwd(x), "SelectBackward0", fwd, scatter_backward(x.shape(), fwd));
}

Tensor unsqueeze(const Tensor& x, int64_t dim) {
  Fn fwd = [dim](const Tensor& t) { return eager::unsqueeze(t, dim); };
  return make_view(x, fwd(x), "UnsqueezeBackward0", fwd, reshape_backward(x));
}

Tensor squeeze(const Tensor& x, std::optional<std::vector<int64_t>> dims) {
  const char* name = !dims ? "SqueezeBackward0" : dims->size() == 1 ? "SqueezeBackward1" : "SqueezeBackward2";
  Fn fwd = [dims](const Tensor& t) { return eager::squeeze(t, dims); };
  return make_view(x, fwd(x), name, fwd, reshape_backward(x));
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  int64_t n = x.ndim();
  start_dim = normalize_dim(start_dim, n, "flatten");
  end_dim = normalize_dim(end_dim, n, "flatten");
  RILL_CHECK(start_dim <= end_dim, Runtime, "[flatten] start_dim (", start_dim, ") cannot come after end_dim (",
             end_dim, ")");
  if (n == 0) return reshape(x, {1});
  if (start_dim == end_dim) return x;  // as in PyTorch: x itself
  Shape s(x.shape().begin(), x.shape().begin() + start_dim);
  int64_t mid = 1;
  for (int64_t d = start_dim; d <= end_dim; ++d) mid *= x.shape()[d];
  s.push_back(mid);
  s.insert(s.end(), x.shape().begin() + end_dim + 1, x.shape().end());
  return reshape(x, s);
}

Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  Fn fwd = [=](const Tensor& t) { return eager::diagonal(t, offset, dim1, dim2); };
  return make_view(x, fwd(x), "DiagonalBackward0", fwd, scatter_backward(x.shape(), fwd));
}

}  // namespace rill::autograd
