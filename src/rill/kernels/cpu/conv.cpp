// CPU kernels of the convolution family (ops/conv.cpp). float32 runs on oneDNN
// (Debian's libdnnl 2.6) with primitives cached per geometry; float64, which
// oneDNN lacks, and any geometry oneDNN refuses run on im2col + BLAS gemm. Both
// paths split the batch over rill's intra-op pool and run each piece on one
// thread (Note [oneDNN threads] in onednn.cpp).
#include <cblas.h>

#include <dnnl.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "rill/kernels/cpu/blas.h"
#include "rill/kernels/cpu/isa_rows.h"
#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/onednn.h"
#include "rill/ops/fused_activation.h"
#include "rill/ops/op_schema.h"
#include "rill/util/parallel.h"

namespace rill::cpu {
namespace {

// Note [oneDNN layouts]
// Tensors are plain NCHW / OIHW in rill. Created on plain descriptors, oneDNN 2.6
// falls back to its gemm-based convolution; with format_tag::any it picks its
// JIT kernels on blocked layouts (nChw16c, weights in 16-channel blocks), and a
// call then reorders inputs in and the output back (buffers kept per thread).
// Measured on this machine (AVX-512, one thread, median of 30, ms):
//   32x3x32x32 -> 16 ch, 3x3:  plain fwd 1.2, bwd-data 1.1, bwd-weight 3.8
//                              blocked fwd 0.55, bwd-data 1.9, bwd-weight 0.41
//   8x64x32x32 -> 64 ch, 3x3:  plain 9.9 / 13.3 / 16.5, blocked 6.6 / 6.7 / 8.0
// (reorders included). Blocked layouts win everywhere except the backward-data
// pass of a convolution with few input channels, whose diff_src would be padded
// to 16 channels: that pass stays plain when in_channels < 16.

// Multiply-accumulates below which a convolution stays on the calling thread.
constexpr int64_t kParallelMacs = int64_t{1} << 20;

// The geometry of a convolution seen as its forward pass: src [n, ic, ih, iw]
// * weights [oc, ic / groups, kh, kw] -> dst [n, oc, oh, ow].
struct ConvDims {
  int64_t n, ic, ih, iw, oc, oh, ow, kh, kw, groups;
  int64_t stride[2], pad[4], dilation[2];  // pad: top, bottom, left, right

  int64_t src_sample() const { return ic * ih * iw; }
  int64_t dst_sample() const { return oc * oh * ow; }
  int64_t macs() const { return n * oc * oh * ow * (ic / groups) * kh * kw; }
};

// Reads the geometry attrs (stride, padding, dilation, groups from `first`; the
// transposed op has output_padding between padding and dilation).
ConvDims make_dims(const Attrs& a, size_t first, bool transposed, const Shape& src, const Shape& wei,
                   const Shape& dst) {
  const auto& s = a.get_ints(first);
  const auto& p = a.get_ints(first + 1);
  const auto& d = a.get_ints(first + (transposed ? 3 : 2));
  ConvDims c{};
  c.n = src[0];
  c.ic = src[1];
  c.ih = src[2];
  c.iw = src[3];
  c.oc = dst[1];
  c.oh = dst[2];
  c.ow = dst[3];
  c.kh = wei[2];
  c.kw = wei[3];
  c.groups = a.get_int(first + (transposed ? 4 : 3));
  for (int i = 0; i < 2; ++i) {
    c.stride[i] = s[i];
    c.dilation[i] = d[i];
  }
  for (int i = 0; i < 4; ++i) c.pad[i] = p[i];
  return c;
}

// Pieces the batch is cut into: one per thread when the convolution is big enough to split.
int64_t num_pieces(const ConvDims& c) {
  const int64_t threads = parallel::num_threads();
  return (threads == 1 || c.macs() < kParallelMacs) ? 1 : std::max<int64_t>(1, std::min<int64_t>(threads, c.n));
}

// First sample of piece p (piece p covers [piece_begin(p), piece_begin(p + 1))).
int64_t piece_begin(const ConvDims& c, int64_t p, int64_t pieces) { return c.n * p / pieces; }

// Calls piece(p, n0, n1) for the num_pieces(c) batch ranges [n0, n1) that cover
// [0, n), in parallel; returns the piece count.
template <typename F>
int64_t for_each_batch_piece(const ConvDims& c, const F& piece) {
  const int64_t pieces = num_pieces(c);
  if (pieces <= 1) {
    piece(0, 0, c.n);
    return 1;
  }
  parallel::parallel_for(0, pieces, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) piece(p, piece_begin(c, p, pieces), piece_begin(c, p + 1, pieces));
  });
  return pieces;
}

// out[i] += in[i] for i < count, split over the pool.
template <typename T>
void add_into(T* out, const T* in, int64_t count) {
  parallel::parallel_for(0, count, 1 << 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] += in[i];
  });
}

// dst[n0:n1, c, :, :] += bias[c].
template <typename T>
void add_bias(T* dst, const T* bias, int64_t n0, int64_t n1, int64_t channels, int64_t plane) {
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t ch = 0; ch < channels; ++ch) {
      T* p = dst + (n * channels + ch) * plane;
      const T b = bias[ch];
      for (int64_t i = 0; i < plane; ++i) p[i] += b;
    }
}

// --- oneDNN path (float32) -----------------------------------------------------------------

enum class Pass : int64_t { kForward, kForwardBias, kBackwardData, kBackwardWeights };

// A cache key: the pass and the geometry with the piece's batch size.
using PrimKey = onednn::Key<19>;

PrimKey make_key(Pass pass, const ConvDims& c, int64_t n) {
  return {{static_cast<int64_t>(pass), n, c.ic, c.ih, c.iw, c.oc, c.oh, c.ow, c.kh, c.kw, c.groups, c.stride[0],
           c.stride[1], c.pad[0], c.pad[1], c.pad[2], c.pad[3], c.dilation[0], c.dilation[1]}};
}

// The three tensors of a primitive, in the forward view: src, weights, dst
// (diff_src, diff_weights, diff_dst in the backward passes).
enum Slot { kSrc = 0, kWei = 1, kDst = 2, kNumSlots = 3 };

// A created primitive; `ok` is false when oneDNN has no implementation for the
// geometry. A slot whose layout the primitive chose differs from the plain one
// goes through a reorder (to its layout for inputs, back to plain for the output).
struct Prim {
  bool ok = false;
  dnnl::primitive prim;
  dnnl::memory::desc scratchpad_md;
  size_t scratchpad_bytes = 0;
  dnnl::memory::desc md[kNumSlots];  // the primitive's layouts
  std::optional<dnnl::reorder> reorder[kNumSlots];
};

using onednn::engine;

// The plain descriptors of one convolution for a batch of n.
struct PlainDescs {
  dnnl::memory::desc md[kNumSlots], bias;
  dnnl::memory::dims strides, dilates, pad_l, pad_r;
};

PlainDescs plain_descs(const ConvDims& c, int64_t n, bool any_src = false, bool any_wei = false,
                       bool any_dst = false) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  PlainDescs d;
  d.md[kSrc] = dnnl::memory::desc({n, c.ic, c.ih, c.iw}, dt::f32, any_src ? tag::any : tag::nchw);
  d.md[kDst] = dnnl::memory::desc({n, c.oc, c.oh, c.ow}, dt::f32, any_dst ? tag::any : tag::nchw);
  d.md[kWei] = c.groups == 1 ? dnnl::memory::desc({c.oc, c.ic, c.kh, c.kw}, dt::f32, any_wei ? tag::any : tag::oihw)
                             : dnnl::memory::desc({c.groups, c.oc / c.groups, c.ic / c.groups, c.kh, c.kw}, dt::f32,
                                                  any_wei ? tag::any : tag::goihw);
  d.bias = dnnl::memory::desc({c.oc}, dt::f32, tag::x);
  d.strides = {c.stride[0], c.stride[1]};
  d.dilates = {c.dilation[0] - 1, c.dilation[1] - 1};  // oneDNN counts the gaps: 0 is no dilation
  d.pad_l = {c.pad[0], c.pad[2]};
  d.pad_r = {c.pad[1], c.pad[3]};
  return d;
}

// True when a pass runs on layouts of oneDNN's choosing (Note [oneDNN layouts]).
bool use_blocked_layouts(Pass pass, const ConvDims& c) { return pass != Pass::kBackwardData || c.ic >= 16; }

Prim create_prim(Pass pass, const ConvDims& c, int64_t n) {
  using namespace dnnl;
  const PlainDescs plain = plain_descs(c, n);
  const bool any = use_blocked_layouts(pass, c);
  const PlainDescs d = plain_descs(c, n, any, any, any);
  primitive_attr attr;
  attr.set_scratchpad_mode(scratchpad_mode::user);
  Prim p;
  try {
    const auto alg = algorithm::convolution_direct;
    const PlainDescs& f = pass == Pass::kForward || pass == Pass::kForwardBias ? d : plain;
    auto fwd_desc = pass == Pass::kForwardBias
                        ? convolution_forward::desc(prop_kind::forward_training, alg, f.md[kSrc], f.md[kWei], f.bias,
                                                    f.md[kDst], f.strides, f.dilates, f.pad_l, f.pad_r)
                        : convolution_forward::desc(prop_kind::forward_training, alg, f.md[kSrc], f.md[kWei],
                                                    f.md[kDst], f.strides, f.dilates, f.pad_l, f.pad_r);
    convolution_forward::primitive_desc fwd_pd(fwd_desc, attr, engine());
    if (pass == Pass::kForward || pass == Pass::kForwardBias) {
      p.prim = convolution_forward(fwd_pd);
      p.scratchpad_md = fwd_pd.scratchpad_desc();
      p.md[kSrc] = fwd_pd.src_desc();
      p.md[kWei] = fwd_pd.weights_desc();
      p.md[kDst] = fwd_pd.dst_desc();
    } else if (pass == Pass::kBackwardData) {
      convolution_backward_data::primitive_desc pd(
          convolution_backward_data::desc(alg, d.md[kSrc], d.md[kWei], d.md[kDst], d.strides, d.dilates, d.pad_l,
                                          d.pad_r),
          attr, engine(), fwd_pd);
      p.prim = convolution_backward_data(pd);
      p.scratchpad_md = pd.scratchpad_desc();
      p.md[kSrc] = pd.diff_src_desc();
      p.md[kWei] = pd.weights_desc();
      p.md[kDst] = pd.diff_dst_desc();
    } else {
      convolution_backward_weights::primitive_desc pd(
          convolution_backward_weights::desc(alg, d.md[kSrc], d.md[kWei], d.md[kDst], d.strides, d.dilates,
                                             d.pad_l, d.pad_r),
          attr, engine(), fwd_pd);
      p.prim = convolution_backward_weights(pd);
      p.scratchpad_md = pd.scratchpad_desc();
      p.md[kSrc] = pd.src_desc();
      p.md[kWei] = pd.diff_weights_desc();
      p.md[kDst] = pd.diff_dst_desc();
    }
    const Slot out = pass == Pass::kBackwardData ? kSrc : pass == Pass::kBackwardWeights ? kWei : kDst;
    for (int s = 0; s < kNumSlots; ++s) {
      if (p.md[s] == plain.md[s]) continue;
      p.reorder[s] = s == out ? reorder(reorder::primitive_desc(engine(), p.md[s], engine(), plain.md[s]))
                              : reorder(reorder::primitive_desc(engine(), plain.md[s], engine(), p.md[s]));
    }
  } catch (const dnnl::error&) {
    return Prim{};  // no implementation: the caller falls back to im2col
  }
  p.scratchpad_bytes = p.scratchpad_md.get_size();
  p.ok = true;
  return p;
}

// ThreadState buffers: one per slot (reorders), then the scratchpad.
constexpr int kScratchpadBuffer = kNumSlots;
static_assert(kScratchpadBuffer < onednn::ThreadState::kNumBuffers);

std::shared_ptr<const Prim> get_prim(Pass pass, const ConvDims& c, int64_t n) {
  static auto* cache = new onednn::PrimitiveCache<Prim, 19>();  // leaked: used until exit
  return cache->get(make_key(pass, c, n), [&] { return create_prim(pass, c, n); });
}

// Runs one primitive on a batch piece of n samples; ptr[slot] are the plain
// tensors, already offset to the piece.
void run_prim(const Prim& p, Pass pass, const ConvDims& c, int64_t n, const float* const ptr[kNumSlots],
              const float* bias) {
  onednn::ThreadState& ts = onednn::thread_state();
  const PlainDescs plain = plain_descs(c, n);
  const Slot out = pass == Pass::kBackwardData ? kSrc : pass == Pass::kBackwardWeights ? kWei : kDst;
  dnnl::memory user[kNumSlots], used[kNumSlots];
  for (int s = 0; s < kNumSlots; ++s) {
    user[s] = dnnl::memory(plain.md[s], engine(), const_cast<float*>(ptr[s]));
    used[s] = p.reorder[s] ? dnnl::memory(p.md[s], engine(), ts.buffer(s, p.md[s].get_size(), "conv2d")) : user[s];
    if (p.reorder[s] && s != out) p.reorder[s]->execute(ts.stream, user[s], used[s]);
  }
  std::unordered_map<int, dnnl::memory> args;
  args.reserve(5);
  args.emplace(DNNL_ARG_SCRATCHPAD,
               dnnl::memory(p.scratchpad_md, engine(), ts.buffer(kScratchpadBuffer, p.scratchpad_bytes, "conv2d")));
  switch (pass) {
    case Pass::kForwardBias:
      args.emplace(DNNL_ARG_BIAS, dnnl::memory(plain.bias, engine(), const_cast<float*>(bias)));
      [[fallthrough]];
    case Pass::kForward:
      args.emplace(DNNL_ARG_SRC, used[kSrc]);
      args.emplace(DNNL_ARG_WEIGHTS, used[kWei]);
      args.emplace(DNNL_ARG_DST, used[kDst]);
      break;
    case Pass::kBackwardData:
      args.emplace(DNNL_ARG_DIFF_SRC, used[kSrc]);
      args.emplace(DNNL_ARG_WEIGHTS, used[kWei]);
      args.emplace(DNNL_ARG_DIFF_DST, used[kDst]);
      break;
    case Pass::kBackwardWeights:
      args.emplace(DNNL_ARG_SRC, used[kSrc]);
      args.emplace(DNNL_ARG_DIFF_WEIGHTS, used[kWei]);
      args.emplace(DNNL_ARG_DIFF_DST, used[kDst]);
      break;
  }
  p.prim.execute(ts.stream, args);
  if (p.reorder[out]) p.reorder[out]->execute(ts.stream, used[out], user[out]);
  ts.stream.wait();
}

// Runs `pass` with oneDNN over batch pieces; false (nothing written) when oneDNN
// has no implementation. For kBackwardWeights, wei is the output and pieces
// after the first accumulate through temporary buffers.
bool conv_onednn(Pass pass, const ConvDims& c, const float* src, const float* wei, const float* bias,
                 const float* dst) {
  const int64_t pieces = num_pieces(c);
  // Create (or find) every piece's primitive up front, so a refusal is known before any work.
  std::vector<std::shared_ptr<const Prim>> prims;
  for (int64_t p = 0; p < pieces; ++p) {
    const int64_t nb = piece_begin(c, p + 1, pieces) - piece_begin(c, p, pieces);
    prims.push_back(get_prim(pass, c, nb));
    if (!prims.back()->ok) return false;
  }
  const int64_t wei_count = c.oc * (c.ic / c.groups) * c.kh * c.kw;
  std::vector<std::unique_ptr<float[]>> partial(static_cast<size_t>(pieces));
  for_each_batch_piece(c, [&](int64_t p, int64_t n0, int64_t n1) {
    const float* w = wei;
    if (pass == Pass::kBackwardWeights && p > 0) {
      partial[p].reset(new float[static_cast<size_t>(wei_count)]);
      w = partial[p].get();
    }
    const float* ptr[kNumSlots] = {src + n0 * c.src_sample(), w, dst + n0 * c.dst_sample()};
    run_prim(*prims[p], pass, c, n1 - n0, ptr, bias);
  });
  for (int64_t p = 1; p < pieces; ++p)
    if (partial[p]) add_into(const_cast<float*>(wei), partial[p].get(), wei_count);
  return true;
}

// --- im2col + gemm path (float64, and float32 geometries oneDNN refuses) -------------------

void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  blas_gemm(ta == CblasTrans, tb == CblasTrans, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}

void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  blas_gemm(ta == CblasTrans, tb == CblasTrans, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}

// col[(ch * kh + i) * kw + j][oy * ow + ox] = x[ch][oy * sh - pt + i * dh][ox * sw - pl + j * dw] (0 outside),
// for the `channels` channels of x (one group of one sample).
template <typename T>
void im2col(const ConvDims& c, int64_t channels, const T* x, T* col) {
  const int64_t ohw = c.oh * c.ow;
  for (int64_t ch = 0; ch < channels; ++ch)
    for (int64_t i = 0; i < c.kh; ++i)
      for (int64_t j = 0; j < c.kw; ++j) {
        T* row = col + ((ch * c.kh + i) * c.kw + j) * ohw;
        for (int64_t oy = 0; oy < c.oh; ++oy) {
          const int64_t y = oy * c.stride[0] - c.pad[0] + i * c.dilation[0];
          T* out = row + oy * c.ow;
          if (y < 0 || y >= c.ih) {
            std::fill(out, out + c.ow, T(0));
            continue;
          }
          const T* in = x + (ch * c.ih + y) * c.iw;
          for (int64_t ox = 0; ox < c.ow; ++ox) {
            const int64_t xx = ox * c.stride[1] - c.pad[2] + j * c.dilation[1];
            out[ox] = (xx >= 0 && xx < c.iw) ? in[xx] : T(0);
          }
        }
      }
}

// The adjoint of im2col: x[...] += col[...] over the same index map.
template <typename T>
void col2im(const ConvDims& c, int64_t channels, const T* col, T* x) {
  const int64_t ohw = c.oh * c.ow;
  for (int64_t ch = 0; ch < channels; ++ch)
    for (int64_t i = 0; i < c.kh; ++i)
      for (int64_t j = 0; j < c.kw; ++j) {
        const T* row = col + ((ch * c.kh + i) * c.kw + j) * ohw;
        for (int64_t oy = 0; oy < c.oh; ++oy) {
          const int64_t y = oy * c.stride[0] - c.pad[0] + i * c.dilation[0];
          if (y < 0 || y >= c.ih) continue;
          T* out = x + (ch * c.ih + y) * c.iw;
          for (int64_t ox = 0; ox < c.ow; ++ox) {
            const int64_t xx = ox * c.stride[1] - c.pad[2] + j * c.dilation[1];
            if (xx >= 0 && xx < c.iw) out[xx] += row[oy * c.ow + ox];
          }
        }
      }
}

// The three passes on im2col + gemm, over batch pieces (names as in the forward view).
template <typename T>
void conv_im2col(Pass pass, const ConvDims& c, const T* src, const T* wei, const T* bias, const T* dst) {
  const int64_t g_in = c.ic / c.groups, g_out = c.oc / c.groups;
  const int64_t k = g_in * c.kh * c.kw, ohw = c.oh * c.ow;
  const int64_t g_src = g_in * c.ih * c.iw, g_dst = g_out * ohw, g_wei = g_out * k;
  const int64_t wei_count = c.oc * k;
  std::vector<std::unique_ptr<T[]>> partial(static_cast<size_t>(num_pieces(c)));
  const int64_t pieces = for_each_batch_piece(c, [&](int64_t p, int64_t n0, int64_t n1) {
    std::unique_ptr<T[]> col(new T[static_cast<size_t>(k * ohw)]);
    T* w_out = const_cast<T*>(wei);
    if (pass == Pass::kBackwardWeights) {
      if (p > 0) {
        partial[p].reset(new T[static_cast<size_t>(wei_count)]);
        w_out = partial[p].get();
      }
      std::fill(w_out, w_out + wei_count, T(0));
    }
    for (int64_t n = n0; n < n1; ++n) {
      if (pass == Pass::kBackwardData) {  // col2im accumulates into the sample
        T* x = const_cast<T*>(src) + n * c.src_sample();
        std::fill(x, x + c.src_sample(), T(0));
      }
      for (int64_t g = 0; g < c.groups; ++g) {
        T* x = const_cast<T*>(src) + n * c.src_sample() + g * g_src;
        T* y = const_cast<T*>(dst) + n * c.dst_sample() + g * g_dst;
        const T* w = wei + g * g_wei;
        switch (pass) {
          case Pass::kForward:
          case Pass::kForwardBias:  // y[g_out, ohw] = w[g_out, k] @ col[k, ohw]
            im2col(c, g_in, x, col.get());
            gemm(CblasNoTrans, CblasNoTrans, g_out, ohw, k, w, k, col.get(), ohw, T(0), y, ohw);
            break;
          case Pass::kBackwardData:  // col[k, ohw] = w^T @ dy[g_out, ohw]; dx = col2im(col)
            gemm(CblasTrans, CblasNoTrans, k, ohw, g_out, w, k, y, ohw, T(0), col.get(), ohw);
            col2im(c, g_in, col.get(), x);
            break;
          case Pass::kBackwardWeights:  // dw[g_out, k] += dy[g_out, ohw] @ col^T
            im2col(c, g_in, x, col.get());
            gemm(CblasNoTrans, CblasTrans, g_out, k, ohw, y, ohw, col.get(), ohw, T(1), w_out + g * g_wei, k);
            break;
        }
      }
    }
    if (pass == Pass::kForwardBias) add_bias(const_cast<T*>(dst), bias, n0, n1, c.oc, ohw);
  });
  for (int64_t p = 1; p < pieces; ++p)
    if (partial[p]) add_into(const_cast<T*>(wei), partial[p].get(), wei_count);
}

// Dispatch on dtype: oneDNN for float32 (im2col if it refuses), im2col for float64.
void run_conv(DType dtype, Pass pass, const ConvDims& c, void* src, void* wei, const void* bias, void* dst) {
  const int64_t out_numel = pass == Pass::kBackwardData      ? c.n * c.src_sample()
                            : pass == Pass::kBackwardWeights ? c.oc * (c.ic / c.groups) * c.kh * c.kw
                                                             : c.n * c.dst_sample();
  if (out_numel == 0) return;
  if (c.n == 0 || c.ic == 0) {  // empty sums: the result is zeros (then the bias)
    void* out = pass == Pass::kBackwardData ? src : pass == Pass::kBackwardWeights ? wei : dst;
    std::memset(out, 0, static_cast<size_t>(out_numel * dtype_itemsize(dtype)));
    if (pass == Pass::kForwardBias) {
      visit_dtype(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
          add_bias(static_cast<T*>(dst), static_cast<const T*>(bias), 0, c.n, c.oc, c.oh * c.ow);
      });
    }
    return;
  }
  if (dtype == DType::kFloat32) {
    auto* s = static_cast<float*>(src);
    auto* w = static_cast<float*>(wei);
    auto* b = static_cast<const float*>(bias);
    auto* d = static_cast<float*>(dst);
    if (!conv_onednn(pass, c, s, w, b, d)) conv_im2col<float>(pass, c, s, w, b, d);
  } else if (dtype == DType::kFloat64) {
    conv_im2col<double>(pass, c, static_cast<double*>(src), static_cast<double*>(wei),
                        static_cast<const double*>(bias), static_cast<double*>(dst));
  } else {
    RILL_FAIL(Type, "[conv2d] supports float32 and float64 tensors, got ", dtype_name(dtype));
  }
}

void check_dense(const KernelContext& ctx) {
  for (const TensorArg& t : ctx.inputs)
    RILL_ASSERT(t.meta->contiguous, "[", ctx.op.name, "] expects dense inputs (eager makes them contiguous)");
}

void conv2d_kernel(const KernelContext& ctx) {
  check_dense(ctx);
  const TensorArg &x = ctx.inputs[0], &w = ctx.inputs[1], &y = ctx.outputs[0];
  const bool bias = ctx.inputs.size() == 3;
  const ConvDims c = make_dims(ctx.attrs, 0, false, x.meta->shape, w.meta->shape, y.meta->shape);
  run_conv(y.meta->dtype, bias ? Pass::kForwardBias : Pass::kForward, c, x.data, w.data,
           bias ? ctx.inputs[2].data : nullptr, y.data);
}

// _conv2d_activation: the convolution, then the activation op's own kernel over its output in place: the values
// of the unfused ops, in one task. oneDNN can apply relu as a post-op of the convolution's primitive, but its relu
// turns NaN into 0 where PyTorch's (and rill's) keeps it, so the activation runs as its own kernel.
void conv2d_activation_kernel(const KernelContext& ctx) {
  conv2d_kernel(ctx);
  ops::activate_in_place(ctx.outputs[0], ctx.attr<std::string>("activation"), ctx.attr<std::string>("approximate"));
}

void conv2d_backward_input_kernel(const KernelContext& ctx) {
  check_dense(ctx);
  const TensorArg &dy = ctx.inputs[0], &w = ctx.inputs[1], &dx = ctx.outputs[0];
  const ConvDims c = make_dims(ctx.attrs, 1, false, dx.meta->shape, w.meta->shape, dy.meta->shape);
  run_conv(dx.meta->dtype, Pass::kBackwardData, c, dx.data, w.data, nullptr, dy.data);
}

void conv2d_backward_weight_kernel(const KernelContext& ctx) {
  check_dense(ctx);
  const TensorArg &dy = ctx.inputs[0], &x = ctx.inputs[1], &dw = ctx.outputs[0];
  const ConvDims c = make_dims(ctx.attrs, 1, false, x.meta->shape, dw.meta->shape, dy.meta->shape);
  run_conv(dw.meta->dtype, Pass::kBackwardWeights, c, x.data, dw.data, nullptr, dy.data);
}

// _conv2d_backward_weight_bias: the weight's gradient, then the bias's, grad_output summed over each channel's
// planes: each plane by the vector row sum built for this CPU, the planes added up in double. The bias's gradient
// thus rounds differently from the sum op it replaces (a cascade over every element of the channel), within a
// float's rounding of the exact sum either way.
void conv2d_backward_weight_bias_kernel(const KernelContext& ctx) {
  conv2d_backward_weight_kernel(ctx);
  const TensorArg &dy = ctx.inputs[0], &db = ctx.outputs[1];
  const Shape& s = dy.meta->shape;
  const int64_t n = s[0], channels = s[1], plane = s[2] * s[3];
  visit_dtype(dy.meta->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* g = dy.ptr<T>();
      T* out = db.ptr<T>();
      parallel::parallel_for(0, channels, std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, n * plane)),
                             [&](int64_t c0, int64_t c1) {
                               for (int64_t ch = c0; ch < c1; ++ch) {
                                 double total = 0;
                                 for (int64_t b = 0; b < n; ++b) {
                                   const T* p = g + (b * channels + ch) * plane;
                                   if constexpr (std::is_same_v<T, float>) {
                                     total += plane ? row_kernels().row_sum(p, plane) : 0.f;
                                   } else {
                                     for (int64_t i = 0; i < plane; ++i) total += p[i];
                                   }
                                 }
                                 out[ch] = static_cast<T>(total);
                               }
                             });
    } else {
      RILL_FAIL(Type, "[", ctx.op.name, "] supports float32 and float64 tensors, got ", dtype_name(dy.meta->dtype));
    }
  });
}

// A transposed convolution is the backward-data pass of the convolution whose
// input is this op's output (and whose output is this op's input), plus the bias.
void conv_transpose2d_kernel(const KernelContext& ctx) {
  check_dense(ctx);
  const TensorArg &x = ctx.inputs[0], &w = ctx.inputs[1], &y = ctx.outputs[0];
  const ConvDims c = make_dims(ctx.attrs, 0, true, y.meta->shape, w.meta->shape, x.meta->shape);
  const DType dtype = y.meta->dtype;
  run_conv(dtype, Pass::kBackwardData, c, y.data, w.data, nullptr, x.data);
  if (ctx.inputs.size() < 3 || y.meta->numel == 0) return;
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const Shape& s = y.meta->shape;
      const int64_t plane = s[2] * s[3];
      parallel::parallel_for(0, s[0], std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(1, s[1] * plane)),
                             [&](int64_t n0, int64_t n1) {
                               add_bias(y.ptr<T>(), ctx.inputs[2].ptr<const T>(), n0, n1, s[1], plane);
                             });
    }
  });
}

}  // namespace

void register_conv_kernels() {
  ops::set_cpu_kernel("conv2d", conv2d_kernel);
  ops::set_cpu_kernel("_conv2d_activation", conv2d_activation_kernel);
  ops::set_cpu_kernel("conv2d_backward_input", conv2d_backward_input_kernel);
  ops::set_cpu_kernel("conv2d_backward_weight", conv2d_backward_weight_kernel);
  ops::set_cpu_kernel("_conv2d_backward_weight_bias", conv2d_backward_weight_bias_kernel);
  ops::set_cpu_kernel("conv_transpose2d", conv_transpose2d_kernel);
}

}  // namespace rill::cpu
