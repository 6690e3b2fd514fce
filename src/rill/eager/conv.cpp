// Convolution and pooling in the functional API (ops/conv.cpp, ops/pool.cpp).
// This file normalises PyTorch-style arguments (an int or 2 values; padding
// 'same'), makes inputs dense, maps unbatched (C, H, W) tensors and 1-D
// convolutions onto the 4-D ops with views, and spells out the gradients that
// are compositions: the bias gradient is a sum, and a transposed convolution's
// gradients are conv2d and conv2d_backward_weight with input and grad_output
// swapped.
#include <string>

#include "rill/eager/functional.h"

namespace rill::eager {
namespace {

// Attrs built by appending values one by one: an initializer list of mixed
// AttrValues trips GCC 12's -Wmaybe-uninitialized (a false positive).
template <typename... Args>
AttrsSym attrs_of(Args&&... args) {
  std::vector<AttrValue> v;
  v.reserve(sizeof...(args));
  (v.emplace_back(std::forward<Args>(args)), ...);
  return make_attrs(std::move(v));
}

// An int-or-pair argument as 2 values; RuntimeError naming op and arg otherwise.
std::vector<int64_t> pair_arg(const std::vector<int64_t>& v, const char* op, const char* arg) {
  RILL_CHECK(v.size() == 1 || v.size() == 2, Runtime, "[", op, "] expected ", arg,
             " to be a single integer value or a list of 2 values to match the convolution dimensions, but got ",
             arg, "=", shape_str(v));
  return v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : v;
}

// conv2d padding as (top, bottom, left, right) from 1, 2 or 4 values.
std::vector<int64_t> conv_padding4(const std::vector<int64_t>& p, const char* op) {
  if (p.size() == 4) return p;
  RILL_CHECK(p.size() == 1 || p.size() == 2, Runtime, "[", op,
             "] expected padding to be a single integer value, a list of 2 values (pH, pW) or 4 values (top, "
             "bottom, left, right), but got padding=",
             shape_str(p));
  const int64_t ph = p[0], pw = p.size() == 2 ? p[1] : p[0];
  return {ph, ph, pw, pw};
}

// The tensors of a call: dense input and weight, and the bias when given.
std::vector<Tensor> dense_inputs(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                                 const char* op) {
  RILL_CHECK(input.defined() && weight.defined(), Value, "[", op, "] got an undefined tensor");
  std::vector<Tensor> in = {contiguous(input), contiguous(weight)};
  if (bias && bias->defined()) in.push_back(contiguous(*bias));
  return in;
}

// True when x (the input of a 2-D op) is unbatched (C, H, W); RuntimeError unless 3-D or 4-D.
bool unbatched_2d(const Tensor& x, const char* op, const char* what = "input") {
  RILL_CHECK(x.ndim() == 3 || x.ndim() == 4, Runtime, "[", op, "] Expected 3D (unbatched) or 4D (batched) ", what,
             " to ", op, ", but got ", what, " of size: ", shape_str(x.shape()));
  return x.ndim() == 3;
}

// input_size of a backward op as 4 values; `unbatched` tells whether it had 3.
Shape batched_size(const Shape& size, const char* op, bool& unbatched) {
  RILL_CHECK(size.size() == 3 || size.size() == 4, Runtime, "[", op,
             "] expected an input size of 3 (unbatched) or 4 values, got ", shape_str(size));
  unbatched = size.size() == 3;
  Shape s = size;
  if (unbatched) s.insert(s.begin(), 1);
  return s;
}

Tensor batch(const Tensor& x, bool unbatched) { return unbatched ? unsqueeze(x, 0) : x; }
Tensor unbatch(const Tensor& x, bool unbatched) { return unbatched ? squeeze(x, std::vector<int64_t>{0}) : x; }

AttrsSym conv_attrs(const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                    const std::vector<int64_t>& dilation, int64_t groups, const char* op) {
  return attrs_of(pair_arg(stride, op, "stride"), conv_padding4(padding, op), pair_arg(dilation, op, "dilation"),
                     groups);
}

// conv1d's 1-value arguments as the 2-D op's (height 1).
std::vector<int64_t> one_arg(const std::vector<int64_t>& v, const char* op, const char* arg, int64_t h) {
  RILL_CHECK(v.size() == 1, Runtime, "[", op, "] expected ", arg,
             " to be a single integer value or a list of 1 value to match the convolution dimensions, but got ",
             arg, "=", shape_str(v));
  return {h, v[0]};
}
std::vector<int64_t> conv1d_padding(const std::vector<int64_t>& p, const char* op) {
  RILL_CHECK(p.size() == 1 || p.size() == 2, Runtime, "[", op,
             "] expected padding to be a single integer value or (left, right), but got padding=", shape_str(p));
  return {0, 0, p[0], p.size() == 2 ? p[1] : p[0]};
}

const char* kPoolSizeMsg = " must either be a single int, or a tuple of two ints";

std::vector<int64_t> pool_pair(const std::vector<int64_t>& v, const char* op, const char* arg) {
  RILL_CHECK(v.size() == 1 || v.size() == 2, Runtime, "[", op, "] ", arg, kPoolSizeMsg);
  return v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : v;
}

// Pool stride: empty means the kernel size (PyTorch's stride=None).
std::vector<int64_t> pool_stride(const std::vector<int64_t>& stride, const std::vector<int64_t>& kernel,
                                 const char* op) {
  return stride.empty() ? kernel : pool_pair(stride, op, "stride");
}

AttrsSym avg_attrs(const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                   const std::vector<int64_t>& padding, bool ceil_mode, bool count_include_pad,
                   std::optional<int64_t> divisor_override, const char* op) {
  RILL_CHECK(!divisor_override || *divisor_override != 0, Runtime, "[", op,
             "] divisor must be not zero; pass divisor_override=None to divide by the window size");
  const auto k = pool_pair(kernel_size, op, "kernel_size");
  return attrs_of(k, pool_stride(stride, k, op), pool_pair(padding, op, "padding"), ceil_mode, count_include_pad,
                     divisor_override.value_or(0));
}

}  // namespace

std::vector<int64_t> conv_padding_same(const Shape& kernel, const std::vector<int64_t>& dilation,
                                       const std::vector<int64_t>& stride, const char* op) {
  for (int64_t s : stride)
    RILL_CHECK(s == 1, Runtime, "[", op, "] padding='same' is not supported for strided convolutions; pass "
               "explicit padding instead");
  RILL_CHECK(dilation.size() == 1 || dilation.size() == kernel.size(), Runtime, "[", op, "] expected dilation of 1 "
             "or ", kernel.size(), " values, got ", shape_str(dilation));
  std::vector<int64_t> pad;
  for (size_t d = 0; d < kernel.size(); ++d) {
    const int64_t total = (dilation.size() == 1 ? dilation[0] : dilation[d]) * (kernel[d] - 1);
    pad.push_back(total / 2);          // before
    pad.push_back(total - total / 2);  // after: one more when the total is odd, as in PyTorch
  }
  return pad;
}

// --- convolution ---------------------------------------------------------------------------

Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
              const std::vector<int64_t>& dilation, int64_t groups) {
  static const OpSchema& conv = op("conv2d");
  std::vector<Tensor> in = dense_inputs(input, weight, bias, "conv2d");
  const bool unbatched = unbatched_2d(input, "conv2d");
  in[0] = batch(in[0], unbatched);
  return unbatch(call1(conv, in, {}, conv_attrs(stride, padding, dilation, groups, "conv2d")), unbatched);
}

Tensor conv2d_backward_input(const Tensor& grad_output, const Tensor& weight, const Shape& input_size,
                             const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                             const std::vector<int64_t>& dilation, int64_t groups) {
  static const OpSchema& o = op("conv2d_backward_input");
  constexpr const char* name = "conv2d_backward_input";
  bool unbatched = false;
  const Shape size = batched_size(input_size, name, unbatched);
  std::vector<Tensor> in = dense_inputs(grad_output, weight, std::nullopt, name);
  in[0] = batch(in[0], unbatched);
  const AttrsSym a = conv_attrs(stride, padding, dilation, groups, name);
  std::vector<AttrValue> values = {size};
  values.insert(values.end(), a->values.begin(), a->values.end());
  return unbatch(call1(o, in, {}, make_attrs(std::move(values))), unbatched);
}

Tensor conv2d_backward_weight(const Tensor& grad_output, const Tensor& input, const Shape& weight_size,
                              const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                              const std::vector<int64_t>& dilation, int64_t groups) {
  static const OpSchema& o = op("conv2d_backward_weight");
  constexpr const char* name = "conv2d_backward_weight";
  std::vector<Tensor> in = dense_inputs(grad_output, input, std::nullopt, name);
  const bool unbatched = unbatched_2d(input, name);
  in[0] = batch(in[0], unbatched);
  in[1] = batch(in[1], unbatched);
  const AttrsSym a = conv_attrs(stride, padding, dilation, groups, name);
  std::vector<AttrValue> values = {weight_size};
  values.insert(values.end(), a->values.begin(), a->values.end());
  return call1(o, in, {}, make_attrs(std::move(values)));
}

Tensor conv_backward_bias(const Tensor& grad_output, int64_t spatial_dims) {
  static const OpSchema& sum = op("sum");
  std::vector<int64_t> dims;
  const int64_t nd = grad_output.ndim();
  RILL_CHECK(nd == spatial_dims + 1 || nd == spatial_dims + 2, Runtime, "[conv_backward_bias] expected grad_output "
             "of ", spatial_dims + 1, " or ", spatial_dims + 2, " dims, got size ", shape_str(grad_output.shape()));
  for (int64_t d = 0; d < nd; ++d)
    if (d != nd - spatial_dims - 1) dims.push_back(d);  // every dim but the channels
  return reduce(sum, grad_output, dims, false);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
              const std::vector<int64_t>& dilation, int64_t groups) {
  constexpr const char* name = "conv1d";
  RILL_CHECK(input.defined() && weight.defined(), Value, "[conv1d] got an undefined tensor");
  RILL_CHECK(input.ndim() == 2 || input.ndim() == 3, Runtime, "[conv1d] Expected 2D (unbatched) or 3D (batched) "
             "input to conv1d, but got input of size: ", shape_str(input.shape()));
  RILL_CHECK(weight.ndim() == 3, Runtime, "[conv1d] expected a 3-D weight (out_channels, in_channels / groups, "
             "kW), got weight of size ", shape_str(weight.shape()));
  const int64_t h = input.ndim() - 1;  // the added height dim
  Tensor y = conv2d(unsqueeze(input, h), unsqueeze(weight, 2), bias, one_arg(stride, name, "stride", 1),
                    conv1d_padding(padding, name), one_arg(dilation, name, "dilation", 1), groups);
  return squeeze(y, std::vector<int64_t>{h});
}

Tensor conv1d_backward_input(const Tensor& grad_output, const Tensor& weight, const Shape& input_size,
                             const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                             const std::vector<int64_t>& dilation, int64_t groups) {
  constexpr const char* name = "conv1d_backward_input";
  RILL_CHECK(input_size.size() == 2 || input_size.size() == 3, Runtime, "[", name,
             "] expected an input size of 2 (unbatched) or 3 values, got ", shape_str(input_size));
  const int64_t h = static_cast<int64_t>(input_size.size()) - 1;
  Shape size = input_size;
  size.insert(size.begin() + h, 1);
  Tensor gx = conv2d_backward_input(unsqueeze(grad_output, h), unsqueeze(weight, 2), size,
                                    one_arg(stride, name, "stride", 1), conv1d_padding(padding, name),
                                    one_arg(dilation, name, "dilation", 1), groups);
  return squeeze(gx, std::vector<int64_t>{h});
}

Tensor conv1d_backward_weight(const Tensor& grad_output, const Tensor& input, const Shape& weight_size,
                              const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                              const std::vector<int64_t>& dilation, int64_t groups) {
  constexpr const char* name = "conv1d_backward_weight";
  RILL_CHECK(weight_size.size() == 3, Runtime, "[", name, "] expected a weight size of 3 values, got ",
             shape_str(weight_size));
  const int64_t h = input.ndim() - 1;
  Tensor gw = conv2d_backward_weight(unsqueeze(grad_output, h), unsqueeze(input, h),
                                     {weight_size[0], weight_size[1], 1, weight_size[2]},
                                     one_arg(stride, name, "stride", 1), conv1d_padding(padding, name),
                                     one_arg(dilation, name, "dilation", 1), groups);
  return squeeze(gw, std::vector<int64_t>{2});
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                        const std::vector<int64_t>& output_padding, int64_t groups,
                        const std::vector<int64_t>& dilation) {
  static const OpSchema& o = op("conv_transpose2d");
  constexpr const char* name = "conv_transpose2d";
  std::vector<Tensor> in = dense_inputs(input, weight, bias, name);
  const bool unbatched = unbatched_2d(input, name);
  in[0] = batch(in[0], unbatched);
  AttrsSym a = attrs_of(pair_arg(stride, name, "stride"), conv_padding4(padding, name),
                           pair_arg(output_padding, name, "output_padding"), pair_arg(dilation, name, "dilation"),
                           groups);
  return unbatch(call1(o, in, {}, a), unbatched);
}

Tensor conv_transpose2d_backward_input(const Tensor& grad_output, const Tensor& weight, const Shape& input_size,
                                       const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                                       const std::vector<int64_t>& dilation, int64_t groups) {
  constexpr const char* name = "conv_transpose2d_backward_input";
  Tensor gx = conv2d(grad_output, weight, std::nullopt, stride, padding, dilation, groups);
  RILL_CHECK(input_size.size() == static_cast<size_t>(gx.ndim()), Runtime, "[", name, "] expected an input size of ",
             gx.ndim(), " values, got ", shape_str(input_size));
  // With output_padding >= stride (allowed when < dilation) the transposed output has
  // rows and columns no input reaches; the convolution then yields extra positions past
  // the input's size, which are not gradients of anything: cut them off.
  for (int64_t d = gx.ndim() - 2; d < gx.ndim(); ++d) {
    const int64_t want = input_size[static_cast<size_t>(d)];
    RILL_CHECK(want <= gx.shape()[d], Runtime, "[", name, "] input_size ", shape_str(input_size),
               " does not match grad_output of size ", shape_str(grad_output.shape()));
    if (want < gx.shape()[d]) gx = narrow(gx, d, 0, want);
  }
  return contiguous(gx);
}

Tensor conv_transpose2d_backward_weight(const Tensor& grad_output, const Tensor& input, const Shape& weight_size,
                                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                                        const std::vector<int64_t>& dilation, int64_t groups) {
  // The transposed op's input plays grad_output of the convolution it transposes, and its grad_output the input.
  constexpr const char* name = "conv_transpose2d_backward_weight";
  RILL_CHECK(grad_output.defined() && input.defined(), Value, "[", name, "] got an undefined tensor");
  RILL_CHECK(weight_size.size() == 4 && input.ndim() >= 2 && grad_output.ndim() == input.ndim(), Runtime, "[", name,
             "] expected a weight size of 4 values and input and grad_output of the same rank, got weight size ",
             shape_str(weight_size), ", input ", shape_str(input.shape()), " and grad_output ",
             shape_str(grad_output.shape()));
  const auto s = pair_arg(stride, name, "stride"), d = pair_arg(dilation, name, "dilation");
  std::vector<int64_t> pad = conv_padding4(padding, name);
  // With output_padding >= stride (allowed when < dilation), grad_output has trailing rows
  // or columns the convolution view would turn into extra output positions. Take them off
  // the bottom/right padding, or off grad_output where that padding is too small: those
  // rows meet no input, so the weight gradient is unchanged.
  Tensor gy = grad_output;
  for (int k = 0; k < 2; ++k) {
    const int64_t dim = gy.ndim() - 2 + k;
    const int64_t in = input.shape()[dim], out = gy.shape()[dim];
    const int64_t natural = (in - 1) * s[k] - pad[2 * k] - pad[2 * k + 1] + d[k] * (weight_size[2 + k] - 1) + 1;
    const int64_t extra = out - natural;  // output_padding
    if (extra <= 0 || (out + pad[2 * k] + pad[2 * k + 1] - d[k] * (weight_size[2 + k] - 1) - 1) / s[k] + 1 == in)
      continue;
    pad[2 * k + 1] -= extra;
    if (pad[2 * k + 1] < 0) {
      gy = narrow(gy, dim, 0, out + pad[2 * k + 1]);
      pad[2 * k + 1] = 0;
    }
  }
  return conv2d_backward_weight(input, gy, weight_size, s, pad, d, groups);
}

// --- pooling -------------------------------------------------------------------------------

namespace {

// max_pool2d's attrs, from `first_attrs` on (input_size before them in the backward ops).
std::vector<AttrValue> max_attrs(const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                                 const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
                                 bool ceil_mode, const char* op) {
  const auto k = pool_pair(kernel_size, op, "kernel_size");
  return attrs_of(k, pool_stride(stride, k, op), pool_pair(padding, op, "padding"), pool_pair(dilation, op, "dilation"),
                  ceil_mode)
      ->values;
}

// A max_pool2d forward op on input (3-D or 4-D): its two outputs.
std::pair<Tensor, Tensor> max_pool2d_call(const OpSchema& o, const Tensor& input,
                                          const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                                          const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
                                          bool ceil_mode) {
  constexpr const char* name = "max_pool2d";  // what the user called, whichever op runs
  RILL_CHECK(input.defined(), Value, "[", name, "] got an undefined tensor");
  const bool unbatched = unbatched_2d(input, name);
  AttrsSym a = make_attrs(max_attrs(kernel_size, stride, padding, dilation, ceil_mode, name));
  Tensor x = batch(contiguous(input), unbatched);
  std::vector<Tensor> out = call(o, {&x, 1}, {}, a);
  return {unbatch(out[0], unbatched), unbatch(out[1], unbatched)};
}

}  // namespace

Tensor max_pool2d(const Tensor& input, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                  const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation, bool ceil_mode) {
  return max_pool2d_with_workspace(input, kernel_size, stride, padding, dilation, ceil_mode).first;
}

std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const std::vector<int64_t>& kernel_size,
                                     const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                                     const std::vector<int64_t>& dilation, bool ceil_mode) {
  static const OpSchema& o = op("max_pool2d");
  return max_pool2d_call(o, input, kernel_size, stride, padding, dilation, ceil_mode);
}

std::pair<Tensor, Tensor> max_pool2d_with_workspace(const Tensor& input, const std::vector<int64_t>& kernel_size,
                                                    const std::vector<int64_t>& stride,
                                                    const std::vector<int64_t>& padding,
                                                    const std::vector<int64_t>& dilation, bool ceil_mode) {
  static const OpSchema& o = op("max_pool2d_with_workspace");
  return max_pool2d_call(o, input, kernel_size, stride, padding, dilation, ceil_mode);
}

Tensor max_pool2d_with_workspace_backward(const Tensor& grad_output, const Tensor& workspace, const Shape& input_size,
                                          const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                                          const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
                                          bool ceil_mode) {
  static const OpSchema& o = op("max_pool2d_with_workspace_backward");
  constexpr const char* name = "max_pool2d_with_workspace_backward";
  bool unbatched = false;
  const Shape size = batched_size(input_size, name, unbatched);
  RILL_CHECK(grad_output.defined() && workspace.defined(), Value, "[", name, "] got an undefined tensor");
  std::vector<AttrValue> values = {size};
  for (AttrValue& v : max_attrs(kernel_size, stride, padding, dilation, ceil_mode, name))
    values.push_back(std::move(v));
  Tensor in[2] = {batch(contiguous(grad_output), unbatched), batch(contiguous(workspace), unbatched)};
  return unbatch(call1(o, in, {}, make_attrs(std::move(values))), unbatched);
}

Tensor max_pool2d_backward(const Tensor& grad_output, const Tensor& indices, const Shape& input_size) {
  static const OpSchema& o = op("max_pool2d_backward");
  bool unbatched = false;
  const Shape size = batched_size(input_size, "max_pool2d_backward", unbatched);
  RILL_CHECK(grad_output.defined() && indices.defined(), Value, "[max_pool2d_backward] got an undefined tensor");
  Tensor in[2] = {batch(contiguous(grad_output), unbatched), batch(contiguous(indices), unbatched)};
  return unbatch(call1(o, in, {}, make_attrs({size})), unbatched);
}

Tensor avg_pool2d(const Tensor& input, const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                  const std::vector<int64_t>& padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  static const OpSchema& o = op("avg_pool2d");
  constexpr const char* name = "avg_pool2d";
  RILL_CHECK(input.defined(), Value, "[avg_pool2d] got an undefined tensor");
  const bool unbatched = unbatched_2d(input, name);
  AttrsSym a = avg_attrs(kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, name);
  Tensor x = batch(contiguous(input), unbatched);
  return unbatch(call1(o, {&x, 1}, {}, a), unbatched);
}

Tensor avg_pool2d_backward(const Tensor& grad_output, const Shape& input_size,
                           const std::vector<int64_t>& kernel_size, const std::vector<int64_t>& stride,
                           const std::vector<int64_t>& padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override) {
  static const OpSchema& o = op("avg_pool2d_backward");
  constexpr const char* name = "avg_pool2d_backward";
  bool unbatched = false;
  const Shape size = batched_size(input_size, name, unbatched);
  RILL_CHECK(grad_output.defined(), Value, "[avg_pool2d_backward] got an undefined tensor");
  AttrsSym a = avg_attrs(kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, name);
  std::vector<AttrValue> values = {size};
  values.insert(values.end(), a->values.begin(), a->values.end());
  Tensor gy = batch(contiguous(grad_output), unbatched);
  return unbatch(call1(o, {&gy, 1}, {}, make_attrs(std::move(values))), unbatched);
}

Tensor adaptive_avg_pool2d(const Tensor& input, const std::vector<int64_t>& output_size) {
  static const OpSchema& o = op("adaptive_avg_pool2d");
  constexpr const char* name = "adaptive_avg_pool2d";
  RILL_CHECK(input.defined(), Value, "[adaptive_avg_pool2d] got an undefined tensor");
  const bool unbatched = unbatched_2d(input, name);
  Tensor x = batch(contiguous(input), unbatched);
  return unbatch(call1(o, {&x, 1}, {}, attrs_of(pool_pair(output_size, name, "output_size"))), unbatched);
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad_output, const Shape& input_size) {
  static const OpSchema& o = op("adaptive_avg_pool2d_backward");
  bool unbatched = false;
  const Shape size = batched_size(input_size, "adaptive_avg_pool2d_backward", unbatched);
  RILL_CHECK(grad_output.defined(), Value, "[adaptive_avg_pool2d_backward] got an undefined tensor");
  Tensor gy = batch(contiguous(grad_output), unbatched);
  return unbatch(call1(o, {&gy, 1}, {}, make_attrs({size})), unbatched);
}

}  // namespace rill::eager
