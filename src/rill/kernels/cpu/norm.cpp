// CPU kernels of layer_norm and layer_norm_backward (ops/nn.cpp). A dense
// input is seen as [rows, n]: every row is normalised on its own, rows split
// over the intra-op pool. group_norm reuses these kernels (eager/nn.cpp).
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/loops.h"
#include "rill/kernels/cpu/row_math.h"

namespace rill::cpu {
namespace {

// Note [Layer norm statistics]
// The forward computes a row's mean, then its variance as the mean of squared
// deviations from that mean, then writes y: three sweeps over a row that is in
// L1 after the first, fused in one kernel per row. The textbook one-sweep
// E[x^2] - E[x]^2 cancels badly when |mean| >> std, so it is not used; Welford
// is exact enough but does not vectorise. mean and rstd = 1/sqrt(var + eps)
// (biased variance) are outputs, saved by the gradient rule; the backward is
// one kernel too:
//   xhat = (x - mean) * rstd,  gw = g * weight
//   dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))
//   dweight = sum over rows of g * xhat,  dbias = sum over rows of g
// dweight and dbias are summed per thread, then across threads.

struct Rows {
  int64_t rows = 0, n = 0;
};

Rows rows_of(const TensorMeta& x, int64_t axis) {
  Rows r{1, 1};
  for (int64_t d = 0; d < x.ndim(); ++d) (d < axis ? r.rows : r.n) *= x.shape[d];
  return r;
}

void layer_norm_kernel(const KernelContext& c) {
  const TensorMeta& xm = *c.inputs[0].meta;
  for (const TensorArg& t : c.inputs) RILL_ASSERT(t.meta->contiguous, "[layer_norm] expects dense inputs");
  const Rows r = rows_of(xm, c.attrs.get_int(0));
  const double eps = c.attrs.get_double(1);
  const bool has_w = c.inputs.size() >= 2, has_b = c.inputs.size() >= 3;
  if (r.rows == 0) return;
  visit_floating_dtype(xm.dtype, "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = OpMath<T>;
    const T* x = c.inputs[0].ptr<T>();
    const T* w = has_w ? c.inputs[1].ptr<T>() : nullptr;
    const T* b = has_b ? c.inputs[2].ptr<T>() : nullptr;
    T* y = c.outputs[0].ptr<T>();
    A* mean = c.outputs[1].ptr<A>();
    A* rstd = c.outputs[2].ptr<A>();
    const int64_t n = r.n;
    parallel::parallel_for(0, r.rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n, 1)),
                           [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const T* xr = x + i * n;
        T* yr = y + i * n;
        const A m = n ? row::sum(xr, n) / static_cast<A>(n) : A(0);
        const A var = n ? row::centered_squares(xr, m, n) / static_cast<A>(n) : A(0);
        const A rs = A(1) / std::sqrt(var + static_cast<A>(eps));
        mean[i] = m;
        rstd[i] = rs;
        if constexpr (std::is_same_v<T, float>) {
          row_kernels().layer_norm(yr, xr, w, b, m, rs, n);
        } else if (w && b) {
          for (int64_t j = 0; j < n; ++j)
            yr[j] = T((static_cast<A>(xr[j]) - m) * rs * static_cast<A>(w[j]) + static_cast<A>(b[j]));
        } else if (w) {
          for (int64_t j = 0; j < n; ++j) yr[j] = T((static_cast<A>(xr[j]) - m) * rs * static_cast<A>(w[j]));
        } else {
          for (int64_t j = 0; j < n; ++j) yr[j] = T((static_cast<A>(xr[j]) - m) * rs);
        }
      }
    });
  });
}

void layer_norm_backward_kernel(const KernelContext& c) {
  const TensorMeta& xm = *c.inputs[1].meta;
  for (const TensorArg& t : c.inputs) RILL_ASSERT(t.meta->contiguous, "[layer_norm] expects dense inputs");
  const Rows r = rows_of(xm, c.attrs.get_int(0));
  const bool has_w = c.inputs.size() >= 5;
  visit_floating_dtype(xm.dtype, "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = OpMath<T>;
    const T* g = c.inputs[0].ptr<T>();
    const T* x = c.inputs[1].ptr<T>();
    const A* mean = c.inputs[2].ptr<A>();
    const A* rstd = c.inputs[3].ptr<A>();
    const T* w = has_w ? c.inputs[4].ptr<T>() : nullptr;
    T* dx = c.outputs[0].ptr<T>();
    T* dw = c.outputs[1].ptr<T>();
    T* db = c.outputs[2].ptr<T>();
    const int64_t n = r.n;
    // Rows in pieces, one partial dweight/dbias per piece.
    const int64_t work = r.rows * n;
    const int64_t pieces =
        std::max<int64_t>(1, std::min<int64_t>(parallel::num_threads(), work / kParallelGrain + 1));
    std::vector<A> partial(static_cast<size_t>(pieces * 2 * n), A(0));
    parallel::parallel_for(0, pieces, 1, [&](int64_t pb, int64_t pe) {
      // Scratch rows for the loop below; float32 rows need none.
      const size_t scratch = std::is_same_v<T, float> ? 0 : static_cast<size_t>(n);
      std::vector<A> gw(scratch), xh(scratch);
      for (int64_t p = pb; p < pe; ++p) {
        A* __restrict pdw = partial.data() + p * 2 * n;
        A* __restrict pdb = pdw + n;
        const int64_t begin = r.rows * p / pieces, end = r.rows * (p + 1) / pieces;
        for (int64_t i = begin; i < end; ++i) {
          const T* gr = g + i * n;
          const T* xr = x + i * n;
          T* dxr = dx + i * n;
          const A m = mean[i], rs = rstd[i];
          if constexpr (std::is_same_v<T, float>) {  // the row built for this CPU (isa_rows.h)
            row_kernels().layer_norm_backward(dxr, pdw, pdb, gr, xr, w, m, rs, n);
            continue;
          }
          // Elementwise sweeps and the row's two sums by the vectorised row::sum and row::dot: a sum
          // accumulated inside the first sweep is a serial chain of adds (the compiler may not reorder them),
          // and a [512, 256] backward took 254 us against PyTorch's 82.
          A* __restrict xhr = xh.data();
          A* __restrict gwr = gw.data();
          for (int64_t j = 0; j < n; ++j) {
            const A gv = static_cast<A>(gr[j]);
            const A xhat = (static_cast<A>(xr[j]) - m) * rs;
            xhr[j] = xhat;
            pdw[j] += gv * xhat;
            pdb[j] += gv;
            gwr[j] = gv;
          }
          if (w)
            for (int64_t j = 0; j < n; ++j) gwr[j] *= static_cast<A>(w[j]);
          const A sum_gw = row::sum(gw.data(), n), sum_gwx = row::dot(gw.data(), xh.data(), n);
          const A inv_n = n ? A(1) / static_cast<A>(n) : A(0);
          const A c1 = sum_gw * inv_n, c2 = sum_gwx * inv_n;
          for (int64_t j = 0; j < n; ++j) dxr[j] = T(rs * (gw[j] - c1 - xh[j] * c2));
        }
      }
    });
    for (int64_t j = 0; j < n; ++j) {
      A sw = 0, sb = 0;
      for (int64_t p = 0; p < pieces; ++p) {
        sw += partial[static_cast<size_t>(p * 2 * n + j)];
        sb += partial[static_cast<size_t>(p * 2 * n + n + j)];
      }
      dw[j] = T(sw);
      db[j] = T(sb);
    }
  });
}

}  // namespace

void register_norm_kernels() {
  ops::set_cpu_kernel("layer_norm", layer_norm_kernel);
  ops::set_cpu_kernel("layer_norm_backward", layer_norm_backward_kernel);
}

}  // namespace rill::cpu
