// Convolution and pooling ops for rill.nn.functional (python/rill/nn/functional.py
// holds the PyTorch signatures and defaults): rill._C._conv2d, _conv2d_backward_input, ...
// Int-or-tuple arguments arrive as Python objects and are parsed here; padding
// may also be the string 'valid' or 'same'.
#include <string>

#include "bind.h"
#include "rill/eager/functional.h"

namespace rill::py {
namespace {

using Ints = std::vector<int64_t>;

// Padding from ints, 'valid' or 'same' (for a weight whose last `spatial` dims are the kernel).
Ints conv_padding(nb::handle padding, const Shape& weight, const Ints& stride, const Ints& dilation, int spatial,
                  const char* op) {
  if (!nb::isinstance<nb::str>(padding)) return ints_from_object(padding, op);
  const std::string mode = nb::cast<std::string>(padding);
  if (mode == "valid") return {0};
  RILL_CHECK(mode == "same", Runtime, "[", op, "] Invalid padding string '", mode,
             "'; expected 'valid', 'same' or integers");
  RILL_CHECK(static_cast<int>(weight.size()) == spatial + 2, Runtime, "[", op, "] expected a ", spatial + 2,
             "-D weight, got weight of size ", shape_str(weight));
  const Shape kernel(weight.end() - spatial, weight.end());
  return eager::conv_padding_same(kernel, dilation, stride, op);
}

std::optional<Tensor> optional_tensor(nb::handle obj, const char* op, const char* arg) {
  if (obj.is_none()) return std::nullopt;
  RILL_CHECK(nb::isinstance<Tensor>(obj), Type, "[", op, "] expected ", arg, " to be a Tensor or None, got ",
             nb::inst_name(obj).c_str());
  return nb::cast<Tensor>(obj);
}

std::optional<int64_t> optional_int(nb::handle obj, const char* op) {
  if (obj.is_none()) return std::nullopt;
  Ints v = ints_from_object(obj, op);
  RILL_CHECK(v.size() == 1, Type, "[", op, "] expected divisor_override to be an int or None");
  return v[0];
}

Ints ints_or_empty(nb::handle obj, const char* op) { return obj.is_none() ? Ints{} : ints_from_object(obj, op); }

// stride, padding ('valid', 'same' or ints; 'same' is sized from the kernel, the last `spatial` dims of
// weight) and dilation of a convolution call.
struct ConvGeometry {
  Ints stride, padding, dilation;
};

ConvGeometry conv_geometry(nb::handle stride, nb::handle padding, nb::handle dilation, const Shape& weight,
                           int spatial, const char* op) {
  Ints s = ints_from_object(stride, op), d = ints_from_object(dilation, op);
  return {s, conv_padding(padding, weight, s, d, spatial, op), d};
}

using ConvFn = Tensor (*)(const Tensor&, const Tensor&, const std::optional<Tensor>&, const Ints&, const Ints&,
                          const Ints&, int64_t);
using ConvGradFn = Tensor (*)(const Tensor&, const Tensor&, const Shape&, const Ints&, const Ints&, const Ints&,
                              int64_t);

// rill._C.<name>(input, weight, bias, stride, padding, dilation, groups).
void def_conv(nb::module_& m, const char* name, const char* op, int spatial, ConvFn fn) {
  m.def(name, [op, spatial, fn](const Tensor& x, const Tensor& w, nb::handle bias, nb::handle stride,
                                nb::handle padding, nb::handle dilation, int64_t groups) {
    ConvGeometry g = conv_geometry(stride, padding, dilation, w.shape(), spatial, op);
    return fn(x, w, optional_tensor(bias, op, "bias"), g.stride, g.padding, g.dilation, groups);
  }, nb::arg("input"), nb::arg("weight"), nb::arg("bias").none(), nb::arg("stride"), nb::arg("padding"),
        nb::arg("dilation"), nb::arg("groups"));
}

// rill._C.<name>(grad_output, weight, input_size, ...) or, for the weight gradient,
// (grad_output, input, weight_size, ...); 'same' padding is sized from the weight's shape either way.
void def_conv_grad(nb::module_& m, const char* name, const char* op, int spatial, bool of_weight, ConvGradFn fn) {
  m.def(name, [op, spatial, of_weight, fn](const Tensor& gy, const Tensor& t, nb::handle size, nb::handle stride,
                                           nb::handle padding, nb::handle dilation, int64_t groups) {
    Ints sz = ints_from_object(size, op);
    ConvGeometry g = conv_geometry(stride, padding, dilation, of_weight ? sz : t.shape(), spatial, op);
    return fn(gy, t, sz, g.stride, g.padding, g.dilation, groups);
  }, nb::arg("grad_output"), nb::arg(of_weight ? "input" : "weight"),
        nb::arg(of_weight ? "weight_size" : "input_size"), nb::arg("stride"), nb::arg("padding"),
        nb::arg("dilation"), nb::arg("groups"));
}

}  // namespace

void init_nn(nb::module_& m) {
  // --- convolution ---
  def_conv(m, "_conv2d", "conv2d", 2, &eager::conv2d);
  def_conv(m, "_conv1d", "conv1d", 1, &eager::conv1d);
  def_conv_grad(m, "_conv2d_backward_input", "conv2d_backward_input", 2, false, &eager::conv2d_backward_input);
  def_conv_grad(m, "_conv2d_backward_weight", "conv2d_backward_weight", 2, true, &eager::conv2d_backward_weight);
  def_conv_grad(m, "_conv1d_backward_input", "conv1d_backward_input", 1, false, &eager::conv1d_backward_input);
  def_conv_grad(m, "_conv1d_backward_weight", "conv1d_backward_weight", 1, true, &eager::conv1d_backward_weight);
  m.def("_conv_backward_bias", &eager::conv_backward_bias, nb::arg("grad_output"), nb::arg("spatial_dims") = 2);
  m.def("_conv_transpose2d", [](const Tensor& x, const Tensor& w, nb::handle bias, nb::handle stride,
                                nb::handle padding, nb::handle output_padding, int64_t groups, nb::handle dilation) {
    const char* op = "conv_transpose2d";
    RILL_CHECK(!nb::isinstance<nb::str>(padding), Type, "[", op, "] padding must be integers (PyTorch has no "
               "string padding for transposed convolutions)");
    return eager::conv_transpose2d(x, w, optional_tensor(bias, op, "bias"), ints_from_object(stride, op),
                                   ints_from_object(padding, op), ints_from_object(output_padding, op), groups,
                                   ints_from_object(dilation, op));
  },
        nb::arg("input"), nb::arg("weight"), nb::arg("bias").none(), nb::arg("stride"),
        nb::arg("padding"), nb::arg("output_padding"), nb::arg("groups"), nb::arg("dilation"));
  m.def("_conv_transpose2d_backward_input", [](const Tensor& gy, const Tensor& w, nb::handle input_size,
                                               nb::handle stride, nb::handle padding, nb::handle dilation,
                                               int64_t groups) {
    const char* op = "conv_transpose2d_backward_input";
    return eager::conv_transpose2d_backward_input(gy, w, ints_from_object(input_size, op),
                                                  ints_from_object(stride, op), ints_from_object(padding, op),
                                                  ints_from_object(dilation, op), groups);
  },
        nb::arg("grad_output"), nb::arg("weight"), nb::arg("input_size"), nb::arg("stride"), nb::arg("padding"),
        nb::arg("dilation"), nb::arg("groups"));
  m.def("_conv_transpose2d_backward_weight", [](const Tensor& gy, const Tensor& x, nb::handle weight_size,
                                                nb::handle stride, nb::handle padding, nb::handle dilation,
                                                int64_t groups) {
    const char* op = "conv_transpose2d_backward_weight";
    return eager::conv_transpose2d_backward_weight(gy, x, ints_from_object(weight_size, op),
                                                   ints_from_object(stride, op), ints_from_object(padding, op),
                                                   ints_from_object(dilation, op), groups);
  },
        nb::arg("grad_output"), nb::arg("input"), nb::arg("weight_size"), nb::arg("stride"),
        nb::arg("padding"), nb::arg("dilation"), nb::arg("groups"));

  // --- pooling ---
  m.def("_max_pool2d", [](const Tensor& x, nb::handle kernel_size, nb::handle stride, nb::handle padding,
                          nb::handle dilation, bool ceil_mode, bool return_indices) -> nb::object {
    const char* op = "max_pool2d";
    const auto k = ints_from_object(kernel_size, op), s = ints_or_empty(stride, op),
               p = ints_from_object(padding, op), d = ints_from_object(dilation, op);
    if (return_indices) return nb::cast(eager::max_pool2d_with_indices(x, k, s, p, d, ceil_mode));
    return nb::cast(eager::max_pool2d(x, k, s, p, d, ceil_mode));
  },
        nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride").none(), nb::arg("padding"),
        nb::arg("dilation"), nb::arg("ceil_mode"), nb::arg("return_indices") = false);
  m.def("_max_pool2d_backward", [](const Tensor& gy, const Tensor& indices, nb::handle input_size) {
    return eager::max_pool2d_backward(gy, indices, ints_from_object(input_size, "max_pool2d_backward"));
  }, nb::arg("grad_output"), nb::arg("indices"), nb::arg("input_size"));
  m.def("_avg_pool2d", [](const Tensor& x, nb::handle kernel_size, nb::handle stride, nb::handle padding,
                          bool ceil_mode, bool count_include_pad, nb::handle divisor_override) {
    const char* op = "avg_pool2d";
    return eager::avg_pool2d(x, ints_from_object(kernel_size, op), ints_or_empty(stride, op),
                             ints_from_object(padding, op), ceil_mode, count_include_pad,
                             optional_int(divisor_override, op));
  },
        nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride").none(), nb::arg("padding"),
        nb::arg("ceil_mode"), nb::arg("count_include_pad"), nb::arg("divisor_override").none());
  m.def("_avg_pool2d_backward", [](const Tensor& gy, nb::handle input_size, nb::handle kernel_size,
                                   nb::handle stride, nb::handle padding, bool ceil_mode, bool count_include_pad,
                                   nb::handle divisor_override) {
    const char* op = "avg_pool2d_backward";
    return eager::avg_pool2d_backward(gy, ints_from_object(input_size, op), ints_from_object(kernel_size, op),
                                      ints_or_empty(stride, op), ints_from_object(padding, op), ceil_mode,
                                      count_include_pad, optional_int(divisor_override, op));
  },
        nb::arg("grad_output"), nb::arg("input_size"), nb::arg("kernel_size"),
        nb::arg("stride").none(), nb::arg("padding"), nb::arg("ceil_mode"),
        nb::arg("count_include_pad"), nb::arg("divisor_override").none());
  m.def("_adaptive_avg_pool2d", [](const Tensor& x, nb::handle output_size) {
    return eager::adaptive_avg_pool2d(x, ints_from_object(output_size, "adaptive_avg_pool2d"));
  }, nb::arg("input"), nb::arg("output_size"));
  m.def("_adaptive_avg_pool2d_backward", [](const Tensor& gy, nb::handle input_size) {
    return eager::adaptive_avg_pool2d_backward(gy, ints_from_object(input_size, "adaptive_avg_pool2d_backward"));
  }, nb::arg("grad_output"), nb::arg("input_size"));
}

}  // namespace rill::py
