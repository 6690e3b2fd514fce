// CPU kernels of the indexing family (ops/index.cpp): index, index_put, gather,
// scatter. Reads (index, gather) run in parallel over the indexed positions;
// writes that may hit one element several times run serially (index_put) or in
// parallel over lines that cannot collide (scatter: every line along dim is
// handled by one thread, so duplicates along dim are reduced in order).
#include <array>
#include <cstring>

#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/loops.h"

namespace rill::cpu {
namespace {

/** Walks the positions of shape in row-major order, tracking the element offset of each of N tensors. */
template <size_t N>
struct Walker {
  const Shape& shape;
  std::array<const int64_t*, N> strides;
  std::vector<int64_t> idx;
  std::array<int64_t, N> off{};

  Walker(const Shape& s, std::array<const int64_t*, N> st, int64_t start) : shape(s), strides(st), idx(s.size()) {
    for (size_t d = s.size(); d-- > 0;) {
      idx[d] = s[d] ? start % s[d] : 0;
      start = s[d] ? start / s[d] : 0;
      for (size_t k = 0; k < N; ++k) off[k] += idx[d] * strides[k][d];
    }
  }
  void next() {
    for (size_t d = shape.size(); d-- > 0;) {
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (++idx[d] < shape[d]) return;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * shape[d];
      idx[d] = 0;
    }
  }
};

// A 0-dim tensor seen as 1-D of one element, so that gather/scatter's dim 0 exists.
Shape shape1(const TensorMeta& m) { return m.ndim() ? m.shape : Shape{1}; }
Strides strides1(const TensorMeta& m) { return m.ndim() ? m.strides : Strides{0}; }

int64_t checked_index(int64_t v, int64_t size, int64_t dim, const char* op, ErrorKind kind) {
  if (v < -size || v >= size) {
    if (kind == ErrorKind::kIndex)
      RILL_FAIL(Index, "[", op, "] index ", v, " is out of bounds for dimension ", dim, " with size ", size);
    RILL_FAIL(Runtime, "[", op, "] index ", v, " is out of bounds for dimension ", dim, " with size ", size);
  }
  return v < 0 ? v + size : v;
}

// Element offset in m of position b of the index shape (m has that shape as leading dims).
int64_t offset_of(int64_t b, const TensorMeta& m, size_t ndims) {
  int64_t off = 0;
  for (size_t d = ndims; d-- > 0;) {
    off += (b % m.shape[d]) * m.strides[d];
    b /= m.shape[d];
  }
  return off;
}

// Offset in x of x[i_0[b], ..., i_k-1[b]] (elements); raises IndexError for an index out of range.
int64_t indexed_offset(const KernelContext& c, size_t first, int64_t b, const TensorMeta& x, const char* op) {
  int64_t off = 0;
  for (size_t j = first; j < c.inputs.size(); ++j) {
    const TensorMeta& im = *c.inputs[j].meta;
    const int64_t v = c.inputs[j].ptr<int64_t>()[offset_of(b, im, im.shape.size())];
    const int64_t d = static_cast<int64_t>(j - first);
    off += checked_index(v, x.shape[d], d, op, ErrorKind::kIndex) * x.strides[d];
  }
  return off;
}

void index_kernel(const KernelContext& c) {
  const TensorMeta& x = *c.inputs[0].meta;
  const TensorMeta& out = *c.outputs[0].meta;
  if (out.numel == 0) return;
  const size_t k = c.inputs.size() - 1;
  const Shape rest(x.shape.begin() + static_cast<int64_t>(k), x.shape.end());
  const Strides rest_strides(x.strides.begin() + static_cast<int64_t>(k), x.strides.end());
  const int64_t inner = shape_numel(rest);
  const int64_t positions = out.numel / inner;
  const bool dense = strides_are_contiguous(rest, rest_strides);
  const Strides dense_strides = contiguous_strides(rest);
  visit_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = c.inputs[0].ptr<T>();
    T* dst = c.outputs[0].ptr<T>();
    parallel::parallel_for(0, positions, std::max<int64_t>(1, kParallelGrain / inner), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* from = src + (k ? indexed_offset(c, 1, p, x, "index") : 0);
        T* to = dst + p * inner;
        if (dense) {
          std::memcpy(static_cast<void*>(to), from, sizeof(T) * inner);
          continue;
        }
        Walker<2> w(rest, {dense_strides.data(), rest_strides.data()}, 0);
        for (int64_t i = 0; i < inner; ++i, w.next()) to[w.off[0]] = from[w.off[1]];
      }
    });
  });
}

template <typename T>
T add_values(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a || b;
  else return T(OpMath<T>(a) + OpMath<T>(b));
}

template <typename T>
T mul_values(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a && b;
  else return T(OpMath<T>(a) * OpMath<T>(b));
}

// out = x (skipped when out is x itself, as for an in-place write).
void copy_input(const KernelContext& c) {
  const TensorArg& x = c.inputs[0];
  const TensorArg& out = c.outputs[0];
  if (x.data == out.data && x.meta->strides == out.meta->strides) return;
  visit_dtype(x.meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_elements<T, T>(out, {&x}, [](T v) { return v; });
  });
}

void index_put_kernel(const KernelContext& c) {
  copy_input(c);
  const TensorMeta& out = *c.outputs[0].meta;
  const TensorMeta& values = *c.inputs[1].meta;
  if (values.numel == 0) return;
  const bool accumulate = c.attrs.get_bool(0);
  const size_t k = c.inputs.size() - 2;
  const size_t bdims = values.shape.size() - (out.shape.size() - k);
  const Shape rest(out.shape.begin() + static_cast<int64_t>(k), out.shape.end());
  const Strides out_rest(out.strides.begin() + static_cast<int64_t>(k), out.strides.end());
  const Strides val_rest(values.strides.begin() + static_cast<int64_t>(bdims), values.strides.end());
  const int64_t inner = shape_numel(rest);
  const int64_t positions = values.numel / inner;
  visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = c.outputs[0].ptr<T>();
    const T* val = c.inputs[1].ptr<T>();
    // Serial: with repeated indices, the last write wins (or every value is added), as on PyTorch's CPU.
    for (int64_t p = 0; p < positions; ++p) {
      T* to = dst + indexed_offset(c, 2, p, out, "index_put");
      const T* from = val + offset_of(p, values, bdims);
      Walker<2> w(rest, {out_rest.data(), val_rest.data()}, 0);
      for (int64_t i = 0; i < inner; ++i, w.next())
        to[w.off[0]] = accumulate ? add_values(to[w.off[0]], from[w.off[1]]) : from[w.off[1]];
    }
  });
}

void gather_kernel(const KernelContext& c) {
  const TensorMeta& out = *c.outputs[0].meta;
  if (out.numel == 0) return;
  const TensorMeta& x = *c.inputs[0].meta;
  const TensorMeta& index = *c.inputs[1].meta;
  const Shape shape = shape1(index);
  const int64_t dim = normalize_dim(c.attrs.get_int(0), x.ndim(), "gather");
  Strides xs = strides1(x), is = strides1(index);
  const int64_t xstride = xs[dim], size = shape1(x)[dim];
  xs[dim] = 0;  // the index supplies the position along dim
  const Strides os = contiguous_strides(shape);
  const int64_t* ip = c.inputs[1].ptr<int64_t>();
  visit_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = c.inputs[0].ptr<T>();
    T* dst = c.outputs[0].ptr<T>();
    parallel::parallel_for(0, out.numel, kParallelGrain, [&](int64_t b, int64_t e) {
      Walker<3> w(shape, {os.data(), is.data(), xs.data()}, b);
      for (int64_t i = b; i < e; ++i, w.next()) {
        const int64_t v = checked_index(ip[w.off[1]], size, dim, "gather", ErrorKind::kRuntime);
        dst[w.off[0]] = src[w.off[2] + v * xstride];
      }
    });
  });
}

void scatter_kernel(const KernelContext& c) {
  copy_input(c);
  const TensorMeta& index = *c.inputs[1].meta;
  if (index.numel == 0) return;
  const TensorMeta& out = *c.outputs[0].meta;
  const TensorMeta& src = *c.inputs[2].meta;
  const std::string& reduce = c.attrs.get_string(1);
  const int64_t dim = normalize_dim(c.attrs.get_int(0), out.ndim(), "scatter");
  Shape lines = shape1(index);
  const int64_t n = lines[dim];
  lines[dim] = 1;
  const Strides is = strides1(index), ss = strides1(src);
  Strides os = strides1(out);
  const int64_t ostride = os[dim], size = shape1(out)[dim];
  const int64_t* ip = c.inputs[1].ptr<int64_t>();
  visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* sp = c.inputs[2].ptr<T>();
    T* dst = c.outputs[0].ptr<T>();
    const int64_t count = shape_numel(lines);
    parallel::parallel_for(0, count, std::max<int64_t>(1, kParallelGrain / n), [&](int64_t b, int64_t e) {
      Walker<3> w(lines, {os.data(), is.data(), ss.data()}, b);
      for (int64_t line = b; line < e; ++line, w.next()) {
        for (int64_t j = 0; j < n; ++j) {
          const int64_t v = checked_index(ip[w.off[1] + j * is[dim]], size, dim, "scatter", ErrorKind::kRuntime);
          T& to = dst[w.off[0] + v * ostride];
          const T from = sp[w.off[2] + j * ss[dim]];
          if (reduce.empty()) to = from;
          else if (reduce == "add") to = add_values(to, from);
          else to = mul_values(to, from);
        }
      }
    });
  });
}

}  // namespace

void register_index_kernels() {
  ops::set_cpu_kernel("index", index_kernel);
  ops::set_cpu_kernel("index_put", index_put_kernel);
  ops::set_cpu_kernel("gather", gather_kernel);
  ops::set_cpu_kernel("scatter", scatter_kernel);
}

}  // namespace rill::cpu
