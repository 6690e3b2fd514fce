// Gradients of convolution and pooling (ops/conv.cpp, ops/pool.cpp). The ops
// take batched, dense inputs and normalised arguments (eager/conv.cpp maps the
// user's forms onto them through views, which record their own gradients);
// each gradient is an op of its own.
#include "rill/autograd/rules.h"
#include "rill/eager/math.h"

namespace rill::autograd {
namespace {

using Ints = std::vector<int64_t>;
constexpr uint32_t kIn0 = 1, kIn1 = 2, kOut1 = 2;

// conv2d and conv_transpose2d: (input, weight[, bias]) -> y.
template <auto grad_input, auto grad_weight>
std::vector<Tensor> convolution_backward(const GradContext& c) {
  const Tensor& g = c.grad();
  const Ints& s = c.attr<Ints>("stride");
  const Ints& p = c.attr<Ints>("padding");
  const Ints& d = c.attr<Ints>("dilation");
  const int64_t groups = c.attr<int64_t>("groups");
  std::vector<Tensor> out(c.num_inputs());
  if (c.needs_grad(0)) out[0] = grad_input(g, c.input(1), c.input_meta(0).shape, s, p, d, groups);
  if (c.needs_grad(1)) out[1] = grad_weight(g, c.input(0), c.input_meta(1).shape, s, p, d, groups);
  if (out.size() == 3 && c.needs_grad(2)) out[2] = eager::conv_backward_bias(g, 2);
  return out;
}

std::vector<Tensor> max_pool2d_backward(const GradContext& c) {
  return {eager::max_pool2d_backward(c.grad(), c.output(1), c.input_meta(0).shape)};
}

std::vector<Tensor> max_pool2d_with_workspace_backward(const GradContext& c) {
  return {eager::max_pool2d_with_workspace_backward(
      c.grad(), c.output(1), c.input_meta(0).shape, c.attr<Ints>("kernel_size"), c.attr<Ints>("stride"),
      c.attr<Ints>("padding"), c.attr<Ints>("dilation"), c.attr<bool>("ceil_mode"))};
}

std::vector<Tensor> avg_pool2d_backward(const GradContext& c) {
  const int64_t divisor = c.attr<int64_t>("divisor_override");
  return {eager::avg_pool2d_backward(c.grad(), c.input_meta(0).shape, c.attr<Ints>("kernel_size"),
                                     c.attr<Ints>("stride"), c.attr<Ints>("padding"), c.attr<bool>("ceil_mode"),
                                     c.attr<bool>("count_include_pad"),
                                     divisor ? std::optional<int64_t>(divisor) : std::nullopt)};
}

std::vector<Tensor> adaptive_avg_pool2d_backward(const GradContext& c) {
  return {eager::adaptive_avg_pool2d_backward(c.grad(), c.input_meta(0).shape)};
}

// Note [Gradients of gradients] in rules.h: the backward ops are linear in each tensor input, so their
// gradients are the forward op and the other backward op (for create_graph).
struct ConvAttrs {
  const Ints &s, &p, &d;
  int64_t groups;
};
ConvAttrs conv_attrs(const GradContext& c) {
  return {c.attr<Ints>("stride"), c.attr<Ints>("padding"), c.attr<Ints>("dilation"), c.attr<int64_t>("groups")};
}

// conv2d_backward_input(g, w) = dx:  d/dg = conv2d(gg, w);  d/dw = conv2d_backward_weight(g, gg).
std::vector<Tensor> conv2d_backward_input_backward(const GradContext& c) {
  const ConvAttrs a = conv_attrs(c);
  const Tensor& gg = c.grad();
  std::vector<Tensor> out(2);
  if (c.needs_grad(0)) out[0] = eager::conv2d(gg, c.input(1), std::nullopt, a.s, a.p, a.d, a.groups);
  if (c.needs_grad(1))
    out[1] = eager::conv2d_backward_weight(c.input(0), gg, c.input_meta(1).shape, a.s, a.p, a.d, a.groups);
  return out;
}

// conv2d_backward_weight(g, x) = dw:  d/dg = conv2d(x, gg);  d/dx = conv2d_backward_input(g, gg).
std::vector<Tensor> conv2d_backward_weight_backward(const GradContext& c) {
  const ConvAttrs a = conv_attrs(c);
  const Tensor& gg = c.grad();
  std::vector<Tensor> out(2);
  if (c.needs_grad(0)) out[0] = eager::conv2d(c.input(1), gg, std::nullopt, a.s, a.p, a.d, a.groups);
  if (c.needs_grad(1))
    out[1] = eager::conv2d_backward_input(c.input(0), gg, c.input_meta(1).shape, a.s, a.p, a.d, a.groups);
  return out;
}

// gg (..., H, W) read at positions (..., OH, OW), each flat within its H x W plane (PyTorch's pooling indices).
Tensor gather_in_planes(const Tensor& gg, const Tensor& positions) {
  Shape planes(gg.shape().begin(), gg.shape().end() - 2), picks = planes;
  planes.push_back(gg.shape()[gg.ndim() - 2] * gg.shape()[gg.ndim() - 1]);
  picks.push_back(positions.shape()[positions.ndim() - 2] * positions.shape()[positions.ndim() - 1]);
  Tensor got = eager::gather(eager::reshape(gg, planes), static_cast<int64_t>(planes.size()) - 1,
                             eager::reshape(positions, picks));
  return eager::reshape(got, positions.shape());
}

// max_pool2d_backward(g, indices) scatters g to the maxima: its gradient gathers gg there.
std::vector<Tensor> max_pool2d_backward_backward(const GradContext& c) {
  return {gather_in_planes(c.grad(), c.input(1)), Tensor()};
}

// The workspace holds each maximum's offset in its window (kh * kernel_w + kw, in both oneDNN's and the loops'
// format, kernels/cpu/pool.cpp): the input position is the window's origin plus the offset, dilated.
std::vector<Tensor> max_pool2d_workspace_backward_backward(const GradContext& c) {
  using namespace eager;
  const Tensor& gg = c.grad();
  const Tensor ws = to_dtype(c.input(1), DType::kInt64);
  auto pair = [](const Ints& v) { return std::pair<int64_t, int64_t>{v[0], v.size() > 1 ? v[1] : v[0]}; };
  const int64_t kw = pair(c.attr<Ints>("kernel_size")).second;
  const auto [sh, sw] = pair(c.attr<Ints>("stride"));
  const auto [ph, pw] = pair(c.attr<Ints>("padding"));
  const auto [dh, dw] = pair(c.attr<Ints>("dilation"));
  const int64_t oh = ws.shape()[ws.ndim() - 2], ow = ws.shape()[ws.ndim() - 1];
  const int64_t width = gg.shape()[gg.ndim() - 1];
  auto origins = [](int64_t n, int64_t stride, int64_t pad, const Shape& shape) {
    Tensor r = arange(Scalar(int64_t{0}), Scalar(n * stride), Scalar(stride), DType::kInt64);
    return reshape(sub(r, Scalar(pad)), shape);
  };
  Tensor row = floor_divide(ws, full({}, Scalar(kw), DType::kInt64)), col = sub(ws, mul(row, Scalar(kw)));
  Tensor h = add(origins(oh, sh, ph, {oh, 1}), mul(row, Scalar(dh)));
  Tensor w = add(origins(ow, sw, pw, {1, ow}), mul(col, Scalar(dw)));
  return {gather_in_planes(gg, add(mul(h, Scalar(width)), w)), Tensor()};
}

std::vector<Tensor> avg_pool2d_backward_backward(const GradContext& c) {
  const int64_t divisor = c.attr<int64_t>("divisor_override");
  return {eager::avg_pool2d(c.grad(), c.attr<Ints>("kernel_size"), c.attr<Ints>("stride"), c.attr<Ints>("padding"),
                            c.attr<bool>("ceil_mode"), c.attr<bool>("count_include_pad"),
                            divisor ? std::optional<int64_t>(divisor) : std::nullopt)};
}

std::vector<Tensor> adaptive_avg_pool2d_backward_backward(const GradContext& c) {
  const Shape& out = c.input_meta(0).shape;
  return {eager::adaptive_avg_pool2d(c.grad(), {out[out.size() - 2], out[out.size() - 1]})};
}

}  // namespace

void register_conv_rules() {
  define_rule("conv2d", {"ConvolutionBackward0",
                         convolution_backward<eager::conv2d_backward_input, eager::conv2d_backward_weight>,
                         kIn0 | kIn1});
  define_rule("conv_transpose2d",
              {"ConvolutionBackward0",
               convolution_backward<eager::conv_transpose2d_backward_input, eager::conv_transpose2d_backward_weight>,
               kIn0 | kIn1});
  define_rule("max_pool2d", {"MaxPool2DWithIndicesBackward0", max_pool2d_backward, 0, kOut1});
  define_rule("max_pool2d_with_workspace", {"MaxPool2DBackward0", max_pool2d_with_workspace_backward, 0, kOut1});
  define_rule("avg_pool2d", {"AvgPool2DBackward0", avg_pool2d_backward});
  define_rule("adaptive_avg_pool2d", {"AdaptiveAvgPool2DBackward0", adaptive_avg_pool2d_backward});
  define_rule("conv2d_backward_input", {"ConvolutionBackwardBackward0", conv2d_backward_input_backward, kIn0 | kIn1});
  define_rule("conv2d_backward_weight",
              {"ConvolutionBackwardBackward0", conv2d_backward_weight_backward, kIn0 | kIn1});
  define_rule("max_pool2d_backward", {"MaxPool2DWithIndicesBackwardBackward0", max_pool2d_backward_backward, kIn1});
  define_rule("max_pool2d_with_workspace_backward",
              {"MaxPool2DBackwardBackward0", max_pool2d_workspace_backward_backward, kIn1});
  define_rule("avg_pool2d_backward", {"AvgPool2DBackwardBackward0", avg_pool2d_backward_backward});
  define_rule("adaptive_avg_pool2d_backward", {"AdaptiveAvgPool2DBackwardBackward0",
                                               adaptive_avg_pool2d_backward_backward});
}

}  // namespace rill::autograd
