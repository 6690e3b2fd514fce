// Gradient rules of the reductions (ops/reduce.cpp). The output gradient is
// broadcast back over the reduced dims; amax/amin and max/min over all elements
// split it evenly among tied extremes, max/min along a dim route it to the
// returned index (as PyTorch does).
#include "rill/autograd/rules.h"

namespace rill::autograd {
namespace {

constexpr uint32_t kIn0 = 1, kOut0 = 1, kOut1 = 2;

// g (the reduced shape) viewed with the reduced dims as size 1, then expanded to the input's shape.
Tensor restore(const Tensor& g, const TensorMeta& in, std::vector<int64_t> dims, bool keepdim) {
  const int64_t n = in.ndim();
  if (dims.empty())
    for (int64_t d = 0; d < n; ++d) dims.push_back(d);
  Tensor r = g;
  if (!keepdim && n > 0) {
    Shape kept = in.shape;
    for (int64_t d : dims) kept[normalize_dim(d, n, "backward")] = 1;
    r = eager::reshape(r, kept);
  }
  return eager::expand(r, in.shape);
}

// Elements reduced into each output element.
int64_t reduced_count(const TensorMeta& in, const std::vector<int64_t>& dims) {
  if (dims.empty()) return in.numel;
  int64_t count = 1;
  for (int64_t d : dims) count *= in.ndim() == 0 ? 1 : in.shape[normalize_dim(d, in.ndim(), "backward")];
  return count;
}

std::vector<Tensor> sum_backward(const GradContext& c) {
  return {restore(c.grad(), c.input_meta(0), c.attrs().get_ints(0), c.attrs().get_bool(1))};
}

std::vector<Tensor> mean_backward(const GradContext& c) {
  const std::vector<int64_t>& dims = c.attrs().get_ints(0);
  Tensor g = binary("div_scalar", c.grad(), Scalar(reduced_count(c.input_meta(0), dims)));
  return {restore(g, c.input_meta(0), dims, c.attrs().get_bool(1))};
}

// amax, amin, max(), min(): the gradient split evenly among the elements equal to the result.
std::vector<Tensor> extreme_backward(const GradContext& c) {
  static const OpSchema& sum = eager::op("sum");
  const std::vector<int64_t>& dims = c.attrs().get_ints(0);
  const bool keepdim = c.attrs().get_bool(1);
  const TensorMeta& in = c.input_meta(0);
  Tensor x = c.input(0);
  Tensor mask = binary("eq", x, restore(c.output(0), in, dims, keepdim));
  Tensor count = eager::reduce(sum, mask, dims, /*keepdim=*/true);
  Tensor g = restore(c.grad(), in, dims, keepdim);
  Tensor share = binary("div", g, eager::to_dtype(count, g.dtype()));
  return {choose(mask, share, scalar_tensor(Scalar(int64_t{0}), g.dtype()))};
}

// max_dim, min_dim: the gradient goes to the element whose index was returned.
std::vector<Tensor> extreme_dim_backward(const GradContext& c) {
  const TensorMeta& in = c.input_meta(0);
  const bool keepdim = c.attrs().get_bool(1);
  if (in.ndim() == 0) return {c.grad()};
  const int64_t dim = normalize_dim(c.attrs().get_int(0), in.ndim(), "backward");
  Tensor index = c.output(1), g = c.grad();
  if (!keepdim) {
    index = eager::unsqueeze(index, dim);
    g = eager::unsqueeze(g, dim);
  }
  Shape positions(in.ndim(), 1);
  positions[dim] = in.shape[dim];
  Tensor iota = eager::reshape(
      eager::arange(Scalar(int64_t{0}), Scalar(in.shape[dim]), Scalar(int64_t{1}), DType::kInt64), positions);
  Tensor hit = binary("eq", iota, index);
  return {choose(hit, g, scalar_tensor(Scalar(int64_t{0}), g.dtype()))};
}

}  // namespace

void register_reduce_rules() {
  define_rule("sum", {"SumBackward1", sum_backward});
  define_rule("mean", {"MeanBackward1", mean_backward});
  define_rule("amax", {"AmaxBackward0", extreme_backward, kIn0, kOut0});
  define_rule("amin", {"AminBackward0", extreme_backward, kIn0, kOut0});
  define_rule("max", {"MaxBackward1", extreme_backward, kIn0, kOut0});
  define_rule("min", {"MinBackward1", extreme_backward, kIn0, kOut0});
  define_rule("max_dim", {"MaxBackward0", extreme_dim_backward, 0, kOut1});
  define_rule("min_dim", {"MinBackward0", extreme_dim_backward, 0, kOut1});
  define_rule("argmax", {});
  define_rule("argmin", {});
}

}  // namespace rill::autograd
