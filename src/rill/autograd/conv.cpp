// Gradients of convolution and pooling (ops/conv.cpp, ops/pool.cpp). The ops
// take batched, dense inputs and normalised arguments (eager/conv.cpp maps the
// user's forms onto them through views, which record their own gradients);
// each gradient is an op of its own.
#include "rill/autograd/rules.h"

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
  for (const char* n : {"conv2d_backward_input", "conv2d_backward_weight", "max_pool2d_backward",
                        "max_pool2d_with_workspace_backward", "avg_pool2d_backward", "adaptive_avg_pool2d_backward"})
    define_rule(n, {});
}

}  // namespace rill::autograd
