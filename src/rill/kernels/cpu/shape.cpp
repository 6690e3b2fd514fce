// CPU kernels of the shape family (ops/shape.cpp): cat, tril, triu, restride_scatter.
#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/loops.h"

namespace rill::cpu {
namespace {

// Each input (already in the output dtype) is copied into its slice of the output along dim.
void cat_kernel(const KernelContext& c) {
  const TensorMeta& out = *c.outputs[0].meta;
  if (out.numel == 0) return;
  const int64_t dim = normalize_dim(c.attrs.get_int(0), out.ndim(), "cat");
  const int64_t item = dtype_itemsize(out.dtype);
  int64_t offset = 0;
  for (const TensorArg& in : c.inputs) {
    const TensorMeta& m = *in.meta;
    if (m.numel == 0) {
      if (m.ndim() == out.ndim()) offset += m.shape[dim];
      continue;
    }
    MetaSym slice = make_meta(m.shape, out.strides, out.dtype, out.device);
    TensorArg dst{static_cast<char*>(c.outputs[0].data) + offset * out.strides[dim] * item, slice.get()};
    visit_dtype(out.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      map_elements<T, T>(dst, {&in}, [](T v) { return v; });
    });
    offset += m.shape[dim];
  }
}

// tril / triu over the last two dims; the output may be strided (tril_ writes in place).
template <bool kUpper>
void triangle_kernel(const KernelContext& c) {
  const TensorMeta& x = *c.inputs[0].meta;
  const TensorMeta& out = *c.outputs[0].meta;
  if (x.numel == 0) return;
  const int64_t k = c.attrs.get_int(0);
  const int64_t nd = x.ndim(), rows = x.shape[nd - 2], cols = x.shape[nd - 1];
  const int64_t lines = x.numel / cols;  // every row of every matrix
  visit_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = c.inputs[0].ptr<T>();
    T* dst = c.outputs[0].ptr<T>();
    parallel::parallel_for(0, lines, std::max<int64_t>(1, kParallelGrain / cols), [&](int64_t b, int64_t e) {
      for (int64_t line = b; line < e; ++line) {
        // Offsets of this row in x and out from its multi-index over the leading dims.
        int64_t rest = line, xo = 0, oo = 0;
        for (int64_t d = nd - 2; d >= 0; --d) {
          const int64_t i = rest % x.shape[d];
          rest /= x.shape[d];
          xo += i * x.strides[d];
          oo += i * out.strides[d];
        }
        const int64_t row = line % rows;
        for (int64_t j = 0; j < cols; ++j) {
          const bool keep = kUpper ? j - row >= k : j - row <= k;
          dst[oo + j * out.strides[nd - 1]] = keep ? src[xo + j * x.strides[nd - 1]] : T(0);
        }
      }
    });
  });
}

// The output is dense: self copied into it, then src into the view (size, stride, offset) of it.
void restride_scatter_kernel(const KernelContext& c) {
  const TensorMeta& out = *c.outputs[0].meta;
  const auto& size = c.attr<std::vector<int64_t>>("size");
  const auto& stride = c.attr<std::vector<int64_t>>("stride");
  MetaSym view = make_meta(size, stride, out.dtype, out.device);
  TensorArg dst{static_cast<char*>(c.outputs[0].data) + c.attr<int64_t>("offset") * dtype_itemsize(out.dtype),
                view.get()};
  visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (out.numel) map_elements<T, T>(c.outputs[0], {&c.inputs[0]}, [](T v) { return v; });
    if (view->numel) map_elements<T, T>(dst, {&c.inputs[1]}, [](T v) { return v; });
  });
}

}  // namespace

void register_shape_kernels() {
  ops::set_cpu_kernel("cat", cat_kernel);
  ops::set_cpu_kernel("tril", triangle_kernel<false>);
  ops::set_cpu_kernel("triu", triangle_kernel<true>);
  ops::set_cpu_kernel("restride_scatter", restride_scatter_kernel);
}

}  // namespace rill::cpu
