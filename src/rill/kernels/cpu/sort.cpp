// CPU kernel of sort (ops/sort.cpp): every line along dim is sorted on its own,
// lines in parallel. The sort is always stable, so `stable=False` gives the
// same order as `stable=True` (PyTorch leaves the order of ties unspecified).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/loops.h"

namespace rill::cpu {
namespace {

template <typename V>
bool is_nan(V v) {
  if constexpr (std::is_floating_point_v<V>) return std::isnan(v);
  else return false;
}

void sort_kernel(const KernelContext& c) {
  const TensorMeta& x = *c.inputs[0].meta;
  if (x.numel == 0) return;
  const bool descending = c.attrs.get_bool(1);
  const int64_t nd = x.ndim();
  const int64_t dim = nd ? normalize_dim(c.attrs.get_int(0), nd, "sort") : 0;
  const int64_t n = nd ? x.shape[dim] : 1;
  const int64_t xs = nd ? x.strides[dim] : 0;
  const Strides dense = contiguous_strides(x.shape);
  const int64_t os = nd ? dense[dim] : 0;
  const int64_t lines = x.numel / n;
  visit_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using V = OpMath<T>;
    const T* src = c.inputs[0].ptr<T>();
    T* values = c.outputs[0].ptr<T>();
    int64_t* indices = c.outputs[1].ptr<int64_t>();
    parallel::parallel_for(0, lines, std::max<int64_t>(1, kParallelGrain / n), [&](int64_t b, int64_t e) {
      std::vector<V> key(n);
      std::vector<int64_t> order(n);
      for (int64_t line = b; line < e; ++line) {
        // Offsets of the line's first element in x and in the (dense) outputs.
        int64_t rest = line, xo = 0, oo = 0;
        for (int64_t d = nd - 1; d >= 0; --d) {
          if (d == dim) continue;
          const int64_t i = rest % x.shape[d];
          rest /= x.shape[d];
          xo += i * x.strides[d];
          oo += i * dense[d];
        }
        for (int64_t i = 0; i < n; ++i) key[i] = static_cast<V>(src[xo + i * xs]);
        std::iota(order.begin(), order.end(), int64_t{0});
        // NaN sorts above every number: last when ascending, first when descending.
        if (descending)
          std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b2) {
            return key[a] > key[b2] || (is_nan(key[a]) && !is_nan(key[b2]));
          });
        else
          std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b2) {
            return key[a] < key[b2] || (!is_nan(key[a]) && is_nan(key[b2]));
          });
        for (int64_t i = 0; i < n; ++i) {
          values[oo + i * os] = src[xo + order[i] * xs];
          indices[oo + i * os] = order[i];
        }
      }
    });
  });
}

}  // namespace

void register_sort_kernels() { ops::set_cpu_kernel("sort", sort_kernel); }

}  // namespace rill::cpu
