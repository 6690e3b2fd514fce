// Gradients of the view ops (ops/view.cpp). A view's gradient maps the
// gradient of the view back to its input's shape: a reshape, the inverse
// transpose or permutation, the gradient itself for expand (the node sums it
// over the expanded dims), or zeros with the gradient written into the same
// view of them for the views that pick elements. The recorder also keeps, for
// every view made in grad mode, its base and how to replay it (Note [Views and
// in-place] in node.h).
#include "rill/autograd/engine.h"
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

std::vector<Tensor> grad_itself(const GradContext& c) { return {c.grad()}; }

// slice, narrow, select, diagonal: the gradient written into the same view of zeros shaped like the input.
std::vector<Tensor> pick_backward(const GradContext& c) {
  Tensor z = zeros(c.input_meta(0).shape, c.grad().dtype());
  // a view of a fresh tensor: nothing to record, but for create_graph (the copy is then the gradient's history)
  eager::GradModeGuard mode(creating_graph());
  eager::copy_(eager::view_call(c.op(), z, c.interned_attrs()), c.grad());
  return {z};
}

// The storage positions, relative to start, of the elements of a tensor of shape and strides (int64, shaped
// like it).
Tensor element_positions(const Ints& shape, const Ints& strides, int64_t start) {
  static const OpSchema& add = eager::op("add");
  Tensor pos = eager::full({}, start, DType::kInt64);
  for (size_t d = 0; d < shape.size(); ++d) {
    Tensor along = strides[d] == 0 ? eager::full({shape[d]}, 0, DType::kInt64)
                                   : eager::arange(0, shape[d] * strides[d], strides[d], DType::kInt64);
    Shape at(shape.size(), 1);
    at[d] = shape[d];
    pos = eager::binary(add, pos, eager::reshape(along, at));
  }
  return eager::reshape(pos, Shape(shape.begin(), shape.end()));
}

int64_t last_position(const Ints& shape, const Ints& strides) {
  int64_t last = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return -1;
    last += (shape[d] - 1) * strides[d];
  }
  return last;
}

// as_strided: the gradient summed into a buffer over the memory the input and the view span (a view may read an
// element more than once), read back at the input's elements.
std::vector<Tensor> as_strided_backward(const GradContext& c) {
  const TensorMeta& in = c.input_meta(0);
  const Ints& size = c.attr<Ints>("size");
  const Ints& stride = c.attr<Ints>("stride");
  int64_t offset = c.attr<int64_t>("offset");
  Ints in_shape(in.shape.begin(), in.shape.end()), in_strides(in.strides.begin(), in.strides.end());
  int64_t base = std::min<int64_t>(0, offset);
  int64_t extent = std::max(last_position(in_shape, in_strides), offset + last_position(size, stride)) - base + 1;
  int64_t numel = 1;
  for (int64_t n : size) numel *= n;
  Tensor out_pos = eager::reshape(element_positions(size, stride, offset - base), {numel});
  Tensor buffer = eager::index_add(zeros({std::max<int64_t>(extent, 0)}, c.grad().dtype()), 0, out_pos,
                                   eager::reshape(c.grad(), {numel}), 1, false);
  Tensor in_pos = eager::reshape(element_positions(in_shape, in_strides, -base), {in.numel});
  return {eager::reshape(eager::index_select(buffer, 0, in_pos), in.shape)};
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
  define_rule("expand", {"ExpandBackward0", grad_itself});
  define_rule("slice", {"SliceBackward0", pick_backward});
  define_rule("narrow", {"SliceBackward0", pick_backward});
  define_rule("select", {"SelectBackward0", pick_backward});
  define_rule("diagonal", {"DiagonalBackward0", pick_backward});
  define_rule("unsqueeze", {"UnsqueezeBackward0", reshape_back});
  define_rule("squeeze", {"SqueezeBackward0", reshape_back, 0, 0, squeeze_name});
  define_rule("as_strided", {"AsStridedBackward0", as_strided_backward});
  define_rule("_delay_tick", {"DelayTickBackward0", grad_itself});
}

}  // namespace rill::autograd
