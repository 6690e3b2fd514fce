// The nn family, differentiable (ops/nn.cpp): the autograd functional API for
// softmax, layer_norm, linear, embedding, dropout and nll_loss, and their
// gradient rules, with PyTorch's formulas. softmax, log_softmax and layer_norm
// have dedicated backward kernels; linear's backward is two matmuls and a sum.
#include "rill/autograd/functional.h"
#include "rill/autograd/rules.h"

namespace rill::autograd {
namespace {

constexpr uint32_t kIn0 = 1, kIn1 = 2, kIn2 = 4, kOut0 = 1, kOut1 = 2, kOut2 = 4;

std::vector<Tensor> softmax_backward(const GradContext& c) {
  return {eager::softmax_backward(c.grad(), c.output(0), c.attrs().get_int(0), false)};
}

std::vector<Tensor> log_softmax_backward(const GradContext& c) {
  return {eager::softmax_backward(c.grad(), c.output(0), c.attrs().get_int(0), true)};
}

// inputs (x[, weight[, bias]]), outputs (y, mean, rstd): one fused kernel (Note [Layer norm statistics]).
std::vector<Tensor> layer_norm_backward(const GradContext& c) {
  const size_t n = c.num_inputs();
  Tensor weight = n >= 2 ? c.input(1) : Tensor();
  std::vector<Tensor> g =
      eager::layer_norm_backward(c.grad(), c.input(0), c.output(1), c.output(2), weight, c.attrs().get_int(0));
  g.resize(n);
  return g;
}

// y = x @ w^T + b:  dx = g @ w,  dw = g^T @ x (leading dims folded),  db = g summed over leading dims.
std::vector<Tensor> linear_backward(const GradContext& c) {
  static const OpSchema& mm = eager::op("matmul");
  static const OpSchema& sum = eager::op("sum");
  const Tensor& g = c.grad();
  const Shape& xs = c.input_meta(0).shape;
  const int64_t rows = shape_numel(Shape(xs.begin(), xs.end() - 1));
  const int64_t out = c.input_meta(1).shape[0], in = c.input_meta(1).shape[1];
  std::vector<Tensor> grads(c.num_inputs());
  if (c.needs_grad(0)) grads[0] = eager::matmul(g, c.input(1));
  Tensor g2 = eager::reshape(g, {rows, out});
  if (c.needs_grad(1))
    grads[1] = eager::binary(mm, eager::transpose(g2, 0, 1), eager::reshape(c.input(0), {rows, in}));
  if (grads.size() == 3 && c.needs_grad(2)) grads[2] = eager::reduce(sum, g2, {0}, false);
  return grads;
}

std::vector<Tensor> embedding_backward(const GradContext& c) {
  return {eager::embedding_backward(c.grad(), c.input(1), c.input_meta(0).shape[0], c.attrs().get_int(0)), Tensor()};
}

// g * mask / (1 - p)
std::vector<Tensor> dropout_backward(const GradContext& c) {
  const double p = c.attrs().get_double(0);
  Tensor kept = binary("mul", c.grad(), eager::to_dtype(c.output(1), c.grad().dtype()));
  return {binary("mul_scalar", kept, Scalar(p < 1.0 ? 1.0 / (1.0 - p) : 0.0))};
}

// inputs (x, target[, weight]), outputs (loss, total_weight); no gradient for target or weight, as in PyTorch.
std::vector<Tensor> nll_loss_backward(const GradContext& c) {
  const size_t n = c.num_inputs();
  Tensor weight = n == 3 ? c.input(2) : Tensor();
  std::vector<Tensor> grads(n);
  grads[0] = eager::nll_loss_backward(c.grad(), c.input(1), c.output(1), weight, c.attrs().get_int(0),
                                      c.attrs().get_int(1), c.input_meta(0).shape);
  return grads;
}

}  // namespace

void register_nn_rules() {
  define_rule("softmax", {"SoftmaxBackward0", softmax_backward, 0, kOut0});
  define_rule("log_softmax", {"LogSoftmaxBackward0", log_softmax_backward, 0, kOut0});
  define_rule("layer_norm", {"NativeLayerNormBackward0", layer_norm_backward, kIn0 | kIn1, kOut1 | kOut2});
  define_rule("linear", {"AddmmBackward0", linear_backward, kIn0 | kIn1});
  define_rule("embedding", {"EmbeddingBackward0", embedding_backward, kIn1});
  define_rule("dropout", {"NativeDropoutBackward0", dropout_backward, 0, kOut1});
  define_rule("nll_loss", {"NllLossBackward0", nll_loss_backward, kIn1 | kIn2, kOut1});
  for (const char* n : {"softmax_backward", "log_softmax_backward", "layer_norm_backward", "embedding_backward",
                        "nll_loss_backward"})
    define_rule(n, {});
}

// --- the differentiable functions -------------------------------------------------------------

Tensor softmax(const Tensor& x, int64_t dim, bool log, std::optional<DType> dtype) {
  static const OpSchema& sm = eager::op("softmax");
  static const OpSchema& lsm = eager::op("log_softmax");
  Tensor in = dtype ? to_dtype(x, *dtype) : x;
  Tensor y = eager::softmax(in, dim, log);
  record(log ? lsm : sm, {&in, 1}, {}, make_attrs({dim}), {&y, 1});
  return y;
}

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  static const OpSchema& ln = eager::op("layer_norm");
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  const int64_t axis = x.ndim() - k;
  RILL_CHECK(k >= 1, Runtime, "[layer_norm] Expected normalized_shape to be at least 1-dimensional, i.e., "
             "containing at least one element, but got normalized_shape = []");
  RILL_CHECK(axis >= 0 && Shape(x.shape().begin() + axis, x.shape().end()) == normalized_shape, Runtime,
             "[layer_norm] Given normalized_shape=", shape_str(normalized_shape), ", expected input with shape [*, ",
             shape_str(normalized_shape).substr(1), ", but got input of size", shape_str(x.shape()));
  if (bias.defined() && !weight.defined()) {
    static const OpSchema& add = eager::op("add");
    return binary(add, layer_norm(x, normalized_shape, Tensor(), Tensor(), eps), bias);
  }
  std::vector<Tensor> in = {x};
  if (weight.defined()) in.push_back(weight);
  if (bias.defined()) in.push_back(bias);
  std::vector<Tensor> out = eager::layer_norm(x, axis, weight, bias, eps);
  record(ln, in, {}, make_attrs({axis, eps}), out);
  return out[0];
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  static const OpSchema& lin = eager::op("linear");
  static const OpSchema& add = eager::op("add");
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
    return bias.defined() ? binary(add, y, bias) : y;
  }
  std::vector<Tensor> in = {x, weight};
  if (bias.defined()) in.push_back(bias);
  Tensor y = eager::linear(x, weight, bias);
  record(lin, in, {}, empty_attrs(), {&y, 1}, bias.defined() ? "AddmmBackward0" : "MmBackward0");
  return y;
}

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx) {
  static const OpSchema& emb = eager::op("embedding");
  Tensor y = eager::embedding(weight, indices, padding_idx);
  Tensor in[2] = {weight, indices};
  record(emb, in, {}, make_attrs({padding_idx}), {&y, 1});
  return y;
}

Tensor dropout(const Tensor& x, double p, bool training) {
  static const OpSchema& dr = eager::op("dropout");
  RILL_CHECK(p >= 0.0 && p <= 1.0, Value, "[dropout] dropout probability has to be between 0 and 1, but got ", p);
  if (!training || p == 0.0 || x.numel() == 0) return x;
  if (!should_record({&x, 1})) return eager::dropout(x, p).first;
  auto [y, mask] = eager::dropout(x, p);
  Tensor out[2] = {y, mask};
  record(dr, {&x, 1}, {}, make_attrs({p}), out);
  return y;
}

std::pair<Tensor, Tensor> nll_loss(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t reduction,
                                   int64_t ignore_index) {
  static const OpSchema& nll = eager::op("nll_loss");
  auto [loss, total] = eager::nll_loss(x, target, weight, reduction, ignore_index);
  std::vector<Tensor> in = {x, target};
  if (weight.defined()) in.push_back(weight);
  Tensor out[2] = {loss, total};
  record(nll, in, {}, make_attrs({reduction, ignore_index}), out);
  return {loss, total};
}

}  // namespace rill::autograd
