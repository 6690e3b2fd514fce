// Strided elementwise iteration shared by the CPU kernels. An ElementwisePlan
// puts the output and its inputs on one iteration space (inputs broadcast with
// stride 0), merges dimensions that are contiguous for every operand, and hands
// rows (the innermost dimension) to a row function, in parallel over rows.
#pragma once

#include <array>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "rill/ops/op_schema.h"
#include "rill/util/parallel.h"

namespace rill::cpu {

/** Elements per task below which a loop stays on one thread. */
inline constexpr int64_t kParallelGrain = 32768;

/** Iteration space of N operands (operand 0 is the output). */
template <size_t N>
struct ElementwisePlan {
  std::vector<int64_t> sizes;                  // innermost last, after merging
  std::array<std::vector<int64_t>, N> strides;  // bytes, per operand, per dim
  std::array<char*, N> base;
  int64_t numel = 1;

  /** Plan over shape; operands[i] broadcast to shape (right-aligned). */
  ElementwisePlan(const Shape& shape, const std::array<const TensorArg*, N>& operands) {
    size_t nd = shape.size();
    for (size_t k = 0; k < N; ++k) {
      const TensorMeta& m = *operands[k]->meta;
      base[k] = static_cast<char*>(operands[k]->data);
      int64_t item = dtype_itemsize(m.dtype);
      strides[k].assign(nd, 0);
      size_t lead = nd - m.shape.size();
      for (size_t d = 0; d < m.shape.size(); ++d)
        strides[k][lead + d] = m.shape[d] == 1 ? 0 : m.strides[d] * item;
    }
    // Merge dims d-1 and d when every operand steps through them as one dim.
    std::vector<int64_t> sz(shape.begin(), shape.end());
    std::vector<size_t> keep;
    for (size_t d = 0; d < nd; ++d) {
      if (sz[d] == 1) continue;  // size-1 dims carry no iteration
      if (!keep.empty()) {
        size_t p = keep.back();
        bool mergeable = true;
        for (size_t k = 0; k < N; ++k)
          if (strides[k][p] != strides[k][d] * sz[d]) mergeable = false;
        if (mergeable) {
          sz[p] *= sz[d];
          for (size_t k = 0; k < N; ++k) strides[k][p] = strides[k][d];
          continue;
        }
      }
      keep.push_back(d);
    }
    sizes.clear();
    for (size_t d : keep) sizes.push_back(sz[d]);
    for (size_t k = 0; k < N; ++k) {
      std::vector<int64_t> s;
      for (size_t d : keep) s.push_back(strides[k][d]);
      strides[k] = std::move(s);
    }
    numel = 1;
    for (int64_t s : shape) numel *= s;
    if (sizes.empty() && numel == 1) {  // 0-dim or all-ones: one row of one element
      sizes.push_back(1);
      for (size_t k = 0; k < N; ++k) strides[k].push_back(0);
    }
  }

  /** Call row(ptrs, inner_strides, n) over every row; rows are split across threads. */
  template <typename Row>
  void run(const Row& row, int64_t grain = kParallelGrain) const {
    if (numel == 0) return;
    const int64_t inner = sizes.back();
    const int64_t rows = numel / inner;
    const size_t nd = sizes.size();
    std::array<int64_t, N> inner_strides;
    for (size_t k = 0; k < N; ++k) inner_strides[k] = strides[k][nd - 1];
    if (rows == 1) {
      // One long row: split the row itself.
      parallel::parallel_for(0, inner, grain, [&](int64_t b, int64_t e) {
        std::array<char*, N> p;
        for (size_t k = 0; k < N; ++k) p[k] = base[k] + b * inner_strides[k];
        row(p, inner_strides, e - b);
      });
      return;
    }
    int64_t row_grain = std::max<int64_t>(1, grain / inner);
    parallel::parallel_for(0, rows, row_grain, [&](int64_t rb, int64_t re) {
      // Multi-index of row rb over the outer dims.
      std::vector<int64_t> idx(nd - 1, 0);
      int64_t r = rb;
      for (size_t d = nd - 1; d-- > 0;) {
        idx[d] = r % sizes[d];
        r /= sizes[d];
      }
      std::array<char*, N> p;
      for (size_t k = 0; k < N; ++k) {
        p[k] = base[k];
        for (size_t d = 0; d + 1 < nd; ++d) p[k] += idx[d] * strides[k][d];
      }
      for (int64_t i = rb; i < re; ++i) {
        row(p, inner_strides, inner);
        // Advance the multi-index by one row.
        for (size_t d = nd - 1; d-- > 0;) {
          for (size_t k = 0; k < N; ++k) p[k] += strides[k][d];
          if (++idx[d] < sizes[d]) break;
          for (size_t k = 0; k < N; ++k) p[k] -= strides[k][d] * sizes[d];
          idx[d] = 0;
        }
      }
    });
  }
};

namespace detail {
// The contiguous inner loop, out of line and with restrict pointers. Inlined
// into map_elements, GCC 12 emitted the same vector loop but it ran 3x slower
// than a hand-written one on 1M floats (measured; cause not pinned down); as a
// small function of its own it matches the hand-written loop.
template <typename Out, typename F, typename... In>
__attribute__((noinline)) void dense_row(Out* __restrict o, int64_t n, const F& f, const In* __restrict... in) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(in[i]...);
}
}  // namespace detail

/** Apply f elementwise: out = f(in...), computing in the element types given. */
template <typename Out, typename... In, typename F>
void map_elements(const TensorArg& out, const std::array<const TensorArg*, sizeof...(In)>& ins, const F& f) {
  constexpr size_t N = sizeof...(In) + 1;
  // Every operand dense, row-major and of the output's size (so of its shape, up to leading 1s): one flat
  // row, with no plan to build (the common case, and the per-op cost of small tensors).
  const int64_t numel = out.meta->numel;
  bool flat = out.meta->contiguous;
  for (const TensorArg* in : ins) flat = flat && in->meta->contiguous && in->meta->numel == numel;
  if (flat) {
    parallel::parallel_for(0, numel, kParallelGrain, [&](int64_t b, int64_t e) {
      [&]<size_t... I>(std::index_sequence<I...>) {
        detail::dense_row<Out>(out.ptr<Out>() + b, e - b, f, (static_cast<const In*>(ins[I]->data) + b)...);
      }(std::index_sequence_for<In...>{});
    });
    return;
  }
  std::array<const TensorArg*, N> ops;
  ops[0] = &out;
  for (size_t i = 0; i < sizeof...(In); ++i) ops[i + 1] = ins[i];
  ElementwisePlan<N> plan(out.meta->shape, ops);
  plan.run([&](const std::array<char*, N>& p, const std::array<int64_t, N>& s, int64_t n) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      Out* o = reinterpret_cast<Out*>(p[0]);
      bool dense = ((s[0] == sizeof(Out)) && ... && (s[I + 1] == sizeof(In)));
      if (dense) {
        // Contiguous row: plain indexing, which the compiler vectorises.
        detail::dense_row<Out>(o, n, f, reinterpret_cast<const In*>(p[I + 1])...);
        return;
      }
      bool scalar_rest = ((s[0] == sizeof(Out)) && ... && (s[I + 1] == 0 || s[I + 1] == sizeof(In)));
      if (scalar_rest) {
        // Dense output, inputs dense or broadcast along the row.
        [[maybe_unused]] std::tuple<const In*...> in{reinterpret_cast<const In*>(p[I + 1])...};
        [[maybe_unused]] std::array<int64_t, sizeof...(In)> step{(s[I + 1] == 0 ? 0 : 1)...};
        for (int64_t i = 0; i < n; ++i) o[i] = f(std::get<I>(in)[i * step[I]]...);
        return;
      }
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(p[0] + i * s[0]) = f(*reinterpret_cast<const In*>(p[I + 1] + i * s[I + 1])...);
    }(std::index_sequence_for<In...>{});
  });
}

}  // namespace rill::cpu
