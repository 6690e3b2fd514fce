// Gradients of the nn family (ops/nn.cpp): softmax, layer_norm, linear,
// embedding, dropout, nll_loss and _sdpa, with PyTorch's formulas. softmax, log_softmax, layer_norm and
// _sdpa have dedicated backward kernels; linear's backward is two matmuls and a sum.
#include "rill/autograd/rules.h"
#include "rill/eager/math.h"

namespace rill::autograd {
namespace {

constexpr uint32_t kIn0 = 1, kIn1 = 2, kIn2 = 4, kIn3 = 8, kOut0 = 1, kOut1 = 2, kOut2 = 4;

std::vector<Tensor> softmax_backward(const GradContext& c) {
  return {eager::softmax_backward(c.grad(), c.output(0), c.attr<int64_t>("dim"), false)};
}

std::vector<Tensor> log_softmax_backward(const GradContext& c) {
  return {eager::softmax_backward(c.grad(), c.output(0), c.attr<int64_t>("dim"), true)};
}

// inputs (x[, weight[, bias]]), outputs (y, mean, rstd): one fused kernel (Note [Layer norm statistics]).
std::vector<Tensor> layer_norm_backward(const GradContext& c) {
  const size_t n = c.num_inputs();
  Tensor weight = n >= 2 ? c.input(1) : Tensor();
  std::vector<Tensor> g =
      eager::layer_norm_backward(c.grad(), c.input(0), c.output(1), c.output(2), weight, c.attr<int64_t>("axis"));
  g.resize(n);
  return g;
}

// y = x @ w^T + b:  dx = g @ w,  dw = g^T @ x (leading dims folded),  db = g summed over leading dims.
std::vector<Tensor> linear_backward(const GradContext& c) {
  const Tensor& g = c.grad();
  const Shape& xs = c.input_meta(0).shape;
  const int64_t rows = shape_numel(Shape(xs.begin(), xs.end() - 1));
  const int64_t out = c.input_meta(1).shape[0], in = c.input_meta(1).shape[1];
  std::vector<Tensor> grads(c.num_inputs());
  if (c.needs_grad(0)) grads[0] = eager::matmul(g, c.input(1));
  Tensor g2 = eager::reshape(g, {rows, out});
  if (c.needs_grad(1))
    grads[1] = eager::matmul(eager::transpose(g2, 0, 1), eager::reshape(c.input(0), {rows, in}));
  if (grads.size() == 3 && c.needs_grad(2)) grads[2] = eager::sum(g2, {0}, false);
  return grads;
}

std::vector<Tensor> embedding_backward(const GradContext& c) {
  return {eager::embedding_backward(c.grad(), c.input(1), c.input_meta(0).shape[0], c.attr<int64_t>("padding_idx")), Tensor()};
}

// g * mask / (1 - p)
std::vector<Tensor> dropout_backward(const GradContext& c) {
  const double p = c.attr<double>("p");
  Tensor kept = eager::mul(c.grad(), eager::to_dtype(c.output(1), c.grad().dtype()));
  return {eager::mul(kept, Scalar(p < 1.0 ? 1.0 / (1.0 - p) : 0.0))};
}

// inputs (x, target[, weight]), outputs (loss, total_weight); no gradient for target or weight, as in PyTorch.
std::vector<Tensor> nll_loss_backward(const GradContext& c) {
  const size_t n = c.num_inputs();
  Tensor weight = n == 3 ? c.input(2) : Tensor();
  std::vector<Tensor> grads(n);
  grads[0] = eager::nll_loss_backward(c.grad(), c.input(1), c.output(1), weight, c.attr<int64_t>("reduction"),
                                      c.attr<int64_t>("ignore_index"), c.input_meta(0).shape);
  return grads;
}

// inputs (q, k, v[, mask]), outputs (out, lse, probs): one kernel recomputing the scores block by block from lse
// (Note [Fused attention] in kernels/cpu/attention.cpp); a float mask that needs one gets the scores' gradient.
std::vector<Tensor> sdpa_backward(const GradContext& c) {
  const bool has_mask = c.num_inputs() == 4;
  const bool mask_grad = has_mask && c.needs_grad(3);
  std::vector<Tensor> inputs = {c.grad(0), eager::contiguous(c.grad(1)), c.input(0), c.input(1), c.input(2),
                                c.output(0), c.output(1), c.output(2)};
  if (has_mask) inputs.push_back(c.input(3));
  std::vector<AttrValue> attrs = c.attrs().values;  // (scale, is_causal), then mask_grad
  attrs.push_back(mask_grad);
  std::vector<Tensor> g = eager::call(eager::op("_sdpa_backward"), inputs, {}, make_attrs(std::move(attrs)));
  g.resize(c.num_inputs());
  if (has_mask && !mask_grad) g[3] = Tensor();
  return g;
}

}  // namespace

void register_nn_rules() {
  define_rule("softmax", {"SoftmaxBackward0", softmax_backward, 0, kOut0});
  define_rule("log_softmax", {"LogSoftmaxBackward0", log_softmax_backward, 0, kOut0});
  define_rule("layer_norm", {"NativeLayerNormBackward0", layer_norm_backward, kIn0 | kIn1, kOut1 | kOut2});
  define_rule("linear", {"AddmmBackward0", linear_backward, kIn0 | kIn1, 0, [](const GradContext& c) {
                 return c.num_inputs() == 3 ? "AddmmBackward0" : "MmBackward0";
               }});
  define_rule("embedding", {"EmbeddingBackward0", embedding_backward, kIn1});
  define_rule("dropout", {"NativeDropoutBackward0", dropout_backward, 0, kOut1});
  define_rule("nll_loss", {"NllLossBackward0", nll_loss_backward, kIn1 | kIn2, kOut1});
  define_rule("_sdpa", {"ScaledDotProductFlashAttentionForCpuBackward0", sdpa_backward, kIn0 | kIn1 | kIn2 | kIn3,
                        kOut0 | kOut1 | kOut2});
  for (const char* n : {"softmax_backward", "log_softmax_backward", "layer_norm_backward", "embedding_backward",
                        "nll_loss_backward", "_sdpa_backward"})
    define_rule(n, {});
}

}  // namespace rill::autograd
