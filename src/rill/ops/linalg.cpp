// Linear-algebra ops: the factorizations and solvers LAPACK computes (kernels/cpu/linalg.cpp). Each works on
// the last two dims of its inputs, batched over the rest; a solver's inputs come with equal batch dims
// (python/rill/linalg.py broadcasts and expands them). Everything else of rill.linalg (inv, det, pinv,
// lstsq, matrix_exp, norms, ...) is composed from these in python/rill/linalg.py, so its gradients come
// from these ops' rules (autograd/linalg.cpp).
//
//   _lapack_lu_factor_ex      A -> (LU, pivots int32, info int32)            getrf
//   _lapack_solve_ex         A, B -> (X, info)                          A X = B, getrf + getrs
//   _lapack_slogdet          A -> (sign, logabsdet)                         getrf
//   _lapack_cholesky_ex       A -> (L, info)                                 potrf
//   _lapack_ldl_factor_ex    A -> (LD, pivots int32, info int32)            sytrf
//   _lapack_ldl_solve        LD, pivots, B -> X                         A X = B, sytrs
//   _lapack_eigh             A -> (eigenvalues, eigenvectors)               syevd
//   _lapack_svd              A -> (U, S, Vh)                                gesdd
//   _lapack_qr                A -> (Q, R)                                    geqrf + orgqr
//   _lapack_solve_triangular  A, B -> X                                      trsm
//   _lapack_geqrf            A -> (a, tau)                                  geqrf (torch.geqrf)
//   _lapack_lu_permutation   pivots -> perm int64                           the row swaps as one permutation
#include "rill/ops/op_schema.h"

namespace rill {
namespace {

Shape batch_of(const TensorMeta& t) { return Shape(t.shape.begin(), t.shape.end() - 2); }

Shape with_dims(Shape batch, std::initializer_list<int64_t> dims) {
  batch.insert(batch.end(), dims);
  return batch;
}

MetaSym dense(const Shape& shape, DType dtype, const MetaSym& like) {
  return make_contiguous_meta(shape, dtype, like->device);
}

/** A (*, m, n) floating matrix batch; square when asked. */
void check_matrices(const TensorMeta& a, const std::string& op, bool square, const char* what = "A") {
  RILL_CHECK(a.ndim() >= 2, Runtime, op, ": The input tensor ", what, " must have at least 2 dimensions, got shape ",
             shape_str(a.shape));
  RILL_CHECK(a.dtype == DType::kFloat32 || a.dtype == DType::kFloat64, Runtime, op, ": Expected a float32 or "
             "float64 tensor ", what, " (rill has no complex dtypes and LAPACK no 16-bit ones), got ",
             dtype_name(a.dtype), "; convert it with .double() or .float()");
  if (square)
    RILL_CHECK(a.shape[a.ndim() - 1] == a.shape[a.ndim() - 2], Runtime, op, ": ", what,
               " must be batches of square matrices, but they are ", a.shape[a.ndim() - 2], " by ",
               a.shape[a.ndim() - 1], " matrices");
}

/** B of a solver: A's dtype and batch dims; its rows (left) or columns match A's size. */
void check_rhs(const TensorMeta& a, const TensorMeta& b, const std::string& op, bool left) {
  check_matrices(b, op, false, "B");
  RILL_CHECK(b.dtype == a.dtype, Runtime, op, ": Expected A and B to have the same dtype, but found A of type ",
             dtype_name(a.dtype), " and B of type ", dtype_name(b.dtype), " instead");
  RILL_CHECK(batch_of(a) == batch_of(b), Runtime, op, ": expected A and B with equal batch dims, got shapes ",
             shape_str(a.shape), " and ", shape_str(b.shape), " (rill.linalg broadcasts them first)");
  const int64_t n = a.shape[a.ndim() - 1];
  const int64_t along = left ? b.shape[b.ndim() - 2] : b.shape[b.ndim() - 1];
  RILL_CHECK(along == n, Runtime, op, ": Incompatible shapes of A and B for the equation ",
             left ? "AX = B" : "XA = B", " (", shape_str(a.shape), " and ", shape_str(b.shape), ")");
}

InferResult infer_lu_factor(const InferContext& c) {
  const TensorMeta& a = *c.inputs[0];
  check_matrices(a, "torch.linalg.lu_factor", false);
  RILL_CHECK(c.attr<bool>("pivot"), Runtime, "linalg.lu_factor: LU without pivoting is not implemented on the CPU; "
             "call it with pivot=True");
  const int64_t m = a.shape[a.ndim() - 2], n = a.shape[a.ndim() - 1];
  const Shape batch = batch_of(a);
  return {{dense(a.shape, a.dtype, c.inputs[0]), dense(with_dims(batch, {std::min(m, n)}), DType::kInt32, c.inputs[0]),
           dense(batch, DType::kInt32, c.inputs[0])}, {}};
}

InferResult infer_solve(const InferContext& c) {
  const TensorMeta& a = *c.inputs[0];
  check_matrices(a, "torch.linalg.solve", true);
  check_rhs(a, *c.inputs[1], "torch.linalg.solve", true);
  return {{dense(c.inputs[1]->shape, a.dtype, c.inputs[0]), dense(batch_of(a), DType::kInt32, c.inputs[0])}, {}};
}

InferResult infer_slogdet(const InferContext& c) {
  const TensorMeta& a = *c.inputs[0];
  check_matrices(a, "torch.linalg.slogdet", true);
  return {{dense(batch_of(a), a.dtype, c.inputs[0]), dense(batch_of(a), a.dtype, c.inputs[0])}, {}};
}

InferResult infer_cholesky(const InferContext& c) {
  const TensorMeta& a = *c.inputs[0];
  check_matrices(a, "torch.linalg.cholesky", true);
  return {{dense(a.shape, a.dtype, c.inputs[0]), dense(batch_of(a), DType::kInt32, c.inputs[0])}, {}};
}

InferResult infer_ldl_factor(const InferContext& c) {
  const TensorMeta& a = *c.inputs[0];
  check_matrices(a, "torch.linalg.ldl_factor_ex", true);
  const int64_t n = a.shape[a.ndim() - 1];
  const Shape batch = batch_of(a);
  return {{dense(a.shape, a.dtype, c.inputs[0]), dense(with_dims(batch, {n}), DType::kInt32, c.inputs[0]),
           dense(batch, DType::kInt32, c.inputs[0])}, {}};
}

InferResult infer_ldl_solve(const InferContext& c) {
  const TensorMeta& ld = *c.inputs[0];
  const TensorMeta& pivots = *c.inputs[1];
  check_matrices(ld, "torch.linalg.ldl_solve", true, "LD");
  RILL_CHECK(pivots.dtype == DType::kInt32, Runtime, "torch.linalg.ldl_solve: Expected pivots to be integers, got ",
             dtype_name(pivots.dtype));
  RILL_CHECK(pivots.shape == Shape(ld.shape.begin(), ld.shape.end() - 1), Runtime, "torch.linalg.ldl_solve: "
             "Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with shape ",
             shape_str(pivots.shape), " instead");
  check_rhs(ld, *c.inputs[2], "torch.linalg.ldl_solve", true);
  return {{dense(c.inputs[2]->shape, ld.dtype, c.inputs[0])}, {}};
}

InferResult infer_eigh(const InferContext& c) {
  const TensorMeta& a = *c.inputs[0];
  check_matrices(a, "torch.linalg.eigh", true);
  const std::string& uplo = c.attr<std::string>("UPLO");
  RILL_CHECK(uplo == "L" || uplo == "U" || uplo == "l" || uplo == "u", Runtime,
             "Expected UPLO argument to be 'L' or 'U', but got ", uplo);
  const int64_t n = a.shape[a.ndim() - 1];
  const Shape vectors = c.attr<bool>("compute_v") ? a.shape : Shape{0};
  return {{dense(with_dims(batch_of(a), {n}), a.dtype, c.inputs[0]), dense(vectors, a.dtype, c.inputs[0])}, {}};
}

InferResult infer_svd(const InferContext& c) {
  const TensorMeta& a = *c.inputs[0];
  check_matrices(a, "torch.linalg.svd", false);
  const int64_t m = a.shape[a.ndim() - 2], n = a.shape[a.ndim() - 1], k = std::min(m, n);
  const bool full = c.attr<bool>("full_matrices"), uv = c.attr<bool>("compute_uv");
  const Shape batch = batch_of(a);
  const Shape u = uv ? with_dims(batch, {m, full ? m : k}) : Shape{0};
  const Shape vh = uv ? with_dims(batch, {full ? n : k, n}) : Shape{0};
  return {{dense(u, a.dtype, c.inputs[0]), dense(with_dims(batch, {k}), a.dtype, c.inputs[0]),
           dense(vh, a.dtype, c.inputs[0])}, {}};
}

InferResult infer_qr(const InferContext& c) {
  const TensorMeta& a = *c.inputs[0];
  check_matrices(a, "torch.linalg.qr", false);
  const std::string& mode = c.attr<std::string>("mode");
  RILL_CHECK(mode == "reduced" || mode == "complete" || mode == "r", Runtime, "qr received unrecognized mode '", mode,
             "' but expected one of 'reduced' (default), 'r', or 'complete'");
  const int64_t m = a.shape[a.ndim() - 2], n = a.shape[a.ndim() - 1], k = std::min(m, n);
  const bool complete = mode == "complete";
  const Shape batch = batch_of(a);
  const Shape q = mode == "r" ? Shape{0} : with_dims(batch, {m, complete ? m : k});
  return {{dense(q, a.dtype, c.inputs[0]), dense(with_dims(batch, {complete ? m : k, n}), a.dtype, c.inputs[0])}, {}};
}

InferResult infer_geqrf(const InferContext& c) {
  const TensorMeta& a = *c.inputs[0];
  check_matrices(a, "torch.geqrf", false);
  const int64_t k = std::min(a.shape[a.ndim() - 2], a.shape[a.ndim() - 1]);
  return {{dense(a.shape, a.dtype, c.inputs[0]), dense(with_dims(batch_of(a), {k}), a.dtype, c.inputs[0])}, {}};
}

InferResult infer_solve_triangular(const InferContext& c) {
  const TensorMeta& a = *c.inputs[0];
  check_matrices(a, "linalg.solve_triangular", true);
  check_rhs(a, *c.inputs[1], "linalg.solve_triangular", c.attr<bool>("left"));
  return {{dense(c.inputs[1]->shape, a.dtype, c.inputs[0])}, {}};
}

InferResult infer_lu_permutation(const InferContext& c) {
  const TensorMeta& p = *c.inputs[0];
  RILL_CHECK(p.ndim() >= 1 && p.dtype == DType::kInt32, Runtime, "[_lapack_lu_permutation] expected int32 pivots "
             "of at least 1 dim, got ", dtype_name(p.dtype), " of shape ", shape_str(p.shape));
  const int64_t m = c.attr<int64_t>("m");
  RILL_CHECK(m >= p.shape.back(), Runtime, "[_lapack_lu_permutation] expected at most m = ", m, " pivots, got ",
             p.shape.back());
  Shape out(p.shape.begin(), p.shape.end() - 1);
  out.push_back(m);
  return {{dense(out, DType::kInt64, c.inputs[0])}, {}};
}

}  // namespace

void register_linalg_ops() {
  const OpFlags k = {.function = true};
  ops::define("_lapack_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> "
              "(Tensor LU, Tensor pivots, Tensor info)", infer_lu_factor, k, "A's LU factorization with partial pivoting");
  ops::define("_lapack_solve_ex(Tensor A, Tensor B, *, bool check_errors=False) -> (Tensor result, Tensor info)",
              infer_solve, k, "X with A X = B");
  ops::define("_lapack_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)", infer_slogdet, k,
              "the sign and log of the absolute value of A's determinant");
  ops::define("_lapack_cholesky_ex(Tensor A, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)",
              infer_cholesky, k, "the Cholesky factor of a symmetric positive-definite A");
  ops::define("_lapack_ldl_factor_ex(Tensor A) -> (Tensor LD, Tensor pivots, Tensor info)", infer_ldl_factor, k,
              "A's LDL^T factorization with Bunch-Kaufman pivoting, packed as LAPACK's sytrf gives it");
  ops::define("_lapack_ldl_solve(Tensor LD, Tensor pivots, Tensor B) -> Tensor", infer_ldl_solve, k,
              "X with A X = B from A's packed LDL^T factorization");
  ops::define("_lapack_eigh(Tensor A, str UPLO=\"L\", bool compute_v=True) -> (Tensor eigenvalues, Tensor eigenvectors)",
              infer_eigh, k, "eigenvalues (ascending) and eigenvectors of a symmetric A");
  ops::define("_lapack_svd(Tensor A, bool full_matrices=False, bool compute_uv=True) -> (Tensor U, Tensor S, Tensor Vh)",
              infer_svd, k, "A's singular value decomposition");
  ops::define("_lapack_qr(Tensor A, str mode=\"reduced\") -> (Tensor Q, Tensor R)", infer_qr, k,
              "A's QR decomposition");
  ops::define("_lapack_solve_triangular(Tensor self, Tensor B, *, bool upper, bool left=True, bool unitriangular=False)"
              " -> Tensor", infer_solve_triangular, k, "X with A X = B (or X A = B) for a triangular A");
  ops::define("_lapack_geqrf(Tensor A) -> (Tensor a, Tensor tau)", infer_geqrf, k,
              "LAPACK's compact QR: R and the Householder vectors in one matrix, and their scales");
  ops::define("_lapack_lu_permutation(Tensor pivots, int m) -> Tensor", infer_lu_permutation, k,
              "perm with A = P L U for P[perm[i], i] = 1, from LAPACK's row swaps");
}

}  // namespace rill
