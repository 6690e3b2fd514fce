// CPU kernel of the matmul family (ops/matmul.cpp): batched C = A @ B with
// broadcast batch dims. float32/float64 go to oneDNN's sgemm / OpenBLAS's dgemm;
// bfloat16 to oneDNN's bfloat16 gemm where the CPU has one, float16 (and bfloat16
// elsewhere) is converted to float32 in blocks and goes to sgemm; integer
// dtypes use a plain i-k-j loop that wraps on overflow like C. Work is split
// across rill's intra-op pool, never BLAS's own threads (Note [BLAS threads]).
#include <cblas.h>

extern "C" void blas_shutdown(void);  // OpenBLAS: frees its buffers and resets its buffer table

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "rill/kernels/cpu/blas.h"
#include "rill/kernels/cpu/isa_rows.h"
#include "rill/kernels/cpu/kernels.h"
#include "rill/ops/op_schema.h"
#include "rill/util/fork.h"
#include "rill/util/parallel.h"

namespace rill::cpu {
namespace {

// Note [BLAS threads]
// rill links Debian's *serial* OpenBLAS and parallelises matmul itself with
// parallel::parallel_for. Debian's threaded OpenBLAS (pthreads build) was seen to
// deadlock when a thread called fork() while a matmul was running: the child
// inherits BLAS's thread-pool state (locks, a pool whose threads do not exist
// there) and its next BLAS call can wait forever; DataLoader workers are forked
// children that do exactly that. rill's own pool is rebuilt in a forked child
// (Note [Pool and fork] in util/parallel.cpp), so driving a serial BLAS from it
// keeps fork safe, and one knob (parallel::set_num_threads / RILL_NUM_THREADS)
// sets the thread count of every kernel. for_each_piece splits the batches
// across threads when there are several, else the rows of the output (its
// columns when the rows are fewer); each piece is one serial BLAS call.
// A child forked while another thread was inside a gemm also inherits OpenBLAS's
// buffer table mid-use: its first gemm returned garbage in about half the runs of
// tests/python/test_blas_fork.py, so an atfork child handler resets the table
// (blas_shutdown, registered in register_matmul_kernels); the test then passed every run.

// Multiply-accumulates below which a matmul stays on the calling thread (a
// parallel region costs a few microseconds; this is ~20 us of sgemm).
constexpr int64_t kParallelMacs = int64_t{1} << 20;
// Rows (or columns) of C per piece below which splitting a matrix does not pay.
constexpr int64_t kMinSplit = 16;
// Rows of A converted to float32 at a time on the float16/bfloat16 path.
constexpr int64_t kHalfRowBlock = 128;

// One operand as the kernel walks it: element [batch..., i, j] lives at
// data + sum(batch_idx * batch_strides) + i * rs + j * cs (strides in elements).
struct Operand {
  const char* data = nullptr;
  std::vector<int64_t> batch_strides;  // one per output batch dim; 0 where broadcast
  int64_t rows = 0, cols = 0;
  int64_t rs = 0, cs = 0;
};

// A BLAS view of a matrix operand: its transpose flag and leading dimension.
struct BlasLayout {
  bool ok = false;  // false: the strides fit neither layout and the operand must be packed
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int64_t ld = 0;
};

// Row-major dense (cs == 1) is NoTrans with ld = rs; a transposed view of a
// dense matrix (rs == 1) is Trans with ld = cs. Strides of size-1 dims are free.
BlasLayout blas_layout(const Operand& o) {
  if ((o.cs == 1 || o.cols == 1) && (o.rows == 1 || o.rs >= std::max<int64_t>(o.cols, 1))) {
    int64_t ld = o.rows == 1 ? std::max<int64_t>(o.cols, 1) : o.rs;
    if (ld <= INT_MAX) return {true, CblasNoTrans, ld};
  }
  if ((o.rs == 1 || o.rows == 1) && (o.cols == 1 || o.cs >= std::max<int64_t>(o.rows, 1))) {
    int64_t ld = o.cols == 1 ? std::max<int64_t>(o.rows, 1) : o.cs;
    if (ld <= INT_MAX) return {true, CblasTrans, ld};
  }
  return {};
}

// Copies the distinct matrices of o (broadcast batch dims are not materialised)
// into buffer as dense row-major matrices and points o at them.
template <typename T>
void pack_dense(Operand& o, const Shape& batch, std::unique_ptr<T[]>& buffer) {
  const size_t nd = batch.size();
  Shape sizes(nd);
  int64_t count = 1;
  for (size_t d = 0; d < nd; ++d) {
    sizes[d] = o.batch_strides[d] == 0 ? 1 : batch[d];
    count *= sizes[d];
  }
  const int64_t mat = o.rows * o.cols;
  buffer.reset(new T[static_cast<size_t>(count * mat)]);
  const T* src = reinterpret_cast<const T*>(o.data);
  std::vector<int64_t> idx(nd, 0);
  for (int64_t p = 0; p < count; ++p) {
    const T* s = src;
    for (size_t d = 0; d < nd; ++d) s += idx[d] * o.batch_strides[d];
    T* dst = buffer.get() + p * mat;
    for (int64_t i = 0; i < o.rows; ++i)
      for (int64_t j = 0; j < o.cols; ++j) dst[i * o.cols + j] = s[i * o.rs + j * o.cs];
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  int64_t step = mat;
  for (size_t d = nd; d-- > 0;) {
    o.batch_strides[d] = sizes[d] == 1 ? 0 : step;
    step *= sizes[d];
  }
  o.data = reinterpret_cast<const char*>(buffer.get());
  o.rs = o.cols;
  o.cs = 1;
}

// The problem: C[b] = A[b] @ B[b] for every batch index b of C's batch shape.
struct Problem {
  int64_t m = 0, n = 0, k = 0;
  Shape batch;  // output batch dims
  int64_t num_batches = 1;
  Operand a, b;
  char* c = nullptr;  // dense [batch..., m, n]
};

Operand make_operand(const TensorArg& t, size_t out_batch_dims) {
  const TensorMeta& m = *t.meta;
  const size_t nd = m.shape.size();
  Operand o;
  o.data = static_cast<const char*>(t.data);
  o.rows = m.shape[nd - 2];
  o.cols = m.shape[nd - 1];
  o.rs = m.strides[nd - 2];
  o.cs = m.strides[nd - 1];
  o.batch_strides.assign(out_batch_dims, 0);
  const size_t lead = out_batch_dims - (nd - 2);
  for (size_t d = 0; d + 2 < nd; ++d)
    o.batch_strides[lead + d] = m.shape[d] == 1 ? 0 : m.strides[d];
  return o;
}

// When B is the same matrix for every batch and A's batches continue its rows
// in memory, the batches are one taller product ([B, m, k] @ [k, n] computed as
// [B*m, k] @ [k, n], the common Linear case): fewer, larger gemm calls.
void fold_batches_into_rows(Problem& p) {
  if (p.num_batches <= 1 || p.m * p.num_batches > INT_MAX) return;
  for (int64_t s : p.b.batch_strides)
    if (s != 0) return;
  int64_t rs = p.a.rs;
  int64_t expect =
      p.m == 1 ? -1 : p.m * rs;  // -1: a single row has no stride; the batch stride sets it
  for (size_t d = p.batch.size(); d-- > 0;) {
    if (p.batch[d] == 1) continue;
    const int64_t s = p.a.batch_strides[d];
    if (expect < 0) {
      if (s == 0) return;
      rs = s;
      expect = s * p.batch[d];
      continue;
    }
    if (s != expect) return;
    expect *= p.batch[d];
  }
  p.m *= p.num_batches;
  p.num_batches = 1;
  p.batch.assign(p.batch.size(), 1);
  p.a.rows = p.m;
  p.a.rs = rs;
  std::fill(p.a.batch_strides.begin(), p.a.batch_strides.end(), 0);
}

// Calls block(a, b, c, i0, i1, j0, j1) for pieces that together cover every
// batch, where a, b, c point at the batch's matrices and [i0, i1) x [j0, j1) is
// the piece of C to compute. Pieces run in parallel (Note [BLAS threads]).
template <typename Elem, typename Block>
void for_each_piece(const Problem& p, const Block& block) {
  const int64_t threads = parallel::num_threads();
  const double per_batch =
      static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
  const bool serial =
      threads == 1 || per_batch * static_cast<double>(p.num_batches) < kParallelMacs;
  const size_t nd = p.batch.size();
  // Pointers of batch `index`.
  auto batch_ptrs = [&](int64_t index, const Elem*& a, const Elem*& b, Elem*& c) {
    a = reinterpret_cast<const Elem*>(p.a.data);
    b = reinterpret_cast<const Elem*>(p.b.data);
    c = reinterpret_cast<Elem*>(p.c) + index * p.m * p.n;
    for (size_t d = nd; d-- > 0;) {
      int64_t i = index % p.batch[d];
      index /= p.batch[d];
      a += i * p.a.batch_strides[d];
      b += i * p.b.batch_strides[d];
    }
  };
  // Whole batches: several per task when they are small.
  auto run_batches = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const Elem *a, *b;
      Elem* c;
      batch_ptrs(t, a, b, c);
      block(a, b, c, 0, p.m, 0, p.n);
    }
  };
  if (serial) {
    run_batches(0, p.num_batches);
    return;
  }
  if (p.num_batches % threads == 0 || p.num_batches >= 4 * threads) {
    const int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(kParallelMacs / per_batch));
    parallel::parallel_for(0, p.num_batches, grain, run_batches);
    return;
  }
  // Few batches: split each into `parts` row (or column) ranges, so every
  // thread gets the same share of every batch.
  const bool split_rows = p.m >= p.n;
  const int64_t extent = split_rows ? p.m : p.n;
  const int64_t parts = std::min<int64_t>(threads, std::max<int64_t>(1, extent / kMinSplit));
  if (parts == 1 && p.num_batches == 1) {
    run_batches(0, 1);
    return;
  }
  parallel::parallel_for(0, p.num_batches * parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const Elem *a, *b;
      Elem* c;
      batch_ptrs(t / parts, a, b, c);
      const int64_t part = t % parts;
      const int64_t lo = extent * part / parts, hi = extent * (part + 1) / parts;
      if (lo == hi) continue;
      if (split_rows)
        block(a, b, c, lo, hi, 0, p.n);
      else
        block(a, b, c, 0, p.m, lo, hi);
    }
  });
}

void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, const float* a,
          int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  // Row-major layout: C's rows are ldc apart; A and B are row-major, or transposed (ta/tb)
  // row-major.
  blas_gemm(ta == CblasTrans, tb == CblasTrans, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
}

void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, const double* a,
          int64_t lda, const double* b, int64_t ldb, double* c, int64_t ldc) {
  // Row-major layout: C's rows are ldc apart; A and B are row-major, or transposed (ta/tb)
  // row-major.
  blas_gemm(ta == CblasTrans, tb == CblasTrans, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
}

// y = op(A) x with A stored rows x cols.
void gemv(CBLAS_TRANSPOSE t, int64_t rows, int64_t cols, const float* a, int64_t lda,
          const float* x, int64_t incx, float* y, int64_t incy) {
  // Row-major layout: A's rows are lda apart; t = CblasTrans multiplies by its transpose.
  blas_gemv(t == CblasTrans, rows, cols, a, lda, x, incx, y, incy);
}

void gemv(CBLAS_TRANSPOSE t, int64_t rows, int64_t cols, const double* a, int64_t lda,
          const double* x, int64_t incx, double* y, int64_t incy) {
  // Row-major layout: A's rows are lda apart; t = CblasTrans multiplies by its transpose.
  blas_gemv(t == CblasTrans, rows, cols, a, lda, x, incx, y, incy);
}

// The BLAS layouts of A and B, packing into a_buf/b_buf an operand whose strides fit none.
template <typename T>
std::pair<BlasLayout, BlasLayout> blas_layouts(Problem& p, std::unique_ptr<T[]>& a_buf, std::unique_ptr<T[]>& b_buf) {
  BlasLayout la = blas_layout(p.a);
  if (!la.ok) {
    pack_dense(p.a, p.batch, a_buf);
    la = blas_layout(p.a);
  }
  BlasLayout lb = blas_layout(p.b);
  if (!lb.ok) {
    pack_dense(p.b, p.batch, b_buf);
    lb = blas_layout(p.b);
  }
  RILL_ASSERT(la.ok && lb.ok, "[matmul] packed operand without a BLAS layout");
  return {la, lb};
}

// float32 / float64: one BLAS call per piece, operands packed only when their
// strides fit neither BLAS layout. A piece with one column (or one row) of C is
// a matrix-vector product: gemv is several times faster than gemm there.
template <typename T>
void matmul_blas(Problem& p) {
  std::unique_ptr<T[]> a_buf, b_buf;
  auto [la, lb] = blas_layouts(p, a_buf, b_buf);
  const int64_t n = p.n, k = p.k;
  const int64_t a_rs = p.a.rs, b_cs = p.b.cs;
  // Vector strides; a stride of a length-1 vector is arbitrary (maybe 0), BLAS wants >= 1.
  const int64_t a_inc = k == 1 ? 1 : p.a.cs, b_inc = k == 1 ? 1 : p.b.rs;
  for_each_piece<T>(
      p, [&](const T* a, const T* b, T* c, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
        const T* ap = a + i0 * a_rs;
        const T* bp = b + j0 * b_cs;
        T* cp = c + i0 * n + j0;
        if (j1 - j0 == 1) {  // C[:, j] = A @ B[:, j]
          if (la.trans == CblasNoTrans)
            gemv(CblasNoTrans, i1 - i0, k, ap, la.ld, bp, b_inc, cp, n);
          else
            gemv(CblasTrans, k, i1 - i0, ap, la.ld, bp, b_inc, cp, n);
        } else if (i1 - i0 == 1) {  // C[i, :] = B^T @ A[i, :]
          if (lb.trans == CblasNoTrans)
            gemv(CblasTrans, k, j1 - j0, bp, lb.ld, ap, a_inc, cp, 1);
          else
            gemv(CblasNoTrans, j1 - j0, k, bp, lb.ld, ap, a_inc, cp, 1);
        } else {
          gemm(la.trans, lb.trans, i1 - i0, j1 - j0, k, ap, la.ld, bp, lb.ld, cp, n);
        }
      });
}

// bfloat16 on a CPU with a bfloat16 gemm (oneDNN's, AVX-512; twice as fast as
// converting to float32 here): A and B are read as they are (packed only when their
// strides fit no BLAS layout), products accumulate in float32, and each piece of C
// is rounded once from a float32 buffer, as PyTorch's oneDNN matmul does.
void matmul_bf16(Problem& p) {
  std::unique_ptr<BFloat16[]> a_buf, b_buf;
  auto [la, lb] = blas_layouts(p, a_buf, b_buf);
  const int64_t n = p.n, k = p.k;
  const int64_t a_rs = p.a.rs, b_cs = p.b.cs;
  for_each_piece<BFloat16>(
      p, [&](const BFloat16* a, const BFloat16* b, BFloat16* c, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
        const int64_t mm = i1 - i0, nn = j1 - j0;
        std::unique_ptr<float[]> fc(new float[static_cast<size_t>(mm * nn)]);
        const bool ok = blas_gemm_bf16(la.trans == CblasTrans, lb.trans == CblasTrans, mm, nn, k, 1.0f,
                                       &(a + i0 * a_rs)->bits, la.ld, &(b + j0 * b_cs)->bits, lb.ld, 0.0f,
                                       fc.get(), nn);
        RILL_ASSERT(ok, "[matmul] bfloat16 gemm vanished after its probe");
        for (int64_t i = 0; i < mm; ++i)
          row_kernels().float_to_bfloat16(fc.get() + i * nn, &(c + (i0 + i) * n + j0)->bits, nn);
      });
}

// Whether this CPU has oneDNN's bfloat16 gemm: one 1x1x1 product, once.
bool have_bf16_gemm() {
  static const bool have = [] {
    const uint16_t one = BFloat16(1.0f).bits;
    float c = 0.0f;
    return blas_gemm_bf16(false, false, 1, 1, 1, 1.0f, &one, 1, &one, 1, 0.0f, &c, 1) && c == 1.0f;
  }();
  return have;
}

// float16 / bfloat16: B's columns [j0, j1) and blocks of A's rows are converted
// to float32, multiplied by sgemm, and C is rounded back once.
template <typename T>
void matmul_half(const Problem& p) {
  const int64_t n = p.n, k = p.k;
  const Operand &oa = p.a, &ob = p.b;
  for_each_piece<T>(
      p, [&](const T* a, const T* b, T* c, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
        const int64_t nn = j1 - j0;
        const int64_t rows = std::min(kHalfRowBlock, i1 - i0);
        std::unique_ptr<float[]> fb(new float[static_cast<size_t>(k * nn)]);
        std::unique_ptr<float[]> fa(new float[static_cast<size_t>(rows * k)]);
        std::unique_ptr<float[]> fc(new float[static_cast<size_t>(rows * nn)]);
        for (int64_t kk = 0; kk < k; ++kk)
          for (int64_t j = 0; j < nn; ++j)
            fb[kk * nn + j] = static_cast<float>(b[kk * ob.rs + (j0 + j) * ob.cs]);
        for (int64_t r0 = i0; r0 < i1; r0 += rows) {
          const int64_t mm = std::min(rows, i1 - r0);
          for (int64_t i = 0; i < mm; ++i)
            for (int64_t kk = 0; kk < k; ++kk)
              fa[i * k + kk] = static_cast<float>(a[(r0 + i) * oa.rs + kk * oa.cs]);
          gemm(CblasNoTrans, CblasNoTrans, mm, nn, k, fa.get(), k, fb.get(), nn, fc.get(), nn);
          for (int64_t i = 0; i < mm; ++i)
            for (int64_t j = 0; j < nn; ++j) c[(r0 + i) * n + j0 + j] = T(fc[i * nn + j]);
        }
      });
}

// Integers: i-k-j loops over a packed copy of B's columns, accumulating in
// unsigned arithmetic so overflow wraps (modulo 2^bits, as C's unsigned types
// and PyTorch's integer matmul do) instead of being undefined.
template <typename T>
void matmul_integer(const Problem& p) {
  using Acc = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  const int64_t n = p.n, k = p.k;
  const Operand &oa = p.a, &ob = p.b;
  for_each_piece<T>(
      p, [&](const T* a, const T* b, T* c, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
        const int64_t nn = j1 - j0;
        std::unique_ptr<Acc[]> pb(new Acc[static_cast<size_t>(k * nn)]);
        std::unique_ptr<Acc[]> row(new Acc[static_cast<size_t>(nn)]);
        for (int64_t kk = 0; kk < k; ++kk)
          for (int64_t j = 0; j < nn; ++j)
            pb[kk * nn + j] = static_cast<Acc>(b[kk * ob.rs + (j0 + j) * ob.cs]);
        for (int64_t i = i0; i < i1; ++i) {
          Acc* acc = row.get();
          std::fill(acc, acc + nn, Acc{0});
          for (int64_t kk = 0; kk < k; ++kk) {
            const Acc av = static_cast<Acc>(a[i * oa.rs + kk * oa.cs]);
            const Acc* brow = pb.get() + kk * nn;
            for (int64_t j = 0; j < nn; ++j) acc[j] += av * brow[j];
          }
          T* out = c + i * n + j0;
          for (int64_t j = 0; j < nn; ++j) out[j] = static_cast<T>(acc[j]);
        }
      });
}

void matmul_kernel(const KernelContext& ctx) {
  const TensorArg& out = ctx.outputs[0];
  const TensorMeta& om = *out.meta;
  const size_t nd = om.shape.size();
  Problem p;
  p.m = om.shape[nd - 2];
  p.n = om.shape[nd - 1];
  p.k = ctx.inputs[0].meta->shape.back();
  p.batch.assign(om.shape.begin(), om.shape.end() - 2);
  p.num_batches = shape_numel(p.batch);
  p.c = static_cast<char*>(out.data);
  if (om.numel == 0) return;
  if (p.k == 0) {  // an empty sum: zeros (all-zero bits is 0 in every dtype)
    std::memset(out.data, 0, static_cast<size_t>(om.numel * dtype_itemsize(om.dtype)));
    return;
  }
  RILL_CHECK(p.m <= INT_MAX && p.n <= INT_MAX && p.k <= INT_MAX, Runtime,
             "[matmul] matrix dims above 2^31-1 are "
             "not supported (got ",
             p.m, "x", p.k, " and ", p.k, "x", p.n, ")");
  p.a = make_operand(ctx.inputs[0], nd - 2);
  p.b = make_operand(ctx.inputs[1], nd - 2);
  fold_batches_into_rows(p);
  visit_dtype(om.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      matmul_blas<T>(p);
    } else if constexpr (std::is_same_v<T, BFloat16>) {
      if (have_bf16_gemm())
        matmul_bf16(p);
      else
        matmul_half<T>(p);
    } else if constexpr (std::is_same_v<T, Half>) {
      matmul_half<T>(p);
    } else if constexpr (std::is_same_v<T, bool>) {
      RILL_FAIL(NotImplemented, "[matmul] not implemented for 'Bool'");
    } else {
      matmul_integer<T>(p);
    }
  });
}

}  // namespace

void register_matmul_kernels() {
  ops::set_cpu_kernel("matmul", matmul_kernel);
  // A forked child inherits OpenBLAS's buffer table as the parent's threads left it, some
  // buffers marked in use mid-gemm; start the child's table afresh (Note [BLAS threads]).
  fork::on_fork(fork::Stage::kLock, {nullptr, nullptr, [](void*) { blas_shutdown(); }});
}

}  // namespace rill::cpu
