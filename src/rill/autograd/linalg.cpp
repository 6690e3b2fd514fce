// Gradient rules of the linear-algebra ops (ops/linalg.cpp). Each is the standard matrix-calculus result for
// real matrices, as PyTorch gives it (its FunctionsManual derivations: Murray 2016 for Cholesky, Giles 2008
// for the solvers, the eigen- and singular-vector rules with their gauge-invariant skew parts), written with
// the ops themselves: solves are triangular or LU solves, never explicit inverses.
#include "rill/autograd/rules.h"
#include "rill/eager/math.h"

namespace rill::autograd {
namespace {

constexpr uint32_t kIn0 = 1, kOut0 = 1, kOut1 = 2, kOut2 = 4;

Tensor mT(const Tensor& t) { return eager::transpose(t, -2, -1); }
Tensor mm(const Tensor& a, const Tensor& b) { return eager::matmul(a, b); }
Tensor tril(const Tensor& t, int64_t k = 0) { return eager::triangle(t, k, false); }
Tensor triu(const Tensor& t, int64_t k = 0) { return eager::triangle(t, k, true); }

/** The n x n identity of dtype. */
Tensor eye(int64_t n, DType dtype) {
  Tensor i = eager::arange(0, n, 1, DType::kInt64);
  return eager::to_dtype(eager::eq(eager::unsqueeze(i, -1), i), dtype);
}

/** The n x n matrix of ones off the diagonal and zeros on it, of dtype. */
Tensor off_diagonal(int64_t n, DType dtype) {
  Tensor i = eager::arange(0, n, 1, DType::kInt64);
  return eager::to_dtype(eager::ne(eager::unsqueeze(i, -1), i), dtype);
}

/** Matrices with v's last dim on their diagonals. */
Tensor diag_embed(const Tensor& v) {
  return eager::mul(eager::unsqueeze(v, -1), eye(v.shape().back(), v.dtype()));
}

/** X with A X = B (equal batch dims). */
Tensor solve(const Tensor& a, const Tensor& b) {
  return eager::call(eager::op("_lapack_solve_ex"), {{a, b}}, {}, make_attrs({false}))[0];
}

/** X with A X = B (left) or X A = B, A triangular. */
Tensor solve_triangular(const Tensor& a, const Tensor& b, bool upper, bool left, bool unit = false) {
  return eager::call1(eager::op("_lapack_solve_triangular"), {{a, b}}, {}, make_attrs({upper, left, unit}));
}

/** The part of a triangular op's gradient that reaches its input: the triangle it reads. */
Tensor keep_triangle(const Tensor& g, bool upper, bool unit) {
  return upper ? triu(g, unit ? 1 : 0) : tril(g, unit ? -1 : 0);
}

// A X = B: gB = A^-T gX, gA = -gB X^T.
std::vector<Tensor> solve_backward(const GradContext& c) {
  const Tensor gb = solve(mT(c.input(0)), c.grad(0));
  Tensor ga;
  if (c.needs_grad(0)) ga = eager::neg(mm(gb, mT(c.output(0))));
  return {ga, gb};
}

// log|det A|: g A^-T (the sign has no gradient).
std::vector<Tensor> slogdet_backward(const GradContext& c) {
  const Tensor& a = c.input(0);
  const int64_t n = a.shape().back();
  const Tensor inv_t = solve(mT(a), eager::contiguous(eager::expand(eye(n, a.dtype()), a.shape())));
  return {eager::mul(eager::unsqueeze(eager::unsqueeze(c.grad(1), -1), -1), inv_t)};
}

// A = L L^T: gA = L^-T Phi(L^T gL) L^-1, symmetrised (Phi: the lower triangle, its diagonal halved).
std::vector<Tensor> cholesky_backward(const GradContext& c) {
  const bool upper = c.attr<bool>("upper");
  const Tensor l = upper ? mT(c.output(0)) : c.output(0);
  const Tensor gl = upper ? mT(c.grad(0)) : c.grad(0);
  Tensor p = tril(mm(mT(l), gl));
  p = eager::mul(eager::add(p, mT(tril(p, -1))), 0.5);
  Tensor ga = solve_triangular(mT(l), p, true, true);
  return {solve_triangular(l, ga, false, false)};
}

// A = V diag(w) V^T: gA = V (skew(V^T gV) / (w_j - w_i) off the diagonal, gw on it) V^T.
std::vector<Tensor> eigh_backward(const GradContext& c) {
  const Tensor& w = c.output(0);
  const Tensor& v = c.output(1);
  RILL_CHECK(v.numel() > 0 || w.numel() == 0, Runtime, "linalg.eigh: the gradient needs the eigenvectors, which "
             "were not computed; call linalg.eigh (or eigvalsh on an input that requires grad)");
  const int64_t n = w.shape().back();
  const Tensor id = eye(n, w.dtype());
  Tensor x = mm(mT(v), c.grad(1));
  x = eager::mul(eager::sub(x, mT(x)), 0.5);
  Tensor e = eager::sub(eager::unsqueeze(w, -2), eager::unsqueeze(w, -1));  // e_ij = w_j - w_i
  e = eager::add(e, id);
  x = eager::add(eager::mul(eager::div(x, e), off_diagonal(n, w.dtype())), diag_embed(c.grad(0)));
  return {mm(v, mm(x, mT(v)))};
}

// A = U diag(S) Vh (reduced: the first k columns of U and rows of Vh).
std::vector<Tensor> svd_backward(const GradContext& c) {
  RILL_CHECK(c.attr<bool>("compute_uv"), Runtime, "linalg.svd: the gradient needs U and Vh, which were not "
             "computed; call linalg.svd (or svdvals on an input that requires grad)");
  const Tensor& s = c.output(1);
  const int64_t k = s.shape().back();
  Tensor u = c.output(0), vh = c.output(2), gu = c.grad(0), gvh = c.grad(2);
  const int64_t m = u.shape()[u.ndim() - 2], n = vh.shape().back();
  if (c.attr<bool>("full_matrices")) {
    u = eager::narrow(u, -1, 0, k);
    gu = eager::narrow(gu, -1, 0, k);
    vh = eager::narrow(vh, -2, 0, k);
    gvh = eager::narrow(gvh, -2, 0, k);
  }
  const auto skew = [](const Tensor& a) { return eager::sub(a, mT(a)); };
  const Tensor uhgu = skew(mm(mT(u), gu));
  const Tensor vhgv = skew(mm(vh, mT(gvh)));
  const Tensor s2 = eager::mul(s, s);
  const Tensor id = eye(k, s.dtype());
  const Tensor e = eager::add(eager::sub(eager::unsqueeze(s2, -2), eager::unsqueeze(s2, -1)), id);  // S_j^2 - S_i^2
  Tensor ga = eager::div(eager::add(eager::mul(uhgu, eager::unsqueeze(s, -2)), eager::mul(eager::unsqueeze(s, -1), vhgv)), e);
  ga = eager::add(eager::mul(ga, off_diagonal(k, s.dtype())), diag_embed(c.grad(1)));
  if (m > k) {  // the columns of gU outside U's span
    ga = mm(u, ga);
    const Tensor gus = eager::div(gu, eager::unsqueeze(s, -2));
    ga = eager::add(ga, eager::sub(gus, mm(u, mm(mT(u), gus))));
    return {mm(ga, vh)};
  }
  if (n > k) {  // the rows of gVh outside Vh's span
    ga = mm(ga, vh);
    const Tensor sgvh = eager::div(gvh, eager::unsqueeze(s, -1));
    ga = eager::add(ga, eager::sub(sgvh, mm(mm(sgvh, mT(vh)), vh)));
    return {mm(u, ga)};
  }
  return {mm(u, mm(ga, vh))};
}

/** A = QR with A m x n, m >= n: gA = (Q X + gQ) R^-T, X = triu(N) + triu(N, 1)^T, N = gR R^T - Q^T gQ. */
Tensor qr_tall_backward(const Tensor& q, const Tensor& r, const Tensor& gq, const Tensor& gr) {
  const Tensor nmat = eager::sub(mm(gr, mT(r)), mm(mT(q), gq));
  const Tensor x = eager::add(triu(nmat), mT(triu(nmat, 1)));
  return solve_triangular(mT(r), eager::add(mm(q, x), gq), false, false);
}

std::vector<Tensor> qr_backward(const GradContext& c) {
  const std::string& mode = c.attr<std::string>("mode");
  RILL_CHECK(mode != "r", Runtime, "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
             "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.");
  const Tensor& q = c.output(0);
  const Tensor& r = c.output(1);
  const int64_t m = q.shape()[q.ndim() - 2], n = r.shape().back();
  RILL_CHECK(!(mode == "complete" && m > n), Runtime, "The QR decomposition is not differentiable when "
             "mode='complete' and nrows > ncols.");
  if (m >= n) return {qr_tall_backward(q, r, c.grad(0), c.grad(1))};
  // m < n: A = [X | Y] with X = Q R1 square and R2 = Q^T Y, so Y = Q R2.
  const Tensor r1 = eager::narrow(r, -1, 0, m), r2 = eager::narrow(r, -1, m, n - m);
  const Tensor gr1 = eager::narrow(c.grad(1), -1, 0, m), gr2 = eager::narrow(c.grad(1), -1, m, n - m);
  const Tensor gy = mm(q, gr2);
  const Tensor gq = eager::add(c.grad(0), mm(mm(q, r2), mT(gr2)));
  const Tensor gx = qr_tall_backward(q, r1, gq, gr1);
  return {eager::cat(std::vector<Tensor>{gx, gy}, -1)};
}

// A X = B (or X A = B), A triangular: gB = A^-T gX (or gX A^-T); gA = -gB X^T (or -X^T gB) on A's triangle.
std::vector<Tensor> solve_triangular_backward(const GradContext& c) {
  const bool upper = c.attr<bool>("upper"), left = c.attr<bool>("left"), unit = c.attr<bool>("unitriangular");
  const Tensor gb = solve_triangular(mT(c.input(0)), c.grad(0), !upper, left, unit);
  Tensor ga;
  if (c.needs_grad(0)) {
    const Tensor& x = c.output(0);
    ga = keep_triangle(eager::neg(left ? mm(gb, mT(x)) : mm(mT(x), gb)), upper, unit);
  }
  return {ga, gb};
}

/** The gradient of B = L U (B square, L unit lower, U upper): L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T. */
Tensor lu_square_backward(const Tensor& l, const Tensor& u, const Tensor& gl, const Tensor& gu) {
  const Tensor inner = eager::add(tril(mm(mT(l), gl), -1), triu(mm(gu, mT(u))));
  const Tensor left = solve_triangular(mT(l), inner, true, true, true);
  return solve_triangular(mT(u), left, false, false);
}

// A = P L U packed as LU (L unit lower below the diagonal, U on and above it). Wide and tall matrices reduce to
// the square case: U2 = L^-1 P^T A2 (wide) and L2 = B2 U^-1 (tall) add their terms to gL and gU.
std::vector<Tensor> lu_factor_backward(const GradContext& c) {
  const Tensor& lu = c.output(0);
  const int64_t m = lu.shape()[lu.ndim() - 2], n = lu.shape().back(), k = std::min(m, n);
  const Tensor perm = eager::call1(eager::op("_lapack_lu_permutation"), {{c.output(1)}}, {}, make_attrs({m}));
  // P[r, i] = (r == perm[i]): A = P L U.
  const Tensor p = eager::to_dtype(
      eager::eq(eager::unsqueeze(eager::arange(0, m, 1, DType::kInt64), -1), eager::unsqueeze(perm, -2)), lu.dtype());
  const Tensor g = c.grad(0);
  const Tensor lu_k = eager::narrow(eager::narrow(lu, -2, 0, k), -1, 0, k);
  const Tensor g_k = eager::narrow(eager::narrow(g, -2, 0, k), -1, 0, k);
  const Tensor l1 = eager::add(tril(lu_k, -1), eye(k, lu.dtype()));
  const Tensor u1 = triu(lu_k);
  Tensor gl1 = tril(g_k, -1), gu1 = triu(g_k);
  Tensor gb;
  if (m < n) {  // wide: U2 = L^-1 P^T A2
    const Tensor u2 = eager::narrow(lu, -1, k, n - k), gu2 = eager::narrow(g, -1, k, n - k);
    const Tensor lt_gu2 = solve_triangular(mT(l1), gu2, true, true, true);  // L^-T gU2
    gl1 = eager::sub(gl1, tril(mm(lt_gu2, mT(u2)), -1));
    gb = eager::cat(std::vector<Tensor>{lu_square_backward(l1, u1, gl1, gu1), lt_gu2}, -1);
  } else if (m > n) {  // tall: L2 = B2 U^-1
    const Tensor l2 = eager::narrow(lu, -2, k, m - k), gl2 = eager::narrow(g, -2, k, m - k);
    const Tensor gb2 = solve_triangular(mT(u1), gl2, false, false);  // gL2 U^-T
    gu1 = eager::sub(gu1, triu(mm(mT(l2), gb2)));
    gb = eager::cat(std::vector<Tensor>{lu_square_backward(l1, u1, gl1, gu1), gb2}, -2);
  } else {
    gb = lu_square_backward(l1, u1, gl1, gu1);
  }
  return {mm(p, gb)};
}

}  // namespace

void register_linalg_rules() {
  define_rule("_lapack_solve_ex", {"LinalgSolveExBackward0", solve_backward, kIn0, kOut0});
  define_rule("_lapack_slogdet", {"LinalgSlogdetBackward0", slogdet_backward, kIn0, 0});
  define_rule("_lapack_cholesky_ex", {"LinalgCholeskyExBackward0", cholesky_backward, 0, kOut0});
  define_rule("_lapack_eigh", {"LinalgEighBackward0", eigh_backward, 0, kOut0 | kOut1});
  define_rule("_lapack_svd", {"LinalgSvdBackward0", svd_backward, 0, kOut0 | kOut1 | kOut2});
  define_rule("_lapack_qr", {"LinalgQrBackward0", qr_backward, 0, kOut0 | kOut1});
  define_rule("_lapack_solve_triangular", {"LinalgSolveTriangularBackward0", solve_triangular_backward, kIn0, kOut0});
  define_rule("_lapack_lu_factor_ex", {"LinalgLuFactorExBackward0", lu_factor_backward, 0, kOut0 | kOut1});
  define_rule("_lapack_lu_permutation", {});
  define_rule("_lapack_geqrf", {});  // not differentiable in PyTorch either
  define_rule("_lapack_ldl_factor_ex", {});  // nor these two
  define_rule("_lapack_ldl_solve", {});
}

}  // namespace rill::autograd
