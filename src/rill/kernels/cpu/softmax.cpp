// CPU kernels of softmax, log_softmax and their backward ops (ops/nn.cpp).
// A dense tensor is seen as [outer, n, inner] around the softmax dim. With
// inner == 1 (the last dim, the common case) every row is reduced on its own:
// rows are split over the intra-op pool and each row runs vectorised
// (row_math.h). Otherwise each outer slice is reduced column-wise, the inner
// dim innermost so the loops stay contiguous. Arithmetic is in OpMath<T>; the
// max is subtracted before exp (numerically stable for any input range).
#include <cmath>
#include <memory>
#include <vector>

#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/loops.h"
#include "rill/kernels/cpu/row_math.h"

namespace rill::cpu {
namespace {

struct Layout {
  int64_t outer = 1, n = 1, inner = 1;
};

Layout layout_of(const TensorMeta& m, int64_t dim) {
  Layout l;
  if (m.ndim() == 0) return l;
  dim = normalize_dim(dim, m.ndim(), "softmax");
  for (int64_t d = 0; d < dim; ++d) l.outer *= m.shape[d];
  l.n = m.shape[dim];
  for (int64_t d = dim + 1; d < m.ndim(); ++d) l.inner *= m.shape[d];
  return l;
}

// Runs f(begin, end) over the outer*inner-free units: rows (inner == 1) or outer slices.
template <typename F>
void for_rows(const Layout& l, const F& f) {
  const int64_t per = std::max<int64_t>(1, l.n * l.inner);
  parallel::parallel_for(0, l.outer, std::max<int64_t>(1, kParallelGrain / per), f);
}

// --- forward ---

template <typename T, bool kLog>
void softmax_row(const T* x, T* y, int64_t n, OpMath<T>* scratch) {
  using A = OpMath<T>;
  const A m = row::max(x, n);
  if constexpr (std::is_same_v<T, A>) {
    const A s = row::exp_sum(x, m, kLog ? nullptr : y, n);
    if constexpr (kLog) {
      // (x - m) - log(s), not x - (m + log(s)): that sum rounds at m's magnitude.
      const A log_s = std::log(s);
      for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - log_s;
    } else {
      const A r = A(1) / s;
      for (int64_t i = 0; i < n; ++i) y[i] *= r;
    }
  } else {
    const A s = row::exp_sum(x, m, scratch, n);
    if constexpr (kLog) {
      // The row's sum and its log are rounded to T (float16, bfloat16) as PyTorch's last-dim kernel
      // rounds them, so a row's largest entry is 0 when the other entries' share is below T's epsilon.
      const A log_s = static_cast<A>(T(std::log(static_cast<A>(T(s)))));
      for (int64_t i = 0; i < n; ++i) y[i] = T((static_cast<A>(x[i]) - m) - log_s);
    } else {
      const A r = A(1) / s;
      for (int64_t i = 0; i < n; ++i) y[i] = T(scratch[i] * r);
    }
  }
}

// One outer slice [n, inner], reduced along n for every inner position.
template <typename T, bool kLog>
void softmax_columns(const T* x, T* y, int64_t n, int64_t inner, OpMath<T>* mx, OpMath<T>* sm) {
  using A = OpMath<T>;
  std::fill(mx, mx + inner, -std::numeric_limits<A>::infinity());
  std::fill(sm, sm + inner, A(0));
  for (int64_t k = 0; k < n; ++k)
    for (int64_t j = 0; j < inner; ++j) mx[j] = std::max(mx[j], static_cast<A>(x[k * inner + j]));
  for (int64_t k = 0; k < n; ++k)
    for (int64_t j = 0; j < inner; ++j) sm[j] += std::exp(static_cast<A>(x[k * inner + j]) - mx[j]);
  if constexpr (kLog) {
    for (int64_t j = 0; j < inner; ++j) mx[j] += std::log(sm[j]);
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < inner; ++j) y[k * inner + j] = T(static_cast<A>(x[k * inner + j]) - mx[j]);
  } else {
    for (int64_t j = 0; j < inner; ++j) sm[j] = A(1) / sm[j];
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < inner; ++j)
        y[k * inner + j] = T(std::exp(static_cast<A>(x[k * inner + j]) - mx[j]) * sm[j]);
  }
}

template <bool kLog>
void softmax_kernel(const KernelContext& c) {
  const TensorMeta& m = *c.inputs[0].meta;
  RILL_ASSERT(m.contiguous, "[", c.op.name, "] expects a dense input");
  if (m.numel == 0) return;
  const Layout l = layout_of(m, c.attrs.get_int(0));
  visit_floating_dtype(m.dtype, c.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = OpMath<T>;
    const T* x = c.inputs[0].ptr<T>();
    T* y = c.outputs[0].ptr<T>();
    for_rows(l, [&](int64_t b, int64_t e) {
      const int64_t slice = l.n * l.inner;
      if (l.inner == 1) {
        std::unique_ptr<A[]> scratch(std::is_same_v<T, A> ? nullptr : new A[static_cast<size_t>(l.n)]);
        for (int64_t r = b; r < e; ++r) softmax_row<T, kLog>(x + r * slice, y + r * slice, l.n, scratch.get());
      } else {
        std::vector<A> mx(static_cast<size_t>(l.inner)), sm(static_cast<size_t>(l.inner));
        for (int64_t r = b; r < e; ++r)
          softmax_columns<T, kLog>(x + r * slice, y + r * slice, l.n, l.inner, mx.data(), sm.data());
      }
    });
  });
}

// --- backward ---
// softmax:     dx = y * (g - sum(g * y))
// log_softmax: dx = g - exp(y) * sum(g)

template <typename T, bool kLog>
void backward_row(const T* g, const T* y, T* dx, int64_t n) {
  using A = OpMath<T>;
  if constexpr (kLog) {
    const A s = row::sum(g, n);
    for (int64_t i = 0; i < n; ++i) dx[i] = T(static_cast<A>(g[i]) - std::exp(static_cast<A>(y[i])) * s);
  } else {
    const A s = row::dot(g, y, n);
    for (int64_t i = 0; i < n; ++i) dx[i] = T(static_cast<A>(y[i]) * (static_cast<A>(g[i]) - s));
  }
}

template <typename T, bool kLog>
void backward_columns(const T* g, const T* y, T* dx, int64_t n, int64_t inner, OpMath<T>* s) {
  using A = OpMath<T>;
  std::fill(s, s + inner, A(0));
  for (int64_t k = 0; k < n; ++k)
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t i = k * inner + j;
      s[j] += kLog ? static_cast<A>(g[i]) : static_cast<A>(g[i]) * static_cast<A>(y[i]);
    }
  for (int64_t k = 0; k < n; ++k)
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t i = k * inner + j;
      const A gv = static_cast<A>(g[i]), yv = static_cast<A>(y[i]);
      dx[i] = kLog ? T(gv - std::exp(yv) * s[j]) : T(yv * (gv - s[j]));
    }
}

template <bool kLog>
void softmax_backward_kernel(const KernelContext& c) {
  const TensorMeta& m = *c.inputs[1].meta;
  RILL_ASSERT(m.contiguous && c.inputs[0].meta->contiguous, "[", c.op.name, "] expects dense inputs");
  if (m.numel == 0) return;
  const Layout l = layout_of(m, c.attrs.get_int(0));
  visit_floating_dtype(m.dtype, c.op.name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = OpMath<T>;
    const T* g = c.inputs[0].ptr<T>();
    const T* y = c.inputs[1].ptr<T>();
    T* dx = c.outputs[0].ptr<T>();
    for_rows(l, [&](int64_t b, int64_t e) {
      const int64_t slice = l.n * l.inner;
      if (l.inner == 1) {
        for (int64_t r = b; r < e; ++r) backward_row<T, kLog>(g + r * slice, y + r * slice, dx + r * slice, l.n);
      } else {
        std::vector<A> s(static_cast<size_t>(l.inner));
        for (int64_t r = b; r < e; ++r)
          backward_columns<T, kLog>(g + r * slice, y + r * slice, dx + r * slice, l.n, l.inner, s.data());
      }
    });
  });
}

}  // namespace

void register_softmax_kernels() {
  ops::set_cpu_kernel("softmax", softmax_kernel<false>);
  ops::set_cpu_kernel("log_softmax", softmax_kernel<true>);
  ops::set_cpu_kernel("softmax_backward", softmax_backward_kernel<false>);
  ops::set_cpu_kernel("log_softmax_backward", softmax_backward_kernel<true>);
}

}  // namespace rill::cpu
