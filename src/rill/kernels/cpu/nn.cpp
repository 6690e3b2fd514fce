// CPU kernels of linear (and _linear_activation), embedding, dropout and nll_loss,
// with their backward ops (ops/nn.cpp; softmax and layer_norm are in softmax.cpp
// and norm.cpp, _sdpa in attention.cpp).
// Inputs are dense (the eager functions make them so).

#include <climits>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "rill/kernels/cpu/blas.h"
#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/loops.h"
#include "rill/kernels/cpu/philox.h"
#include "rill/ops/fused_activation.h"

namespace rill::cpu {
namespace {

// --- linear: y = x @ w^T + b --------------------------------------------------------------

// Multiply-accumulates below which linear stays on the calling thread (as matmul's kParallelMacs).
constexpr int64_t kLinearParallelMacs = int64_t{1} << 20;

void gemm_nt(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float beta, float* c) {
  blas_gemm(false, true, m, n, k, 1.0f, a, k, b, k, beta, c, n);
}

void gemm_nt(int64_t m, int64_t n, int64_t k, const double* a, const double* b, double beta, double* c) {
  blas_gemm(false, true, m, n, k, 1.0, a, k, b, k, beta, c, n);
}

// Note [Linear with bias in one gemm]
// The output rows are first filled with the bias, then one gemm per piece of
// rows accumulates x @ w^T onto them (beta = 1): the bias costs one write of the
// output, not a second elementwise pass reading it back. The rows of x (every
// leading dim folded in) are split over the intra-op pool, each piece one serial
// BLAS call (Note [BLAS threads] in matmul.cpp).
void linear_kernel(const KernelContext& c) {
  const TensorMeta& xm = *c.inputs[0].meta;
  const TensorMeta& wm = *c.inputs[1].meta;
  for (const TensorArg& t : c.inputs) RILL_ASSERT(t.meta->contiguous, "[linear] expects dense inputs");
  const int64_t k = xm.shape.back(), n = wm.shape[0];
  const int64_t m = k ? xm.numel / k : shape_numel(Shape(xm.shape.begin(), xm.shape.end() - 1));
  const bool has_bias = c.inputs.size() == 3;
  if (m == 0 || n == 0) return;
  RILL_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, Runtime, "[linear] dims above 2^31-1 are not supported");
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = c.inputs[0].ptr<T>();
    const T* w = c.inputs[1].ptr<T>();
    const T* b = has_bias ? c.inputs[2].ptr<T>() : nullptr;
    T* y = c.outputs[0].ptr<T>();
    auto rows = [&](int64_t r0, int64_t r1) {
      if (b)
        for (int64_t i = r0; i < r1; ++i) std::memcpy(y + i * n, b, static_cast<size_t>(n) * sizeof(T));
      if (k == 0) {
        if (!b) std::memset(y + r0 * n, 0, static_cast<size_t>((r1 - r0) * n) * sizeof(T));
        return;
      }
      gemm_nt(r1 - r0, n, k, x + r0 * k, w, b ? T(1) : T(0), y + r0 * n);
    };
    const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    const int64_t threads = parallel::num_threads();
    if (threads == 1 || macs < kLinearParallelMacs || m < 2 * 8) {
      rows(0, m);
      return;
    }
    const int64_t parts = std::min<int64_t>(threads, m / 8);
    parallel::parallel_for(0, parts, 1, [&](int64_t pb, int64_t pe) {
      for (int64_t p = pb; p < pe; ++p) rows(m * p / parts, m * (p + 1) / parts);
    });
  };
  if (xm.dtype == DType::kFloat32) run(TypeTag<float>{});
  else run(TypeTag<double>{});
}

// --- _linear_activation: act(x @ w^T + b) -------------------------------------------------

// Note [A linear and its activation in one kernel]
// linear's gemm (Note [Linear with bias in one gemm]), then the activation op's own kernel over the output in
// place, in the same task: what the two unfused ops compute, bit for bit, less one task. oneDNN's matmul with
// the bias and the activation as post-ops was tried instead: at 1 thread it did not beat this (training steps of
// MLP 64-128-128-10: 175.0 us against 176.3 unfused; MLP 784-512-512-10: 2398 against 2324), so the gemm stays
// OpenBLAS's.

void linear_activation_kernel(const KernelContext& c) {
  linear_kernel(c);
  ops::activate_in_place(c.outputs[0], c.attr<std::string>("activation"), c.attr<std::string>("approximate"));
}

// --- embedding ----------------------------------------------------------------------------

template <typename I>
int64_t checked_index(I v, int64_t rows) {
  const int64_t i = static_cast<int64_t>(v);
  RILL_CHECK(i >= 0 && i < rows, Index, "[embedding] index out of range in self: index ", i, " for a weight of ",
             rows, " rows; indices must be in [0, num_embeddings)");
  return i;
}

void embedding_kernel(const KernelContext& c) {
  const TensorMeta& wm = *c.inputs[0].meta;
  const int64_t rows = wm.shape[0], dim = wm.shape[1];
  const int64_t count = c.inputs[1].meta->numel;
  const int64_t row_bytes = dim * dtype_itemsize(wm.dtype);
  const char* w = static_cast<const char*>(c.inputs[0].data);
  char* out = static_cast<char*>(c.outputs[0].data);
  visit_dtype(c.inputs[1].meta->dtype, [&](auto tag) {
    using I = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
      const I* idx = c.inputs[1].ptr<I>();
      for (int64_t i = 0; i < count; ++i) checked_index(idx[i], rows);  // before any write: no partial output
      parallel::parallel_for(0, count, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(dim, 1)),
                             [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          std::memcpy(out + i * row_bytes, w + static_cast<int64_t>(idx[i]) * row_bytes, static_cast<size_t>(row_bytes));
      });
    }
  });
}

// dweight[idx[i]] += grad[i] for every i whose index is not padding_idx (that row gets no gradient).
void embedding_backward_kernel(const KernelContext& c) {
  const TensorMeta& om = *c.outputs[0].meta;
  const int64_t rows = om.shape[0], dim = om.shape[1];
  const int64_t count = c.inputs[1].meta->numel;
  const int64_t padding = c.attrs.get_int(1);
  visit_floating_dtype(om.dtype, "embedding_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = OpMath<T>;
    const T* g = c.inputs[0].ptr<T>();
    T* dw = c.outputs[0].ptr<T>();
    std::vector<A> acc(static_cast<size_t>(rows * dim), A(0));
    visit_dtype(c.inputs[1].meta->dtype, [&](auto itag) {
      using I = typename decltype(itag)::type;
      if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
        const I* idx = c.inputs[1].ptr<I>();
        for (int64_t i = 0; i < count; ++i) checked_index(idx[i], rows);  // raised here, not on a pool thread
        // Columns split over threads: every thread owns its slice of each row, so no two write one element.
        parallel::parallel_for(0, dim, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(count, 1)),
                               [&](int64_t b, int64_t e) {
          for (int64_t i = 0; i < count; ++i) {
            const int64_t r = static_cast<int64_t>(idx[i]);
            if (r == padding) continue;
            A* dst = acc.data() + r * dim;
            const T* src = g + i * dim;
            for (int64_t j = b; j < e; ++j) dst[j] += static_cast<A>(src[j]);
          }
        });
      }
    });
    for (int64_t i = 0; i < rows * dim; ++i) dw[i] = T(acc[static_cast<size_t>(i)]);
  });
}

// --- dropout ------------------------------------------------------------------------------

// Keeps each element with probability 1 - p, scaled by 1 / (1 - p); the mask is an output, saved for
// backward. Element i takes 32 bits of Philox counter offset + i / 4 (so a call consumes numel / 4 + 1
// counters; eager/nn.cpp advances the generator by numel, as rand does).
void dropout_kernel(const KernelContext& c) {
  const double p = c.attrs.get_double(0);
  Philox philox(static_cast<uint64_t>(c.scalars[0].to_int()));
  const uint64_t offset = static_cast<uint64_t>(c.scalars[1].to_int());
  const int64_t n = c.inputs[0].meta->numel;
  bool* mask = c.outputs[1].ptr<bool>();
  // keep when the 32-bit draw u satisfies u < (1 - p) * 2^32.
  const double keep_limit = (1.0 - p) * 4294967296.0;
  visit_floating_dtype(c.inputs[0].meta->dtype, "dropout", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = OpMath<T>;
    const T* x = c.inputs[0].ptr<T>();
    T* y = c.outputs[0].ptr<T>();
    const A scale = p < 1.0 ? static_cast<A>(1.0 / (1.0 - p)) : A(0);
    // Blocks of 4 elements share one Philox call; a task covers whole blocks.
    const int64_t blocks = (n + 3) / 4;
    parallel::parallel_for(0, blocks, kParallelGrain / 16, [&](int64_t b, int64_t e) {
      for (int64_t blk = b; blk < e; ++blk) {
        const std::array<uint32_t, 4> r = philox(offset + static_cast<uint64_t>(blk));
        for (int64_t q = 0; q < 4; ++q) {
          const int64_t i = blk * 4 + q;
          if (i >= n) break;
          const bool keep = static_cast<double>(r[q]) < keep_limit;
          mask[i] = keep;
          y[i] = keep ? T(static_cast<A>(x[i]) * scale) : T(A(0));
        }
      }
    });
  });
}

// --- nll_loss -----------------------------------------------------------------------------

// input [N, C, inner] (or [C]), target [N, inner] (or []).
struct NllLayout {
  int64_t batch = 1, classes = 1, inner = 1;
};

NllLayout nll_layout(const Shape& s) {
  NllLayout l;
  if (s.size() == 1) {
    l.classes = s[0];
    return l;
  }
  l.batch = s[0];
  l.classes = s[1];
  for (size_t d = 2; d < s.size(); ++d) l.inner *= s[d];
  return l;
}

int64_t checked_target(int64_t t, int64_t classes) {
  RILL_CHECK(t >= 0 && t < classes, Index, "[nll_loss] Target ", t, " is out of bounds. Targets must be class "
             "indices in [0, ", classes, ") or ignore_index");
  return t;
}

void nll_loss_kernel(const KernelContext& c) {
  const TensorMeta& xm = *c.inputs[0].meta;
  for (const TensorArg& t : c.inputs) RILL_ASSERT(t.meta->contiguous, "[nll_loss] expects dense inputs");
  const NllLayout l = nll_layout(xm.shape);
  const int64_t reduction = c.attrs.get_int(0), ignore = c.attrs.get_int(1);
  const int64_t* target = c.inputs[1].ptr<int64_t>();
  visit_floating_dtype(xm.dtype, "nll_loss", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = OpMath<T>;
    const T* x = c.inputs[0].ptr<T>();
    const T* w = c.inputs.size() == 3 ? c.inputs[2].ptr<T>() : nullptr;
    T* out = c.outputs[0].ptr<T>();
    A total = 0, weight_sum = 0;
    for (int64_t b = 0; b < l.batch; ++b)
      for (int64_t j = 0; j < l.inner; ++j) {
        const int64_t pos = b * l.inner + j;
        const int64_t t = target[pos];
        A loss = 0;
        if (t != ignore) {
          checked_target(t, l.classes);
          const A wt = w ? static_cast<A>(w[t]) : A(1);
          loss = -wt * static_cast<A>(x[(b * l.classes + t) * l.inner + j]);
          weight_sum += wt;
        }
        if (reduction == 0) out[pos] = T(loss);
        total += loss;
      }
    if (reduction == 1) out[0] = T(total / weight_sum);  // all ignored: 0 / 0 = nan, as in PyTorch
    if (reduction == 2) out[0] = T(total);
    c.outputs[1].ptr<T>()[0] = T(weight_sum);
  });
}

// dlogp[b, t, j] = -weight[t] * grad (grad[b, j] without reduction; grad / total_weight for mean).
void nll_loss_backward_kernel(const KernelContext& c) {
  const TensorMeta& om = *c.outputs[0].meta;
  const NllLayout l = nll_layout(om.shape);
  const int64_t reduction = c.attrs.get_int(0), ignore = c.attrs.get_int(1);
  const int64_t* target = c.inputs[1].ptr<int64_t>();
  visit_floating_dtype(om.dtype, "nll_loss", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = OpMath<T>;
    const T* g = c.inputs[0].ptr<T>();
    const A total_weight = static_cast<A>(c.inputs[2].ptr<T>()[0]);
    const T* w = c.inputs.size() == 4 ? c.inputs[3].ptr<T>() : nullptr;
    T* dx = c.outputs[0].ptr<T>();
    std::memset(static_cast<void*>(dx), 0, static_cast<size_t>(om.numel) * sizeof(T));
    const A scale = reduction == 1 ? static_cast<A>(g[0]) / total_weight : static_cast<A>(g[0]);
    for (int64_t b = 0; b < l.batch; ++b)
      for (int64_t j = 0; j < l.inner; ++j) {
        const int64_t pos = b * l.inner + j;
        const int64_t t = target[pos];
        if (t == ignore) continue;
        checked_target(t, l.classes);
        const A gv = reduction == 0 ? static_cast<A>(g[pos]) : scale;
        dx[(b * l.classes + t) * l.inner + j] = T(-(w ? static_cast<A>(w[t]) : A(1)) * gv);
      }
  });
}

}  // namespace

void register_nn_kernels() {
  ops::set_cpu_kernel("linear", linear_kernel);
  ops::set_cpu_kernel("_linear_activation", linear_activation_kernel);
  ops::set_cpu_kernel("embedding", embedding_kernel);
  ops::set_cpu_kernel("embedding_backward", embedding_backward_kernel);
  ops::set_cpu_kernel("dropout", dropout_kernel);
  ops::set_cpu_kernel("nll_loss", nll_loss_kernel);
  ops::set_cpu_kernel("nll_loss_backward", nll_loss_backward_kernel);
  register_attention_kernels();
}

}  // namespace rill::cpu
