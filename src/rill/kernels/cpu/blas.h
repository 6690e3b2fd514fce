// Matrix products for CPU kernels, callable from several intra-op threads at
// once (Note [Concurrent BLAS] in blas.cpp). Row-major; ta/tb/t transpose.
#pragma once

#include <cstdint>
#include <mutex>

namespace rill::cpu {

/** C = alpha op(A) op(B) + beta C (m x n, inner size k). */
void blas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
/** C = alpha op(A) op(B) + beta C (m x n, inner size k). */
void blas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
               const double* b, int64_t ldb, double beta, double* c, int64_t ldc);
/** C = alpha op(A) op(B) + beta C with bfloat16 A and B (raw bits) and a float32 C, accumulating in float32.
 * Returns false, computing nothing, where the CPU has no bfloat16 gemm (oneDNN needs AVX-512). */
bool blas_gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, int64_t lda,
                    const uint16_t* b, int64_t ldb, float beta, float* c, int64_t ldc);
/** y = op(A) x, A stored rows x cols with rows lda apart. */
void blas_gemv(bool t, int64_t rows, int64_t cols, const float* a, int64_t lda, const float* x, int64_t incx,
               float* y, int64_t incy);
/** y = op(A) x, A stored rows x cols with rows lda apart. */
void blas_gemv(bool t, int64_t rows, int64_t cols, const double* a, int64_t lda, const double* x, int64_t incx,
               double* y, int64_t incy);

/** Solve op(A) X = alpha B (left) or X op(A) = alpha B in place of B; A n x n triangular, column-major. */
void blas_trsm(bool left, bool upper, bool ta, bool unit, int64_t m, int64_t n, float alpha, const float* a,
               int64_t lda, float* b, int64_t ldb);
/** Solve op(A) X = alpha B (left) or X op(A) = alpha B in place of B; A n x n triangular, column-major. */
void blas_trsm(bool left, bool upper, bool ta, bool unit, int64_t m, int64_t n, double alpha, const double* a,
               int64_t lda, double* b, int64_t ldb);

/** The lock every OpenBLAS call holds (Note [Concurrent BLAS] in blas.cpp): LAPACK's routines call OpenBLAS too,
 * so the linalg kernels hold it around each. */
std::mutex& openblas_lock();

}  // namespace rill::cpu
