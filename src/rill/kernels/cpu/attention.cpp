// CPU kernels of _sdpa and _sdpa_backward (ops/nn.cpp): attention one block of
// queries against one block of keys at a time, never the whole (L, S) matrix of
// scores of a long sequence (Note [Fused attention]). Inputs may have any strides.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "rill/kernels/cpu/blas.h"
#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/loops.h"
#include "rill/kernels/cpu/row_math.h"

namespace rill::cpu {
namespace {

// Note [Fused attention]
// softmax(q k^T * scale + mask) v is computed without the (L, S) matrix of
// scores of a long sequence. A forward task (tasks run over the intra-op pool) takes one matrix of the leading dims (a batch and
// head) and a block of kBlockRows queries, and walks the keys kBlockCols at a
// time: one gemm gives the block's scores; each query row keeps its running
// maximum m and its sum l of exp(score - m); the output rows accumulate
// exp(score - m) v (a second gemm), rescaled by exp(m_old - m_new) when the
// maximum grows (the online softmax). At the end out = acc / l, and
// lse = m + log(l) is saved for backward.
// The backward (FlashAttention-2's) recomputes each block's probabilities
// p = exp(score - lse) from the saved lse, then, with D = rowsum(dout * out)
// less lse's own gradient (d lse / d score = p),
//   dv += p^T dout,   dp = dout v^T,   ds = p (dp - D),
//   dq += scale ds k, dk += scale ds^T q   (and dmask = ds for a float mask),
// one task per matrix of the leading dims, so no two tasks write one gradient.
// Where every query sees one block of keys or fewer (S <= kBlockCols, which is
// kSavedProbsKeys in ops/nn.cpp), the forward also saves the probabilities p,
// (..., L, S): backward then reads them instead of recomputing them, one gemm in
// five fewer; a longer sequence keeps no more than a block per task.
// Causal attention keeps key j for query i when j <= i (top-left aligned, as
// PyTorch's is_causal) and skips the key blocks wholly above the diagonal. A
// row whose every key is masked has lse = -inf, and output and gradients 0.
constexpr int64_t kBlockRows = 64;
constexpr int64_t kBlockCols = 128;

// An operand (..., rows, cols) seen as a batch of matrices over the output's leading dims: matrix b (their
// row-major flat index) starts offset(b) elements in; dims the operand broadcasts along have stride 0.
struct Operand {
  Shape batch;
  Strides batch_strides;
  int64_t rows = 0, cols = 0, row_stride = 0, col_stride = 0;
  int64_t offset(int64_t b) const {
    int64_t off = 0;
    for (size_t d = batch.size(); d-- > 0;) {
      off += (b % batch[d]) * batch_strides[d];
      b /= batch[d];
    }
    return off;
  }
};

// t, right-aligned against batch + (rows, cols) (a dim of size 1 or missing broadcasts).
Operand operand_of(const TensorMeta& t, const Shape& batch, int64_t rows, int64_t cols) {
  Operand o{batch, Strides(batch.size(), 0), rows, cols};
  const int64_t full = static_cast<int64_t>(batch.size()) + 2, skip = full - t.ndim();
  auto stride_at = [&](int64_t d) {
    const int64_t td = d - skip;
    return (td < 0 || t.shape[td] == 1) ? int64_t{0} : t.strides[td];
  };
  for (int64_t d = 0; d < full - 2; ++d) o.batch_strides[d] = stride_at(d);
  o.row_stride = stride_at(full - 2);
  o.col_stride = stride_at(full - 1);
  return o;
}

// Matrix b of o as rows of unit column stride, ld apart: in place where its layout allows, else copied to buf.
template <typename T>
const T* rows_of(const T* base, const Operand& o, int64_t b, std::vector<T>& buf, int64_t& ld) {
  const T* p = base + o.offset(b);
  if ((o.cols == 1 || o.col_stride == 1) && (o.rows == 1 || o.row_stride >= o.cols)) {
    ld = o.rows == 1 ? o.cols : o.row_stride;
    return p;
  }
  buf.resize(static_cast<size_t>(o.rows * o.cols));
  for (int64_t r = 0; r < o.rows; ++r)
    for (int64_t c = 0; c < o.cols; ++c)
      buf[static_cast<size_t>(r * o.cols + c)] = p[r * o.row_stride + c * o.col_stride];
  ld = o.cols;
  return buf.data();
}

// C = alpha op(A) op(B) + beta C, also for an empty inner size (BLAS wants lda >= 1 there).
template <typename T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  blas_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// What both kernels read: q (..., L, E), k (..., S, E), v (..., S, Ev), the mask, over `count` matrices.
template <typename T>
struct Attention {
  const T *q, *k, *v;
  Operand qo, ko, vo, mo;
  const void* mask = nullptr;  // bool (True = keep) or T (added); null: none
  bool bool_mask = false, causal = false;
  T scale;
  int64_t count, length, source, features, value_features;
};

template <typename T>
Attention<T> attention_of(const KernelContext& c, size_t first, size_t mask_at) {
  const TensorMeta& qm = *c.inputs[first].meta;
  const TensorMeta& vm = *c.inputs[first + 2].meta;
  Attention<T> a;
  a.q = c.inputs[first].ptr<T>();
  a.k = c.inputs[first + 1].ptr<T>();
  a.v = c.inputs[first + 2].ptr<T>();
  const Shape batch(qm.shape.begin(), qm.shape.end() - 2);
  a.count = shape_numel(batch);
  a.length = qm.shape[qm.shape.size() - 2];
  a.features = qm.shape.back();
  a.source = vm.shape[vm.shape.size() - 2];
  a.value_features = vm.shape.back();
  a.qo = operand_of(qm, batch, a.length, a.features);
  a.ko = operand_of(*c.inputs[first + 1].meta, batch, a.source, a.features);
  a.vo = operand_of(vm, batch, a.source, a.value_features);
  if (c.inputs.size() > mask_at) {
    const TensorMeta& mm = *c.inputs[mask_at].meta;
    a.mask = c.inputs[mask_at].data;
    a.bool_mask = mm.dtype == DType::kBool;
    a.mo = operand_of(mm, batch, a.length, a.source);
  }
  a.causal = c.attr<bool>("is_causal");
  a.scale = static_cast<T>(c.attr<double>("scale"));
  return a;
}

// Apply the mask to the (br, bc) block of scores s (rows ld apart) of matrix b at query i0, key j0: -inf where
// a bool mask drops a key, plus the mask where it is a float one (causal attention is applied by causal_keys).
template <typename T>
void mask_block(const Attention<T>& a, int64_t b, int64_t i0, int64_t j0, int64_t br, int64_t bc, T* s, int64_t ld) {
  if (!a.mask) return;
  const int64_t base = a.mo.offset(b) + i0 * a.mo.row_stride + j0 * a.mo.col_stride, cs = a.mo.col_stride;
  for (int64_t r = 0; r < br; ++r) {
    T* row = s + r * ld;
    const int64_t at = base + r * a.mo.row_stride;
    if (a.bool_mask) {
      const bool* keep = static_cast<const bool*>(a.mask) + at;
      for (int64_t j = 0; j < bc; ++j)
        if (!keep[j * cs]) row[j] = -std::numeric_limits<T>::infinity();
    } else if (cs == 1) {
      const T* add = static_cast<const T*>(a.mask) + at;
      for (int64_t j = 0; j < bc; ++j) row[j] += add[j];
    } else {
      const T* add = static_cast<const T*>(a.mask) + at;
      for (int64_t j = 0; j < bc; ++j) row[j] += add[j * cs];
    }
  }
}

// How many of the bc keys from j0 query row i sees: all, or for causal attention those up to i.
template <typename T>
int64_t causal_keys(const Attention<T>& a, int64_t i, int64_t j0, int64_t bc) {
  return a.causal ? std::clamp<int64_t>(i + 1 - j0, 0, bc) : bc;
}

// row[j] = exp(row[j] - m) for j < n and 0 up to bc; returns the sum. libmvec's vector expf leaves for a slow
// scalar path on any lane whose argument is below about -87 (every masked score, at -inf), so float rows are
// first raised to m - 80: exp(-80) = 2e-35 is nothing to a sum of terms up to 1.
template <typename T>
T exp_row(T* row, T m, int64_t n, int64_t bc) {
  if constexpr (std::is_same_v<T, float>) {
    const float floor = m - 80.f;
    for (int64_t j = 0; j < n; ++j) row[j] = std::max(row[j], floor);
  }
  std::fill(row + n, row + bc, T(0));
  return n ? row::exp_sum(row, m, row, n) : T(0);
}

// The keys query rows [i0, i0 + br) attend to: all, or for causal attention those up to the last row.
template <typename T>
int64_t keys_seen(const Attention<T>& a, int64_t i0, int64_t br) {
  return a.causal ? std::min(a.source, i0 + br) : a.source;
}

// Per-task buffers: packed operands (rows_of) and one block of scores.
template <typename T>
struct Scratch {
  std::vector<T> q, k, v, dout, scores, dscores, row_max, row_sum, delta;
};

// Output rows [i0, i0 + kBlockRows) of matrix b and their lse (Note [Fused attention]).
template <typename T>
void forward_block(const Attention<T>& a, int64_t b, int64_t i0, T* out, T* lse, T* probs, Scratch<T>& w) {
  constexpr T kMinusInf = -std::numeric_limits<T>::infinity();
  const int64_t br = std::min(kBlockRows, a.length - i0), ev = a.value_features;
  int64_t ldq, ldk, ldv;
  const T* q = rows_of(a.q, a.qo, b, w.q, ldq) + i0 * ldq;
  const T* k = rows_of(a.k, a.ko, b, w.k, ldk);
  const T* v = rows_of(a.v, a.vo, b, w.v, ldv);
  T* acc = out + (b * a.length + i0) * ev;
  std::fill(acc, acc + br * ev, T(0));
  w.scores.resize(static_cast<size_t>(kBlockRows * kBlockCols));
  w.row_max.assign(static_cast<size_t>(br), kMinusInf);
  w.row_sum.assign(static_cast<size_t>(br), T(0));
  T* s = w.scores.data();
  const int64_t keys = keys_seen(a, i0, br);
  for (int64_t j0 = 0; j0 < keys; j0 += kBlockCols) {
    const int64_t bc = std::min(kBlockCols, keys - j0);
    gemm(false, true, br, bc, a.features, a.scale, q, ldq, k + j0 * ldk, ldk, T(0), s, kBlockCols);
    mask_block(a, b, i0, j0, br, bc, s, kBlockCols);
    for (int64_t r = 0; r < br; ++r) {
      T* row = s + r * kBlockCols;
      T& m = w.row_max[static_cast<size_t>(r)];
      const int64_t n = causal_keys(a, i0 + r, j0, bc);
      const T grown = n ? std::max(m, row::max(row, n)) : m;
      if (grown == kMinusInf) {  // every key so far masked: nothing to add
        std::fill(row, row + bc, T(0));
        continue;
      }
      const T sum = exp_row(row, grown, n, bc);
      const T rescale = std::exp(m - grown);  // 0 while m is -inf
      T& l = w.row_sum[static_cast<size_t>(r)];
      if (rescale != T(1))
        for (int64_t e = 0; e < ev; ++e) acc[r * ev + e] *= rescale;
      l = l * rescale + sum;
      m = grown;
    }
    gemm(false, false, br, ev, bc, T(1), s, kBlockCols, v + j0 * ldv, ldv, T(1), acc, ev);
  }
  for (int64_t r = 0; r < br; ++r) {
    const T l = w.row_sum[static_cast<size_t>(r)];
    const T inv = l > T(0) ? T(1) / l : T(0);
    for (int64_t e = 0; e < ev; ++e) acc[r * ev + e] *= inv;
    lse[b * a.length + i0 + r] = l > T(0) ? w.row_max[static_cast<size_t>(r)] + std::log(l) : kMinusInf;
    if (!probs) continue;
    T* saved = probs + (b * a.length + i0 + r) * a.source;  // one key block: s holds exp(score - max)
    for (int64_t j = 0; j < a.source; ++j) saved[j] = j < keys ? s[r * kBlockCols + j] * inv : T(0);
  }
}

template <typename T>
void sdpa_typed(const KernelContext& c) {
  const Attention<T> a = attention_of<T>(c, 0, 3);
  T* out = c.outputs[0].ptr<T>();
  T* lse = c.outputs[1].ptr<T>();
  T* probs = c.outputs[2].meta->numel ? c.outputs[2].ptr<T>() : nullptr;
  RILL_ASSERT(!probs || a.source <= kBlockCols, "[_sdpa] probabilities saved for ", a.source, " keys");
  const int64_t blocks = (a.length + kBlockRows - 1) / kBlockRows;
  parallel::parallel_for(0, a.count * blocks, 1, [&](int64_t t0, int64_t t1) {
    Scratch<T> w;
    for (int64_t t = t0; t < t1; ++t) forward_block(a, t / blocks, (t % blocks) * kBlockRows, out, lse, probs, w);
  });
}

void sdpa_kernel(const KernelContext& c) {
  if (c.inputs[0].meta->dtype == DType::kFloat32) sdpa_typed<float>(c);
  else sdpa_typed<double>(c);
}

// Gradients of one pair of blocks of matrix b: query rows [i0, i0 + br), keys [j0, j0 + bc).
template <typename T>
struct BackwardMatrix {
  BackwardMatrix(const Attention<T>& attention, int64_t matrix) : a(attention), b(matrix) {}
  const Attention<T>& a;
  int64_t b, ldq = 0, ldk = 0, ldv = 0, ldo = 0;
  const T *q = nullptr, *k = nullptr, *v = nullptr, *dout = nullptr, *lse = nullptr, *probs = nullptr,
          *delta = nullptr;
  T *dq = nullptr, *dk = nullptr, *dv = nullptr, *dmask = nullptr;

  void block(int64_t i0, int64_t j0, int64_t br, int64_t bc, T* p, T* ds) const {
    const int64_t e = a.features, ev = a.value_features;
    if (probs) {
      for (int64_t r = 0; r < br; ++r)
        std::memcpy(p + r * kBlockCols, probs + (i0 + r) * a.source + j0, static_cast<size_t>(bc) * sizeof(T));
    } else {
      gemm(false, true, br, bc, e, a.scale, q + i0 * ldq, ldq, k + j0 * ldk, ldk, T(0), p, kBlockCols);
      mask_block(a, b, i0, j0, br, bc, p, kBlockCols);
      for (int64_t r = 0; r < br; ++r) {
        T* row = p + r * kBlockCols;
        if (lse[i0 + r] == -std::numeric_limits<T>::infinity()) std::fill(row, row + bc, T(0));
        else exp_row(row, lse[i0 + r], causal_keys(a, i0 + r, j0, bc), bc);
      }
    }
    gemm(true, false, bc, ev, br, T(1), p, kBlockCols, dout + i0 * ldo, ldo, T(1), dv + j0 * ev, ev);
    gemm(false, true, br, bc, ev, T(1), dout + i0 * ldo, ldo, v + j0 * ldv, ldv, T(0), ds, kBlockCols);
    for (int64_t r = 0; r < br; ++r) {
      const T d = delta[i0 + r];
      for (int64_t j = 0; j < bc; ++j) ds[r * kBlockCols + j] = p[r * kBlockCols + j] * (ds[r * kBlockCols + j] - d);
      if (dmask)
        std::memcpy(dmask + (i0 + r) * a.source + j0, ds + r * kBlockCols, static_cast<size_t>(bc) * sizeof(T));
    }
    gemm(false, false, br, e, bc, a.scale, ds, kBlockCols, k + j0 * ldk, ldk, T(1), dq + i0 * e, e);
    gemm(true, false, bc, e, br, a.scale, ds, kBlockCols, q + i0 * ldq, ldq, T(1), dk + j0 * e, e);
  }
};

template <typename T>
void sdpa_backward_typed(const KernelContext& c) {
  const Attention<T> a = attention_of<T>(c, 2, 8);
  const Shape& qs = c.inputs[2].meta->shape;
  const Operand dout_o = operand_of(*c.inputs[0].meta, Shape(qs.begin(), qs.end() - 2), a.length, a.value_features);
  const T* dout = c.inputs[0].ptr<T>();
  const T* dlse = c.inputs[1].ptr<T>();
  const T* out = c.inputs[5].ptr<T>();
  const T* lse = c.inputs[6].ptr<T>();
  const T* probs = c.inputs[7].meta->numel ? c.inputs[7].ptr<T>() : nullptr;
  const bool mask_grad = c.attr<bool>("mask_grad");
  const int64_t l = a.length, s = a.source, e = a.features, ev = a.value_features;
  parallel::parallel_for(0, a.count, 1, [&](int64_t b0, int64_t b1) {
    Scratch<T> w;
    w.scores.resize(static_cast<size_t>(kBlockRows * kBlockCols));
    w.dscores.resize(static_cast<size_t>(kBlockRows * kBlockCols));
    for (int64_t b = b0; b < b1; ++b) {
      BackwardMatrix<T> m(a, b);
      m.q = rows_of(a.q, a.qo, b, w.q, m.ldq);
      m.k = rows_of(a.k, a.ko, b, w.k, m.ldk);
      m.v = rows_of(a.v, a.vo, b, w.v, m.ldv);
      m.dout = rows_of(dout, dout_o, b, w.dout, m.ldo);
      m.lse = lse + b * l;
      m.probs = probs ? probs + b * l * s : nullptr;
      m.dq = c.outputs[0].ptr<T>() + b * l * e;
      m.dk = c.outputs[1].ptr<T>() + b * s * e;
      m.dv = c.outputs[2].ptr<T>() + b * s * ev;
      m.dmask = mask_grad ? c.outputs[3].ptr<T>() + b * l * s : nullptr;
      std::fill(m.dq, m.dq + l * e, T(0));
      std::fill(m.dk, m.dk + s * e, T(0));
      std::fill(m.dv, m.dv + s * ev, T(0));
      if (m.dmask) std::fill(m.dmask, m.dmask + l * s, T(0));
      w.delta.resize(static_cast<size_t>(l));
      for (int64_t i = 0; i < l; ++i)
        w.delta[static_cast<size_t>(i)] = row::dot(m.dout + i * m.ldo, out + (b * l + i) * ev, ev) - dlse[b * l + i];
      m.delta = w.delta.data();
      for (int64_t j0 = 0; j0 < s; j0 += kBlockCols) {
        const int64_t bc = std::min(kBlockCols, s - j0);
        // causal: the first query block with a row at or below key j0's diagonal
        for (int64_t i0 = a.causal ? j0 / kBlockRows * kBlockRows : 0; i0 < l; i0 += kBlockRows)
          m.block(i0, j0, std::min(kBlockRows, l - i0), bc, w.scores.data(), w.dscores.data());
      }
    }
  });
}

void sdpa_backward_kernel(const KernelContext& c) {
  if (c.inputs[2].meta->dtype == DType::kFloat32) sdpa_backward_typed<float>(c);
  else sdpa_backward_typed<double>(c);
}

}  // namespace

void register_attention_kernels() {
  ops::set_cpu_kernel("_sdpa", sdpa_kernel);
  ops::set_cpu_kernel("_sdpa_backward", sdpa_backward_kernel);
}

}  // namespace rill::cpu
