// Sorting in the functional API: sort (a kernel) and unique (a sync point
// computed on the host, Note [Data-dependent shapes] in eager/index.cpp).
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

}  // namespace rill::eager
