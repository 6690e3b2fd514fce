// Gradients of the nn family (ops/nn.cpp): softmax, layer_norm, linear,
// embedding, dropout, nll_loss and _sdpa, with PyTorch's formulas. softmax, log_softmax, layer_norm and
// _sdpa have dedicated backward kernels; linear's backward is two matmuls and a sum.
#include <limits>

#include "rill/autograd/engine.h"
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

// softmax_backward(g, y) = y (g - sum(g y)), for create_graph (Note [Gradients of gradients] in rules.h).
std::vector<Tensor> softmax_backward_backward(const GradContext& c) {
  const int64_t dim = c.attr<int64_t>("dim");
  const Tensor &gg = c.grad(), g = c.input(0), y = c.input(1);
  std::vector<Tensor> out(2);
  if (c.needs_grad(0)) out[0] = eager::softmax_backward(gg, y, dim, false);
  if (c.needs_grad(1))
    out[1] = eager::sub(eager::mul(gg, eager::sub(g, eager::sum(eager::mul(g, y), {dim}, true))),
                        eager::mul(g, eager::sum(eager::mul(gg, y), {dim}, true)));
  return out;
}

// log_softmax_backward(g, y) = g - exp(y) sum(g), for create_graph.
std::vector<Tensor> log_softmax_backward_backward(const GradContext& c) {
  const int64_t dim = c.attr<int64_t>("dim");
  const Tensor &gg = c.grad(), g = c.input(0);
  Tensor p = eager::exp(c.input(1));
  std::vector<Tensor> out(2);
  if (c.needs_grad(0)) out[0] = eager::sub(gg, eager::sum(eager::mul(gg, p), {dim}, true));
  if (c.needs_grad(1)) out[1] = eager::neg(eager::mul(eager::mul(gg, p), eager::sum(g, {dim}, true)));
  return out;
}

// nll_loss_backward is linear in its gradient: its own gradient is nll_loss of gg (the same reduction and
// total weight), for create_graph. Inputs (grad, target, total_weight[, weight]).
std::vector<Tensor> nll_loss_backward_backward(const GradContext& c) {
  const size_t n = c.num_inputs();
  std::vector<Tensor> out(n);
  if (c.needs_grad(0)) {
    Tensor weight = n == 4 ? c.input(3) : Tensor();
    out[0] = eager::nll_loss(c.grad(), c.input(1), weight, c.attr<int64_t>("reduction"),
                             c.attr<int64_t>("ignore_index")).first;
  }
  return out;
}

// layer_norm's gradients in differentiable ops, the statistics recomputed from x, for create_graph: with
// xhat = (x - mean) rstd and gx = g weight, dx = rstd (gx - mean(gx) - xhat mean(gx xhat)).
std::vector<Tensor> layer_norm_backward_composite(const GradContext& c) {
  using namespace eager;
  const size_t n = c.num_inputs();
  const Tensor x = c.input(0), &g = c.grad();
  const int64_t axis = c.attr<int64_t>("axis");
  std::vector<int64_t> dims, lead;
  for (int64_t d = 0; d < static_cast<int64_t>(x.shape().size()); ++d) (d < axis ? lead : dims).push_back(d);
  Tensor centred = sub(x, mean(x, dims, true));
  Tensor rstd = unary(op("rsqrt"), add(mean(mul(centred, centred), dims, true), Scalar(c.attr<double>("eps"))));
  Tensor xhat = mul(centred, rstd);
  Tensor gx = n >= 2 ? mul(g, c.input(1)) : g;
  std::vector<Tensor> out(n);
  if (c.needs_grad(0))
    out[0] = mul(rstd, sub(sub(gx, mean(gx, dims, true)), mul(xhat, mean(mul(gx, xhat), dims, true))));
  if (n >= 2 && c.needs_grad(1)) out[1] = lead.empty() ? mul(g, xhat) : sum(mul(g, xhat), lead, false);
  if (n >= 3 && c.needs_grad(2)) out[2] = lead.empty() ? g : sum(g, lead, false);
  return out;
}

// embedding_backward sums rows of its gradient; its own gradient takes rows of gg (none for padding_idx), for
// create_graph.
std::vector<Tensor> embedding_backward_backward(const GradContext& c) {
  const Tensor& indices = c.input(1);
  Tensor rows = eager::embedding(c.grad(), indices, -1);
  const int64_t padding_idx = c.attr<int64_t>("padding_idx");
  if (padding_idx >= 0) {
    Tensor keep = eager::to_dtype(eager::unsqueeze(eager::ne(indices, Scalar(padding_idx)), -1), rows.dtype());
    rows = eager::mul(rows, keep);
  }
  return {rows, Tensor()};
}

// inputs (x[, weight[, bias]]), outputs (y, mean, rstd): one fused kernel (Note [Layer norm statistics]).
std::vector<Tensor> layer_norm_backward(const GradContext& c) {
  if (creating_graph()) return layer_norm_backward_composite(c);
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
// The same gradients in differentiable ops, the probabilities recomputed from q and k, for create_graph
// (Note [Gradients of gradients] in rules.h): with s = scale q k^T (+ mask), p = softmax(s),
// dv = p^T g, dp = g v^T, ds = p (dp - rowsum(dp p)) + g_lse p, dq = scale ds k, dk = scale ds^T q, dmask = ds.
std::vector<Tensor> sdpa_backward_composite(const GradContext& c) {
  using namespace eager;
  const bool has_mask = c.num_inputs() == 4;
  const double scale = c.attr<double>("scale");
  Tensor q = c.input(0), k = c.input(1), v = c.input(2);
  auto mT = [](const Tensor& t) { return transpose(t, t.ndim() - 2, t.ndim() - 1); };
  Tensor s = mul(matmul(q, mT(k)), Scalar(scale));
  const int64_t L = s.shape()[s.ndim() - 2], S = s.shape()[s.ndim() - 1];
  Tensor minus_inf = full({}, Scalar(-std::numeric_limits<double>::infinity()), s.dtype());
  if (c.attr<bool>("is_causal")) {
    Tensor keep = ge(reshape(arange(Scalar(int64_t{0}), Scalar(L), Scalar(int64_t{1}), DType::kInt64), {L, 1}),
                     reshape(arange(Scalar(int64_t{0}), Scalar(S), Scalar(int64_t{1}), DType::kInt64), {1, S}));
    s = where(keep, s, minus_inf);
  }
  if (has_mask) {
    Tensor mask = c.input(3);
    s = mask.dtype() == DType::kBool ? where(mask, s, minus_inf) : add(s, mask);
  }
  const int64_t last = s.ndim() - 1;
  Tensor p = softmax(s, last, false);
  p = where(eq(s, minus_inf), zeros(p.shape(), p.dtype()), p);  // a row with every key masked: 0, not NaN
  const Tensor& g = c.grad(0);
  Tensor dp = matmul(g, mT(v));
  Tensor ds = mul(p, sub(dp, sum(mul(dp, p), {last}, true)));
  ds = add(ds, mul(unsqueeze(c.grad(1), c.grad(1).ndim()), p));
  std::vector<Tensor> out(c.num_inputs());
  if (c.needs_grad(0)) out[0] = mul(matmul(ds, k), Scalar(scale));
  if (c.needs_grad(1)) out[1] = mul(matmul(mT(ds), q), Scalar(scale));
  if (c.needs_grad(2)) out[2] = matmul(mT(p), g);
  if (has_mask && c.input_meta(3).dtype != DType::kBool && c.needs_grad(3)) out[3] = ds;
  return out;
}

std::vector<Tensor> sdpa_backward(const GradContext& c) {
  if (creating_graph()) return sdpa_backward_composite(c);
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
  define_rule("softmax_backward", {"SoftmaxBackwardDataBackward0", softmax_backward_backward, kIn0 | kIn1});
  define_rule("log_softmax_backward", {"LogSoftmaxBackwardDataBackward0", log_softmax_backward_backward,
                                       kIn0 | kIn1});
  define_rule("nll_loss_backward", {"NllLossBackwardBackward0", nll_loss_backward_backward, kIn1 | kIn3});
  define_rule("linear", {"AddmmBackward0", linear_backward, kIn0 | kIn1, 0, [](const GradContext& c) {
                 return c.num_inputs() == 3 ? "AddmmBackward0" : "MmBackward0";
               }});
  define_rule("embedding", {"EmbeddingBackward0", embedding_backward, kIn1});
  define_rule("dropout", {"NativeDropoutBackward0", dropout_backward, 0, kOut1});
  define_rule("nll_loss", {"NllLossBackward0", nll_loss_backward, kIn1 | kIn2, kOut1});
  define_rule("_sdpa", {"ScaledDotProductFlashAttentionForCpuBackward0", sdpa_backward, kIn0 | kIn1 | kIn2 | kIn3,
                        kOut0 | kOut1 | kOut2});
  define_rule("embedding_backward", {"EmbeddingBackwardBackward0", embedding_backward_backward, kIn1});
  for (const char* n : {"layer_norm_backward", "_sdpa_backward"})
    define_rule(n, {});
}

}  // namespace rill::autograd
