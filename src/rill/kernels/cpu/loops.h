// Strided elementwise iteration shared by the CPU kernels. An ElementwisePlan
// puts the output and its inputs on one iteration space (inputs broadcast with
// stride 0), merges dimensions that are contiguous for every operand, and hands
// rows (the innermost dimension) to a row function, in parallel over rows.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "rill/kernels/cpu/isa_rows.h"
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
        // Dense output, inputs dense or broadcast along the row: a broadcast value is spread over a block once,
        // so the dense loop (vectorised) runs over blocks, reading the spread value as a dense input.
        constexpr int64_t kBlock = 256;
        [[maybe_unused]] const int64_t spread = std::min(n, kBlock);  // unused by ops without inputs (fill)
        [[maybe_unused]] std::tuple<std::array<In, kBlock>...> blocks;
        [[maybe_unused]] std::tuple<const In*...> in{reinterpret_cast<const In*>(p[I + 1])...};
        ((s[I + 1] == 0 ? std::fill_n(std::get<I>(blocks).data(), spread, *std::get<I>(in)) : nullptr), ...);
        for (int64_t b = 0; b < n; b += kBlock)
          detail::dense_row<Out>(o + b, std::min(kBlock, n - b), f,
                                 (s[I + 1] == 0 ? std::get<I>(blocks).data() : std::get<I>(in) + b)...);
        return;
      }
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(p[0] + i * s[0]) = f(*reinterpret_cast<const In*>(p[I + 1] + i * s[I + 1])...);
    }(std::index_sequence_for<In...>{});
  });
}

// Note [float16 rows]
// Half converts one element at a time (_cvtsh_ss / _cvtss_sh), and GCC 12 vectorises
// neither those nor _Float16 casts, so map_elements on float16 ran scalar: a 1M-element
// add took 1.5 ms, 6x PyTorch's time. map_float16 converts dense rows to float32 in
// blocks with vector instructions (16 per vcvtph2ps with AVX-512, 8 with F16C), applies
// the float32 function to the block (a loop the compiler vectorises) and rounds the
// block back (to nearest even, as Half does): the add now takes 0.27 ms (PyTorch 0.23).
// The conversions are rows of isa_rows.h, so a build for any x86-64 uses F16C or AVX-512 where the CPU has it.
// bfloat16 takes the same path (its conversions are shifts, but a build for plain x86-64 vectorises them on
// 4 lanes only when they sit inside each op's loop: a 1M add ran 3x slower than on the row kernels).

/** n float16 values as float32, by the row kernels built for this CPU (isa_rows.h). */
inline void float16_to_float(const Half* in, float* out, int64_t n) {
  static_assert(sizeof(Half) == sizeof(uint16_t));
  row_kernels().float16_to_float(reinterpret_cast<const uint16_t*>(in), out, n);
}

/** n float32 values rounded to float16 (to nearest even). */
inline void float_to_float16(const float* in, Half* out, int64_t n) {
  row_kernels().float_to_float16(in, reinterpret_cast<uint16_t*>(out), n);
}

/** n bfloat16 values as float32, by the row kernels built for this CPU. */
inline void bfloat16_to_float(const BFloat16* in, float* out, int64_t n) {
  static_assert(sizeof(BFloat16) == sizeof(uint16_t));
  row_kernels().bfloat16_to_float(reinterpret_cast<const uint16_t*>(in), out, n);
}

/** n float32 values rounded to bfloat16 (to nearest even). */
inline void float_to_bfloat16(const float* in, BFloat16* out, int64_t n) {
  row_kernels().float_to_bfloat16(in, reinterpret_cast<uint16_t*>(out), n);
}

/** True for the 16-bit float types, whose elementwise loops go through float32 blocks. */
template <typename T>
inline constexpr bool kIs16BitFloat = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

/** n values of a 16-bit float type as float32, and back. */
template <typename T>
inline void to_float_block(const T* in, float* out, int64_t n) {
  if constexpr (std::is_same_v<T, Half>) float16_to_float(in, out, n);
  else bfloat16_to_float(in, out, n);
}
template <typename T>
inline void from_float_block(const float* in, T* out, int64_t n) {
  if constexpr (std::is_same_v<T, Half>) float_to_float16(in, out, n);
  else float_to_bfloat16(in, out, n);
}

/** out = g(float(in)...) over inputs of the 16-bit float type In (float16 or bfloat16), g computing in
 * float32; Out is In or bool (comparisons). Dense rows (inputs dense or broadcast along the row) go through
 * float32 blocks (Note [float16 rows]). */
template <typename In, typename Out, size_t K, typename G>
void map_16bit(const TensorArg& out, const std::array<const TensorArg*, K>& ins, const G& g) {
  static_assert(kIs16BitFloat<In> && (std::is_same_v<Out, In> || std::is_same_v<Out, bool>));
  constexpr size_t N = K + 1;
  std::array<const TensorArg*, N> ops;
  ops[0] = &out;
  for (size_t i = 0; i < K; ++i) ops[i + 1] = ins[i];
  ElementwisePlan<N> plan(out.meta->shape, ops);
  plan.run([&](const std::array<char*, N>& p, const std::array<int64_t, N>& s, int64_t n) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      const bool blocks = s[0] == sizeof(Out) && ((s[I + 1] == sizeof(In) || s[I + 1] == 0) && ...);
      if (!blocks) {
        for (int64_t i = 0; i < n; ++i)
          *reinterpret_cast<Out*>(p[0] + i * s[0]) =
              Out(g(static_cast<float>(*reinterpret_cast<const In*>(p[I + 1] + i * s[I + 1]))...));
        return;
      }
      constexpr int64_t B = 512;
      alignas(64) float in[K][B];
      alignas(64) std::conditional_t<std::is_same_v<Out, bool>, bool, float> res[B];
      for (int64_t i0 = 0; i0 < n; i0 += B) {
        const int64_t m = std::min(B, n - i0);
        auto load = [&](size_t k, const char* base, int64_t stride) {
          if (stride == 0) {
            std::fill(in[k], in[k] + m, static_cast<float>(*reinterpret_cast<const In*>(base)));
          } else {
            to_float_block(reinterpret_cast<const In*>(base) + i0, in[k], m);
          }
        };
        (load(I, p[I + 1], s[I + 1]), ...);
        for (int64_t j = 0; j < m; ++j) res[j] = g(in[I][j]...);
        if constexpr (std::is_same_v<Out, In>) {
          from_float_block(res, reinterpret_cast<In*>(p[0]) + i0, m);
        } else {
          std::memcpy(p[0] + i0, res, static_cast<size_t>(m));
        }
      }
    }(std::make_index_sequence<K>{});
  });
}

}  // namespace rill::cpu
