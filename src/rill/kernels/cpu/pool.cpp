// CPU kernels of the pooling family (ops/pool.cpp). float32 and bfloat16
// pooling runs on oneDNN's pooling primitives (Debian's libdnnl 2.6, as
// convolutions do) where they compute exactly what PyTorch does; everything else
// runs on direct loops over (N * C) planes that follow PyTorch's CPU kernels
// exactly: max pooling takes the first maximum and lets NaN win (its index is
// what max_pool2d_backward scatters to); average pooling counts the window
// clipped to the padded input (count_include_pad) or to the input, or divides by
// divisor_override; adaptive windows span [floor(o * I / O), ceil((o + 1) * I / O)).
// The loops compute float16 and bfloat16 in float. Note [Pooling on oneDNN]
// says which path runs when.
#include <dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/loops.h"
#include "rill/kernels/cpu/onednn.h"
#include "rill/ops/op_schema.h"
#include "rill/util/parallel.h"

namespace rill::cpu {
namespace {

// Note [Pooling on oneDNN]
// oneDNN's pooling_v2 primitives (max with dilation; average including or
// excluding the padding) run on plain NCHW memory, so no reorders are needed:
// the (N * C) planes are cut into one piece per thread, each piece one
// single-threaded primitive on a {1, planes, H, W} tensor (Note [oneDNN threads]
// in onednn.cpp), created under the fork guard and cached by geometry (Note
// [oneDNN and fork]). oneDNN runs, for float32 and bfloat16 (its JIT kernels
// take bfloat16 on AVX-512 CPUs, as here; a CPU where only its slow reference
// implementation would run keeps the loops), on inputs of 2048 elements or more:
//   - max_pool2d without return_indices, forward and backward: kernel, stride,
//     padding, dilation, and ceil_mode as extra right padding that makes the last
//     window start where PyTorch's output size puts it (that size already obeys
//     PyTorch's rule that the last window starts inside the input or the left
//     padding, so no window lies wholly in the padding);
//   - avg_pool2d without divisor_override: count_include_pad=False always, and
//     count_include_pad=True without padding (then the same thing) or unless
//     ceil_mode makes the last window reach past the right padding (PyTorch then
//     divides by the window clipped to the padded input, oneDNN by the kernel);
//   - adaptive_avg_pool2d when the output size divides the input size (uniform
//     windows: kernel = stride = input / output, as average pooling).
// The loops run the rest: max_pool2d with return_indices and max_pool2d_backward
// (PyTorch's flat indices; oneDNN's workspace is an opaque format),
// divisor_override, avg_pool2d's ceil_mode windows above, non-uniform adaptive
// windows, float16 and float64 (oneDNN 2.6 has neither here), geometries oneDNN
// refuses, and two cases where they are faster (1 thread, us, min of 9 runs):
//   input < 2048 elements: a primitive call has a fixed cost of ~2 us (1x1x8x8
//     max 4.5 vs 1.8, avg 2.5 vs 1.4; 2x8x8x8 about even; 2x16x16x16 max 6.0
//     vs 16.0);
//   average-pooling backward with windows 16 or more wide: oneDNN's NCHW
//     backward is slow on long windows (512x32x32, k16 s16: 219 vs 96; k8 s8
//     226 vs 235, even; k4 s4 240 vs 1480).
// Elsewhere oneDNN is 3-30x faster, e.g. on 32x16x32x32 (forward; backward or
// forward+backward for max): max k2s2 169 vs 3959, fwd+bwd 430 vs 4346; max
// k3s2p1 189 vs 6129, fwd+bwd 507 vs 6905; avg k2s2 121 vs 1196, bwd 218 vs
// 1400; adaptive to 4x4 95 vs 254 (bwd, 8 wide: 186 vs 152, even within noise).
//
// Max pooling without indices saves oneDNN's workspace from forward to backward
// (max_pool2d_with_workspace: one uint8 per output, kept by autograd) rather
// than recomputing the forward in the backward pass: the backward is then one
// primitive (~320 us on 32x16x32x32 k2s2, where recomputing would add the
// forward's ~170), and the workspace is a quarter of the values' size, where
// recomputing would keep the input (four times the values) and the loops'
// int64 indices are twice it. oneDNN's max backward on NCHW is itself
// slower than the loops' scatter from indices (~320 vs ~125 us above), but their
// forward (a branch per element) costs 20x oneDNN's, so the pair is 10x faster.
// The forward uses forward_training even without autograd: forward_inference
// saves ~20% of the forward and would need an op of its own. The loops write
// their own workspace format (the maximum's offset in its window; oneDNN's
// entries are the same offsets, kh * kernel_w + kw, which max pooling's second
// derivative reads: autograd/conv.cpp, checked on both paths by
// test_create_graph.py), so a
// workspace must be read by the path that wrote it: both passes decide by dtype,
// input size and geometry alone, the primitive over all planes standing for the
// pieces (oneDNN refuses a descriptor, never a channel count), and oneDNN's
// workspace layout is checked when the primitives are created (uint8 or int32
// per output, NCHW, as the workspace tensor): a piece's planes are a slice of it
// whatever the thread count. oneDNN's max differs from PyTorch's on two inputs:
// it ignores NaN (PyTorch's maximum of a window holding NaN is NaN) and starts
// from the lowest finite value (a window of -inf gives -FLT_MAX). So each
// piece's input is scanned for NaN and -inf (vectorised: 32 us on 2 MB, ~20% of
// the forward), and a piece holding one takes the loop's values. Its workspace
// stays oneDNN's: the gradient of a NaN window goes to its largest number, not
// to the NaN as in PyTorch.

// A pooling call as kernels see it: planes of ih x iw -> oh x ow.
struct PoolDims {
  int64_t planes, ih, iw, oh, ow;
  int64_t kernel[2], stride[2], pad[2], dilation[2];
};

PoolDims make_dims(const Shape& in, const Shape& out, const int64_t kernel[2], const int64_t stride[2],
                   const int64_t pad[2], const int64_t dilation[2]) {
  PoolDims d{in[0] * in[1], in[2], in[3], out[2], out[3], {}, {}, {}, {}};
  for (int i = 0; i < 2; ++i) {
    d.kernel[i] = kernel[i];
    d.stride[i] = stride[i];
    d.pad[i] = pad[i];
    d.dilation[i] = dilation[i];
  }
  return d;
}

// Geometry attrs of max_pool2d (kernel_size, stride, padding, dilation from `first`) as dims.
PoolDims read_max(const Attrs& a, size_t first, const Shape& in, const Shape& out) {
  const auto &k = a.get_ints(first), &s = a.get_ints(first + 1), &p = a.get_ints(first + 2),
             &d = a.get_ints(first + 3);
  return make_dims(in, out, k.data(), s.data(), p.data(), d.data());
}

// Geometry of avg_pool2d / avg_pool2d_backward (attrs from `first`).
// (ceil_mode is in the output size, and so in right_pad().)
struct AvgPool {
  PoolDims d;
  bool count_include_pad;
  int64_t divisor_override;  // 0: none
};

AvgPool read_avg(const Attrs& a, size_t first, const Shape& in, const Shape& out) {
  const auto &k = a.get_ints(first), &s = a.get_ints(first + 1), &p = a.get_ints(first + 2);
  const int64_t one[2] = {1, 1};
  return {make_dims(in, out, k.data(), s.data(), p.data(), one), a.get_bool(first + 4), a.get_int(first + 5)};
}

void check_dense(const KernelContext& ctx) {
  for (const TensorArg& t : ctx.inputs)
    RILL_ASSERT(t.meta->contiguous, "[", ctx.op.name, "] expects dense inputs (eager makes them contiguous)");
}

// --- oneDNN path -------------------------------------------------------------------------------

enum class Alg : int64_t { kMax, kAvgIncludePad, kAvgExcludePad };
enum class Pass : int64_t { kForward, kBackward };

// The padding oneDNN needs after dim i: PyTorch's, or more when ceil_mode's last
// window reaches past it (the last window then ends exactly at the padding's end).
int64_t right_pad(const PoolDims& d, int i) {
  const int64_t in = i == 0 ? d.ih : d.iw, out = i == 0 ? d.oh : d.ow;
  const int64_t end = (out - 1) * d.stride[i] + (d.kernel[i] - 1) * d.dilation[i] + 1;  // from the left pad's start
  return std::max(d.pad[i], end - in - d.pad[i]);
}

// A created primitive; `ok` is false when oneDNN has no implementation (or, for
// max pooling, one whose workspace is not the uint8/int32-per-output layout).
struct Prim {
  bool ok = false;
  dnnl::primitive prim;
  dnnl::memory::desc src_md, dst_md, ws_md, scratchpad_md;
};

dnnl::memory::data_type onednn_type(DType t) {
  return t == DType::kFloat32    ? dnnl::memory::data_type::f32
         : t == DType::kBFloat16 ? dnnl::memory::data_type::bf16
                                 : dnnl::memory::data_type::undef;
}

// True for oneDNN's reference implementations, which are no faster than the loops.
bool is_reference(const dnnl::primitive_desc& pd) { return std::string(pd.impl_info_str()).rfind("ref", 0) == 0; }

using PrimKey = onednn::Key<17>;

PrimKey make_key(Alg alg, Pass pass, DType dtype, const PoolDims& d, int64_t planes) {
  return {{static_cast<int64_t>(alg), static_cast<int64_t>(pass), static_cast<int64_t>(dtype), planes, d.ih, d.iw,
           d.oh, d.ow, d.kernel[0], d.kernel[1], d.stride[0], d.stride[1], d.pad[0], d.pad[1], right_pad(d, 0),
           right_pad(d, 1), d.dilation[0] * 1000003 + d.dilation[1]}};
}

Prim create_prim(Alg alg, Pass pass, DType dtype, const PoolDims& d, int64_t planes) {
  using namespace dnnl;
  using tag = memory::format_tag;
  const memory::data_type dt = onednn_type(dtype);
  const memory::desc src({1, planes, d.ih, d.iw}, dt, tag::nchw), dst({1, planes, d.oh, d.ow}, dt, tag::nchw);
  const memory::dims strides = {d.stride[0], d.stride[1]}, kernel = {d.kernel[0], d.kernel[1]},
                     dilation = {d.dilation[0] - 1, d.dilation[1] - 1},  // oneDNN counts the gaps
      pad_l = {d.pad[0], d.pad[1]}, pad_r = {right_pad(d, 0), right_pad(d, 1)};
  const algorithm a = alg == Alg::kMax            ? algorithm::pooling_max
                      : alg == Alg::kAvgIncludePad ? algorithm::pooling_avg_include_padding
                                                   : algorithm::pooling_avg_exclude_padding;
  primitive_attr attr;
  attr.set_scratchpad_mode(scratchpad_mode::user);
  Prim p;
  try {
    // Max pooling always builds both passes: forward and backward must agree on taking oneDNN.
    const bool training = alg == Alg::kMax || pass == Pass::kBackward;
    pooling_v2_forward::primitive_desc fwd_pd(
        {training ? prop_kind::forward_training : prop_kind::forward_inference, a, src, dst, strides, kernel,
         dilation, pad_l, pad_r},
        attr, onednn::engine());
    pooling_v2_backward::primitive_desc bwd_pd;
    if (training)
      bwd_pd = pooling_v2_backward::primitive_desc({a, src, dst, strides, kernel, dilation, pad_l, pad_r}, attr,
                                                   onednn::engine(), fwd_pd);
    if (is_reference(fwd_pd) || (training && is_reference(bwd_pd))) return Prim{};
    if (alg == Alg::kMax) {
      const auto ws_type = d.kernel[0] * d.kernel[1] <= 255 ? memory::data_type::u8 : memory::data_type::s32;
      p.ws_md = memory::desc({1, planes, d.oh, d.ow}, ws_type, tag::nchw);
      if (fwd_pd.workspace_desc() != p.ws_md || bwd_pd.workspace_desc() != p.ws_md) return Prim{};
    }
    if (pass == Pass::kForward) {
      p.prim = pooling_v2_forward(fwd_pd);
      p.scratchpad_md = fwd_pd.scratchpad_desc();
    } else {
      p.prim = pooling_v2_backward(bwd_pd);
      p.scratchpad_md = bwd_pd.scratchpad_desc();
    }
  } catch (const dnnl::error&) {
    return Prim{};  // no implementation: the caller runs the loop
  }
  p.src_md = src;
  p.dst_md = dst;
  p.ok = true;
  return p;
}

// Input elements below which a pooling stays on the calling thread.
constexpr int64_t kParallelElems = int64_t{1} << 16;

// Input elements below which the loops beat a primitive call (its fixed cost is a few microseconds).
constexpr int64_t kMinOnednnElems = 2048;

// The widest window whose average-pooling backward runs on oneDNN (the loops are faster from 16).
constexpr int64_t kMaxOnednnAvgBackwardWidth = 15;

// Pieces the planes are cut into: one per thread when the pooling is big enough to split.
int64_t num_pieces(const PoolDims& d) {
  const int64_t threads = parallel::num_threads();
  if (threads == 1 || d.planes * d.ih * d.iw < kParallelElems) return 1;
  return std::max<int64_t>(1, std::min<int64_t>(threads, d.planes));
}

// First plane of piece p (piece p covers [piece_begin(p), piece_begin(p + 1))).
int64_t piece_begin(const PoolDims& d, int64_t p, int64_t pieces) { return d.planes * p / pieces; }

std::shared_ptr<const Prim> get_prim(Alg alg, Pass pass, DType dtype, const PoolDims& d, int64_t planes) {
  static auto* cache = new onednn::PrimitiveCache<Prim, 17>();  // leaked: used until exit
  return cache->get(make_key(alg, pass, dtype, d, planes), [&] { return create_prim(alg, pass, dtype, d, planes); });
}

// Runs one primitive on a piece: src and dst (their gradients in the backward
// pass) and the workspace (max pooling only), already offset to the piece.
void run_prim(const Prim& p, Pass pass, void* src, void* dst, void* ws, const char* op) {
  onednn::ThreadState& ts = onednn::thread_state();
  const dnnl::engine& eng = onednn::engine();
  std::unordered_map<int, dnnl::memory> args;
  args.reserve(4);
  args.emplace(pass == Pass::kForward ? DNNL_ARG_SRC : DNNL_ARG_DIFF_SRC, dnnl::memory(p.src_md, eng, src));
  args.emplace(pass == Pass::kForward ? DNNL_ARG_DST : DNNL_ARG_DIFF_DST, dnnl::memory(p.dst_md, eng, dst));
  if (ws != nullptr) args.emplace(DNNL_ARG_WORKSPACE, dnnl::memory(p.ws_md, eng, ws));
  const size_t scratchpad = p.scratchpad_md.get_size();
  if (scratchpad > 0)
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(p.scratchpad_md, eng, ts.buffer(0, scratchpad, op)));
  p.prim.execute(ts.stream, args);
  ts.stream.wait();
}

// Runs a pooling pass with oneDNN over plane pieces, calling after_piece(p0, p1)
// once planes [p0, p1) are done; false (nothing written) when oneDNN has no
// implementation. src and dst are the forward's input and output (their
// gradients in the backward pass), ws the max-pooling workspace (else null).
template <typename AfterPiece>
bool pool_onednn(Alg alg, Pass pass, DType dtype, const PoolDims& d, void* src, void* dst, void* ws, const char* op,
                 const AfterPiece& after_piece) {
  if (onednn_type(dtype) == dnnl::memory::data_type::undef || d.planes * d.ih * d.iw < kMinOnednnElems) return false;
  if (alg != Alg::kMax && pass == Pass::kBackward && d.kernel[1] > kMaxOnednnAvgBackwardWidth) return false;
  // The primitive for all planes decides, so the decision does not depend on the
  // thread count (a max-pooling workspace must be read by the path that wrote it).
  std::shared_ptr<const Prim> whole = get_prim(alg, pass, dtype, d, d.planes);
  if (!whole->ok) return false;
  int64_t pieces = num_pieces(d);
  std::vector<std::shared_ptr<const Prim>> prims;  // created up front, so a refusal is known before any work
  for (int64_t p = 0; p < pieces && pieces > 1; ++p) {
    prims.push_back(get_prim(alg, pass, dtype, d, piece_begin(d, p + 1, pieces) - piece_begin(d, p, pieces)));
    if (!prims.back()->ok) break;
  }
  if (pieces == 1 || !prims.back()->ok) {  // one piece, or a piece oneDNN refuses: all planes on this thread
    pieces = 1;
    prims.assign(1, whole);
  }
  const int64_t item = dtype_itemsize(dtype);
  const int64_t src_plane = d.ih * d.iw * item, dst_plane = d.oh * d.ow * item;
  const int64_t ws_plane = d.oh * d.ow * (d.kernel[0] * d.kernel[1] <= 255 ? 1 : 4);
  auto run_piece = [&](int64_t p) {
    const int64_t p0 = piece_begin(d, p, pieces), p1 = piece_begin(d, p + 1, pieces);
    run_prim(*prims[p], pass, static_cast<char*>(src) + p0 * src_plane, static_cast<char*>(dst) + p0 * dst_plane,
             ws != nullptr ? static_cast<char*>(ws) + p0 * ws_plane : nullptr, op);
    after_piece(p0, p1);
  };
  if (pieces == 1) {
    run_piece(0);
  } else {
    parallel::parallel_for(0, pieces, 1, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) run_piece(p);
    });
  }
  return true;
}

bool pool_onednn(Alg alg, Pass pass, DType dtype, const PoolDims& d, void* src, void* dst, void* ws, const char* op) {
  return pool_onednn(alg, pass, dtype, d, src, dst, ws, op, [](int64_t, int64_t) {});
}

// True when x[0, n) holds a NaN or -inf (Note [Pooling on oneDNN]); branch-free, so it vectorises.
bool has_nan_or_neg_inf(const float* x, int64_t n) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) bad |= static_cast<int>(x[i] != x[i]) | static_cast<int>(x[i] == kNegInf);
  return bad != 0;
}

bool has_nan_or_neg_inf(const BFloat16* x, int64_t n) {
  const auto* bits = reinterpret_cast<const uint16_t*>(x);
  int bad = 0;  // NaN: exponent all ones and a non-zero mantissa; -inf: 0xff80
  for (int64_t i = 0; i < n; ++i)
    bad |= static_cast<int>((bits[i] & 0x7fffu) > 0x7f80u) | static_cast<int>(bits[i] == 0xff80u);
  return bad != 0;
}

// The oneDNN algorithm that computes avg_pool2d as PyTorch does, if any (Note [Pooling on oneDNN]).
std::optional<Alg> avg_alg(const AvgPool& a) {
  if (a.divisor_override != 0) return std::nullopt;
  // Without padding, counting the padded window is counting the window clipped to the input.
  if (!a.count_include_pad || (a.d.pad[0] == 0 && a.d.pad[1] == 0)) return Alg::kAvgExcludePad;
  if (right_pad(a.d, 0) == a.d.pad[0] && right_pad(a.d, 1) == a.d.pad[1]) return Alg::kAvgIncludePad;
  return std::nullopt;
}

// adaptive_avg_pool2d's windows as a pooling when they are uniform (the output size divides the input size).
std::optional<PoolDims> uniform_adaptive(const Shape& in, const Shape& out) {
  if (in[2] % out[2] != 0 || in[3] % out[3] != 0) return std::nullopt;
  const int64_t k[2] = {in[2] / out[2], in[3] / out[3]}, zero[2] = {0, 0}, one[2] = {1, 1};
  return make_dims(in, out, k, k, zero, one);
}

// --- loops -------------------------------------------------------------------------------------

// Planes of `plane_elems` elements each per parallel task: about kParallelGrain elements.
int64_t plane_grain(int64_t plane_elems) {
  return std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, plane_elems));
}

// Calls f(T{}) for the floating dtype's C++ type.
template <typename F>
void visit_float(const char* op, DType dtype, const F& f) {
  visit_floating_dtype(dtype, op, [&](auto tag) { f(typename decltype(tag)::type{}); });
}

// Max pooling of planes [p0, p1) into y and, unless idx is null, each maximum's
// position: for int64 the flat h * W + w in its plane (PyTorch's indices), else
// its offset i * kW + j in the window (the loop path's workspace).
template <typename T, typename I>
void max_pool_loop(const PoolDims& d, const T* x, T* y, I* idx, int64_t p0, int64_t p1) {
  using A = OpMath<T>;
  const int64_t H = d.ih, W = d.iw;
  for (int64_t p = p0; p < p1; ++p) {
    const T* xp = x + p * H * W;
    for (int64_t oh = 0; oh < d.oh; ++oh) {
      const int64_t hs = oh * d.stride[0] - d.pad[0];  // the window's first row (maybe in the padding)
      const int64_t h1 = std::min(hs + (d.kernel[0] - 1) * d.dilation[0] + 1, H);
      int64_t h0 = hs;
      while (h0 < 0) h0 += d.dilation[0];
      for (int64_t ow = 0; ow < d.ow; ++ow) {
        const int64_t cs = ow * d.stride[1] - d.pad[1];
        const int64_t c1 = std::min(cs + (d.kernel[1] - 1) * d.dilation[1] + 1, W);
        int64_t c0 = cs;
        while (c0 < 0) c0 += d.dilation[1];
        int64_t best_h = h0, best_c = c0;
        A best = -std::numeric_limits<A>::infinity();
        for (int64_t h = h0; h < h1; h += d.dilation[0])
          for (int64_t c = c0; c < c1; c += d.dilation[1]) {
            const A v = static_cast<A>(xp[h * W + c]);
            if (v > best || std::isnan(v)) {
              best = v;
              best_h = h;
              best_c = c;
            }
          }
        const int64_t o = (p * d.oh + oh) * d.ow + ow;
        y[o] = static_cast<T>(best);
        if (idx == nullptr) continue;
        if constexpr (std::is_same_v<I, int64_t>)
          idx[o] = best_h * W + best_c;
        else
          idx[o] = static_cast<I>((best_h - hs) / d.dilation[0] * d.kernel[1] + (best_c - cs) / d.dilation[1]);
      }
    }
  }
}

// Gradient of max pooling on planes [p0, p1): gy scattered to the positions in
// idx (flat int64 indices, or window offsets as max_pool_loop writes them).
template <typename T, typename I>
void max_pool_backward_loop(const PoolDims& d, const T* gy, const I* idx, T* gx, int64_t p0, int64_t p1) {
  using A = OpMath<T>;
  const int64_t plane = d.ih * d.iw;
  for (int64_t p = p0; p < p1; ++p) {
    T* g = gx + p * plane;
    std::fill(g, g + plane, T(0));
    for (int64_t oh = 0; oh < d.oh; ++oh)
      for (int64_t ow = 0; ow < d.ow; ++ow) {
        const int64_t o = (p * d.oh + oh) * d.ow + ow;
        int64_t i = static_cast<int64_t>(idx[o]);
        if constexpr (std::is_same_v<I, int64_t>) {
          RILL_CHECK(i >= 0 && i < plane, Index, "[max_pool2d_backward] index ", i,
                     " is out of bounds for an input plane of ", plane,
                     " elements; pass the indices max_pool2d returned");
        } else {
          const int64_t h = oh * d.stride[0] - d.pad[0] + i / d.kernel[1] * d.dilation[0];
          const int64_t c = ow * d.stride[1] - d.pad[1] + i % d.kernel[1] * d.dilation[1];
          RILL_CHECK(i >= 0 && i < d.kernel[0] * d.kernel[1] && h >= 0 && h < d.ih && c >= 0 && c < d.iw, Index,
                     "[max_pool2d_with_workspace_backward] workspace entry ", i,
                     " is not a position of the input in its window; pass the workspace "
                     "max_pool2d_with_workspace returned");
          i = h * d.iw + c;
        }
        g[i] = static_cast<T>(static_cast<A>(g[i]) + static_cast<A>(gy[o]));
      }
  }
}

// Calls f(h0, h1, w0, w1, divisor) for output position (oh, ow): the window
// clipped to the input, and its divisor; an empty window has divisor 0.
template <typename F>
inline void avg_window(const AvgPool& a, int64_t oh, int64_t ow, const F& f) {
  const PoolDims& d = a.d;
  int64_t h0 = oh * d.stride[0] - d.pad[0], w0 = ow * d.stride[1] - d.pad[1];
  int64_t h1 = std::min(h0 + d.kernel[0], d.ih + d.pad[0]), w1 = std::min(w0 + d.kernel[1], d.iw + d.pad[1]);
  const int64_t padded_count = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, d.ih);
  w1 = std::min(w1, d.iw);
  if (h0 >= h1 || w0 >= w1) return f(h0, h1, w0, w1, int64_t{0});
  const int64_t divisor =
      a.divisor_override != 0 ? a.divisor_override : a.count_include_pad ? padded_count : (h1 - h0) * (w1 - w0);
  f(h0, h1, w0, w1, divisor);
}

template <typename T>
void avg_pool_loop(const AvgPool& a, const T* x, T* y, int64_t p0, int64_t p1) {
  using A = OpMath<T>;
  const PoolDims& d = a.d;
  for (int64_t p = p0; p < p1; ++p) {
    const T* xp = x + p * d.ih * d.iw;
    for (int64_t oh = 0; oh < d.oh; ++oh)
      for (int64_t ow = 0; ow < d.ow; ++ow)
        avg_window(a, oh, ow, [&](int64_t h0, int64_t h1, int64_t w0, int64_t w1, int64_t divisor) {
          A sum = 0;
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t c = w0; c < w1; ++c) sum += static_cast<A>(xp[h * d.iw + c]);
          y[(p * d.oh + oh) * d.ow + ow] = static_cast<T>(divisor == 0 ? A(0) : sum / static_cast<A>(divisor));
        });
  }
}

template <typename T>
void avg_pool_backward_loop(const AvgPool& a, const T* gy, T* gx, int64_t p0, int64_t p1) {
  using A = OpMath<T>;
  const PoolDims& d = a.d;
  for (int64_t p = p0; p < p1; ++p) {
    T* g = gx + p * d.ih * d.iw;
    std::fill(g, g + d.ih * d.iw, T(0));
    for (int64_t oh = 0; oh < d.oh; ++oh)
      for (int64_t ow = 0; ow < d.ow; ++ow)
        avg_window(a, oh, ow, [&](int64_t h0, int64_t h1, int64_t w0, int64_t w1, int64_t divisor) {
          if (divisor == 0) return;
          const A share = static_cast<A>(gy[(p * d.oh + oh) * d.ow + ow]) / static_cast<A>(divisor);
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t c = w0; c < w1; ++c) g[h * d.iw + c] = static_cast<T>(static_cast<A>(g[h * d.iw + c]) + share);
        });
  }
}

// Adaptive window [start, end) of output o along a dim of in -> out elements.
inline int64_t adaptive_start(int64_t o, int64_t in, int64_t out) { return (o * in) / out; }
inline int64_t adaptive_end(int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; }

template <typename T>
void adaptive_avg_pool_loop(const PoolDims& d, const T* x, T* y, int64_t p0, int64_t p1) {
  using A = OpMath<T>;
  for (int64_t p = p0; p < p1; ++p) {
    const T* xp = x + p * d.ih * d.iw;
    for (int64_t oh = 0; oh < d.oh; ++oh) {
      const int64_t h0 = adaptive_start(oh, d.ih, d.oh), h1 = adaptive_end(oh, d.ih, d.oh);
      for (int64_t ow = 0; ow < d.ow; ++ow) {
        const int64_t w0 = adaptive_start(ow, d.iw, d.ow), w1 = adaptive_end(ow, d.iw, d.ow);
        A sum = 0;
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t c = w0; c < w1; ++c) sum += static_cast<A>(xp[h * d.iw + c]);
        y[(p * d.oh + oh) * d.ow + ow] = static_cast<T>(sum / static_cast<A>((h1 - h0) * (w1 - w0)));
      }
    }
  }
}

template <typename T>
void adaptive_avg_pool_backward_loop(const PoolDims& d, const T* gy, T* gx, int64_t p0, int64_t p1) {
  using A = OpMath<T>;
  for (int64_t p = p0; p < p1; ++p) {
    T* g = gx + p * d.ih * d.iw;
    std::fill(g, g + d.ih * d.iw, T(0));
    for (int64_t oh = 0; oh < d.oh; ++oh) {
      const int64_t h0 = adaptive_start(oh, d.ih, d.oh), h1 = adaptive_end(oh, d.ih, d.oh);
      for (int64_t ow = 0; ow < d.ow; ++ow) {
        const int64_t w0 = adaptive_start(ow, d.iw, d.ow), w1 = adaptive_end(ow, d.iw, d.ow);
        const A share = static_cast<A>(gy[(p * d.oh + oh) * d.ow + ow]) / static_cast<A>((h1 - h0) * (w1 - w0));
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t c = w0; c < w1; ++c) g[h * d.iw + c] = static_cast<T>(static_cast<A>(g[h * d.iw + c]) + share);
      }
    }
  }
}

// Runs body(p0, p1) over the planes of d in parallel.
template <typename F>
void for_planes(const PoolDims& d, const F& body) {
  parallel::parallel_for(0, d.planes, plane_grain(d.ih * d.iw + d.oh * d.ow), body);
}

// --- kernels -----------------------------------------------------------------------------------

void max_pool2d_kernel(const KernelContext& ctx) {
  check_dense(ctx);
  const PoolDims d = read_max(ctx.attrs, 0, ctx.inputs[0].meta->shape, ctx.outputs[0].meta->shape);
  visit_float("max_pool2d", ctx.outputs[0].meta->dtype, [&](auto zero) {
    using T = decltype(zero);
    for_planes(d, [&](int64_t p0, int64_t p1) {
      max_pool_loop(d, ctx.inputs[0].ptr<const T>(), ctx.outputs[0].ptr<T>(), ctx.outputs[1].ptr<int64_t>(), p0, p1);
    });
  });
}

void max_pool2d_backward_kernel(const KernelContext& ctx) {
  check_dense(ctx);
  const Shape& in = ctx.outputs[0].meta->shape;
  const Shape& out = ctx.inputs[0].meta->shape;
  const PoolDims d{in[0] * in[1], in[2], in[3], out[2], out[3], {}, {}, {}, {}};
  visit_float("max_pool2d_backward", ctx.outputs[0].meta->dtype, [&](auto zero) {
    using T = decltype(zero);
    for_planes(d, [&](int64_t p0, int64_t p1) {
      max_pool_backward_loop(d, ctx.inputs[0].ptr<const T>(), ctx.inputs[1].ptr<const int64_t>(),
                             ctx.outputs[0].ptr<T>(), p0, p1);
    });
  });
}

// Calls f(I{}) for the workspace's index type (uint8 or int32).
template <typename F>
void visit_workspace(DType dtype, const F& f) {
  if (dtype == DType::kUInt8)
    f(uint8_t{});
  else
    f(int32_t{});
}

void max_pool2d_with_workspace_kernel(const KernelContext& ctx) {
  check_dense(ctx);
  const TensorArg &x = ctx.inputs[0], &y = ctx.outputs[0], &ws = ctx.outputs[1];
  const PoolDims d = read_max(ctx.attrs, 0, x.meta->shape, y.meta->shape);
  if (y.meta->numel == 0) return;
  bool done = false;
  visit_float("max_pool2d", y.meta->dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>) {
      const int64_t plane = d.ih * d.iw;
      done = pool_onednn(Alg::kMax, Pass::kForward, y.meta->dtype, d, x.data, y.data, ws.data, "max_pool2d",
                         [&](int64_t p0, int64_t p1) {  // PyTorch's values where oneDNN's differ
                           if (has_nan_or_neg_inf(x.ptr<const T>() + p0 * plane, (p1 - p0) * plane))
                             max_pool_loop<T, uint8_t>(d, x.ptr<const T>(), y.ptr<T>(), nullptr, p0, p1);
                         });
    }
  });
  if (done) return;
  visit_float("max_pool2d", y.meta->dtype, [&](auto zero) {
    using T = decltype(zero);
    visit_workspace(ws.meta->dtype, [&](auto index) {
      using I = decltype(index);
      for_planes(d, [&](int64_t p0, int64_t p1) {
        max_pool_loop(d, x.ptr<const T>(), y.ptr<T>(), ws.ptr<I>(), p0, p1);
      });
    });
  });
}

void max_pool2d_with_workspace_backward_kernel(const KernelContext& ctx) {
  check_dense(ctx);
  const TensorArg &gy = ctx.inputs[0], &ws = ctx.inputs[1], &gx = ctx.outputs[0];
  const PoolDims d = read_max(ctx.attrs, 1, gx.meta->shape, gy.meta->shape);
  if (gx.meta->numel == 0) return;
  if (pool_onednn(Alg::kMax, Pass::kBackward, gx.meta->dtype, d, gx.data, gy.data, ws.data, "max_pool2d")) return;
  visit_float("max_pool2d_with_workspace_backward", gx.meta->dtype, [&](auto zero) {
    using T = decltype(zero);
    visit_workspace(ws.meta->dtype, [&](auto index) {
      using I = decltype(index);
      for_planes(d, [&](int64_t p0, int64_t p1) {
        max_pool_backward_loop(d, gy.ptr<const T>(), ws.ptr<const I>(), gx.ptr<T>(), p0, p1);
      });
    });
  });
}

void avg_pool2d_kernel(const KernelContext& ctx) {
  check_dense(ctx);
  const TensorArg &x = ctx.inputs[0], &y = ctx.outputs[0];
  const AvgPool a = read_avg(ctx.attrs, 0, x.meta->shape, y.meta->shape);
  if (y.meta->numel == 0) return;
  const std::optional<Alg> alg = avg_alg(a);
  if (alg && pool_onednn(*alg, Pass::kForward, y.meta->dtype, a.d, x.data, y.data, nullptr, "avg_pool2d")) return;
  visit_float("avg_pool2d", y.meta->dtype, [&](auto zero) {
    using T = decltype(zero);
    for_planes(a.d, [&](int64_t p0, int64_t p1) { avg_pool_loop(a, x.ptr<const T>(), y.ptr<T>(), p0, p1); });
  });
}

void avg_pool2d_backward_kernel(const KernelContext& ctx) {
  check_dense(ctx);
  const TensorArg &gy = ctx.inputs[0], &gx = ctx.outputs[0];
  const AvgPool a = read_avg(ctx.attrs, 1, gx.meta->shape, gy.meta->shape);
  if (gx.meta->numel == 0) return;
  const std::optional<Alg> alg = avg_alg(a);
  if (alg && pool_onednn(*alg, Pass::kBackward, gx.meta->dtype, a.d, gx.data, gy.data, nullptr, "avg_pool2d"))
    return;
  visit_float("avg_pool2d_backward", gx.meta->dtype, [&](auto zero) {
    using T = decltype(zero);
    for_planes(a.d, [&](int64_t p0, int64_t p1) {
      avg_pool_backward_loop(a, gy.ptr<const T>(), gx.ptr<T>(), p0, p1);
    });
  });
}

void adaptive_avg_pool2d_kernel(const KernelContext& ctx) {
  check_dense(ctx);
  const TensorArg &x = ctx.inputs[0], &y = ctx.outputs[0];
  if (y.meta->numel == 0) return;
  const Shape& in = x.meta->shape;
  const Shape& out = y.meta->shape;
  const std::optional<PoolDims> uniform = uniform_adaptive(in, out);
  if (uniform && pool_onednn(Alg::kAvgExcludePad, Pass::kForward, y.meta->dtype, *uniform, x.data, y.data, nullptr,
                             "adaptive_avg_pool2d"))
    return;
  const PoolDims d{in[0] * in[1], in[2], in[3], out[2], out[3], {}, {}, {}, {}};
  visit_float("adaptive_avg_pool2d", y.meta->dtype, [&](auto zero) {
    using T = decltype(zero);
    for_planes(d, [&](int64_t p0, int64_t p1) { adaptive_avg_pool_loop(d, x.ptr<const T>(), y.ptr<T>(), p0, p1); });
  });
}

void adaptive_avg_pool2d_backward_kernel(const KernelContext& ctx) {
  check_dense(ctx);
  const TensorArg &gy = ctx.inputs[0], &gx = ctx.outputs[0];
  if (gx.meta->numel == 0) return;
  const Shape& in = gx.meta->shape;
  const Shape& out = gy.meta->shape;
  if (gy.meta->numel == 0) {  // no windows: no gradient
    std::memset(gx.data, 0, static_cast<size_t>(gx.meta->numel * dtype_itemsize(gx.meta->dtype)));
    return;
  }
  const std::optional<PoolDims> uniform = uniform_adaptive(in, out);
  if (uniform && pool_onednn(Alg::kAvgExcludePad, Pass::kBackward, gx.meta->dtype, *uniform, gx.data, gy.data,
                             nullptr, "adaptive_avg_pool2d"))
    return;
  const PoolDims d{in[0] * in[1], in[2], in[3], out[2], out[3], {}, {}, {}, {}};
  visit_float("adaptive_avg_pool2d_backward", gx.meta->dtype, [&](auto zero) {
    using T = decltype(zero);
    for_planes(d, [&](int64_t p0, int64_t p1) {
      adaptive_avg_pool_backward_loop(d, gy.ptr<const T>(), gx.ptr<T>(), p0, p1);
    });
  });
}

}  // namespace

void register_pool_kernels() {
  ops::set_cpu_kernel("max_pool2d", max_pool2d_kernel);
  ops::set_cpu_kernel("max_pool2d_backward", max_pool2d_backward_kernel);
  ops::set_cpu_kernel("max_pool2d_with_workspace", max_pool2d_with_workspace_kernel);
  ops::set_cpu_kernel("max_pool2d_with_workspace_backward", max_pool2d_with_workspace_backward_kernel);
  ops::set_cpu_kernel("avg_pool2d", avg_pool2d_kernel);
  ops::set_cpu_kernel("avg_pool2d_backward", avg_pool2d_backward_kernel);
  ops::set_cpu_kernel("adaptive_avg_pool2d", adaptive_avg_pool2d_kernel);
  ops::set_cpu_kernel("adaptive_avg_pool2d_backward", adaptive_avg_pool2d_backward_kernel);
}

}  // namespace rill::cpu
