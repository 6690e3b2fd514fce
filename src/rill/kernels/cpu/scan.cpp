// CPU kernels of the scans (ops/reduce.cpp): cumsum, cumprod, cumsum_backward (a cumsum
// from the end) and cumprod_backward. Outputs are dense and seen as (outer, n, inner)
// with the scanned dim in the middle; a scan's input of any layout is first copied
// into its output and scanned there (cumprod_backward's inputs are dense: the functional
// layer makes them so). As in PyTorch, the running value is kept in double for floating
// dtypes and int64 for integers.
#include <algorithm>
#include <vector>

#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/loops.h"

namespace rill::cpu {
namespace {

constexpr int64_t kColumns = 256;  // columns of one task when inner > 1

template <typename T>
using ScanAcc = std::conditional_t<kIsFloating<T>, double, int64_t>;

struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
};

Lines lines_of(const TensorMeta& m, int64_t dim) {
  Lines l;
  if (m.ndim() == 0) return l;
  for (int64_t d = 0; d < m.ndim(); ++d) {
    if (d < dim) l.outer *= m.shape[d];
    else if (d == dim) l.n = m.shape[d];
    else l.inner *= m.shape[d];
  }
  return l;
}

int64_t scan_dim(const KernelContext& c) {
  int64_t nd = c.inputs[0].meta->ndim(), d = c.attr<int64_t>("dim");
  return nd == 0 ? 0 : (d < 0 ? d + nd : d);
}

struct Add {
  template <typename A> static A identity() { return A(0); }
  template <typename A> static A apply(A a, A b) { return a + b; }
};
struct Mul {
  template <typename A> static A identity() { return A(1); }
  template <typename A> static A apply(A a, A b) { return a * b; }
};

template <typename Op, typename T>
void scan(const T* x, T* y, const Lines& l, bool reverse) {
  using A = ScanAcc<T>;
  const int64_t n = l.n, inner = l.inner;
  if (l.outer * n * inner == 0) return;
  if (inner == 1) {
    // Scan along the innermost dim: one serial line per output row.
    parallel::parallel_for(0, l.outer, std::max<int64_t>(1, kParallelGrain / n), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* p = x + o * n;
        T* q = y + o * n;
        A acc = Op::template identity<A>();
        if (reverse) {
          for (int64_t i = n; i-- > 0;) q[i] = static_cast<T>(acc = Op::apply(acc, static_cast<A>(p[i])));
        } else {
          for (int64_t i = 0; i < n; ++i) q[i] = static_cast<T>(acc = Op::apply(acc, static_cast<A>(p[i])));
        }
      }
    });
    return;
  }
  // inner > 1: a row of accumulators over a chunk of columns, stepped along the dim (vectorisable).
  const int64_t chunks = (inner + kColumns - 1) / kColumns;
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / (n * std::min(inner, kColumns)));
  parallel::parallel_for(0, l.outer * chunks, grain, [&](int64_t b, int64_t e) {
    A acc[kColumns];
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / chunks, c0 = (t % chunks) * kColumns, w = std::min(kColumns, inner - c0);
      for (int64_t j = 0; j < w; ++j) acc[j] = Op::template identity<A>();
      for (int64_t k = 0; k < n; ++k) {
        const int64_t i = reverse ? n - 1 - k : k;
        const T* p = x + (o * n + i) * inner + c0;
        T* q = y + (o * n + i) * inner + c0;
        for (int64_t j = 0; j < w; ++j) {
          acc[j] = Op::apply(acc[j], static_cast<A>(p[j]));
          q[j] = static_cast<T>(acc[j]);
        }
      }
    }
  });
}

template <typename Op, bool kReverse>
void scan_kernel(const KernelContext& c) {
  const TensorArg& in = c.inputs[0];
  const TensorArg& out = c.outputs[0];
  const Lines l = lines_of(*in.meta, scan_dim(c));
  visit_dtype(in.meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      RILL_FAIL(Runtime, "[", c.op.name, "] internal error: bool input should have been converted to int64");
    } else {
      const T* x = in.ptr<const T>();
      if (!in.meta->contiguous) {  // a view: scanned in the output, which reads each element before writing it
        map_elements<T, T>(out, {&in}, [](T v) { return v; });
        x = out.ptr<const T>();
      }
      scan<Op, T>(x, out.ptr<T>(), l, kReverse);
    }
  });
}

// Note [cumprod gradient with zeros]
// d out_i / d x_k = prod_{j <= i, j != k} x_j for i >= k. Along a line whose first zero is at z:
//   k < z:  grad_k = (sum_{k <= i < z} g_i out_i) / x_k   (later outputs are 0 and do not depend on x_k)
//   k = z:  grad_z = out_{z-1} * sum_{i >= z} g_i prod_{z < j <= i} x_j   (out_{-1} = 1)
//   k > z:  grad_k = 0   (every product that holds x_k also holds x_z = 0)
// Exact for any number of zeros, with no division by zero.
template <typename T>
void cumprod_backward_line(const T* x, const T* g, T* r, int64_t n, int64_t s, std::vector<double>& out) {
  int64_t z = 0;
  while (z < n && static_cast<double>(x[z * s]) != 0.0) ++z;
  out.resize(static_cast<size_t>(n));
  double prod = 1.0;
  for (int64_t i = 0; i < z; ++i) out[i] = prod *= static_cast<double>(x[i * s]);
  double tail = 0.0;
  for (int64_t k = z; k-- > 0;) {
    tail += static_cast<double>(g[k * s]) * out[k];
    r[k * s] = static_cast<T>(tail / static_cast<double>(x[k * s]));
  }
  if (z == n) return;
  double before = z == 0 ? 1.0 : out[z - 1], run = 1.0, sum = static_cast<double>(g[z * s]);
  for (int64_t i = z + 1; i < n; ++i) {
    run *= static_cast<double>(x[i * s]);
    sum += static_cast<double>(g[i * s]) * run;
  }
  r[z * s] = static_cast<T>(before * sum);
  for (int64_t k = z + 1; k < n; ++k) r[k * s] = T(0);
}

void cumprod_backward_kernel(const KernelContext& c) {
  const TensorArg& x = c.inputs[0];
  const TensorArg& g = c.inputs[1];
  RILL_ASSERT(x.meta->contiguous && g.meta->contiguous, "[cumprod_backward] expects dense inputs");
  const Lines l = lines_of(*x.meta, scan_dim(c));
  if (l.outer * l.n * l.inner == 0) return;
  visit_floating_dtype(x.meta->dtype, "cumprod", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.ptr<const T>();
    const T* pg = g.ptr<const T>();
    T* pr = c.outputs[0].ptr<T>();
    parallel::parallel_for(0, l.outer * l.inner, std::max<int64_t>(1, kParallelGrain / l.n), [&](int64_t b, int64_t e) {
      std::vector<double> out;
      for (int64_t t = b; t < e; ++t) {
        const int64_t base = (t / l.inner) * l.n * l.inner + t % l.inner;
        cumprod_backward_line(px + base, pg + base, pr + base, l.n, l.inner, out);
      }
    });
  });
}

}  // namespace

void register_scan_kernels() {
  ops::set_cpu_kernel("cumsum", scan_kernel<Add, false>);
  ops::set_cpu_kernel("cumprod", scan_kernel<Mul, false>);
  ops::set_cpu_kernel("cumsum_backward", scan_kernel<Add, true>);
  ops::set_cpu_kernel("cumprod_backward", cumprod_backward_kernel);
}

}  // namespace rill::cpu
