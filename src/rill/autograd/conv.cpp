// Gradients of convolution and pooling (eager/conv.cpp). Their forwards are
// compositions (argument normalisation, unbatched inputs as views, conv1d as a
// conv2d of height 1) and their gradients are ops of their own, so each function
// records one CompositeNode over its user-facing arguments.
#include "rill/autograd/composite.h"
#include "rill/autograd/functional.h"

namespace rill::autograd {
namespace {

using Ints = std::vector<int64_t>;

// The convolution gradients, for conv1d/conv2d (spatial = 1 or 2) and conv_transpose2d.
enum class ConvKind { kConv1d, kConv2d, kTranspose2d };

Tensor conv_grad_input(ConvKind kind, const Tensor& gy, const Tensor& w, const Shape& size, const Ints& s,
                       const Ints& p, const Ints& d, int64_t g) {
  switch (kind) {
    case ConvKind::kConv1d: return eager::conv1d_backward_input(gy, w, size, s, p, d, g);
    case ConvKind::kConv2d: return eager::conv2d_backward_input(gy, w, size, s, p, d, g);
    case ConvKind::kTranspose2d: return eager::conv_transpose2d_backward_input(gy, w, size, s, p, d, g);
  }
  return {};
}

Tensor conv_grad_weight(ConvKind kind, const Tensor& gy, const Tensor& x, const Shape& size, const Ints& s,
                        const Ints& p, const Ints& d, int64_t g) {
  switch (kind) {
    case ConvKind::kConv1d: return eager::conv1d_backward_weight(gy, x, size, s, p, d, g);
    case ConvKind::kConv2d: return eager::conv2d_backward_weight(gy, x, size, s, p, d, g);
    case ConvKind::kTranspose2d: return eager::conv_transpose2d_backward_weight(gy, x, size, s, p, d, g);
  }
  return {};
}

void record_conv(ConvKind kind, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                 const Tensor& y, Ints s, Ints p, Ints d, int64_t g) {
  Tensor b = bias ? *bias : Tensor();
  const Tensor inputs[] = {input, weight, b};
  const Tensor saved[] = {input, weight};
  const int64_t spatial = kind == ConvKind::kConv1d ? 1 : 2;
  record_composite(
      "ConvolutionBackward0", inputs, {&y, 1}, saved,
      [kind, s = std::move(s), p = std::move(p), d = std::move(d), g, spatial](
          const std::vector<Tensor>& sv, const std::vector<Tensor>& grads, const std::vector<bool>& needs) {
        std::vector<Tensor> out(3);
        const Tensor& gy = grads[0];
        if (!gy.defined()) return out;
        if (needs[0]) out[0] = conv_grad_input(kind, gy, sv[1], sv[0].shape(), s, p, d, g);
        if (needs[1]) out[1] = conv_grad_weight(kind, gy, sv[0], sv[1].shape(), s, p, d, g);
        if (needs[2]) out[2] = eager::conv_backward_bias(gy, spatial);
        return out;
      });
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, const Ints& stride,
              const Ints& padding, const Ints& dilation, int64_t groups) {
  Tensor y = eager::conv2d(input, weight, bias, stride, padding, dilation, groups);
  record_conv(ConvKind::kConv2d, input, weight, bias, y, stride, padding, dilation, groups);
  return y;
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, const Ints& stride,
              const Ints& padding, const Ints& dilation, int64_t groups) {
  Tensor y = eager::conv1d(input, weight, bias, stride, padding, dilation, groups);
  record_conv(ConvKind::kConv1d, input, weight, bias, y, stride, padding, dilation, groups);
  return y;
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        const Ints& stride, const Ints& padding, const Ints& output_padding, int64_t groups,
                        const Ints& dilation) {
  Tensor y = eager::conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation);
  record_conv(ConvKind::kTranspose2d, input, weight, bias, y, stride, padding, dilation, groups);
  return y;
}

Tensor max_pool2d(const Tensor& input, const Ints& kernel_size, const Ints& stride, const Ints& padding,
                  const Ints& dilation, bool ceil_mode) {
  auto [values, workspace] = eager::max_pool2d_with_workspace(input, kernel_size, stride, padding, dilation, ceil_mode);
  const Shape size = input.shape();
  record_composite(
      "MaxPool2DBackward0", {&input, 1}, {&values, 1}, {&workspace, 1},
      [=](const std::vector<Tensor>& sv, const std::vector<Tensor>& grads, const std::vector<bool>&) {
        if (!grads[0].defined()) return std::vector<Tensor>(1);
        return std::vector<Tensor>{eager::max_pool2d_with_workspace_backward(grads[0], sv[0], size, kernel_size, stride,
                                                                             padding, dilation, ceil_mode)};
      });
  return values;
}

std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const Ints& kernel_size, const Ints& stride,
                                                  const Ints& padding, const Ints& dilation, bool ceil_mode) {
  auto [values, indices] = eager::max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode);
  const Tensor outputs[] = {values, indices};
  const Tensor saved[] = {indices};
  const Shape size = input.shape();
  record_composite(
      "MaxPool2DWithIndicesBackward0", {&input, 1}, outputs, saved,
      [size](const std::vector<Tensor>& sv, const std::vector<Tensor>& grads, const std::vector<bool>&) {
        if (!grads[0].defined()) return std::vector<Tensor>(1);
        return std::vector<Tensor>{eager::max_pool2d_backward(grads[0], sv[0], size)};
      },
      {true, false});
  return {values, indices};
}

Tensor avg_pool2d(const Tensor& input, const Ints& kernel_size, const Ints& stride, const Ints& padding,
                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  Tensor y = eager::avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  const Shape size = input.shape();
  record_composite(
      "AvgPool2DBackward0", {&input, 1}, {&y, 1}, {},
      [=](const std::vector<Tensor>&, const std::vector<Tensor>& grads, const std::vector<bool>&) {
        if (!grads[0].defined()) return std::vector<Tensor>(1);
        return std::vector<Tensor>{eager::avg_pool2d_backward(grads[0], size, kernel_size, stride, padding,
                                                              ceil_mode, count_include_pad, divisor_override)};
      });
  return y;
}

Tensor adaptive_avg_pool2d(const Tensor& input, const Ints& output_size) {
  Tensor y = eager::adaptive_avg_pool2d(input, output_size);
  const Shape size = input.shape();
  record_composite(
      "AdaptiveAvgPool2DBackward0", {&input, 1}, {&y, 1}, {},
      [size](const std::vector<Tensor>&, const std::vector<Tensor>& grads, const std::vector<bool>&) {
        if (!grads[0].defined()) return std::vector<Tensor>(1);
        return std::vector<Tensor>{eager::adaptive_avg_pool2d_backward(grads[0], size)};
      });
  return y;
}

}  // namespace rill::autograd
