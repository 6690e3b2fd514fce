// Gradient rules of the reductions and scans (ops/reduce.cpp). The output gradient
// is broadcast back over the reduced dims; amax/amin and max/min over all elements
// split it evenly among tied extremes, max/min along a dim route it to the
// returned index (as PyTorch does). prod and cumprod stay exact with zeros in the
// input; norm follows PyTorch's linalg_vector_norm_backward (zero at a zero vector).
#include <cmath>

#include "rill/autograd/engine.h"
#include "rill/autograd/rules.h"
#include "rill/eager/math.h"
#include "rill/ops/reduce.h"

namespace rill::autograd {
namespace {

constexpr uint32_t kIn0 = 1, kOut0 = 1, kOut1 = 2;

// g (the reduced shape) viewed with the reduced dims as size 1, then expanded to the input's shape.
Tensor restore(const Tensor& g, const TensorMeta& in, std::vector<int64_t> dims, bool keepdim) {
  const int64_t n = in.ndim();
  if (dims.empty())
    for (int64_t d = 0; d < n; ++d) dims.push_back(d);
  Tensor r = g;
  if (!keepdim && n > 0) {
    Shape kept = in.shape;
    for (int64_t d : dims) kept[normalize_dim(d, n, "backward")] = 1;
    r = eager::reshape(r, kept);
  }
  return eager::expand(r, in.shape);
}

// The dims a reduction's `int[1]? dim` names: None reads as empty, every dim.
const std::vector<int64_t>& reduced_dims(const GradContext& c) {
  static const std::vector<int64_t> kEvery;
  const auto* dims = optional_attr_of<std::vector<int64_t>>(c.op(), c.attrs(), "dim");
  return dims ? *dims : kEvery;
}

// Elements reduced into each output element.
int64_t reduced_count(const TensorMeta& in, const std::vector<int64_t>& dims) {
  if (dims.empty()) return in.numel;
  int64_t count = 1;
  for (int64_t d : dims) count *= in.ndim() == 0 ? 1 : in.shape[normalize_dim(d, in.ndim(), "backward")];
  return count;
}

std::vector<Tensor> sum_backward(const GradContext& c) {
  return {restore(c.grad(), c.input_meta(0), reduced_dims(c), c.attr<bool>("keepdim"))};
}

std::vector<Tensor> mean_backward(const GradContext& c) {
  const std::vector<int64_t>& dims = reduced_dims(c);
  Tensor g = eager::div(c.grad(), Scalar(reduced_count(c.input_meta(0), dims)));
  return {restore(g, c.input_meta(0), dims, c.attr<bool>("keepdim"))};
}

// amax, amin, max(), min(): the gradient split evenly among the elements equal to the result.
std::vector<Tensor> extreme_backward(const GradContext& c) {
  const std::vector<int64_t>& dims = reduced_dims(c);
  const bool keepdim = c.attr<bool>("keepdim");
  const TensorMeta& in = c.input_meta(0);
  Tensor x = c.input(0);
  Tensor mask = eager::eq(x, restore(c.output(0), in, dims, keepdim));
  Tensor count = eager::sum(mask, dims, /*keepdim=*/true);
  Tensor g = restore(c.grad(), in, dims, keepdim);
  Tensor share = eager::div(g, eager::to_dtype(count, g.dtype()));
  return {eager::where(mask, share, scalar_tensor(Scalar(int64_t{0}), g.dtype()))};
}

// max_dim, min_dim: the gradient goes to the element whose index was returned.
std::vector<Tensor> extreme_dim_backward(const GradContext& c) {
  const TensorMeta& in = c.input_meta(0);
  const bool keepdim = c.attr<bool>("keepdim");
  if (in.ndim() == 0) return {c.grad()};
  const int64_t dim = normalize_dim(c.attr<int64_t>("dim"), in.ndim(), "backward");
  Tensor index = c.output(1), g = c.grad();
  if (!keepdim) {
    index = eager::unsqueeze(index, dim);
    g = eager::unsqueeze(g, dim);
  }
  Shape positions(in.ndim(), 1);
  positions[dim] = in.shape[dim];
  Tensor iota = eager::reshape(
      eager::arange(Scalar(int64_t{0}), Scalar(in.shape[dim]), Scalar(int64_t{1}), DType::kInt64), positions);
  Tensor hit = eager::eq(iota, index);
  return {eager::where(hit, g, scalar_tensor(Scalar(int64_t{0}), g.dtype()))};
}

Tensor zero_of(const Tensor& g) { return scalar_tensor(Scalar(int64_t{0}), g.dtype()); }

// prod: the product of the other elements: out / x without zeros; with one zero, the product of the
// non-zero elements at the zero (0 elsewhere); with more, 0 everywhere.
std::vector<Tensor> prod_backward(const GradContext& c) {
  std::optional<int64_t> dim;  // prod_dim's; none: every element
  if (c.op().name == "prod_dim") dim = c.attr<int64_t>("dim");
  const std::vector<int64_t> dims = dim ? std::vector<int64_t>{*dim} : std::vector<int64_t>{};
  const bool keepdim = dim && c.attr<bool>("keepdim");
  const TensorMeta& in = c.input_meta(0);
  Tensor x = c.input(0);
  Tensor g = restore(c.grad(), in, dims, keepdim);
  Tensor out = restore(c.output(0), in, dims, keepdim);
  Tensor zero = eager::eq(x, Scalar(int64_t{0}));
  Tensor zeros_in = restore(eager::sum(zero, dims, true), in, dims, true);
  Tensor others = eager::to_dtype(eager::prod(eager::where(zero, scalar_tensor(Scalar(int64_t{1}), x.dtype()), x),
                                                dim, true), out.dtype());
  Tensor at_zero =
      eager::where(eager::eq(zeros_in, Scalar(int64_t{1})), restore(others, in, dims, true), zero_of(out));
  Tensor elsewhere = eager::where(eager::eq(zeros_in, Scalar(int64_t{0})), eager::div(out, x), zero_of(out));
  return {eager::mul(g, eager::where(zero, at_zero, elsewhere))};
}

// var: 2 / (N - correction) * g * (x - mean); std: var's with g / (2 std), 0 where std == 0.
std::vector<Tensor> moment_backward(const GradContext& c, bool is_std) {
  const auto [dims, keepdim, correction] = moment_args(c.op(), c.attrs());
  const TensorMeta& in = c.input_meta(0);
  Tensor x = c.input(0), g = c.grad();
  if (is_std) {
    Tensor y = c.output(0);
    g = eager::where(eager::eq(y, Scalar(int64_t{0})), zero_of(g),
               eager::div(g, eager::mul(y, Scalar(2.0))));
  }
  Tensor dev = eager::sub(x, eager::mean(x, dims, true));
  double n = static_cast<double>(reduced_count(in, dims));
  Tensor scaled = eager::mul(restore(g, in, dims, keepdim), Scalar(2.0 / (n - correction)));
  return {eager::mul(scaled, dev)};
}

std::vector<Tensor> var_backward(const GradContext& c) { return moment_backward(c, false); }
std::vector<Tensor> std_backward(const GradContext& c) { return moment_backward(c, true); }

// logsumexp: g * exp(x - out), i.e. g times the softmax over the reduced dims.
std::vector<Tensor> logsumexp_backward(const GradContext& c) {
  const std::vector<int64_t>& dims = c.attr<std::vector<int64_t>>("dim");
  const bool keepdim = c.attr<bool>("keepdim");
  const TensorMeta& in = c.input_meta(0);
  Tensor p = eager::exp(eager::sub(c.input(0), restore(c.output(0), in, dims, keepdim)));
  return {eager::mul(restore(c.grad(), in, dims, keepdim), p)};
}

// norm: PyTorch's linalg_vector_norm_backward, case by case.
std::vector<Tensor> norm_backward(const GradContext& c) {
  const std::vector<int64_t>& dims = c.attr<std::vector<int64_t>>("dim");
  const bool keepdim = c.attr<bool>("keepdim");
  const double ord = c.attr<double>("ord");
  const TensorMeta& in = c.input_meta(0);
  Tensor x = c.input(0);
  Tensor g = restore(c.grad(), in, dims, keepdim);
  Tensor y = restore(c.output(0), in, dims, keepdim);
  Tensor zero = zero_of(g);
  if (ord == 0.0) return {zeros(in.shape, g.dtype())};
  if (ord == 1.0) return {eager::mul(eager::sign(x), g)};
  Tensor y_zero = eager::eq(y, Scalar(int64_t{0}));
  if (ord == 2.0) return {eager::mul(x, eager::where(y_zero, zero, eager::div(g, y)))};
  if (std::isinf(ord)) {
    Tensor a = eager::abs(x);
    Tensor mask = eager::logical_or(eager::eq(a, y), eager::ne(a, a));
    Tensor count = restore(eager::sum(mask, dims, true), in, dims, true);
    Tensor share = eager::div(g, eager::to_dtype(count, g.dtype()));
    return {eager::mul(eager::sign(x), eager::where(mask, share, zero))};
  }
  Tensor scaled = eager::mul(eager::sign(x), eager::pow(eager::abs(x), Scalar(ord - 1.0)));
  if (ord < 1.0) {
    scaled = eager::where(eager::eq(x, Scalar(int64_t{0})), zero, scaled);
    return {eager::mul(eager::mul(scaled, g), eager::pow(y, Scalar(1.0 - ord)))};
  }
  Tensor scale = eager::where(y_zero, zero, eager::div(g, eager::pow(y, Scalar(ord - 1.0))));
  return {eager::mul(scaled, scale)};
}

int64_t scan_dim(const GradContext& c) {
  const int64_t nd = c.input_meta(0).ndim(), d = c.attr<int64_t>("dim");
  return nd == 0 ? 0 : normalize_dim(d, nd, "backward");
}

// cumsum: the gradient summed from the end, in the input's dtype (dtype= may have converted it).
std::vector<Tensor> cumsum_backward(const GradContext& c) {
  return {eager::cumsum_backward(eager::to_dtype(c.grad(), c.input_meta(0).dtype), scan_dim(c))};
}

// cumsum_backward: a cumsum from the end, so its gradient is a cumsum from the start.
std::vector<Tensor> cumsum_backward_backward(const GradContext& c) {
  return {eager::cumsum(c.grad(), scan_dim(c))};
}

// cumprod's gradient in differentiable ops, exact with zeros, for create_graph (Note [Gradients of gradients] in
// rules.h): dx_i = sum over k >= i of g_k prod_{j <= k, j != i} x_j, the products a cumprod of x with x_i set to
// 1, one row per i (n^2 values per line: create_graph only).
std::vector<Tensor> cumprod_backward_composite(const GradContext& c) {
  using namespace eager;
  const int64_t d = scan_dim(c);
  Tensor x = c.input(0), g = to_dtype(c.grad(), x.dtype());
  if (x.ndim() == 0) return {g};
  x = movedim(x, {d}, {-1});
  g = movedim(g, {d}, {-1});
  const int64_t n = x.shape().back(), last = x.ndim();
  Tensor positions = arange(Scalar(int64_t{0}), Scalar(n), Scalar(int64_t{1}), DType::kInt64);
  Tensor i = reshape(positions, {n, 1}), k = reshape(positions, {1, n});
  Tensor rows = where(eq(i, k), full({}, Scalar(int64_t{1}), x.dtype()), unsqueeze(x, last - 1));  // (..., i, j)
  Tensor products = scan(op("cumprod"), rows, last);                                              // (..., i, k)
  Tensor terms = where(ge(k, i), mul(products, unsqueeze(g, last - 1)), zeros({}, x.dtype()));
  Tensor dx = movedim(sum(terms, {last}, false), {-1}, {d});
  return {dx};
}

// cumprod: its own kernel (Note [cumprod gradient with zeros] in kernels/cpu/scan.cpp).
std::vector<Tensor> cumprod_backward(const GradContext& c) {
  if (creating_graph()) return cumprod_backward_composite(c);
  return {eager::cumprod_backward(c.input(0), eager::to_dtype(c.grad(), c.input(0).dtype()), scan_dim(c))};
}

// PyTorch names a reduction over every dim ...Backward0 and one over some dims ...Backward1.
template <const char* all, const char* some>
const char* all_or_some(const GradContext& c) {
  return reduced_dims(c).empty() ? all : some;
}

constexpr char kSum0[] = "SumBackward0", kSum1[] = "SumBackward1", kMean0[] = "MeanBackward0",
               kMean1[] = "MeanBackward1";

}  // namespace

void register_reduce_rules() {
  define_rule("sum", {"SumBackward1", sum_backward, 0, 0, all_or_some<kSum0, kSum1>});
  define_rule("mean", {"MeanBackward1", mean_backward, 0, 0, all_or_some<kMean0, kMean1>});
  define_rule("amax", {"AmaxBackward0", extreme_backward, kIn0, kOut0});
  define_rule("amin", {"AminBackward0", extreme_backward, kIn0, kOut0});
  define_rule("max", {"MaxBackward1", extreme_backward, kIn0, kOut0});
  define_rule("min", {"MinBackward1", extreme_backward, kIn0, kOut0});
  define_rule("max_dim", {"MaxBackward0", extreme_dim_backward, 0, kOut1});
  define_rule("min_dim", {"MinBackward0", extreme_dim_backward, 0, kOut1});
  define_rule("prod", {"ProdBackward0", prod_backward, kIn0, kOut0});
  define_rule("prod_dim", {"ProdBackward1", prod_backward, kIn0, kOut0});
  for (const char* n : {"var", "var_dim", "var_unbiased"}) define_rule(n, {"VarBackward0", var_backward, kIn0});
  for (const char* n : {"std", "std_dim", "std_unbiased"}) define_rule(n, {"StdBackward0", std_backward, kIn0, kOut0});
  define_rule("logsumexp", {"LogsumexpBackward0", logsumexp_backward, kIn0, kOut0});
  define_rule("norm", {"LinalgVectorNormBackward0", norm_backward, kIn0, kOut0});
  define_rule("cumsum", {"CumsumBackward0", cumsum_backward});
  define_rule("cumsum_backward", {"CumsumBackwardBackward0", cumsum_backward_backward});
  define_rule("cumprod", {"CumprodBackward0", cumprod_backward, kIn0});
  define_rule("any", {});
  define_rule("all", {});
  define_rule("argmax", {});
  define_rule("argmin", {});
}

}  // namespace rill::autograd
