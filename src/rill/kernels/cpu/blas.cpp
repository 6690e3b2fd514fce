#include "rill/kernels/cpu/blas.h"

#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <mutex>

#include "rill/util/error.h"
#include "rill/util/fork.h"

namespace rill::cpu {
namespace {

// Note [Concurrent BLAS]
// Kernels split a product over the intra-op pool and make one serial call per
// piece (Note [BLAS threads] in matmul.cpp). Debian's serial OpenBLAS 0.3.21 is
// built without USE_LOCKING: its table of work buffers is not locked, so two
// threads inside a gemm at once can be handed the same buffer and corrupt each
// other's results. Seen here: 2 wrong products in 3,000 (360x128)@(128x64)
// matmuls on 2 threads, and a digits CNN whose test accuracy fell to ~50% in
// about one training run in eight (tests/python/test_train.py). So:
//   - float32 products, the hot path, run on oneDNN's sgemm: thread-safe, JIT
//     kernels, executed on the calling thread with one OpenMP thread (Note
//     [oneDNN threads] in onednn.cpp);
//   - every other OpenBLAS call runs under one mutex, so it is correct but not
//     parallel (float64 products and matrix-vector products). The mutex is held
//     across fork() (util/fork.h), so a child never inherits it locked.
std::mutex* openblas_mutex() {
  static std::mutex* m = [] {
    auto* fresh = new std::mutex();  // leaked: kernels may run during static destruction
    fork::guard_mutex(fresh);
    return fresh;
  }();
  return m;
}

CBLAS_TRANSPOSE trans(bool t) { return t ? CblasTrans : CblasNoTrans; }

void one_openmp_thread() {
  thread_local bool done = [] {
    omp_set_num_threads(1);
    return true;
  }();
  (void)done;
}

}  // namespace

void blas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  one_openmp_thread();
  dnnl_status_t s = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  RILL_CHECK(s == dnnl_success, Runtime, "[matmul] oneDNN sgemm failed (status ", static_cast<int>(s), ") for a ",
             m, "x", k, " by ", k, "x", n, " product");
}

void blas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
               const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  std::lock_guard<std::mutex> lock(*openblas_mutex());
  cblas_dgemm(CblasRowMajor, trans(ta), trans(tb), static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
              alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

void blas_gemv(bool t, int64_t rows, int64_t cols, const float* a, int64_t lda, const float* x, int64_t incx,
               float* y, int64_t incy) {
  std::lock_guard<std::mutex> lock(*openblas_mutex());
  cblas_sgemv(CblasRowMajor, trans(t), static_cast<int>(rows), static_cast<int>(cols), 1.0f, a,
              static_cast<int>(lda), x, static_cast<int>(incx), 0.0f, y, static_cast<int>(incy));
}

void blas_gemv(bool t, int64_t rows, int64_t cols, const double* a, int64_t lda, const double* x, int64_t incx,
               double* y, int64_t incy) {
  std::lock_guard<std::mutex> lock(*openblas_mutex());
  cblas_dgemv(CblasRowMajor, trans(t), static_cast<int>(rows), static_cast<int>(cols), 1.0, a,
              static_cast<int>(lda), x, static_cast<int>(incx), 0.0, y, static_cast<int>(incy));
}

}  // namespace rill::cpu
