// The pooling family, on 4-D NCHW tensors (eager/conv.cpp maps unbatched
// inputs onto these with views). Sizes follow PyTorch's pooling_output_shape:
//   out = floor_or_ceil((in + 2 * pad - dilation * (k - 1) - 1) / stride) + 1,
// and with ceil_mode the last window must start inside the input or the left padding.
//   max_pool2d(input) -> (values, indices)   indices: int64, flat h * W + w per plane
//   max_pool2d_backward(grad_output, indices) -> grad_input
//   max_pool2d_with_workspace(input) -> (values, workspace)
//   max_pool2d_with_workspace_backward(grad_output, workspace) -> grad_input
//   avg_pool2d(input) -> output
//   avg_pool2d_backward(grad_output) -> grad_input
//   adaptive_avg_pool2d(input) -> output
//   adaptive_avg_pool2d_backward(grad_output) -> grad_input
//
// Attr layout:
//   max_pool2d:                   kernel_size[2], stride[2], padding[2], dilation[2], ceil_mode
//   max_pool2d_backward:          input_size[4]
//   max_pool2d_with_workspace:    max_pool2d's attrs
//   max_pool2d_with_workspace_backward: input_size[4], then max_pool2d's attrs
//   avg_pool2d:                   kernel_size[2], stride[2], padding[2], ceil_mode, count_include_pad,
//                                 divisor_override (0: none; eager rejects a user's 0 as PyTorch does)
//   avg_pool2d_backward:          input_size[4], then avg_pool2d's attrs
//   adaptive_avg_pool2d:          output_size[2]
//   adaptive_avg_pool2d_backward: input_size[4]
// The workspace is what autograd saves when the indices are not asked for: one
// uint8 per output (int32 when the window has more than 255 elements), whose
// meaning belongs to the kernel that wrote it (oneDNN's opaque workspace, or the
// maximum's offset in its window; Note [Pooling on oneDNN] in
// kernels/cpu/pool.cpp); only max_pool2d_with_workspace_backward reads it.
// Inputs must be dense (eager makes them contiguous); outputs are dense. The
// floating dtypes are supported (float16, bfloat16, float32, float64).
#include "rill/ops/op_schema.h"

namespace rill {
namespace {

// Kernel, stride, padding and dilation of a pooling window, per spatial dim.
struct PoolGeometry {
  int64_t kernel[2], stride[2], pad[2], dilation[2];
  bool ceil_mode;
};

void check_pool_input(const char* op, const TensorMeta& x, const char* what = "input") {
  RILL_CHECK(dtype_is_floating(x.dtype), Type, "[", op, "] supports floating-point tensors, got ", what,
             " of dtype ", dtype_name(x.dtype), "; convert it with .float()");
  RILL_CHECK(x.shape.size() == 4, Runtime, "[", op, "] expected a 4-D ", what, " (N, C, H, W), got size ",
             shape_str(x.shape), "; eager::", op, " maps 3-D (unbatched) tensors onto this op");
}

// PyTorch's pooling_output_shape (div_rtn: division rounding towards -infinity).
int64_t pool_out_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode) {
  int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t q = num / stride;
  if (num % stride != 0 && num < 0) --q;
  int64_t out = q + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

// Checks window and input like PyTorch's pool2d_shape_check; returns the output shape.
Shape pool_output_shape(const char* op, const Shape& in, const PoolGeometry& g) {
  RILL_CHECK(g.kernel[0] > 0 && g.kernel[1] > 0, Runtime, "[", op,
             "] kernel size should be greater than zero, but got kH: ", g.kernel[0], " kW: ", g.kernel[1]);
  RILL_CHECK(g.stride[0] > 0 && g.stride[1] > 0, Runtime, "[", op,
             "] stride should be greater than zero, but got dH: ", g.stride[0], " dW: ", g.stride[1]);
  RILL_CHECK(g.dilation[0] > 0 && g.dilation[1] > 0, Runtime, "[", op,
             "] dilation should be greater than zero, but got dilationH: ", g.dilation[0],
             " dilationW: ", g.dilation[1]);
  RILL_CHECK(g.pad[0] >= 0 && g.pad[1] >= 0 && g.pad[0] <= g.kernel[0] / 2 && g.pad[1] <= g.kernel[1] / 2,
             Runtime, "[", op, "] pad should be at most half of effective kernel size, but got padH = ", g.pad[0],
             ", padW = ", g.pad[1], ", kH = ", g.kernel[0], ", kW = ", g.kernel[1]);
  RILL_CHECK(in[1] > 0 && in[2] > 0 && in[3] > 0, Runtime, "[", op,
             "] Expected input with non-zero channel and spatial sizes, but got input of size ", shape_str(in));
  const int64_t oh = pool_out_size(in[2], g.kernel[0], g.pad[0], g.stride[0], g.dilation[0], g.ceil_mode);
  const int64_t ow = pool_out_size(in[3], g.kernel[1], g.pad[1], g.stride[1], g.dilation[1], g.ceil_mode);
  RILL_CHECK(oh >= 1 && ow >= 1, Runtime, "[", op, "] Given input size: (", in[1], "x", in[2], "x", in[3],
             "). Calculated output size: (", in[1], "x", oh, "x", ow,
             "). Output size is too small; use a smaller kernel or more padding");
  return {in[0], in[1], oh, ow};
}

PoolGeometry read_pool(const char* op, const Attrs& a, size_t first, bool with_dilation) {
  const auto& k = a.get_ints(first);
  const auto& s = a.get_ints(first + 1);
  const auto& p = a.get_ints(first + 2);
  RILL_CHECK(k.size() == 2 && s.size() == 2 && p.size() == 2, Runtime, "[", op,
             "] expected kernel_size, stride and padding of 2 values each; use eager::", op, " to build the attrs");
  PoolGeometry g{{k[0], k[1]}, {s[0], s[1]}, {p[0], p[1]}, {1, 1}, false};
  if (with_dilation) {
    const auto& d = a.get_ints(first + 3);
    RILL_CHECK(d.size() == 2, Runtime, "[", op, "] expected dilation of 2 values");
    g.dilation[0] = d[0];
    g.dilation[1] = d[1];
    g.ceil_mode = a.get_bool(first + 4);
  } else {
    g.ceil_mode = a.get_bool(first + 3);
  }
  return g;
}

void check_grad(const char* op, const TensorMeta& grad, const Shape& expected, const TensorMeta& like) {
  RILL_CHECK(grad.dtype == like.dtype, Runtime, "[", op, "] expected grad_output of dtype ",
             dtype_name(like.dtype), ", got ", dtype_name(grad.dtype));
  RILL_CHECK(grad.shape == expected, Runtime, "[", op, "] expected grad_output of size ", shape_str(expected),
             " (the forward output), got ", shape_str(grad.shape));
}

const Shape& read_input_size(const char* op, const Attrs& a) {
  const Shape& s = a.get_ints(0);
  RILL_CHECK(s.size() == 4, Runtime, "[", op, "] expected input_size of 4 values (N, C, H, W), got ",
             shape_str(s));
  check_sizes(s, op);
  return s;
}

InferResult infer_max_pool2d(const InferContext& c) {
  const TensorMeta& x = *c.inputs[0];
  check_pool_input("max_pool2d", x);
  Shape out = pool_output_shape("max_pool2d", x.shape, read_pool("max_pool2d", c.attrs, 0, true));
  return {{make_contiguous_meta(out, x.dtype, x.device), make_contiguous_meta(out, DType::kInt64, x.device)}, {}};
}

InferResult infer_max_pool2d_backward(const InferContext& c) {
  constexpr const char* op = "max_pool2d_backward";
  const TensorMeta& gy = *c.inputs[0];
  const TensorMeta& idx = *c.inputs[1];
  check_pool_input(op, gy, "grad_output");
  const Shape& in = read_input_size(op, c.attrs);
  RILL_CHECK(idx.dtype == DType::kInt64 && idx.shape == gy.shape, Runtime, "[", op,
             "] expected int64 indices of grad_output's size ", shape_str(gy.shape), ", got ", idx.str());
  RILL_CHECK(gy.shape[0] == in[0] && gy.shape[1] == in[1], Runtime, "[", op, "] grad_output of size ",
             shape_str(gy.shape), " does not match input_size ", shape_str(in), " in (N, C)");
  return {{make_contiguous_meta(in, gy.dtype, gy.device)}, {}};
}

// The workspace's dtype for a window of kernel[0] x kernel[1] elements.
DType workspace_dtype(const PoolGeometry& g) {
  return g.kernel[0] * g.kernel[1] <= 255 ? DType::kUInt8 : DType::kInt32;
}

InferResult infer_max_pool2d_with_workspace(const InferContext& c) {
  constexpr const char* op = "max_pool2d";  // what the user called
  const TensorMeta& x = *c.inputs[0];
  check_pool_input(op, x);
  const PoolGeometry g = read_pool(op, c.attrs, 0, true);
  Shape out = pool_output_shape(op, x.shape, g);
  return {{make_contiguous_meta(out, x.dtype, x.device), make_contiguous_meta(out, workspace_dtype(g), x.device)},
          {}};
}

InferResult infer_max_pool2d_with_workspace_backward(const InferContext& c) {
  constexpr const char* op = "max_pool2d_with_workspace_backward";
  const TensorMeta& gy = *c.inputs[0];
  const TensorMeta& ws = *c.inputs[1];
  check_pool_input(op, gy, "grad_output");
  const Shape& in = read_input_size(op, c.attrs);
  const PoolGeometry g = read_pool(op, c.attrs, 1, true);
  Shape out = pool_output_shape(op, in, g);
  check_grad(op, gy, out, gy);
  RILL_CHECK(ws.dtype == workspace_dtype(g) && ws.shape == out, Runtime, "[", op, "] expected a ",
             dtype_name(workspace_dtype(g)), " workspace of size ", shape_str(out), ", got ", ws.str(),
             "; pass the workspace max_pool2d_with_workspace returned for this input and window");
  return {{make_contiguous_meta(in, gy.dtype, gy.device)}, {}};
}

InferResult infer_avg_pool2d(const InferContext& c) {
  const TensorMeta& x = *c.inputs[0];
  check_pool_input("avg_pool2d", x);
  Shape out = pool_output_shape("avg_pool2d", x.shape, read_pool("avg_pool2d", c.attrs, 0, false));
  return {{make_contiguous_meta(out, x.dtype, x.device)}, {}};
}

InferResult infer_avg_pool2d_backward(const InferContext& c) {
  constexpr const char* op = "avg_pool2d_backward";
  const TensorMeta& gy = *c.inputs[0];
  check_pool_input(op, gy, "grad_output");
  const Shape& in = read_input_size(op, c.attrs);
  Shape out = pool_output_shape(op, in, read_pool(op, c.attrs, 1, false));
  check_grad(op, gy, out, gy);
  return {{make_contiguous_meta(in, gy.dtype, gy.device)}, {}};
}

InferResult infer_adaptive_avg_pool2d(const InferContext& c) {
  constexpr const char* op = "adaptive_avg_pool2d";
  const TensorMeta& x = *c.inputs[0];
  check_pool_input(op, x);
  const auto& os = c.attrs.get_ints(0);
  RILL_CHECK(os.size() == 2 && os[0] >= 0 && os[1] >= 0, Runtime, "[", op,
             "] expected output_size of 2 non-negative values, got ", shape_str(os));
  RILL_CHECK(x.shape[1] > 0 && x.shape[2] > 0 && x.shape[3] > 0, Runtime, "[", op,
             "] Expected input with non-zero channel and spatial sizes, but got input of size ", shape_str(x.shape));
  return {{make_contiguous_meta({x.shape[0], x.shape[1], os[0], os[1]}, x.dtype, x.device)}, {}};
}

InferResult infer_adaptive_avg_pool2d_backward(const InferContext& c) {
  constexpr const char* op = "adaptive_avg_pool2d_backward";
  const TensorMeta& gy = *c.inputs[0];
  check_pool_input(op, gy, "grad_output");
  const Shape& in = read_input_size(op, c.attrs);
  RILL_CHECK(gy.shape[0] == in[0] && gy.shape[1] == in[1], Runtime, "[", op, "] grad_output of size ",
             shape_str(gy.shape), " does not match input_size ", shape_str(in), " in (N, C)");
  return {{make_contiguous_meta(in, gy.dtype, gy.device)}, {}};
}

// Pooling computes each sample and each channel alone.
std::vector<SbpSignature> sbp_pool(const SbpContext& c) { return ops::per_sample_sbp(c, {}, true); }

}  // namespace

void register_pool_ops() {
  const OpFlags k;
  const std::string max = "int[] kernel_size, int[] stride, int[] padding, int[] dilation, bool ceil_mode";
  const std::string avg = "int[] kernel_size, int[] stride, int[] padding, bool ceil_mode, bool count_include_pad, "
                          "int divisor_override";  // divisor_override 0: the window size
  // Forward ops compute each sample and channel alone; their gradients too, with input_size their local shape.
  auto forward = [](OpSchema& op) { op.sbp = sbp_pool; };
  auto gradient = [](OpSchema& op) {
    op.sbp = sbp_pool;
    op.local_attrs = ops::local_input_size;
  };
  forward(ops::define("max_pool2d(Tensor self, " + max + ") -> Tensor", infer_max_pool2d, k, "2-D max pooling"));
  gradient(ops::define("max_pool2d_backward(Tensor grad_output, Tensor indices, int[] input_size) -> Tensor",
                       infer_max_pool2d_backward, k, ""));
  forward(ops::define("max_pool2d_with_workspace(Tensor self, " + max + ") -> (Tensor output, Tensor workspace)",
                      infer_max_pool2d_with_workspace, k,
                      "2-D max pooling keeping oneDNN's workspace for backward"));
  gradient(ops::define("max_pool2d_with_workspace_backward(Tensor grad_output, Tensor workspace, int[] input_size, " +
                       max + ") -> Tensor", infer_max_pool2d_with_workspace_backward, k, ""));
  forward(ops::define("avg_pool2d(Tensor self, " + avg + ") -> Tensor", infer_avg_pool2d, k, "2-D average pooling"));
  gradient(ops::define("avg_pool2d_backward(Tensor grad_output, int[] input_size, " + avg + ") -> Tensor",
                       infer_avg_pool2d_backward, k, ""));
  forward(ops::define("adaptive_avg_pool2d(Tensor self, int[] output_size) -> Tensor", infer_adaptive_avg_pool2d, k,
                      "2-D average pooling to output_size"));
  gradient(ops::define("adaptive_avg_pool2d_backward(Tensor grad_output, int[] input_size) -> Tensor",
                       infer_adaptive_avg_pool2d_backward, k, ""));
}

}  // namespace rill
