// Sorting in the functional API: sort (a kernel), topk and kthvalue (views of
// a sort) and unique, of values or of
// slices along a dim (sync points computed on the host, Note [Data-dependent
// shapes] in eager/index.cpp).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "rill/eager/functional.h"

namespace rill::eager {
namespace {

// The attrs of sort, built one by one (a braced list of three variants trips GCC 12's -Wmaybe-uninitialized).
AttrsSym sort_attrs(int64_t dim, bool descending, bool stable) {
  std::vector<AttrValue> v;
  v.emplace_back(dim);
  v.emplace_back(descending);
  v.emplace_back(stable);
  return make_attrs(std::move(v));
}

}  // namespace


std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  static const OpSchema& op = eager::op("sort");
  std::vector<Tensor> out = call(op, {&x, 1}, {}, sort_attrs(dim, descending, stable));
  return {out[0], out[1]};
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

std::vector<Tensor> unique(const Tensor& x) {
  Tensor c = contiguous(x);
  wait_readable(c);
  const int64_t n = x.numel();
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), int64_t{0});
  Tensor values, inverse = Tensor::empty(make_contiguous_meta(x.shape(), DType::kInt64, x.device())), counts;
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using V = OpMath<T>;
    const T* p = static_cast<const T*>(c.data_ptr());
    auto nan = [](V v) {
      if constexpr (std::is_floating_point_v<V>) return std::isnan(v);
      else return false;
    };
    // NaNs sort last; each NaN is distinct (NaN != NaN), as in PyTorch.
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      const V va = static_cast<V>(p[a]), vb = static_cast<V>(p[b]);
      return va < vb || (!nan(va) && nan(vb));
    });
    std::vector<int64_t> first, count;  // per distinct value: position in order, occurrences
    int64_t* inv = n ? static_cast<int64_t*>(inverse.data_ptr()) : nullptr;
    for (int64_t i = 0; i < n; ++i) {
      const V v = static_cast<V>(p[order[i]]);
      if (i == 0 || !(static_cast<V>(p[order[first.back()]]) == v)) {
        first.push_back(i);
        count.push_back(0);
      }
      ++count.back();
      inv[order[i]] = static_cast<int64_t>(first.size()) - 1;
    }
    const int64_t m = static_cast<int64_t>(first.size());
    values = Tensor::empty(make_contiguous_meta({m}, x.dtype(), x.device()));
    counts = Tensor::empty(make_contiguous_meta({m}, DType::kInt64, x.device()));
    if (m == 0) return;
    T* vo = static_cast<T*>(values.data_ptr());
    int64_t* co = static_cast<int64_t*>(counts.data_ptr());
    for (int64_t j = 0; j < m; ++j) {
      vo[j] = p[order[first[j]]];
      co[j] = count[j];
    }
  });
  return {values, inverse, counts};
}

std::vector<Tensor> unique_dim(const Tensor& x, int64_t dim) {
  constexpr const char* op = "unique";
  RILL_CHECK(x.ndim() > 0, Index, "[unique] Dimension specified as ", dim,
             " but tensor has no dimensions; pass dim=None for a 0-d tensor");
  const int64_t d = normalize_dim(dim, x.ndim(), op);
  const Shape& shape = x.shape();
  const int64_t n = shape[d];
  if (x.numel() == 0) {  // PyTorch's rules: only the selected dim may be empty, and the result is x itself
    RILL_CHECK(std::count(shape.begin(), shape.end(), int64_t{0}) == 1, Runtime,
               "[unique] Number of zero sized dimensions is more than one, so unique cannot be applied");
    RILL_CHECK(n == 0, Runtime,
               "[unique] There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
    const MetaSym empty_index = make_contiguous_meta({0}, DType::kInt64, x.device());
    return {contiguous(x), Tensor::empty(empty_index), Tensor::empty(empty_index)};
  }
  // Slices along d as the rows of an [n, row] matrix.
  std::vector<int64_t> to_front(shape.size());
  std::iota(to_front.begin(), to_front.end(), int64_t{0});
  to_front.erase(to_front.begin() + d);
  to_front.insert(to_front.begin(), d);
  Tensor rows = contiguous(permute(x, to_front));
  wait_readable(rows);
  const int64_t row = x.numel() / n;
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), int64_t{0});
  Tensor inverse = Tensor::empty(make_contiguous_meta({n}, DType::kInt64, x.device())), values, counts;
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using V = OpMath<T>;
    const T* p = static_cast<const T*>(rows.data_ptr());
    auto at = [&](int64_t r, int64_t i) { return static_cast<V>(p[r * row + i]); };
    // As PyTorch's unique_dim: lexicographic order, where elements that compare neither way (NaN) count as
    // equal; then a slice starts a new group unless every element == the group's first (so a slice holding
    // NaN is a group of its own). Stable, so equal slices keep their order.
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      for (int64_t i = 0; i < row; ++i) {
        const V va = at(a, i), vb = at(b, i);
        if (va < vb) return true;
        if (vb < va) return false;
      }
      return false;
    });
    auto same = [&](int64_t a, int64_t b) {
      for (int64_t i = 0; i < row; ++i)
        if (!(at(a, i) == at(b, i))) return false;
      return true;
    };
    std::vector<int64_t> first, count;  // per group: its first slice (in x), its size
    int64_t* inv = static_cast<int64_t*>(inverse.data_ptr());
    for (int64_t i = 0; i < n; ++i) {
      if (i == 0 || !same(order[i], first.back())) {
        first.push_back(order[i]);
        count.push_back(0);
      }
      ++count.back();
      inv[order[i]] = static_cast<int64_t>(first.size()) - 1;
    }
    const int64_t m = static_cast<int64_t>(first.size());
    Shape out_shape = rows.shape();
    out_shape[0] = m;
    values = Tensor::empty(make_contiguous_meta(out_shape, x.dtype(), x.device()));
    counts = Tensor::empty(make_contiguous_meta({m}, DType::kInt64, x.device()));
    T* vo = static_cast<T*>(values.data_ptr());
    for (int64_t j = 0; j < m; ++j) {
      std::copy(p + first[j] * row, p + (first[j] + 1) * row, vo + j * row);
      static_cast<int64_t*>(counts.data_ptr())[j] = count[j];
    }
  });
  std::vector<int64_t> back(shape.size());  // the inverse of to_front
  for (size_t i = 0; i < to_front.size(); ++i) back[static_cast<size_t>(to_front[i])] = static_cast<int64_t>(i);
  return {permute(values, back), inverse, counts};
}

}  // namespace rill::eager
