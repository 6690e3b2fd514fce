// The nn ops in the functional API (schemas and attrs in ops/nn.cpp): each
// function makes its inputs dense, as the kernels expect, builds the attrs and
// calls the op. Argument checks that need more than metas live here too.
#include "rill/eager/autocast.h"
#include "rill/eager/functional.h"

#include "rill/eager/math.h"

namespace rill::eager {
namespace {

// The inputs that are defined, dense.
std::vector<Tensor> dense_inputs(std::initializer_list<const Tensor*> ts) {
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const Tensor* t : ts)
    if (t->defined()) out.push_back(contiguous(*t));
  return out;
}

}  // namespace

Tensor softmax(const Tensor& input, int64_t dim, bool log, std::optional<DType> dtype) {
  static const OpSchema& sm = op("softmax");
  static const OpSchema& lsm = op("log_softmax");
  Tensor x = dtype ? to_dtype(input, *dtype) : input;
  RILL_CHECK(dtype_is_floating(x.dtype()), NotImplemented, "[", log ? "log_softmax" : "softmax",
             "] not implemented for '", dtype_name(x.dtype()), "'; convert the input with .float() or pass dtype=");
  Tensor in = contiguous(x);
  return call1(log ? lsm : sm, {&in, 1}, {}, make_attrs({dim}));
}

Tensor softmax_backward(const Tensor& grad, const Tensor& y, int64_t dim, bool log) {
  static const OpSchema& sm = op("softmax_backward");
  static const OpSchema& lsm = op("log_softmax_backward");
  std::vector<Tensor> in = dense_inputs({&grad, &y});
  return call1(log ? lsm : sm, in, {}, make_attrs({dim}));
}

std::vector<Tensor> native_layer_norm(const Tensor& x, int64_t axis, const Tensor& weight, const Tensor& bias,
                                      double eps) {
  static const OpSchema& ln = op("layer_norm");
  RILL_CHECK(!bias.defined() || weight.defined(), Value, "[layer_norm] a bias without a weight is not supported "
             "here; pass weight=ones");
  std::vector<Tensor> in = dense_inputs({&x, &weight, &bias});
  return call(ln, in, {}, make_attrs({axis, eps}));
}

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  const int64_t axis = x.ndim() - k;
  RILL_CHECK(k >= 1, Runtime, "[layer_norm] Expected normalized_shape to be at least 1-dimensional, i.e., "
             "containing at least one element, but got normalized_shape = []");
  RILL_CHECK(axis >= 0 && Shape(x.shape().begin() + axis, x.shape().end()) == normalized_shape, Runtime,
             "[layer_norm] Given normalized_shape=", shape_str(normalized_shape), ", expected input with shape [*, ",
             shape_str(normalized_shape).substr(1), ", but got input of size", shape_str(x.shape()));
  if (bias.defined() && !weight.defined()) return add(layer_norm(x, normalized_shape, Tensor(), Tensor(), eps), bias);
  return native_layer_norm(x, axis, weight, bias, eps)[0];
}

std::vector<Tensor> layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                        const Tensor& weight, int64_t axis) {
  static const OpSchema& lnb = op("layer_norm_backward");
  std::vector<Tensor> in = dense_inputs({&grad, &x, &mean, &rstd, &weight});
  return call(lnb, in, {}, make_attrs({axis}));
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  static const OpSchema& lin = op("linear");
  if (autocast_state().enabled) [[unlikely]]  // Note [Autocast]
    return autocast_lower([](const Tensor& a, const Tensor& w, const Tensor& b) { return linear(a, w, b); }, x, weight,
                          bias);
  const bool fused = weight.ndim() == 2 && x.ndim() >= 1 && x.dtype() == weight.dtype() &&
                     (!bias.defined() || bias.dtype() == x.dtype()) &&
                     (x.dtype() == DType::kFloat32 || x.dtype() == DType::kFloat64);
  const bool half = (x.dtype() == DType::kFloat16 || x.dtype() == DType::kBFloat16) && weight.ndim() == 2 &&
                    x.dtype() == weight.dtype() && (!bias.defined() || bias.dtype() == x.dtype());
  if (half) {  // computed in float32 and rounded once, as PyTorch's 16-bit addmm accumulates in float
    Tensor b = bias.defined() ? to_dtype(bias, DType::kFloat32) : Tensor();
    return to_dtype(linear(to_dtype(x, DType::kFloat32), to_dtype(weight, DType::kFloat32), b), x.dtype());
  }
  if (!fused) {  // other dtypes and shapes: matmul and add, which raise PyTorch's errors for bad operands
    Tensor y = matmul(x, weight.ndim() == 2 ? transpose(weight, 0, 1) : weight);
    return bias.defined() ? add(y, bias) : y;
  }
  std::vector<Tensor> in = dense_inputs({&x, &weight, &bias});
  return call1(lin, in);
}

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx) {
  static const OpSchema& emb = op("embedding");
  std::vector<Tensor> in = dense_inputs({&weight, &indices});
  return call1(emb, in, {}, make_attrs({padding_idx}));
}

Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights, int64_t padding_idx) {
  static const OpSchema& eb = op("embedding_backward");
  std::vector<Tensor> in = dense_inputs({&grad, &indices});
  return call1(eb, in, {}, make_attrs({num_weights, padding_idx}));
}

std::pair<Tensor, Tensor> native_dropout(const Tensor& x, double p) {
  static const OpSchema& dr = op("dropout");
  RILL_CHECK(p >= 0.0 && p <= 1.0, Value, "[dropout] dropout probability has to be between 0 and 1, but got ", p);
  Tensor in = contiguous(x);
  auto [seed, offset] = take_random(x.numel());
  Scalar s[2] = {seed, offset};
  std::vector<Tensor> out = call(dr, {&in, 1}, s, make_attrs({p}));
  return {out[0], out[1]};
}

Tensor dropout(const Tensor& x, double p, bool training) {
  RILL_CHECK(p >= 0.0 && p <= 1.0, Value, "[dropout] dropout probability has to be between 0 and 1, but got ", p);
  if (!training || p == 0.0 || x.numel() == 0) return x;
  return native_dropout(x, p).first;
}

std::pair<Tensor, Tensor> nll_loss(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t reduction,
                                   int64_t ignore_index) {
  static const OpSchema& nll = op("nll_loss");
  RILL_CHECK(reduction >= 0 && reduction <= 2, Value, "[nll_loss] reduction must be 'none', 'mean' or 'sum'");
  std::vector<Tensor> in = dense_inputs({&x, &target, &weight});
  std::vector<Tensor> out = call(nll, in, {}, make_attrs({reduction, ignore_index}));
  return {out[0], out[1]};
}

Tensor nll_loss_backward(const Tensor& grad, const Tensor& target, const Tensor& total_weight, const Tensor& weight,
                         int64_t reduction, int64_t ignore_index, const Shape& input_shape) {
  static const OpSchema& nllb = op("nll_loss_backward");
  std::vector<Tensor> in = dense_inputs({&grad, &target, &total_weight, &weight});
  return call1(nllb, in, {}, make_attrs({reduction, ignore_index, input_shape}));
}

}  // namespace rill::eager
