// The nn ops in the functional API (schemas and attrs in ops/nn.cpp): each
// function makes its inputs dense, as the kernels expect, builds the attrs and
// calls the op. Argument checks that need more than metas live here too.
#include "rill/eager/functional.h"

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

Tensor softmax(const Tensor& x, int64_t dim, bool log) {
  static const OpSchema& sm = op("softmax");
  static const OpSchema& lsm = op("log_softmax");
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

std::vector<Tensor> layer_norm(const Tensor& x, int64_t axis, const Tensor& weight, const Tensor& bias, double eps) {
  static const OpSchema& ln = op("layer_norm");
  RILL_CHECK(!bias.defined() || weight.defined(), Value, "[layer_norm] a bias without a weight is not supported "
             "here; pass weight=ones");
  std::vector<Tensor> in = dense_inputs({&x, &weight, &bias});
  return call(ln, in, {}, make_attrs({axis, eps}));
}

std::vector<Tensor> layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                        const Tensor& weight, int64_t axis) {
  static const OpSchema& lnb = op("layer_norm_backward");
  std::vector<Tensor> in = dense_inputs({&grad, &x, &mean, &rstd, &weight});
  return call(lnb, in, {}, make_attrs({axis}));
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  static const OpSchema& lin = op("linear");
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

std::pair<Tensor, Tensor> dropout(const Tensor& x, double p) {
  static const OpSchema& dr = op("dropout");
  RILL_CHECK(p >= 0.0 && p <= 1.0, Value, "[dropout] dropout probability has to be between 0 and 1, but got ", p);
  Tensor in = contiguous(x);
  auto [seed, offset] = take_random(x.numel());
  Scalar s[2] = {seed, offset};
  std::vector<Tensor> out = call(dr, {&in, 1}, s, make_attrs({p}));
  return {out[0], out[1]};
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
