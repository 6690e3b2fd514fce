// Sorting with gradients (ops/sort.cpp): the gradient of the sorted values is
// scattered back to the positions they came from. topk and kthvalue are views
// of a sort, so their gradients reach the input through sort's rule.
#include "rill/autograd/functional.h"
#include "rill/autograd/rules.h"

namespace rill::autograd {
namespace {

constexpr uint32_t kOut1 = 2;

// The attrs of sort, built one by one (a braced list of three variants trips GCC 12's -Wmaybe-uninitialized).
AttrsSym sort_attrs(int64_t dim, bool descending, bool stable) {
  std::vector<AttrValue> v;
  v.emplace_back(dim);
  v.emplace_back(descending);
  v.emplace_back(stable);
  return make_attrs(std::move(v));
}

std::vector<Tensor> sort_backward(const GradContext& c) {
  const TensorMeta& x = c.input_meta(0);
  const Tensor& g = c.grad();
  if (x.ndim() == 0) return {g};
  return {eager::scatter(zeros(x.shape, g.dtype()), c.attrs().get_int(0), c.output(1), g, "")};
}

}  // namespace

void register_sort_rules() { define_rule("sort", {"SortBackward0", sort_backward, 0, kOut1}); }

std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  static const OpSchema& op = eager::op("sort");
  auto [values, indices] = eager::sort(x, dim, descending, stable);
  Tensor out[2] = {values, indices};
  record(op, {&x, 1}, {}, sort_attrs(dim, descending, stable), out);
  return {values, indices};
}

std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool /*sorted*/) {
  const int64_t d = normalize_dim(dim, x.ndim(), "topk");
  const int64_t size = x.ndim() ? x.shape()[d] : 1;
  RILL_CHECK(k >= 0 && k <= size, Runtime, "[topk] selected index k out of range: k = ", k, " for a dim of size ",
             size);
  auto [values, indices] = sort(x, d, largest, /*stable=*/true);
  if (x.ndim() == 0) return {values, indices};
  return {narrow(values, d, 0, k), eager::contiguous(eager::narrow(indices, d, 0, k))};
}

std::pair<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
  const int64_t d = normalize_dim(dim, x.ndim(), "kthvalue");
  const int64_t size = x.ndim() ? x.shape()[d] : 1;
  RILL_CHECK(k >= 1 && k <= size, Runtime, "[kthvalue] kthvalue(): selected number k out of range for dimension ",
             d);
  auto [values, indices] = sort(x, d, /*descending=*/false, /*stable=*/true);
  if (x.ndim() == 0) return {values, indices};
  Tensor v = select(values, d, k - 1), i = eager::select(indices, d, k - 1);
  if (keepdim) return {unsqueeze(v, d), eager::unsqueeze(i, d)};
  return {v, i};
}

}  // namespace rill::autograd
