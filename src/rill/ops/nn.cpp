// The nn family (torch.nn.functional's ops with dedicated kernels): softmax and
// log_softmax, layer_norm, linear, embedding, dropout and nll_loss, each with
// the op its backward runs. Composite functions (cross_entropy, the other
// losses, batch_norm, group_norm, pad, interpolate) are built from these and the
// other families in eager/nn.cpp and python/rill/nn/functional.py; attention is
// one fused op (_sdpa, kernels/cpu/attention.cpp) where it applies, else composed.
// Kernels read dense inputs: the eager functions pass contiguous tensors.
//
// Attrs, by op:
//   softmax, log_softmax                    [dim: int]            inputs (x)
//   softmax_backward, log_softmax_backward  [dim: int]            inputs (grad, y)   y: the forward's output
//   layer_norm           [axis: int, eps: double]   inputs (x[, weight[, bias]]) -> (y, mean, rstd)
//                        axis: the first normalized dim; mean/rstd: x.shape[:axis] + 1s, in opmath dtype.
//   layer_norm_backward  [axis: int]                inputs (grad, x, mean, rstd[, weight]) -> (dx, dweight, dbias)
//   linear               []                         inputs (x, weight[, bias]): x @ weight^T + bias
//   _linear_activation   [activation: str, approximate: str]   inputs (x, weight[, bias]): act(x @ weight^T + bias),
//                        float32; act one of kFusedActivations (approximate: gelu's). Graph mode's fusion of
//                        a linear and the activation that alone reads it (graph/passes/fuse_activation.cpp).
//   embedding            [padding_idx: int]         inputs (weight, indices) -> weight[indices]
//   embedding_backward   [num_weights: int, padding_idx: int]   inputs (grad, indices) -> dweight
//   dropout              [p: double]   scalars (seed, offset)   inputs (x) -> (y, mask: bool)
//   nll_loss             [reduction: int, ignore_index: int]    inputs (logp, target[, weight])
//                        -> (loss, total_weight); reduction 0 none, 1 mean, 2 sum.
//   nll_loss_backward    [reduction: int, ignore_index: int, shape: ints]
//                        inputs (grad, target, total_weight[, weight]) -> dlogp of shape
//   _sdpa                [scale: double, is_causal: bool]   inputs (q, k, v[, mask]) -> (out, lse)
//                        q (..., L, E), k (..., S, E), v (..., S, Ev) with the same leading dims, any strides;
//                        mask bool (True = keep) or additive in q's dtype, broadcastable to (..., L, S);
//                        lse (..., L): each row's log-sum-exp of its scores (-inf where every key is masked);
//                        probs (..., L, S) when S <= kSavedProbsKeys, else empty: softmax's output, saved for
//                        backward (neither lse nor probs carries a gradient back).
//   _sdpa_backward       [scale: double, is_causal: bool, mask_grad: bool]
//                        inputs (grad, grad_lse, q, k, v, out, lse, probs[, mask]) -> (dq, dk, dv, dmask);
//                        grad_lse dense; dmask (..., L, S) when mask_grad (a float mask's gradient), else empty.
#include <string>

#include "rill/ops/fused_activation.h"
#include "rill/ops/op_schema.h"

namespace rill {
namespace {

MetaSym dense(const Shape& shape, DType dtype, const MetaSym& like) {
  return make_contiguous_meta(shape, dtype, like->device);
}

void check_floating(const TensorMeta& x, const std::string& op, const char* what = "input") {
  RILL_CHECK(dtype_is_floating(x.dtype), Runtime, "[", op, "] expected a floating-point ", what, ", got ",
             dtype_name(x.dtype), "; convert it with .float()");
}

void check_same_dtype(const TensorMeta& a, const TensorMeta& b, const std::string& op, const char* what) {
  RILL_CHECK(a.dtype == b.dtype, Runtime, "[", op, "] expected ", what, " to have the input's dtype ",
             dtype_name(a.dtype), ", got ", dtype_name(b.dtype), "; convert it with .to(", dtype_name(a.dtype), ")");
}

// The dtype mean and rstd are kept in: float for the 16-bit floats.
DType opmath_dtype(DType t) { return t == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32; }

InferResult infer_softmax(const InferContext& c) {
  const TensorMeta& x = *c.inputs[0];
  check_floating(x, c.op.name);
  normalize_dim(c.attrs.get_int(0), x.ndim(), c.op.name.c_str());
  return {{dense(x.shape, x.dtype, c.inputs[0])}, {}};
}

InferResult infer_softmax_backward(const InferContext& c) {
  const TensorMeta& y = *c.inputs[1];
  return {{dense(y.shape, y.dtype, c.inputs[1])}, {y.dtype, y.dtype}};
}

InferResult infer_layer_norm(const InferContext& c) {
  const TensorMeta& x = *c.inputs[0];
  check_floating(x, "layer_norm");
  const int64_t axis = c.attrs.get_int(0);
  Shape normalized(x.shape.begin() + axis, x.shape.end());
  for (size_t i = 1; i < c.inputs.size(); ++i) {
    const TensorMeta& p = *c.inputs[i];
    RILL_CHECK(p.shape == normalized, Runtime, "[layer_norm] expected ", i == 1 ? "weight" : "bias",
               " of shape ", shape_str(normalized), " (normalized_shape), got ", shape_str(p.shape));
    check_same_dtype(x, p, "layer_norm", i == 1 ? "weight" : "bias");
  }
  Shape stats(x.shape.begin(), x.shape.begin() + axis);
  stats.resize(x.shape.size(), 1);
  const DType t = opmath_dtype(x.dtype);
  return {{dense(x.shape, x.dtype, c.inputs[0]), dense(stats, t, c.inputs[0]), dense(stats, t, c.inputs[0])}, {}};
}

InferResult infer_layer_norm_backward(const InferContext& c) {
  const TensorMeta& x = *c.inputs[1];
  Shape normalized(x.shape.begin() + c.attrs.get_int(0), x.shape.end());
  std::vector<DType> casts = {x.dtype, x.dtype, opmath_dtype(x.dtype), opmath_dtype(x.dtype)};
  casts.resize(c.inputs.size(), x.dtype);  // the weight, when given
  return {{dense(x.shape, x.dtype, c.inputs[1]), dense(normalized, x.dtype, c.inputs[1]),
           dense(normalized, x.dtype, c.inputs[1])},
          casts};
}

InferResult infer_linear(const InferContext& c) {
  const TensorMeta& x = *c.inputs[0];
  const TensorMeta& w = *c.inputs[1];
  RILL_CHECK(x.ndim() >= 1, Runtime, "[linear] expected an input of at least 1 dim, got a 0-dim tensor");
  RILL_CHECK(w.ndim() == 2, Runtime, "[linear] expected a 2-D weight (out_features, in_features), got shape ",
             shape_str(w.shape));
  RILL_CHECK(x.shape.back() == w.shape[1], Runtime, "[linear] mat1 and mat2 shapes cannot be multiplied (",
             x.numel / (x.shape.back() == 0 ? 1 : x.shape.back()), "x", x.shape.back(), " and ", w.shape[1], "x",
             w.shape[0], ")");
  check_same_dtype(x, w, "linear", "weight");
  if (c.inputs.size() == 3) {
    const TensorMeta& b = *c.inputs[2];
    RILL_CHECK(b.shape == Shape{w.shape[0]}, Runtime, "[linear] expected a bias of shape [", w.shape[0],
               "], got ", shape_str(b.shape));
    check_same_dtype(x, b, "linear", "bias");
  }
  RILL_CHECK(x.dtype == DType::kFloat32 || x.dtype == DType::kFloat64, NotImplemented,
             "[linear] the fused op takes float32 or float64; other dtypes go through matmul");
  Shape out = x.shape;
  out.back() = w.shape[0];
  return {{dense(out, x.dtype, c.inputs[0])}, {}};
}

InferResult infer_linear_activation(const InferContext& c) {
  ops::check_fused_activation(c);
  return infer_linear(c);
}

InferResult infer_embedding(const InferContext& c) {
  const TensorMeta& w = *c.inputs[0];
  const TensorMeta& idx = *c.inputs[1];
  RILL_CHECK(w.ndim() == 2, Runtime, "[embedding] 'weight' must be 2-D, got shape ", shape_str(w.shape));
  RILL_CHECK(idx.dtype == DType::kInt64 || idx.dtype == DType::kInt32, Runtime,
             "[embedding] Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, "
             "Int; but got ", dtype_name(idx.dtype), " instead; convert the indices with .long()");
  Shape out = idx.shape;
  out.push_back(w.shape[1]);
  return {{dense(out, w.dtype, c.inputs[0])}, {}};
}

InferResult infer_embedding_backward(const InferContext& c) {
  const TensorMeta& g = *c.inputs[0];
  return {{dense({c.attrs.get_int(0), g.shape.back()}, g.dtype, c.inputs[0])}, {}};
}

InferResult infer_dropout(const InferContext& c) {
  const TensorMeta& x = *c.inputs[0];
  check_floating(x, "dropout");
  return {{dense(x.shape, x.dtype, c.inputs[0]), dense(x.shape, DType::kBool, c.inputs[0])}, {}};
}

InferResult infer_nll_loss(const InferContext& c) {
  const TensorMeta& x = *c.inputs[0];
  const TensorMeta& t = *c.inputs[1];
  check_floating(x, "nll_loss");
  RILL_CHECK(x.ndim() >= 1, Runtime, "[nll_loss] expected an input of 1 or more dims, got 0");
  RILL_CHECK(t.dtype == DType::kInt64, Runtime, "[nll_loss] expected target dtype to be Long, but got ",
             dtype_name(t.dtype), "; class-index targets must be int64 (convert them with .long())");
  // input (C) with target (), or (N, C, d...) with target (N, d...).
  if (x.ndim() <= 2) {
    RILL_CHECK(t.ndim() == x.ndim() - 1, Runtime, "[nll_loss] expected a target of ", x.ndim() - 1,
               " dims for an input of ", x.ndim(), ", got shape ", shape_str(t.shape));
    RILL_CHECK(x.ndim() == 1 || x.shape[0] == t.shape[0], Value, "[nll_loss] Expected input batch_size (",
               x.shape[0], ") to match target batch_size (", t.ndim() ? t.shape[0] : 0, ").");
  } else {
    Shape expect = {x.shape[0]};
    expect.insert(expect.end(), x.shape.begin() + 2, x.shape.end());
    RILL_CHECK(t.shape == expect, Runtime, "[nll_loss] Expected target size ", shape_str(expect), ", got ",
               shape_str(t.shape));
  }
  const int64_t classes = x.ndim() == 1 ? x.shape[0] : x.shape[1];
  if (c.inputs.size() == 3) {
    const TensorMeta& w = *c.inputs[2];
    RILL_CHECK(w.ndim() == 1 && w.shape[0] == classes, Runtime, "[nll_loss] weight tensor should be defined "
               "either for all ", classes, " classes or no classes but got weight tensor of shape: ",
               shape_str(w.shape));
    check_same_dtype(x, w, "nll_loss", "weight");
  }
  const int64_t reduction = c.attrs.get_int(0);
  Shape out = reduction == 0 ? t.shape : Shape{};
  return {{dense(out, x.dtype, c.inputs[0]), dense({}, x.dtype, c.inputs[0])}, {}};
}

InferResult infer_nll_loss_backward(const InferContext& c) {
  const TensorMeta& g = *c.inputs[0];
  return {{dense(c.attrs.get_ints(2), g.dtype, c.inputs[0])}, {}};
}

// The most keys for which _sdpa saves its probabilities for backward: the kernel's block of keys
// (kBlockCols in kernels/cpu/attention.cpp, Note [Fused attention]).
constexpr int64_t kSavedProbsKeys = 128;

// The leading dims of an attention operand (all but its last two).
Shape batch_dims(const TensorMeta& t) { return Shape(t.shape.begin(), t.shape.end() - 2); }

void check_attention_operand(const TensorMeta& t, const TensorMeta& q, const char* what) {
  RILL_CHECK(t.ndim() >= 2, Runtime, "[_sdpa] expected ", what, " of at least 2 dims (..., length, features), "
             "got shape ", shape_str(t.shape));
  RILL_CHECK(t.dtype == DType::kFloat32 || t.dtype == DType::kFloat64, NotImplemented, "[_sdpa] the fused op "
             "takes float32 or float64, got ", dtype_name(t.dtype), "; scaled_dot_product_attention computes "
             "other dtypes with matmul and softmax");
  check_same_dtype(q, t, "_sdpa", what);
  RILL_CHECK(batch_dims(t) == batch_dims(q), Runtime, "[_sdpa] expected ", what, " with the query's leading dims ",
             shape_str(batch_dims(q)), ", got shape ", shape_str(t.shape), "; scaled_dot_product_attention "
             "broadcasts them");
}

InferResult infer_sdpa(const InferContext& c) {
  const TensorMeta& q = *c.inputs[0];
  const TensorMeta& k = *c.inputs[1];
  const TensorMeta& v = *c.inputs[2];
  check_attention_operand(q, q, "query");
  check_attention_operand(k, q, "key");
  check_attention_operand(v, q, "value");
  RILL_CHECK(k.shape.back() == q.shape.back(), Runtime, "[_sdpa] expected a key with the query's ",
             q.shape.back(), " features, got shape ", shape_str(k.shape));
  const int64_t length = q.shape[q.shape.size() - 2], source = k.shape[k.shape.size() - 2];
  RILL_CHECK(v.shape[v.shape.size() - 2] == source, Runtime, "[_sdpa] expected a value with the key's ", source,
             " positions, got shape ", shape_str(v.shape));
  std::vector<DType> casts = {q.dtype, q.dtype, q.dtype};
  Shape scores = batch_dims(q);
  scores.push_back(length);
  scores.push_back(source);
  if (c.inputs.size() == 4) {
    const TensorMeta& m = *c.inputs[3];
    RILL_CHECK(!c.attr<bool>("is_causal"), Runtime, "[_sdpa] Explicit attn_mask should not be set when "
               "is_causal=True");
    RILL_CHECK(m.dtype == DType::kBool || m.dtype == q.dtype, Runtime, "[_sdpa] expected a bool attn_mask or "
               "one of the query's dtype ", dtype_name(q.dtype), ", got ", dtype_name(m.dtype), "; convert it "
               "with .to(", dtype_name(q.dtype), ")");
    RILL_CHECK(broadcast_shapes(m.shape, scores, "_sdpa") == scores, Runtime, "[_sdpa] expected an attn_mask "
               "broadcastable to ", shape_str(scores), ", got shape ", shape_str(m.shape));
    casts.push_back(m.dtype);
  }
  Shape out = batch_dims(q), lse = batch_dims(q);
  out.push_back(length);
  out.push_back(v.shape.back());
  lse.push_back(length);
  const Shape probs = source <= kSavedProbsKeys ? scores : Shape{0};
  return {{dense(out, q.dtype, c.inputs[0]), dense(lse, q.dtype, c.inputs[0]), dense(probs, q.dtype, c.inputs[0])},
          casts};
}

InferResult infer_sdpa_backward(const InferContext& c) {
  const TensorMeta& q = *c.inputs[2];
  const TensorMeta& k = *c.inputs[3];
  std::vector<DType> casts(8, q.dtype);
  Shape scores = {0};
  if (c.attr<bool>("mask_grad")) {
    scores = batch_dims(q);
    scores.push_back(q.shape[q.shape.size() - 2]);
    scores.push_back(k.shape[k.shape.size() - 2]);
  }
  if (c.inputs.size() == 9) casts.push_back(c.inputs[8]->dtype);
  return {{dense(q.shape, q.dtype, c.inputs[2]), dense(k.shape, q.dtype, c.inputs[2]),
           dense(c.inputs[4]->shape, q.dtype, c.inputs[2]), dense(scores, q.dtype, c.inputs[2])},
          casts};
}

// input [..., k] @ weight[n, k].T + bias[n]: as matmul's rule, weight's rows being the product's columns; where
// the product is a summand, bias is too (one rank adds it).
std::vector<SbpSignature> sbp_linear(const SbpContext& c) {
  const int32_t last = static_cast<int32_t>(c.inputs[0]->ndim() - 1);
  const bool bias = c.inputs.size() == 3;
  const Sbp B = Sbp::broadcast(), P = Sbp::partial_sum();
  auto sig = [&](Sbp x, Sbp w, Sbp b, Sbp y) {
    SbpSignature s{{x, w}, {y}};
    if (bias) s.in.push_back(b);
    return s;
  };
  std::vector<SbpSignature> out;
  for (int32_t i = 0; i < last; ++i) out.push_back(sig(Sbp::split(i), B, B, Sbp::split(i)));
  out.push_back(sig(B, Sbp::split(0), Sbp::split(0), Sbp::split(last)));
  out.push_back(sig(Sbp::split(last), Sbp::split(1), P, P));
  out.push_back(sig(P, B, P, P));
  return out;
}

// linear's signatures but those with a partial-sum output: an activation of a summand is not a summand.
std::vector<SbpSignature> sbp_linear_activation(const SbpContext& c) {
  std::vector<SbpSignature> out;
  for (SbpSignature& s : sbp_linear(c))
    if (!s.out[0].is_partial()) out.push_back(std::move(s));
  return out;
}

// Rows (the dims before axis) are normalised alone: split alike, the weight and bias whole; their gradients sum
// over the rows, so a row split gives each rank a summand of them.
std::vector<SbpSignature> sbp_layer_norm(const SbpContext& c) {
  const int64_t axis = c.attr<int64_t>("axis");
  const bool backward = c.op.name == "layer_norm_backward";
  const size_t rows = backward ? 4 : 1;  // the row-shaped inputs: grad, input, mean, rstd; or input
  std::vector<SbpSignature> out;
  for (int32_t k = 0; k < axis; ++k) {
    SbpSignature s;
    for (size_t i = 0; i < c.inputs.size(); ++i) s.in.push_back(i < rows ? Sbp::split(k) : Sbp::broadcast());
    s.out = backward ? std::vector<Sbp>{Sbp::split(k), Sbp::partial_sum(), Sbp::partial_sum()}
                     : std::vector<Sbp>(3, Sbp::split(k));
    out.push_back(std::move(s));
  }
  return out;
}

// An embedding looks each index up alone: split indices, whole table, split rows out; its gradient sums the
// rows' gradients into the table, so each rank has a summand of it.
std::vector<SbpSignature> sbp_embedding(const SbpContext& c) {
  std::vector<SbpSignature> out;
  const bool backward = c.op.name == "embedding_backward";
  const int64_t ndim = c.inputs[1]->ndim();
  for (int32_t k = 0; k < ndim; ++k) {
    if (backward) out.push_back({{Sbp::split(k), Sbp::split(k)}, {Sbp::partial_sum()}});
    else out.push_back({{Sbp::broadcast(), Sbp::split(k)}, {Sbp::split(k)}});
  }
  return out;
}

// Along any axis but the normalised one, every input split alike.
std::vector<SbpSignature> sbp_softmax(const SbpContext& c) {
  const int64_t ndim = c.inputs[0]->ndim();
  int64_t dim = c.attr<int64_t>("dim");
  if (dim < 0) dim += ndim;
  std::vector<SbpSignature> out;
  for (int32_t k = 0; k < ndim; ++k)
    if (k != dim) out.push_back({std::vector<Sbp>(c.inputs.size(), Sbp::split(k)), {Sbp::split(k)}});
  return out;
}

// The gradient of a mean or sum over the batch: grad_output and total_weight are the whole batch's, so the rows
// of target give the rows of the gradient.
std::vector<SbpSignature> sbp_nll_loss_backward(const SbpContext& c) {
  if (c.attr<int64_t>("reduction") == 0) return {};
  SbpSignature s;
  s.in.assign(c.inputs.size(), Sbp::broadcast());
  s.in[1] = Sbp::split(0);
  s.out = {Sbp::split(0)};
  return {s};
}

AttrsSym local_nll_loss_backward(const SbpContext& c, const SbpSignature& sig, int64_t n) {
  std::vector<AttrValue> values = c.attrs.values;
  auto& shape = std::get<std::vector<int64_t>>(values[c.op.attr_index("shape")]);
  if (sig.out[0].is_split()) shape[0] /= n;
  return make_attrs(std::move(values));
}

}  // namespace

void register_nn_ops() {
  const OpFlags k;
  for (const char* n : {"softmax", "log_softmax"}) {
    ops::define(std::string(n) + "(Tensor self, int dim) -> Tensor", infer_softmax, k, "normalised exponentials")
        .sbp = sbp_softmax;
    ops::define(std::string(n) + "_backward(Tensor grad_output, Tensor output, int dim) -> Tensor",
                infer_softmax_backward, k, "").sbp = sbp_softmax;
  }
  ops::define("layer_norm(Tensor input, Tensor? weight, Tensor? bias, int axis, float eps) -> "
              "(Tensor output, Tensor mean, Tensor rstd)", infer_layer_norm, k,
              "normalised over the dims from axis on").sbp = sbp_layer_norm;
  ops::define("layer_norm_backward(Tensor grad_output, Tensor input, Tensor mean, Tensor rstd, Tensor? weight, "
              "int axis) -> (Tensor, Tensor, Tensor)", infer_layer_norm_backward, k, "").sbp = sbp_layer_norm;
  ops::define("linear(Tensor input, Tensor weight, Tensor? bias) -> Tensor", infer_linear, k, "x @ weight.T + bias")
      .sbp = sbp_linear;
  ops::define("_linear_activation(Tensor input, Tensor weight, Tensor? bias, *, str activation, "
              "str approximate=\"none\") -> Tensor",
              infer_linear_activation, {.function = true, .differentiable = false}, "activation(x @ weight.T + bias), in one kernel")
      .sbp = sbp_linear_activation;
  ops::define("embedding(Tensor weight, Tensor indices, int padding_idx) -> Tensor", infer_embedding, k,
              "rows of weight").sbp = sbp_embedding;
  ops::define("embedding_backward(Tensor grad_output, Tensor indices, int num_weights, int padding_idx) -> Tensor",
              infer_embedding_backward, k, "").sbp = sbp_embedding;
  ops::define("dropout(Tensor input, Scalar seed, Scalar offset, float p) -> (Tensor output, Tensor mask)",
              infer_dropout, {.random = true},
              "zeroes elements with probability p, scaling the others by 1 / (1 - p)");
  // reduction: 0 none, 1 mean, 2 sum.
  ops::define("nll_loss(Tensor input, Tensor target, Tensor? weight, int reduction, int ignore_index) -> "
              "(Tensor output, Tensor total_weight)", infer_nll_loss, k, "negative log likelihood");
  OpSchema& nll_backward = ops::define("nll_loss_backward(Tensor grad_output, Tensor target, Tensor? weight, "
                                       "Tensor total_weight, int reduction, int ignore_index, int[] shape) -> Tensor",
                                       infer_nll_loss_backward, k, "");
  nll_backward.sbp = sbp_nll_loss_backward;
  nll_backward.local_attrs = local_nll_loss_backward;
  ops::define("_sdpa(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, float scale, bool is_causal) -> "
              "(Tensor output, Tensor lse, Tensor probs)", infer_sdpa, {.function = true},
              "softmax(query @ key^T * scale + mask) @ value in one pass over key blocks (Note [Fused attention])");
  ops::define("_sdpa_backward(Tensor grad_output, Tensor grad_lse, Tensor query, Tensor key, Tensor value, "
              "Tensor output, Tensor lse, Tensor probs, Tensor? attn_mask, float scale, bool is_causal, "
              "bool mask_grad) -> (Tensor grad_query, Tensor grad_key, Tensor grad_value, Tensor grad_mask)",
              infer_sdpa_backward, k, "");
}

}  // namespace rill
