// CPU kernels of the pooling family (ops/pool.cpp): direct loops over (N * C)
// planes, in parallel over planes, that follow PyTorch's CPU kernels exactly:
// max pooling takes the first maximum and lets NaN win (its index is what
// max_pool2d_backward scatters to); average pooling counts the window clipped to
// the padded input (count_include_pad) or to the input, or divides by
// divisor_override; adaptive windows span [floor(o * I / O), ceil((o + 1) * I / O)).
// Pooling is memory-bound and needs PyTorch's index and divisor rules, which
// oneDNN's pooling primitives do not expose (its max-pool workspace is not a
// flat index, it has no divisor_override nor ceil_mode's partly-padded
// divisor), so these loops are rill's own.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/loops.h"
#include "rill/ops/op_schema.h"
#include "rill/util/parallel.h"

namespace rill::cpu {
namespace {

// Planes of `plane_elems` elements each per parallel task: about kParallelGrain elements.
int64_t plane_grain(int64_t plane_elems) {
  return std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, plane_elems));
}

// Calls f(T) for float32 / float64; other dtypes were rejected by inference.
template <typename F>
void visit_float(const char* op, DType dtype, const F& f) {
  if (dtype == DType::kFloat32)
    f(float{});
  else if (dtype == DType::kFloat64)
    f(double{});
  else
    RILL_FAIL(Type, "[", op, "] supports float32 and float64 tensors, got ", dtype_name(dtype));
}

void check_dense(const KernelContext& ctx) {
  for (const TensorArg& t : ctx.inputs)
    RILL_ASSERT(t.meta->contiguous, "[", ctx.op.name, "] expects dense inputs (eager makes them contiguous)");
}

struct Window2d {
  int64_t kernel[2], stride[2], pad[2], dilation[2];
};

Window2d read_window(const Attrs& a, size_t first, bool with_dilation) {
  const auto &k = a.get_ints(first), &s = a.get_ints(first + 1), &p = a.get_ints(first + 2);
  Window2d w{{k[0], k[1]}, {s[0], s[1]}, {p[0], p[1]}, {1, 1}};
  if (with_dilation) {
    const auto& d = a.get_ints(first + 3);
    w.dilation[0] = d[0];
    w.dilation[1] = d[1];
  }
  return w;
}

void max_pool2d_kernel(const KernelContext& ctx) {
  check_dense(ctx);
  const Shape& in = ctx.inputs[0].meta->shape;
  const Shape& out = ctx.outputs[0].meta->shape;
  const Window2d w = read_window(ctx.attrs, 0, true);
  const int64_t H = in[2], W = in[3], OH = out[2], OW = out[3];
  visit_float("max_pool2d", ctx.outputs[0].meta->dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* x = ctx.inputs[0].ptr<const T>();
    T* y = ctx.outputs[0].ptr<T>();
    int64_t* idx = ctx.outputs[1].ptr<int64_t>();
    parallel::parallel_for(0, in[0] * in[1], plane_grain(H * W), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const T* xp = x + p * H * W;
        for (int64_t oh = 0; oh < OH; ++oh) {
          int64_t h0 = oh * w.stride[0] - w.pad[0];
          const int64_t h1 = std::min(h0 + (w.kernel[0] - 1) * w.dilation[0] + 1, H);
          while (h0 < 0) h0 += w.dilation[0];
          for (int64_t ow = 0; ow < OW; ++ow) {
            int64_t w0 = ow * w.stride[1] - w.pad[1];
            const int64_t w1 = std::min(w0 + (w.kernel[1] - 1) * w.dilation[1] + 1, W);
            while (w0 < 0) w0 += w.dilation[1];
            int64_t best = h0 * W + w0;
            T best_v = -std::numeric_limits<T>::infinity();
            for (int64_t h = h0; h < h1; h += w.dilation[0])
              for (int64_t c = w0; c < w1; c += w.dilation[1]) {
                const T v = xp[h * W + c];
                if (v > best_v || std::isnan(v)) {
                  best_v = v;
                  best = h * W + c;
                }
              }
            const int64_t o = (p * OH + oh) * OW + ow;
            y[o] = best_v;
            idx[o] = best;
          }
        }
      }
    });
  });
}

void max_pool2d_backward_kernel(const KernelContext& ctx) {
  check_dense(ctx);
  const Shape& gy_shape = ctx.inputs[0].meta->shape;
  const Shape& in = ctx.outputs[0].meta->shape;
  const int64_t plane_in = in[2] * in[3], plane_out = gy_shape[2] * gy_shape[3];
  visit_float("max_pool2d_backward", ctx.outputs[0].meta->dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* gy = ctx.inputs[0].ptr<const T>();
    const int64_t* idx = ctx.inputs[1].ptr<const int64_t>();
    T* gx = ctx.outputs[0].ptr<T>();
    parallel::parallel_for(0, in[0] * in[1], plane_grain(plane_in + plane_out), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        T* g = gx + p * plane_in;
        std::fill(g, g + plane_in, T(0));
        for (int64_t o = p * plane_out; o < (p + 1) * plane_out; ++o) {
          const int64_t i = idx[o];
          RILL_CHECK(i >= 0 && i < plane_in, Index, "[max_pool2d_backward] index ", i,
                     " is out of bounds for an input plane of ", plane_in,
                     " elements; pass the indices max_pool2d returned");
          g[i] += gy[o];
        }
      }
    });
  });
}

// Geometry of avg_pool2d / avg_pool2d_backward (attrs from `first`).
struct AvgPool {
  Window2d w;
  bool count_include_pad;
  int64_t divisor_override;  // 0: none
};

AvgPool read_avg(const Attrs& a, size_t first) {
  return {read_window(a, first, false), a.get_bool(first + 4), a.get_int(first + 5)};
}

// Calls f(h0, h1, w0, w1, divisor) for output position (oh, ow): the window
// clipped to the input, and its divisor; an empty window has divisor 0.
template <typename F>
inline void avg_window(const AvgPool& a, int64_t H, int64_t W, int64_t oh, int64_t ow, const F& f) {
  int64_t h0 = oh * a.w.stride[0] - a.w.pad[0], w0 = ow * a.w.stride[1] - a.w.pad[1];
  int64_t h1 = std::min(h0 + a.w.kernel[0], H + a.w.pad[0]), w1 = std::min(w0 + a.w.kernel[1], W + a.w.pad[1]);
  const int64_t padded_count = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, H);
  w1 = std::min(w1, W);
  if (h0 >= h1 || w0 >= w1) return f(h0, h1, w0, w1, int64_t{0});
  const int64_t divisor =
      a.divisor_override != 0 ? a.divisor_override : a.count_include_pad ? padded_count : (h1 - h0) * (w1 - w0);
  f(h0, h1, w0, w1, divisor);
}

void avg_pool2d_kernel(const KernelContext& ctx) {
  check_dense(ctx);
  const Shape& in = ctx.inputs[0].meta->shape;
  const Shape& out = ctx.outputs[0].meta->shape;
  const AvgPool a = read_avg(ctx.attrs, 0);
  const int64_t H = in[2], W = in[3], OH = out[2], OW = out[3];
  visit_float("avg_pool2d", ctx.outputs[0].meta->dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* x = ctx.inputs[0].ptr<const T>();
    T* y = ctx.outputs[0].ptr<T>();
    parallel::parallel_for(0, in[0] * in[1], plane_grain(H * W), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const T* xp = x + p * H * W;
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow)
            avg_window(a, H, W, oh, ow, [&](int64_t h0, int64_t h1, int64_t w0, int64_t w1, int64_t divisor) {
              T sum = 0;
              for (int64_t h = h0; h < h1; ++h)
                for (int64_t c = w0; c < w1; ++c) sum += xp[h * W + c];
              y[(p * OH + oh) * OW + ow] = divisor == 0 ? T(0) : sum / static_cast<T>(divisor);
            });
      }
    });
  });
}

void avg_pool2d_backward_kernel(const KernelContext& ctx) {
  check_dense(ctx);
  const Shape& gy_shape = ctx.inputs[0].meta->shape;
  const Shape& in = ctx.outputs[0].meta->shape;
  const AvgPool a = read_avg(ctx.attrs, 1);
  const int64_t H = in[2], W = in[3], OH = gy_shape[2], OW = gy_shape[3];
  visit_float("avg_pool2d_backward", ctx.outputs[0].meta->dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* gy = ctx.inputs[0].ptr<const T>();
    T* gx = ctx.outputs[0].ptr<T>();
    parallel::parallel_for(0, in[0] * in[1], plane_grain(H * W), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        T* g = gx + p * H * W;
        std::fill(g, g + H * W, T(0));
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow)
            avg_window(a, H, W, oh, ow, [&](int64_t h0, int64_t h1, int64_t w0, int64_t w1, int64_t divisor) {
              if (divisor == 0) return;
              const T share = gy[(p * OH + oh) * OW + ow] / static_cast<T>(divisor);
              for (int64_t h = h0; h < h1; ++h)
                for (int64_t c = w0; c < w1; ++c) g[h * W + c] += share;
            });
      }
    });
  });
}

// Adaptive window [start, end) of output o along a dim of in -> out elements.
inline int64_t adaptive_start(int64_t o, int64_t in, int64_t out) { return (o * in) / out; }
inline int64_t adaptive_end(int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; }

void adaptive_avg_pool2d_kernel(const KernelContext& ctx) {
  check_dense(ctx);
  const Shape& in = ctx.inputs[0].meta->shape;
  const Shape& out = ctx.outputs[0].meta->shape;
  const int64_t H = in[2], W = in[3], OH = out[2], OW = out[3];
  if (ctx.outputs[0].meta->numel == 0) return;
  visit_float("adaptive_avg_pool2d", ctx.outputs[0].meta->dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* x = ctx.inputs[0].ptr<const T>();
    T* y = ctx.outputs[0].ptr<T>();
    parallel::parallel_for(0, in[0] * in[1], plane_grain(H * W), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const T* xp = x + p * H * W;
        for (int64_t oh = 0; oh < OH; ++oh) {
          const int64_t h0 = adaptive_start(oh, H, OH), h1 = adaptive_end(oh, H, OH);
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t w0 = adaptive_start(ow, W, OW), w1 = adaptive_end(ow, W, OW);
            T sum = 0;
            for (int64_t h = h0; h < h1; ++h)
              for (int64_t c = w0; c < w1; ++c) sum += xp[h * W + c];
            y[(p * OH + oh) * OW + ow] = sum / static_cast<T>((h1 - h0) * (w1 - w0));
          }
        }
      }
    });
  });
}

void adaptive_avg_pool2d_backward_kernel(const KernelContext& ctx) {
  check_dense(ctx);
  const Shape& gy_shape = ctx.inputs[0].meta->shape;
  const Shape& in = ctx.outputs[0].meta->shape;
  const int64_t H = in[2], W = in[3], OH = gy_shape[2], OW = gy_shape[3];
  visit_float("adaptive_avg_pool2d_backward", ctx.outputs[0].meta->dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* gy = ctx.inputs[0].ptr<const T>();
    T* gx = ctx.outputs[0].ptr<T>();
    parallel::parallel_for(0, in[0] * in[1], plane_grain(H * W), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        T* g = gx + p * H * W;
        std::fill(g, g + H * W, T(0));
        for (int64_t oh = 0; oh < OH; ++oh) {
          const int64_t h0 = adaptive_start(oh, H, OH), h1 = adaptive_end(oh, H, OH);
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t w0 = adaptive_start(ow, W, OW), w1 = adaptive_end(ow, W, OW);
            const T share = gy[(p * OH + oh) * OW + ow] / static_cast<T>((h1 - h0) * (w1 - w0));
            for (int64_t h = h0; h < h1; ++h)
              for (int64_t c = w0; c < w1; ++c) g[h * W + c] += share;
          }
        }
      }
    });
  });
}

}  // namespace

void register_pool_kernels() {
  ops::set_cpu_kernel("max_pool2d", max_pool2d_kernel);
  ops::set_cpu_kernel("max_pool2d_backward", max_pool2d_backward_kernel);
  ops::set_cpu_kernel("avg_pool2d", avg_pool2d_kernel);
  ops::set_cpu_kernel("avg_pool2d_backward", avg_pool2d_backward_kernel);
  ops::set_cpu_kernel("adaptive_avg_pool2d", adaptive_avg_pool2d_kernel);
  ops::set_cpu_kernel("adaptive_avg_pool2d_backward", adaptive_avg_pool2d_backward_kernel);
}

}  // namespace rill::cpu
