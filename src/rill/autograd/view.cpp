// Gradients of the view ops (ops/view.cpp). A view's gradient maps the
// gradient of the view back to its input's shape: a reshape, the inverse
// transpose or permutation, the gradient itself for expand (the node sums it
// over the expanded dims), or zeros with the gradient written into the same
// view of them for the views that pick elements. The recorder also keeps, for
// every view made in grad mode, its base and how to replay it (Note [Views and
// in-place] in node.h).
#include "rill/autograd/rules.h"

namespace rill::autograd {
namespace {

using Ints = std::vector<int64_t>;

std::vector<Tensor> reshape_back(const GradContext& c) { return {eager::reshape(c.grad(), c.input_meta(0).shape)}; }

std::vector<Tensor> transpose_backward(const GradContext& c) {
  return {eager::transpose(c.grad(), c.attr<int64_t>("dim0"), c.attr<int64_t>("dim1"))};
}

std::vector<Tensor> t_backward(const GradContext& c) {
  return {c.input_meta(0).ndim() < 2 ? c.grad() : eager::transpose(c.grad(), 0, 1)};
}

std::vector<Tensor> permute_backward(const GradContext& c) {
  const Ints& dims = c.attr<Ints>("dims");
  Ints inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    inverse[normalize_dim(dims[i], c.input_meta(0).ndim(), "permute")] = static_cast<int64_t>(i);
  return {eager::permute(c.grad(), inverse)};
}

std::vector<Tensor> expand_backward(const GradContext& c) { return {c.grad()}; }

// slice, narrow, select, diagonal: the gradient written into the same view of zeros shaped like the input.
std::vector<Tensor> pick_backward(const GradContext& c) {
  Tensor z = zeros(c.input_meta(0).shape, c.grad().dtype());
  eager::GradModeGuard off(false);  // a view of a fresh tensor: nothing to record
  eager::copy_(eager::view_call(c.op(), z, c.interned_attrs()), c.grad());
  return {z};
}

const char* squeeze_name(const GradContext& c) {
  const Attrs& a = c.attrs();
  if (std::holds_alternative<std::monostate>(a.values[0])) return "SqueezeBackward0";
  return std::get<Ints>(a.values[0]).size() == 1 ? "SqueezeBackward1" : "SqueezeBackward2";
}

}  // namespace

void register_view_rules() {
  define_rule("view", {"ViewBackward0", reshape_back});
  define_rule("transpose", {"TransposeBackward0", transpose_backward});
  define_rule("t", {"TBackward0", t_backward});
  define_rule("permute", {"PermuteBackward0", permute_backward});
  define_rule("expand", {"ExpandBackward0", expand_backward});
  define_rule("slice", {"SliceBackward0", pick_backward});
  define_rule("narrow", {"SliceBackward0", pick_backward});
  define_rule("select", {"SelectBackward0", pick_backward});
  define_rule("diagonal", {"DiagonalBackward0", pick_backward});
  define_rule("unsqueeze", {"UnsqueezeBackward0", reshape_back});
  define_rule("squeeze", {"SqueezeBackward0", reshape_back, 0, 0, squeeze_name});
}

}  // namespace rill::autograd
