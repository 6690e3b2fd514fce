#include "rill/kernels/cpu/blas.h"

#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <atomic>
#include <mutex>

#include "rill/util/error.h"
#include "rill/util/fork.h"

// oneDNN's bfloat16 gemm (row-major, like dnnl_sgemm; bfloat16_t is a uint16_t's bits): libdnnl 2.6 exports it
// as a C function but declares it only in its internal headers (later versions declare it in dnnl.h).
extern "C" dnnl_status_t dnnl_gemm_bf16bf16f32(char transa, char transb, dnnl_dim_t m, dnnl_dim_t n, dnnl_dim_t k,
                                                float alpha, const uint16_t* a, dnnl_dim_t lda, const uint16_t* b,
                                                dnnl_dim_t ldb, float beta, float* c, dnnl_dim_t ldc);

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

// Note [oneDNN gemm and fork]
// oneDNN generates a gemm's JIT kernels in its first call for each data type. A
// child forked by another thread while a VM thread was inside that first call
// inherited the generation half done and crashed (SIGSEGV) at its own first
// matmul: tests/cpp/vm/fork_test.cpp, NativeThreadForksWhileTheVmIsBusy, failed
// in about one run in three (and in one in thirty when the test first warmed the
// gemm up). So each data type's first call runs under a mutex held across fork()
// (util/fork.h, as Note [oneDNN and fork] does for primitive creation): a fork
// waits for it (milliseconds, and it waits on no other thread), and a child sees
// the kernels either complete or not started, and then generates them itself.
std::mutex* first_call_mutex() {
  static std::mutex* m = [] {
    auto* fresh = new std::mutex();  // leaked, like openblas_mutex()
    fork::guard_mutex(fresh);
    return fresh;
  }();
  return m;
}

template <typename Call>
dnnl_status_t first_call_guarded(std::atomic<bool>& done, const Call& call) {
  if (done.load(std::memory_order_acquire)) return call();  // acquire: pairs with the release below
  std::lock_guard<std::mutex> lock(*first_call_mutex());
  dnnl_status_t s = call();
  done.store(true, std::memory_order_release);  // before unlocking: a fork after it sees the kernels made
  return s;
}

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
  static std::atomic<bool> generated{false};
  dnnl_status_t s = first_call_guarded(generated, [&] {
    return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  });
  RILL_CHECK(s == dnnl_success, Runtime, "[matmul] oneDNN sgemm failed (status ", static_cast<int>(s), ") for a ",
             m, "x", k, " by ", k, "x", n, " product");
}

bool blas_gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, int64_t lda,
                    const uint16_t* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  one_openmp_thread();
  static std::atomic<bool> generated{false};
  dnnl_status_t s = first_call_guarded(generated, [&] {
    return dnnl_gemm_bf16bf16f32(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  });
  if (s == dnnl_unimplemented) return false;  // no AVX-512 here: the caller converts to float32 instead
  RILL_CHECK(s == dnnl_success, Runtime, "[matmul] oneDNN bfloat16 gemm failed (status ", static_cast<int>(s),
             ") for a ", m, "x", k, " by ", k, "x", n, " product");
  return true;
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

template <typename T, typename Trsm>
void trsm_locked(Trsm trsm, bool left, bool upper, bool ta, bool unit, int64_t m, int64_t n, T alpha, const T* a,
                 int64_t lda, T* b, int64_t ldb) {
  std::lock_guard<std::mutex> lock(*openblas_mutex());
  trsm(CblasColMajor, left ? CblasLeft : CblasRight, upper ? CblasUpper : CblasLower, trans(ta),
       unit ? CblasUnit : CblasNonUnit, static_cast<int>(m), static_cast<int>(n), alpha, a, static_cast<int>(lda), b,
       static_cast<int>(ldb));
}

void blas_trsm(bool left, bool upper, bool ta, bool unit, int64_t m, int64_t n, float alpha, const float* a,
               int64_t lda, float* b, int64_t ldb) {
  trsm_locked(cblas_strsm, left, upper, ta, unit, m, n, alpha, a, lda, b, ldb);
}

void blas_trsm(bool left, bool upper, bool ta, bool unit, int64_t m, int64_t n, double alpha, const double* a,
               int64_t lda, double* b, int64_t ldb) {
  trsm_locked(cblas_dtrsm, left, upper, ta, unit, m, n, alpha, a, lda, b, ldb);
}

std::mutex& openblas_lock() { return *openblas_mutex(); }

}  // namespace rill::cpu
