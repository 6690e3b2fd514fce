// The convolution family, on 4-D NCHW tensors (eager/conv.cpp maps unbatched
// and 1-D convolutions onto these with views):
//   conv2d(input, weight[, bias])              -> output
//   _conv2d_activation(input, weight[, bias])  -> activation(output)   (attrs activation, approximate: graph
//                                                 mode's fuse_activation pass, ops/fused_activation.h)
//   conv2d_backward_input(grad_output, weight) -> grad_input   (attr input_size)
//   conv2d_backward_weight(grad_output, input) -> grad_weight  (attr weight_size)
//   _conv2d_backward_weight_bias(grad_output, input) -> (grad_weight, grad_bias)   (graph mode's
//                                                 fuse_bias_gradient pass: the bias's gradient in the same task)
//   conv_transpose2d(input, weight[, bias])    -> output
// The gradient of the bias is a sum of grad_output over (N, H, W). A transposed
// convolution is the backward-input pass of a convolution, so its gradients are
// conv2d (for its input) and conv2d_backward_weight with the roles of input and
// grad_output swapped (for its weight).
//
// Attr layout (geometry attrs shared by every op of the family):
//   conv2d:                 stride[2], padding[4], dilation[2], groups
//   conv2d_backward_input:  input_size[4], stride[2], padding[4], dilation[2], groups
//   conv2d_backward_weight: weight_size[4], stride[2], padding[4], dilation[2], groups
//   conv_transpose2d:       stride[2], padding[4], output_padding[2], dilation[2], groups
// padding is (top, bottom, left, right): padding='same' with an even effective
// kernel pads one more row/column at the bottom/right, as PyTorch does.
// Inputs must be dense (eager makes them contiguous); outputs are dense. Only
// float32 and float64 are supported.
#include "rill/ops/fused_activation.h"
#include "rill/ops/op_schema.h"

namespace rill {
namespace {

// Stride, padding, dilation and groups, read from attrs starting at `first`.
struct ConvGeometry {
  int64_t stride[2], pad[4], dilation[2], groups;
};

ConvGeometry read_geometry(const char* op, const Attrs& a, size_t first, bool transposed) {
  const auto& s = a.get_ints(first);
  const auto& p = a.get_ints(first + 1);
  const auto& d = a.get_ints(first + (transposed ? 3 : 2));
  const int64_t groups = a.get_int(first + (transposed ? 4 : 3));
  RILL_CHECK(s.size() == 2 && p.size() == 4 && d.size() == 2, Runtime, "[", op,
             "] expected stride and dilation of 2 values and padding of 4 (top, bottom, left, right); "
             "use eager::", op, " to build the attrs");
  ConvGeometry g{{s[0], s[1]}, {p[0], p[1], p[2], p[3]}, {d[0], d[1]}, groups};
  RILL_CHECK(groups > 0, Runtime, "[", op, "] non-positive groups is not supported (got groups=", groups, ")");
  RILL_CHECK(s[0] > 0 && s[1] > 0, Runtime, "[", op, "] non-positive stride is not supported (got stride=",
             shape_str(s), ")");
  RILL_CHECK(p[0] >= 0 && p[1] >= 0 && p[2] >= 0 && p[3] >= 0, Runtime, "[", op,
             "] negative padding is not supported (got padding=", shape_str(p), ")");
  RILL_CHECK(d[0] > 0 && d[1] > 0, Runtime, "[", op, "] dilation should be greater than zero (got dilation=",
             shape_str(d), ")");
  return g;
}

void check_dtypes(const char* op, const TensorMeta& a, const char* a_name, const TensorMeta& b,
                  const char* b_name) {
  RILL_CHECK(a.device == b.device, Runtime, "[", op, "] expected all tensors on the same device, got ",
             a.device.str(), " and ", b.device.str());
  RILL_CHECK(a.dtype == DType::kFloat32 || a.dtype == DType::kFloat64, Type, "[", op, "] supports float32 and "
             "float64 tensors, got ", a_name, " of dtype ", dtype_name(a.dtype), "; convert it with .float()");
  RILL_CHECK(a.dtype == b.dtype, Runtime, "[", op, "] expected ", a_name, " and ", b_name,
             " to have the same dtype, got ", dtype_name(a.dtype), " and ", dtype_name(b.dtype), "; convert ",
             b_name, " with .to(", dtype_name(a.dtype), ")");
}

void check_4d(const char* op, const Shape& s, const char* what) {
  RILL_CHECK(s.size() == 4, Runtime, "[", op, "] expected a 4-D ", what, " (N, C, H, W), got size ",
             shape_str(s), "; eager::", op, " maps 3-D (unbatched) tensors onto this op");
}

// Output size of a convolution along one dim; errors when the kernel does not fit.
int64_t conv_out_size(int64_t in, int64_t k, int64_t pad_lo, int64_t pad_hi, int64_t stride, int64_t dil) {
  return (in + pad_lo + pad_hi - dil * (k - 1) - 1) / stride + 1;
}

// Output shape of conv2d of `input` by a weight of `weight` shape, after PyTorch's checks.
Shape conv_output_shape(const char* op, const Shape& input, const Shape& weight, const ConvGeometry& g) {
  check_4d(op, input, "input");
  RILL_CHECK(weight.size() == 4, Runtime, "[", op, "] expected a 4-D weight (out_channels, in_channels / groups, "
             "kH, kW), got weight of size ", shape_str(weight));
  RILL_CHECK(weight[0] % g.groups == 0, Runtime, "[", op, "] Given groups=", g.groups,
             ", expected weight to be divisible by ", g.groups, " at dimension 0, but got weight of size ",
             shape_str(weight), " instead");
  RILL_CHECK(input[1] == weight[1] * g.groups, Runtime, "[", op, "] Given groups=", g.groups, ", weight of size ",
             shape_str(weight), ", expected input", shape_str(input), " to have ", weight[1] * g.groups,
             " channels, but got ", input[1], " channels instead");
  RILL_CHECK(weight[0] > 0 && weight[2] > 0 && weight[3] > 0, Runtime, "[", op,
             "] expected a weight with non-zero out_channels and kernel size, got weight of size ",
             shape_str(weight));
  const int64_t ph = input[2] + g.pad[0] + g.pad[1], pw = input[3] + g.pad[2] + g.pad[3];
  const int64_t kh = g.dilation[0] * (weight[2] - 1) + 1, kw = g.dilation[1] * (weight[3] - 1) + 1;
  RILL_CHECK(ph >= kh && pw >= kw, Runtime, "[", op, "] Calculated padded input size per channel: (", ph, " x ",
             pw, "). Kernel size: (", kh, " x ", kw,
             "). Kernel size can't be greater than actual input size; pad the input or use a smaller kernel");
  return {input[0], weight[0], conv_out_size(input[2], weight[2], g.pad[0], g.pad[1], g.stride[0], g.dilation[0]),
          conv_out_size(input[3], weight[3], g.pad[2], g.pad[3], g.stride[1], g.dilation[1])};
}

void check_bias(const char* op, const InferContext& c, int64_t out_channels, const Shape& weight) {
  if (c.inputs.size() < 3) return;
  const TensorMeta& bias = *c.inputs[2];
  check_dtypes(op, *c.inputs[0], "input", bias, "bias");
  RILL_CHECK(bias.shape.size() == 1 && bias.shape[0] == out_channels, Runtime, "[", op, "] Given weight of size ",
             shape_str(weight), ", expected bias to be 1-dimensional with ", out_channels,
             " elements, but got bias of size ", shape_str(bias.shape), " instead");
}

void check_num_inputs(const InferContext& c) {
  RILL_CHECK(c.inputs.size() == 2 || c.inputs.size() == 3, Runtime, "[", c.op.name,
             "] expects (input, weight) or (input, weight, bias), got ", c.inputs.size(), " tensors");
}

InferResult infer_conv2d(const InferContext& c) {
  check_num_inputs(c);
  const TensorMeta& x = *c.inputs[0];
  const TensorMeta& w = *c.inputs[1];
  check_dtypes("conv2d", x, "input", w, "weight");
  const ConvGeometry g = read_geometry("conv2d", c.attrs, 0, false);
  Shape out = conv_output_shape("conv2d", x.shape, w.shape, g);
  check_bias("conv2d", c, w.shape[0], w.shape);
  return {{make_contiguous_meta(out, x.dtype, x.device)}, {}};
}

InferResult infer_conv2d_activation(const InferContext& c) {
  ops::check_fused_activation(c);
  return infer_conv2d(c);
}

// Checks that a convolution of `input` by `weight` gives grad_output's shape.
void check_grad_output(const char* op, const Shape& grad_output, const Shape& input, const Shape& weight,
                       const ConvGeometry& g) {
  check_4d(op, grad_output, "grad_output");
  Shape expected = conv_output_shape(op, input, weight, g);
  RILL_CHECK(grad_output == expected, Runtime, "[", op, "] expected grad_output of size ", shape_str(expected),
             " (the conv2d output for input ", shape_str(input), " and weight ", shape_str(weight),
             "), got ", shape_str(grad_output));
}

InferResult infer_conv2d_backward_input(const InferContext& c) {
  const TensorMeta& gy = *c.inputs[0];
  const TensorMeta& w = *c.inputs[1];
  check_dtypes("conv2d_backward_input", gy, "grad_output", w, "weight");
  const Shape& input_size = c.attrs.get_ints(0);
  check_sizes(input_size, "conv2d_backward_input");
  const ConvGeometry g = read_geometry("conv2d_backward_input", c.attrs, 1, false);
  check_grad_output("conv2d_backward_input", gy.shape, input_size, w.shape, g);
  return {{make_contiguous_meta(input_size, gy.dtype, gy.device)}, {}};
}

InferResult infer_conv2d_backward_weight(const InferContext& c) {
  const TensorMeta& gy = *c.inputs[0];
  const TensorMeta& x = *c.inputs[1];
  check_dtypes("conv2d_backward_weight", gy, "grad_output", x, "input");
  const Shape& weight_size = c.attrs.get_ints(0);
  check_sizes(weight_size, "conv2d_backward_weight");
  const ConvGeometry g = read_geometry("conv2d_backward_weight", c.attrs, 1, false);
  check_grad_output("conv2d_backward_weight", gy.shape, x.shape, weight_size, g);
  return {{make_contiguous_meta(weight_size, gy.dtype, gy.device)}, {}};
}

InferResult infer_conv2d_backward_weight_bias(const InferContext& c) {
  InferResult r = infer_conv2d_backward_weight(c);
  const TensorMeta& gy = *c.inputs[0];
  r.outputs.push_back(make_contiguous_meta({gy.shape[1]}, gy.dtype, gy.device));
  return r;
}

// Output: (H - 1) * stride - pad_top - pad_bottom + dilation * (kH - 1) + output_padding + 1, per dim.
InferResult infer_conv_transpose2d(const InferContext& c) {
  constexpr const char* op = "conv_transpose2d";
  check_num_inputs(c);
  const TensorMeta& x = *c.inputs[0];
  const TensorMeta& w = *c.inputs[1];
  check_dtypes(op, x, "input", w, "weight");
  const ConvGeometry g = read_geometry(op, c.attrs, 0, true);
  const auto& op_pad = c.attrs.get_ints(2);
  RILL_CHECK(op_pad.size() == 2, Runtime, "[", op, "] expected output_padding of 2 values");
  check_4d(op, x.shape, "input");
  RILL_CHECK(w.shape.size() == 4, Runtime, "[", op, "] expected a 4-D weight (in_channels, out_channels / groups, "
             "kH, kW), got weight of size ", shape_str(w.shape));
  RILL_CHECK(w.shape[0] % g.groups == 0, Runtime, "[", op, "] Given groups=", g.groups,
             ", expected weight to be divisible by ", g.groups, " at dimension 0, but got weight of size ",
             shape_str(w.shape), " instead");
  RILL_CHECK(x.shape[1] == w.shape[0], Runtime, "[", op, "] Given transposed=1, weight of size ",
             shape_str(w.shape), ", expected input", shape_str(x.shape), " to have ", w.shape[0],
             " channels, but got ", x.shape[1], " channels instead");
  RILL_CHECK(w.shape[1] > 0 && w.shape[2] > 0 && w.shape[3] > 0, Runtime, "[", op,
             "] expected a weight with non-zero out_channels and kernel size, got weight of size ",
             shape_str(w.shape));
  for (int d = 0; d < 2; ++d)
    RILL_CHECK(op_pad[d] >= 0 && (op_pad[d] < g.stride[d] || op_pad[d] < g.dilation[d]), Runtime, "[", op,
               "] output padding must be smaller than either stride or dilation, but got output_padding=",
               shape_str(op_pad), ", stride=", shape_str({g.stride[0], g.stride[1]}),
               ", dilation=", shape_str({g.dilation[0], g.dilation[1]}));
  const int64_t out_channels = w.shape[1] * g.groups;
  Shape out = {x.shape[0], out_channels, 0, 0};
  for (int d = 0; d < 2; ++d)
    out[2 + d] = (x.shape[2 + d] - 1) * g.stride[d] - g.pad[2 * d] - g.pad[2 * d + 1] +
                 g.dilation[d] * (w.shape[2 + d] - 1) + op_pad[d] + 1;
  RILL_CHECK(out[2] > 0 && out[3] > 0, Runtime, "[", op, "] Given input size per channel: (", x.shape[2], " x ",
             x.shape[3], "). Calculated output size per channel: (", out[2], " x ", out[3],
             "). Output size is too small; reduce the padding");
  check_bias(op, c, out_channels, w.shape);
  return {{make_contiguous_meta(out, x.dtype, x.device)}, {}};
}

// Convolution computes each sample alone: the batch split, the weight whole; the weight's gradient sums over the
// batch, so the batch split gives each rank a summand of it.
std::vector<SbpSignature> sbp_conv(const SbpContext& c) { return ops::per_sample_sbp(c, {1, 2}); }

std::vector<SbpSignature> sbp_conv_backward_weight(const SbpContext& c) {
  return {{{Sbp::split(0), Sbp::split(0)}, std::vector<Sbp>(c.outputs.size(), Sbp::partial_sum())}};
}

}  // namespace

void register_conv_ops() {
  const OpFlags k;
  ops::define("conv2d(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, "
              "int groups) -> Tensor", infer_conv2d, k, "2-D convolution (padding: 2 or 4 values)").sbp = sbp_conv;
  ops::define("_conv2d_activation(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
              "int[] dilation, int groups, *, str activation, str approximate=\"none\") -> Tensor",
              infer_conv2d_activation, {.function = true, .differentiable = false},
              "activation(conv2d(input, weight, bias)), in one kernel").sbp = sbp_conv;
  OpSchema& backward_input = ops::define("conv2d_backward_input(Tensor grad_output, Tensor weight, int[] input_size, "
                                         "int[] stride, int[] padding, int[] dilation, int groups) -> Tensor",
                                         infer_conv2d_backward_input, k, "");
  backward_input.sbp = sbp_conv;
  backward_input.local_attrs = ops::local_input_size;
  ops::define("conv2d_backward_weight(Tensor grad_output, Tensor input, int[] weight_size, int[] stride, "
              "int[] padding, int[] dilation, int groups) -> Tensor", infer_conv2d_backward_weight, k, "")
      .sbp = sbp_conv_backward_weight;
  ops::define("_conv2d_backward_weight_bias(Tensor grad_output, Tensor input, int[] weight_size, int[] stride, "
              "int[] padding, int[] dilation, int groups) -> (Tensor, Tensor)", infer_conv2d_backward_weight_bias,
              {.function = true, .differentiable = false},
              "conv2d_backward_weight and grad_output's sum over dims 0, 2, 3 (the bias's gradient), in one kernel")
      .sbp = sbp_conv_backward_weight;
  ops::define("conv_transpose2d(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
              "int[] output_padding, int[] dilation, int groups) -> Tensor", infer_conv_transpose2d, k,
              "2-D transposed convolution");
}

}  // namespace rill
