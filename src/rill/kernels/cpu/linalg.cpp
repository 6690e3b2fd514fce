// CPU kernels of the linear-algebra family (ops/linalg.cpp) on LAPACK and BLAS from OpenBLAS.
//
// Every op works on the last two dims of its inputs, one matrix per index of the batch dims (equal in every
// input: python/rill/linalg.py expands them first). Each matrix is copied into a column-major buffer, as
// LAPACK wants it (inputs may have any strides), factored or solved there under OpenBLAS's lock (Note
// [Concurrent BLAS] in blas.cpp), and written back row-major into the dense outputs. float32 and float64
// only, as PyTorch on the CPU (inference refuses the rest).
#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <vector>

#include "rill/kernels/cpu/blas.h"
#include "rill/kernels/cpu/kernels.h"
#include "rill/kernels/cpu/lapack.h"
#include "rill/ops/op_schema.h"
#include "rill/util/error.h"

namespace rill::cpu {
namespace {

/** The matrices of one tensor: rows x cols each, at offsets[b] (elements) with strides rs, cs. */
struct Matrices {
  int64_t rows = 0, cols = 0, rs = 0, cs = 0;
  std::vector<int64_t> offsets;
};

Matrices matrices_of(const TensorMeta& m) {
  Matrices out;
  const int64_t nd = m.ndim();
  out.rows = m.shape[nd - 2];
  out.cols = m.shape[nd - 1];
  out.rs = m.strides[nd - 2];
  out.cs = m.strides[nd - 1];
  int64_t count = 1;
  for (int64_t d = 0; d < nd - 2; ++d) count *= m.shape[d];
  out.offsets.resize(static_cast<size_t>(count));
  for (int64_t b = 0; b < count; ++b) {
    int64_t rest = b, off = 0;
    for (int64_t d = nd - 3; d >= 0; --d) {
      off += (rest % m.shape[d]) * m.strides[d];
      rest /= m.shape[d];
    }
    out.offsets[b] = off;
  }
  return out;
}

int lapack_int(int64_t v) {
  RILL_CHECK(v <= std::numeric_limits<int>::max(), Runtime, "[linalg] a matrix dimension of ", v,
             " is beyond LAPACK's 32-bit sizes");
  return static_cast<int>(v);
}

/** Matrix b of x into a column-major buffer with leading dimension ld (>= x.rows). */
template <typename T>
void load(const T* base, const Matrices& x, int64_t b, T* buf, int64_t ld) {
  const T* src = base + x.offsets[b];
  for (int64_t j = 0; j < x.cols; ++j)
    for (int64_t i = 0; i < x.rows; ++i) buf[i + j * ld] = src[i * x.rs + j * x.cs];
}

/** rows x cols of a column-major buffer (leading dimension ld) into a dense row-major matrix. */
template <typename T>
void store(const T* buf, int64_t ld, int64_t rows, int64_t cols, T* dst) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[i * cols + j] = buf[i + j * ld];
}

template <typename F>
void visit_float(DType d, F&& f) {
  if (d == DType::kFloat64) f(double{});
  else if (d == DType::kFloat32) f(float{});
  else RILL_FAIL(Type, "[linalg] supports float32 and float64 tensors, got ", dtype_name(d));
}

// _lapack_lu_factor_ex(A) -> (LU, pivots, info): getrf, pivots 1-based as LAPACK and PyTorch give them.
void lu_factor_kernel(const KernelContext& c) {
  const Matrices a = matrices_of(*c.inputs[0].meta);
  const int64_t m = a.rows, n = a.cols, k = std::min(m, n);
  visit_float(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> buf(static_cast<size_t>(std::max<int64_t>(1, m * n)));
    std::vector<int> ipiv(static_cast<size_t>(std::max<int64_t>(1, k)));
    for (size_t b = 0; b < a.offsets.size(); ++b) {
      load(c.inputs[0].ptr<T>(), a, b, buf.data(), m);
      int info = 0;
      if (k > 0) {
        std::lock_guard<std::mutex> lock(openblas_lock());
        lapack::getrf(lapack_int(m), lapack_int(n), buf.data(), lapack_int(std::max<int64_t>(1, m)), ipiv.data(),
                      &info);
      }
      RILL_CHECK(info >= 0, Runtime, "[linalg.lu_factor] LAPACK getrf rejected argument ", -info);
      if (info > 0 && c.attr<bool>("check_errors"))
        RILL_FAIL(Runtime, "linalg.lu_factor_ex: U[", info, ",", info, "] is zero and using it on lu_solve would "
                  "result in a division by zero; to factor it anyway call linalg.lu_factor_ex(A) without "
                  "check_errors=True");
      store(buf.data(), m, m, n, c.outputs[0].ptr<T>() + b * m * n);
      std::copy(ipiv.begin(), ipiv.begin() + k, c.outputs[1].ptr<int32_t>() + b * k);
      c.outputs[2].ptr<int32_t>()[b] = info;
    }
  });
}

// _lapack_solve_ex(A, B) -> (X, info): A X = B through getrf and getrs.
void solve_kernel(const KernelContext& c) {
  const Matrices a = matrices_of(*c.inputs[0].meta), rhs = matrices_of(*c.inputs[1].meta);
  const int64_t n = a.rows, k = rhs.cols;
  const bool check = c.attr<bool>("check_errors");
  visit_float(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> lu(static_cast<size_t>(std::max<int64_t>(1, n * n))), x(static_cast<size_t>(std::max<int64_t>(1, n * k)));
    std::vector<int> ipiv(static_cast<size_t>(std::max<int64_t>(1, n)));
    const int ld = lapack_int(std::max<int64_t>(1, n));
    for (size_t b = 0; b < a.offsets.size(); ++b) {
      load(c.inputs[0].ptr<T>(), a, b, lu.data(), n);
      load(c.inputs[1].ptr<T>(), rhs, b, x.data(), n);
      int info = 0, solved = 0;
      if (n > 0) {
        std::lock_guard<std::mutex> lock(openblas_lock());
        lapack::getrf(lapack_int(n), lapack_int(n), lu.data(), ld, ipiv.data(), &info);
        if (k > 0) lapack::getrs('N', lapack_int(n), lapack_int(k), lu.data(), ld, ipiv.data(), x.data(), ld, &solved);
      }
      RILL_CHECK(info >= 0 && solved >= 0, Runtime, "[linalg.solve] LAPACK rejected an argument");
      RILL_CHECK(info == 0 || !check, Runtime, "torch.linalg.solve: The solver failed because the input matrix is "
                 "singular (U[", info, ",", info, "] of its LU factorization is zero); use linalg.lstsq or "
                 "linalg.pinv for singular systems");
      store(x.data(), n, n, k, c.outputs[0].ptr<T>() + b * n * k);
      c.outputs[1].ptr<int32_t>()[b] = info;
    }
  });
}

// _lapack_slogdet(A) -> (sign, logabsdet): from the diagonal of A's LU factors and the parity of its pivots.
void slogdet_kernel(const KernelContext& c) {
  const Matrices a = matrices_of(*c.inputs[0].meta);
  const int64_t n = a.rows;
  visit_float(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> lu(static_cast<size_t>(std::max<int64_t>(1, n * n)));
    std::vector<int> ipiv(static_cast<size_t>(std::max<int64_t>(1, n)));
    for (size_t b = 0; b < a.offsets.size(); ++b) {
      T sign = 1, logabs = 0;
      if (n > 0) {
        load(c.inputs[0].ptr<T>(), a, b, lu.data(), n);
        int info = 0;
        {
          std::lock_guard<std::mutex> lock(openblas_lock());
          lapack::getrf(lapack_int(n), lapack_int(n), lu.data(), lapack_int(n), ipiv.data(), &info);
        }
        RILL_CHECK(info >= 0, Runtime, "[linalg.slogdet] LAPACK getrf rejected argument ", -info);
        for (int64_t i = 0; i < n; ++i) {
          const T u = lu[i + i * n];
          if (ipiv[i] != i + 1) sign = -sign;
          if (u < 0) sign = -sign;
          logabs += std::log(std::abs(u));
          if (std::isnan(u)) sign = u;
        }
        if (info > 0) {  // singular: PyTorch's (0, -inf)
          sign = 0;
          logabs = -std::numeric_limits<T>::infinity();
        }
      }
      c.outputs[0].ptr<T>()[b] = sign;
      c.outputs[1].ptr<T>()[b] = logabs;
    }
  });
}

// _lapack_cholesky_ex(A, upper) -> (L, info): potrf on the triangle named by upper, the other one zeroed.
void cholesky_kernel(const KernelContext& c) {
  const Matrices a = matrices_of(*c.inputs[0].meta);
  const int64_t n = a.rows;
  const bool upper = c.attr<bool>("upper");
  visit_float(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> buf(static_cast<size_t>(std::max<int64_t>(1, n * n)));
    for (size_t b = 0; b < a.offsets.size(); ++b) {
      load(c.inputs[0].ptr<T>(), a, b, buf.data(), n);
      int info = 0;
      if (n > 0) {
        std::lock_guard<std::mutex> lock(openblas_lock());
        lapack::potrf(upper ? 'U' : 'L', lapack_int(n), buf.data(), lapack_int(n), &info);
      }
      RILL_CHECK(info >= 0, Runtime, "[linalg.cholesky] LAPACK potrf rejected argument ", -info);
      if (info > 0 && c.attr<bool>("check_errors"))
        RILL_FAIL(Runtime, "linalg.cholesky: The factorization could not be completed because the input is not "
                  "positive-definite (the leading minor of order ", info, " is not positive-definite)");
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < n; ++i)
          if (upper ? i > j : i < j) buf[i + j * n] = 0;
      store(buf.data(), n, n, n, c.outputs[0].ptr<T>() + b * n * n);
      c.outputs[1].ptr<int32_t>()[b] = info;
    }
  });
}

// _lapack_ldl_factor_ex(A) -> (LD, pivots, info): sytrf on A's lower triangle (Bunch-Kaufman pivoting), the
// strict upper triangle zeroed; LAPACK's 1-based pivots, negative (and repeated) for a 2 x 2 block of D.
void ldl_factor_kernel(const KernelContext& c) {
  const Matrices a = matrices_of(*c.inputs[0].meta);
  const int64_t n = a.rows;
  visit_float(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> buf(static_cast<size_t>(std::max<int64_t>(1, n * n)));
    std::vector<int> ipiv(static_cast<size_t>(std::max<int64_t>(1, n)));
    std::vector<T> work(1);
    for (size_t b = 0; b < a.offsets.size(); ++b) {
      load(c.inputs[0].ptr<T>(), a, b, buf.data(), n);
      int info = 0;
      if (n > 0) {
        std::lock_guard<std::mutex> lock(openblas_lock());
        T work_size = 0;
        lapack::sytrf('L', lapack_int(n), buf.data(), lapack_int(n), ipiv.data(), &work_size, -1, &info);
        work.resize(std::max<size_t>(1, static_cast<size_t>(work_size)));
        lapack::sytrf('L', lapack_int(n), buf.data(), lapack_int(n), ipiv.data(), work.data(),
                      lapack_int(static_cast<int64_t>(work.size())), &info);
      }
      RILL_CHECK(info >= 0, Runtime, "[linalg.ldl_factor] LAPACK sytrf rejected argument ", -info);
      for (int64_t j = 1; j < n; ++j)
        for (int64_t i = 0; i < j; ++i) buf[i + j * n] = 0;
      store(buf.data(), n, n, n, c.outputs[0].ptr<T>() + b * n * n);
      std::copy(ipiv.begin(), ipiv.begin() + n, c.outputs[1].ptr<int32_t>() + b * n);
      c.outputs[2].ptr<int32_t>()[b] = info;
    }
  });
}

/** Whether pivots p[0..n) could come from sytrf on a lower triangle: each in [-n, n] and nonzero, a negative one
 * (a 2 x 2 block of D) repeated at the next row. sytrs reads rows through them, so others must not reach it. */
void check_ldl_pivots(const int32_t* p, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    const int64_t v = p[k];
    RILL_CHECK(v != 0 && v >= -n && v <= n, Index, "torch.linalg.ldl_solve: pivot ", v, " at index ", k,
               " is out of range [1, ", n, "] (or its negative); pass the pivots linalg.ldl_factor returned");
    if (v < 0) {
      RILL_CHECK(k + 1 < n && p[k + 1] == v, Runtime, "torch.linalg.ldl_solve: negative pivot ", v, " at index ", k,
                 " must be repeated at index ", k + 1, " (a 2 x 2 block of D); pass the pivots "
                 "linalg.ldl_factor returned");
      ++k;
    }
  }
}

// _lapack_ldl_solve(LD, pivots, B) -> X with A X = B for A = L D L^T packed in LD (sytrf's lower form): sytrs.
void ldl_solve_kernel(const KernelContext& c) {
  const Matrices ld = matrices_of(*c.inputs[0].meta), rhs = matrices_of(*c.inputs[2].meta);
  const TensorMeta& pm = *c.inputs[1].meta;
  const int64_t n = ld.rows, k = rhs.cols;
  const Strides dense = contiguous_strides(pm.shape);
  RILL_CHECK(pm.strides == dense || n == 0, Runtime, "[_lapack_ldl_solve] expected dense pivots");
  const int32_t* pivots = c.inputs[1].ptr<int32_t>();
  visit_float(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> fac(static_cast<size_t>(std::max<int64_t>(1, n * n)));
    std::vector<T> x(static_cast<size_t>(std::max<int64_t>(1, n * k)));
    const int lda = lapack_int(std::max<int64_t>(1, n));
    for (size_t b = 0; b < ld.offsets.size(); ++b) {
      const int32_t* p = pivots + static_cast<int64_t>(b) * n;
      check_ldl_pivots(p, n);
      load(c.inputs[0].ptr<T>(), ld, b, fac.data(), n);
      load(c.inputs[2].ptr<T>(), rhs, b, x.data(), n);
      int info = 0;
      if (n > 0 && k > 0) {
        const std::vector<int> ipiv(p, p + n);
        std::lock_guard<std::mutex> lock(openblas_lock());
        lapack::sytrs('L', lapack_int(n), lapack_int(k), fac.data(), lda, ipiv.data(), x.data(), lda, &info);
      }
      RILL_CHECK(info >= 0, Runtime, "[linalg.ldl_solve] LAPACK sytrs rejected argument ", -info);
      store(x.data(), n, n, k, c.outputs[0].ptr<T>() + b * n * k);
    }
  });
}

// _lapack_eigh(A, UPLO, compute_v) -> (eigenvalues ascending, eigenvectors as columns): syevd.
void eigh_kernel(const KernelContext& c) {
  const Matrices a = matrices_of(*c.inputs[0].meta);
  const int64_t n = a.rows;
  const char uplo = c.attr<std::string>("UPLO") == "U" ? 'U' : 'L';
  const bool vectors = c.attr<bool>("compute_v");
  visit_float(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = decltype(tag);
    if (n == 0) return;
    std::vector<T> buf(static_cast<size_t>(n * n)), w(static_cast<size_t>(n));
    const char jobz = vectors ? 'V' : 'N';
    T work_size = 0;
    int iwork_size = 0, info = 0;
    {
      std::lock_guard<std::mutex> lock(openblas_lock());
      lapack::syevd(jobz, uplo, lapack_int(n), buf.data(), lapack_int(n), w.data(), &work_size, -1, &iwork_size, -1,
                    &info);
    }
    std::vector<T> work(static_cast<size_t>(work_size) + 1);
    std::vector<int> iwork(static_cast<size_t>(std::max(1, iwork_size)));
    for (size_t b = 0; b < a.offsets.size(); ++b) {
      load(c.inputs[0].ptr<T>(), a, b, buf.data(), n);
      {
        std::lock_guard<std::mutex> lock(openblas_lock());
        lapack::syevd(jobz, uplo, lapack_int(n), buf.data(), lapack_int(n), w.data(), work.data(),
                      lapack_int(static_cast<int64_t>(work.size())), iwork.data(),
                      lapack_int(static_cast<int64_t>(iwork.size())), &info);
      }
      RILL_CHECK(info >= 0, Runtime, "[linalg.eigh] LAPACK syevd rejected argument ", -info);
      RILL_CHECK(info == 0, Runtime, "linalg.eigh: The algorithm failed to converge because the input matrix is "
                 "ill-conditioned or has too many repeated eigenvalues (error code: ", info, ")");
      std::copy(w.begin(), w.end(), c.outputs[0].ptr<T>() + b * n);
      if (vectors) store(buf.data(), n, n, n, c.outputs[1].ptr<T>() + b * n * n);
    }
  });
}

// _lapack_svd(A, full_matrices, compute_uv) -> (U, S descending, Vh): gesdd.
void svd_kernel(const KernelContext& c) {
  const Matrices a = matrices_of(*c.inputs[0].meta);
  const int64_t m = a.rows, n = a.cols, k = std::min(m, n);
  const bool full = c.attr<bool>("full_matrices"), uv = c.attr<bool>("compute_uv");
  const int64_t ucols = full ? m : k, vrows = full ? n : k;
  visit_float(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = decltype(tag);
    if (k == 0) {  // no singular values: the full factors are identities, the reduced ones empty
      if (!uv) return;
      for (size_t b = 0; b < a.offsets.size(); ++b) {
        T* u = c.outputs[0].ptr<T>() + b * m * ucols;
        T* vh = c.outputs[2].ptr<T>() + b * vrows * n;
        std::fill(u, u + m * ucols, T(0));
        std::fill(vh, vh + vrows * n, T(0));
        if (full) {
          for (int64_t i = 0; i < m; ++i) u[i * m + i] = 1;
          for (int64_t i = 0; i < n; ++i) vh[i * n + i] = 1;
        }
      }
      return;
    }
    const char jobz = !uv ? 'N' : full ? 'A' : 'S';
    std::vector<T> buf(static_cast<size_t>(m * n)), s(static_cast<size_t>(k));
    std::vector<T> u(uv ? static_cast<size_t>(m * ucols) : 1), vt(uv ? static_cast<size_t>(vrows * n) : 1);
    std::vector<int> iwork(static_cast<size_t>(8 * k));
    const int ldu = lapack_int(m), ldvt = lapack_int(std::max<int64_t>(1, vrows));
    T work_size = 0;
    int info = 0;
    {
      std::lock_guard<std::mutex> lock(openblas_lock());
      lapack::gesdd(jobz, lapack_int(m), lapack_int(n), buf.data(), lapack_int(m), s.data(), u.data(), ldu,
                    vt.data(), ldvt, &work_size, -1, iwork.data(), &info);
    }
    std::vector<T> work(static_cast<size_t>(work_size) + 1);
    for (size_t b = 0; b < a.offsets.size(); ++b) {
      load(c.inputs[0].ptr<T>(), a, b, buf.data(), m);
      {
        std::lock_guard<std::mutex> lock(openblas_lock());
        lapack::gesdd(jobz, lapack_int(m), lapack_int(n), buf.data(), lapack_int(m), s.data(), u.data(), ldu,
                      vt.data(), ldvt, work.data(), lapack_int(static_cast<int64_t>(work.size())), iwork.data(),
                      &info);
      }
      RILL_CHECK(info >= 0, Runtime, "[linalg.svd] LAPACK gesdd rejected argument ", -info);
      RILL_CHECK(info == 0, Runtime, "linalg.svd: The algorithm failed to converge because the input matrix is "
                 "ill-conditioned or has too many repeated singular values (error code: ", info, ")");
      std::copy(s.begin(), s.end(), c.outputs[1].ptr<T>() + b * k);
      if (uv) {
        store(u.data(), m, m, ucols, c.outputs[0].ptr<T>() + b * m * ucols);
        store(vt.data(), ldvt, vrows, n, c.outputs[2].ptr<T>() + b * vrows * n);
      }
    }
  });
}

/** geqrf on the column-major m x n matrix in buf: R above the diagonal, the reflectors below, their scales in tau. */
template <typename T>
void geqrf_in_place(int64_t m, int64_t n, T* buf, T* tau) {
  if (std::min(m, n) == 0) return;
  const int lda = lapack_int(std::max<int64_t>(1, m));
  int info = 0;
  std::lock_guard<std::mutex> lock(openblas_lock());
  T size = 0;
  lapack::geqrf(lapack_int(m), lapack_int(n), buf, lda, tau, &size, -1, &info);
  std::vector<T> work(static_cast<size_t>(size) + 1);
  lapack::geqrf(lapack_int(m), lapack_int(n), buf, lda, tau, work.data(), lapack_int(static_cast<int64_t>(work.size())),
                &info);
  RILL_CHECK(info >= 0, Runtime, "[linalg.qr] LAPACK geqrf rejected argument ", -info);
}

// _lapack_geqrf(A) -> (a, tau): LAPACK's compact QR (torch.geqrf), R on and above a's diagonal, the Householder
// vectors below it.
void geqrf_kernel(const KernelContext& c) {
  const Matrices a = matrices_of(*c.inputs[0].meta);
  const int64_t m = a.rows, n = a.cols, k = std::min(m, n);
  visit_float(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> buf(static_cast<size_t>(std::max<int64_t>(1, m * n)));
    for (size_t b = 0; b < a.offsets.size(); ++b) {
      load(c.inputs[0].ptr<T>(), a, b, buf.data(), m);
      geqrf_in_place(m, n, buf.data(), c.outputs[1].ptr<T>() + b * k);
      store(buf.data(), m, m, n, c.outputs[0].ptr<T>() + b * m * n);
    }
  });
}

// _lapack_qr(A, mode) -> (Q, R): geqrf, then orgqr builds Q from the reflectors ('r': R only).
void qr_kernel(const KernelContext& c) {
  const Matrices a = matrices_of(*c.inputs[0].meta);
  const int64_t m = a.rows, n = a.cols, k = std::min(m, n);
  const std::string& mode = c.attr<std::string>("mode");
  const bool complete = mode == "complete", want_q = mode != "r";
  const int64_t qcols = complete ? m : k, rrows = complete ? m : k;
  visit_float(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = decltype(tag);
    // The reflectors live in the first k columns; a complete Q of a tall matrix needs m columns.
    const int64_t bufcols = std::max(n, qcols);
    std::vector<T> buf(static_cast<size_t>(std::max<int64_t>(1, m * bufcols))), tau(static_cast<size_t>(std::max<int64_t>(1, k)));
    const int lda = lapack_int(std::max<int64_t>(1, m));
    for (size_t b = 0; b < a.offsets.size(); ++b) {
      std::fill(buf.begin(), buf.end(), T(0));
      load(c.inputs[0].ptr<T>(), a, b, buf.data(), m);
      geqrf_in_place(m, n, buf.data(), tau.data());
      int info = 0;
      T* r = c.outputs[1].ptr<T>() + b * rrows * n;
      for (int64_t i = 0; i < rrows; ++i)
        for (int64_t j = 0; j < n; ++j) r[i * n + j] = i <= j ? buf[i + j * m] : T(0);
      if (!want_q) continue;
      if (qcols > 0 && m > 0) {
        std::lock_guard<std::mutex> lock(openblas_lock());
        T size = 0;
        lapack::orgqr(lapack_int(m), lapack_int(qcols), lapack_int(k), buf.data(), lda, tau.data(), &size, -1, &info);
        std::vector<T> work(static_cast<size_t>(size) + 1);
        lapack::orgqr(lapack_int(m), lapack_int(qcols), lapack_int(k), buf.data(), lda, tau.data(), work.data(),
                      lapack_int(static_cast<int64_t>(work.size())), &info);
      }
      RILL_CHECK(info >= 0, Runtime, "[linalg.qr] LAPACK orgqr rejected argument ", -info);
      store(buf.data(), m, m, qcols, c.outputs[0].ptr<T>() + b * m * qcols);
    }
  });
}

// _lapack_solve_triangular(A, B, upper, left, unitriangular) -> X: trsm (no check for a zero diagonal: it gives
// inf or nan, as in PyTorch).
void solve_triangular_kernel(const KernelContext& c) {
  const Matrices a = matrices_of(*c.inputs[0].meta), rhs = matrices_of(*c.inputs[1].meta);
  const int64_t n = a.rows, rows = rhs.rows, cols = rhs.cols;
  const bool upper = c.attr<bool>("upper"), left = c.attr<bool>("left"), unit = c.attr<bool>("unitriangular");
  visit_float(c.inputs[0].meta->dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> tri(static_cast<size_t>(std::max<int64_t>(1, n * n))),
        x(static_cast<size_t>(std::max<int64_t>(1, rows * cols)));
    for (size_t b = 0; b < rhs.offsets.size(); ++b) {
      load(c.inputs[0].ptr<T>(), a, b, tri.data(), n);
      load(c.inputs[1].ptr<T>(), rhs, b, x.data(), rows);
      if (rows > 0 && cols > 0)
        blas_trsm(left, upper, false, unit, rows, cols, T(1), tri.data(), std::max<int64_t>(1, n), x.data(),
                  std::max<int64_t>(1, rows));
      store(x.data(), rows, rows, cols, c.outputs[0].ptr<T>() + b * rows * cols);
    }
  });
}

// _lapack_lu_permutation(pivots, m) -> perm: LAPACK's swaps (row i with row pivots[i] - 1, in order) applied to
// 0..m-1, so that A[perm] = L U.
void lu_permutation_kernel(const KernelContext& c) {
  const TensorMeta& p = *c.inputs[0].meta;
  const int64_t k = p.shape.back(), m = c.attr<int64_t>("m");
  const int64_t count = k ? p.numel / k : 0;
  const Strides dense = contiguous_strides(p.shape);
  RILL_CHECK(p.strides == dense || k == 0, Runtime, "[_lapack_lu_permutation] expected dense pivots");
  const int32_t* piv = c.inputs[0].ptr<int32_t>();
  int64_t* perm = c.outputs[0].ptr<int64_t>();
  const int64_t batches = k ? count : c.outputs[0].meta->numel / std::max<int64_t>(1, m);
  for (int64_t b = 0; b < batches; ++b) {
    int64_t* out = perm + b * m;
    for (int64_t i = 0; i < m; ++i) out[i] = i;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t j = piv[b * k + i] - 1;
      RILL_CHECK(j >= 0 && j < m, Index, "[linalg.lu_unpack] pivot ", j + 1, " of row ", i + 1, " is out of range [1, ",
                 m, "]; pass the pivots linalg.lu_factor returned");
      std::swap(out[i], out[j]);
    }
  }
}

}  // namespace

void register_linalg_kernels() {
  ops::set_cpu_kernel("_lapack_lu_factor_ex", lu_factor_kernel);
  ops::set_cpu_kernel("_lapack_solve_ex", solve_kernel);
  ops::set_cpu_kernel("_lapack_slogdet", slogdet_kernel);
  ops::set_cpu_kernel("_lapack_cholesky_ex", cholesky_kernel);
  ops::set_cpu_kernel("_lapack_ldl_factor_ex", ldl_factor_kernel);
  ops::set_cpu_kernel("_lapack_ldl_solve", ldl_solve_kernel);
  ops::set_cpu_kernel("_lapack_eigh", eigh_kernel);
  ops::set_cpu_kernel("_lapack_svd", svd_kernel);
  ops::set_cpu_kernel("_lapack_qr", qr_kernel);
  ops::set_cpu_kernel("_lapack_geqrf", geqrf_kernel);
  ops::set_cpu_kernel("_lapack_solve_triangular", solve_triangular_kernel);
  ops::set_cpu_kernel("_lapack_lu_permutation", lu_permutation_kernel);
}

}  // namespace rill::cpu
