"""rill.linalg: torch.linalg on LAPACK (from OpenBLAS).

The factorizations and solvers are ops (src/rill/ops/linalg.cpp: LU, solve, slogdet, Cholesky, LDL^T, eigh, SVD,
QR, triangular solve), with their gradient rules in src/rill/autograd/linalg.cpp; everything else here (inv, det,
pinv, lstsq, matrix_exp, the norms, lu_solve, ...) is composed from them and from rill's other ops, so its
gradients follow. float32 and float64; rill has no complex dtypes, so eig and eigvals (complex results) raise.
"""
import builtins
import collections
import math

import rill
from rill import _C


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The vector ord-norm of x over dim (all elements when None), as torch.linalg.vector_norm."""
    return _C.linalg_vector_norm(x, ord, dim, keepdim, dtype=dtype)


def vecdot(x, y, *, dim=-1):
    """The dot product of x and y along dim (broadcasting)."""
    return (x * y).sum(dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The offset diagonals of the matrices in A's last two dims."""
    return rill.diagonal(A, offset, dim1, dim2)


def cross(input, other, *, dim=-1):
    """The cross product of 3-vectors along dim."""
    return rill.cross(input, other, dim)


def vander(x, *, N=None):
    """The Vandermonde matrix of x's last dim: columns x ** 0 .. x ** (N - 1)."""
    if x.dim() == 0:
        x = x.reshape(1)  # a 0-D x is one point, as in PyTorch
    n = x.shape[-1] if N is None else N
    if n < 0:
        raise RuntimeError(f"N must be non-negative, got {n}")
    if n == 0:
        return rill.zeros(tuple(x.shape) + (0,), dtype=x.dtype)
    powers = x.unsqueeze(-1).expand(*x.shape, n - 1) if n > 1 else None
    ones = rill.ones(tuple(x.shape) + (1,), dtype=x.dtype)
    return ones if powers is None else rill.cat([ones, rill.cumprod(powers, -1)], -1)


def multi_dot(tensors):
    """The product of a chain of matrices (the first and last may be vectors)."""
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    out = tensors[0]
    for t in tensors[1:]:
        out = rill.matmul(out, t)
    return out



# --- results with PyTorch's field names (torch.return_types) ------------------------------------------------
def _result(name, fields):
    cls = collections.namedtuple(name, fields)
    cls.__module__ = "rill.return_types"
    return cls


SlogdetResult = _result("linalg_slogdet", "sign logabsdet")
EighResult = _result("linalg_eigh", "eigenvalues eigenvectors")
SvdResult = _result("linalg_svd", "U S Vh")
QrResult = _result("_lapack_qr", "Q R")
LuFactorResult = _result("linalg_lu_factor", "LU pivots")
LuFactorExResult = _result("_lapack_lu_factor_ex", "LU pivots info")
LuResult = _result("linalg_lu", "P L U")
LdlFactorResult = _result("linalg_ldl_factor", "LD pivots")
LdlFactorExResult = _result("linalg_ldl_factor_ex", "LD pivots info")
CholeskyExResult = _result("_lapack_cholesky_ex", "L info")
InvExResult = _result("linalg_inv_ex", "inverse info")
SolveExResult = _result("linalg_solve_ex", "result info")
LstsqResult = _result("linalg_lstsq", "solution residuals rank singular_values")


def _square(A, name):
    if A.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


def _mT(x):
    return x.transpose(-2, -1)


def _eye_like(A):
    n = A.shape[-1]
    return rill.eye(n, dtype=A.dtype).expand(*A.shape[:-2], n, n)


def _broadcast_batch(A, B):
    """A and B expanded to their common batch dims (the solvers' ops take equal ones)."""
    batch = rill.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2]))
    return A.expand(*batch, *A.shape[-2:]), B.expand(*batch, *B.shape[-2:])


def _is_vector_rhs(A, B):
    return B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


# --- solvers and inverses -------------------------------------------------------------------------------------
def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """X with A X = B (left) or X A = B, and the LAPACK info (nonzero where A is singular)."""
    _square(A, "torch.linalg.solve")
    vector = _is_vector_rhs(A, B)
    if vector:
        B = B.unsqueeze(-1)
    if not left:  # X A = B  <=>  A^T X^T = B^T
        A, B = _mT(A), _mT(B)
    if B.dtype != A.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type {A.dtype} "
                           f"and B of type {B.dtype} instead")
    A_, B_ = _broadcast_batch(A, B)
    X, info = _C._lapack_solve_ex(A_, B_, check_errors=check_errors)
    if not left:
        X = _mT(X)
    if vector:
        X = X.squeeze(-1)
    return SolveExResult(_out(out, X), info)


def solve(A, B, *, left=True, out=None):
    """X with A X = B (left) or X A = B; raises for a singular A."""
    return _out(out, solve_ex(A, B, left=left, check_errors=True).result)


def inv_ex(A, *, check_errors=False, out=None):
    """A's inverse and the LAPACK info (nonzero where A is singular)."""
    _square(A, "torch.linalg.inv")
    X, info = solve_ex(A, _eye_like(A), check_errors=check_errors)
    return InvExResult(_out(out, X), info)


def inv(A, *, out=None):
    """A's inverse; raises for a singular A."""
    _square(A, "torch.linalg.inv")
    return _out(out, solve_ex(A, _eye_like(A), check_errors=True).result)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with A X = B (left) or X A = B for a triangular A (only its upper or lower triangle is read)."""
    A_, B_ = _broadcast_batch(A, B)
    return _out(out, _C._lapack_solve_triangular(A_, B_, upper=upper, left=left, unitriangular=unitriangular))


def matrix_power(A, n):
    """A multiplied by itself n times (the identity for n = 0, powers of A's inverse for n < 0)."""
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.matrix_power: A must be batches of square matrices")
    if n < 0:
        A, n = inv(A), -n
    out, base = None, A
    while n:
        if n & 1:
            out = base if out is None else rill.matmul(out, base)
        n >>= 1
        if n:
            base = rill.matmul(base, base)
    if out is None:  # n = 0: the identity, still a function of A (zero gradient) as in PyTorch
        return _eye_like(A) + A * 0 if A.requires_grad else _eye_like(A).clone()
    return out


def tensorinv(A, ind=2, *, out=None):
    """The tensor inverse of A with respect to tensordot over its first ind dims."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    n = math.prod(rows)
    if n != math.prod(cols):
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {math.prod(cols)} != {n}")
    return _out(out, inv(A.reshape(n, n)).reshape(*cols, *rows))


def tensorsolve(A, B, dims=None, *, out=None):
    """X with tensordot(A, X, X.ndim) = B."""
    if dims is not None:
        order = [d % A.dim() for d in dims]
        A = A.permute(*[d for d in range(A.dim()) if d not in order], *order)
    rest = tuple(A.shape[B.dim():])
    n = B.numel()
    if math.prod(rest) != n:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {math.prod(rest)} != {n}")
    return _out(out, solve(A.reshape(n, n), B.reshape(n)).reshape(rest))


# --- determinants ---------------------------------------------------------------------------------------------
def slogdet(A, *, out=None):
    """The sign and the log of the absolute value of A's determinant (0 and -inf for a singular A)."""
    _square(A, "torch.linalg.slogdet")
    sign, logabsdet = _C._lapack_slogdet(A)
    return SlogdetResult(sign, logabsdet)


def det(A, *, out=None):
    """A's determinant."""
    _square(A, "torch.linalg.det")
    sign, logabsdet = _C._lapack_slogdet(A)
    return _out(out, sign * logabsdet.exp())


def logdet(A):
    """The log of A's determinant: nan where it is negative, -inf where A is singular."""
    sign, logabsdet = slogdet(A)
    return rill.where(sign < 0, rill.full_like(logabsdet, float("nan")), logabsdet)


# --- factorizations ---------------------------------------------------------------------------------------------
def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """The Cholesky factor of a symmetric positive-definite A and the LAPACK info (k > 0: the order-k leading minor
    is not positive-definite)."""
    L, info = _C._lapack_cholesky_ex(A, upper=upper, check_errors=check_errors)
    return CholeskyExResult(_out(out, L), info)


def cholesky(A, *, upper=False, out=None):
    """The Cholesky factor of a symmetric positive-definite A; raises when it is not positive-definite."""
    return _out(out, _C._lapack_cholesky_ex(A, upper=upper, check_errors=True)[0])


def _needs_vectors(A):
    return A.requires_grad and rill.is_grad_enabled()


def eigh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) and eigenvectors (columns) of a symmetric A, from its UPLO triangle."""
    w, V = _C._lapack_eigh(A, UPLO, True)
    return EighResult(w, V)


def eigvalsh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) of a symmetric A, from its UPLO triangle."""
    return _out(out, _C._lapack_eigh(A, UPLO, _needs_vectors(A))[0])


def _no_complex(name):
    raise NotImplementedError(f"[{name}] the eigenvalues of a general matrix are complex, and rill has no "
                              "complex dtypes; for a symmetric matrix use rill.linalg.eigh / eigvalsh")


def eig(A, *, out=None):
    """Not available: complex results (use eigh for symmetric matrices)."""
    _no_complex("linalg.eig")


def eigvals(A, *, out=None):
    """Not available: complex results (use eigvalsh for symmetric matrices)."""
    _no_complex("linalg.eigvals")


def svd(A, full_matrices=True, *, driver=None, out=None):
    """A = U diag(S) Vh with S descending (LAPACK gesdd; driver is accepted for PyTorch's CUDA-only choice)."""
    _check_driver(driver)
    U, S, Vh = _C._lapack_svd(A, full_matrices, True)
    return SvdResult(U, S, Vh)


def svdvals(A, *, driver=None, out=None):
    """A's singular values, descending."""
    _check_driver(driver)
    return _out(out, _C._lapack_svd(A, False, _needs_vectors(A))[1])


def _check_driver(driver):
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")


def qr(A, mode="reduced", *, out=None):
    """A = Q R with Q's columns orthonormal and R upper triangular (mode 'reduced', 'complete' or 'r')."""
    Q, R = _C._lapack_qr(A, mode)
    return QrResult(Q, R)


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """A's LU factorization with partial pivoting, packed (L below the diagonal, U on and above), LAPACK's
    1-based pivots and info."""
    LU, pivots, info = _C._lapack_lu_factor_ex(A, pivot=pivot, check_errors=check_errors)
    return LuFactorExResult(LU, pivots, info)


def lu_factor(A, *, pivot=True, out=None):
    """A's packed LU factorization with partial pivoting and LAPACK's 1-based pivots."""
    LU, pivots, _ = lu_factor_ex(A, pivot=pivot)
    return LuFactorResult(LU, pivots)


def _permutation_matrix(pivots, m, dtype):
    perm = _C._lapack_lu_permutation(pivots, m)
    return (rill.arange(m).unsqueeze(-1) == perm.unsqueeze(-2)).to(dtype)


def _unpack(LU, pivots, unpack_data=True, unpack_pivots=True):
    m, n = LU.shape[-2], LU.shape[-1]
    k = builtins.min(m, n)
    P = _permutation_matrix(pivots, m, LU.dtype) if unpack_pivots else rill.empty(0, dtype=LU.dtype)
    if not unpack_data:
        empty = rill.empty(0, dtype=LU.dtype)
        return LuResult(P, empty, empty)
    L = LU[..., :, :k].tril(-1) + rill.eye(m, k, dtype=LU.dtype)
    U = LU[..., :k, :].triu()
    return LuResult(P, L, U)


def lu(A, *, pivot=True, out=None):
    """A = P L U with P a permutation, L unit lower trapezoidal and U upper trapezoidal."""
    LU, pivots, _ = lu_factor_ex(A, pivot=pivot)
    return _unpack(LU, pivots)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B (left) or X A = B (A^T for adjoint) from A's packed LU factorization."""
    n = LU.shape[-1]
    if LU.dim() < 2 or LU.shape[-2] != n:
        raise RuntimeError("linalg.lu_solve: Expected LU to be a batch of square matrices")
    P = _permutation_matrix(pivots, n, LU.dtype)
    L = LU.tril(-1) + rill.eye(n, dtype=LU.dtype)
    U = LU.triu()
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return _out(out, _mT(lu_solve(LU, pivots, _mT(B), left=True, adjoint=not adjoint)))
    if adjoint:  # A^T X = B with A = P L U: U^T L^T P^T X = B
        Y = solve_triangular(_mT(U), B, upper=False)
        Y = solve_triangular(_mT(L), Y, upper=True, unitriangular=True)
        return _out(out, rill.matmul(P, Y))
    Y = rill.matmul(_mT(P), B)
    Y = solve_triangular(L, Y, upper=False, unitriangular=True)
    return _out(out, solve_triangular(U, Y, upper=True))


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """A = L D L^T for a symmetric A (its lower triangle is read) with Bunch-Kaufman pivoting, packed as LAPACK's
    sytrf gives it (L below the diagonal, D's blocks on and below it), LAPACK's 1-based pivots (negative for a
    2 x 2 block of D) and info (k > 0: D[k-1, k-1] is exactly zero). hermitian is the same for real A."""
    LD, pivots, info = _C._lapack_ldl_factor_ex(A)
    if check_errors:
        _check_ldl_info(info, "torch.linalg.ldl_factor_ex")
    return LdlFactorExResult(LD, pivots, info)


def ldl_factor(A, *, hermitian=False, out=None):
    """A's packed LDL^T factorization and pivots (see ldl_factor_ex); raises where D is singular."""
    LD, pivots, info = _C._lapack_ldl_factor_ex(A)
    _check_ldl_info(info, "torch.linalg.ldl_factor")
    return LdlFactorResult(LD, pivots)


def _check_ldl_info(info, name):
    bad = (info > 0).nonzero()
    if bad.numel():
        where = tuple(bad[0].tolist())
        k = int(info[where]) if where else int(info)
        batch = f" of the batch element {where}" if where else ""
        raise RuntimeError(f"{name}: D[{k - 1}, {k - 1}] of the factorization{batch} is exactly zero, so A is "
                           "singular and solving with it would divide by zero; call linalg.ldl_factor_ex to get "
                           "the factorization anyway")


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """X with A X = B from A's packed LDL^T factorization (ldl_factor's LD and pivots); batch dims broadcast."""
    _square(LD, "torch.linalg.ldl_solve")
    if B.dim() < 2:
        raise RuntimeError(f"torch.linalg.ldl_solve: The input tensor B must have at least 2 dimensions, got shape "
                           f"{tuple(B.shape)}")
    if pivots.dtype not in (rill.int32, rill.int64):
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected pivots to be integers, got {pivots.dtype}")
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError("torch.linalg.ldl_solve: Expected LD.shape[:-1] and pivots.shape to be the same, but got "
                           f"pivots with shape {list(pivots.shape)} instead")
    if B.dtype != LD.dtype:
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected LD and B to have the same dtype, but found LD of type "
                           f"{LD.dtype} and B of type {B.dtype} instead")
    LD_, B_ = _broadcast_batch(LD, B)
    pivots = pivots.to(rill.int32).expand(*LD_.shape[:-1]).contiguous()
    return _out(out, _C._lapack_ldl_solve(LD_, pivots, B_))


def _diag_embed(v):
    return v.unsqueeze(-1) * rill.eye(v.shape[-1], dtype=v.dtype)


# --- Householder reflectors (LAPACK's compact QR) ----------------------------------------------------------------
_TorchGeqrf = _result("geqrf", "a tau")


def geqrf(A, *, out=None):
    """LAPACK's compact QR of A: R on and above the diagonal of a, the Householder vectors below it, their scales
    in tau (torch.geqrf; not differentiable, as in PyTorch)."""
    a, tau = _C._lapack_geqrf(A)
    return _TorchGeqrf(a, tau)


def _reflector(A, i):
    """The i-th Householder vector of a compact QR: 1 at i, A's column i below it, zeros above."""
    m = A.shape[-2]
    rows = rill.arange(m)
    below = (rows > i).to(A.dtype)
    return A[..., :, i] * below + (rows == i).to(A.dtype)


def _apply_reflectors(A, tau, C, left, transpose):
    """Q C, Q^T C, C Q or C Q^T for Q = H_1 ... H_k, H_i = I - tau_i v_i v_i^T."""
    k = tau.shape[-1]
    order = range(k - 1, -1, -1) if left != transpose else range(k)
    for i in order:
        v = _reflector(A, i)
        t = tau[..., i].unsqueeze(-1).unsqueeze(-1)
        if left:  # H C = C - tau v (v^T C)
            C = C - t * v.unsqueeze(-1) * rill.matmul(v.unsqueeze(-2), C)
        else:  # C H = C - tau (C v) v^T
            C = C - t * rill.matmul(C, v.unsqueeze(-1)) * v.unsqueeze(-2)
    return C


def householder_product(A, tau, *, out=None):
    """The first n columns of H_1 ... H_k from the Householder vectors in A's columns (LAPACK's orgqr)."""
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.householder_product: input must have at least 2 dimensions.")
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if tau.shape[-1] > n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    E = rill.eye(m, n, dtype=A.dtype).expand(*A.shape[:-2], m, n)
    if tau.shape[-1] == 0 and (A.requires_grad or tau.requires_grad):
        E = E + A * 0  # no reflectors: the identity's columns, still a function of A as in PyTorch
    return _out(out, _apply_reflectors(A, tau, E, True, False))


def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """other multiplied by the Q of a compact QR (input, tau): Q C, Q^T C (transpose), C Q or C Q^T (left=False)."""
    return _out(out, _apply_reflectors(input, tau, other, left, transpose))


# --- pseudo-inverses, ranks, least squares ---------------------------------------------------------------------
def _eps(dtype):
    return 2.220446049250313e-16 if dtype == rill.float64 else 1.1920928955078125e-07


def _tolerance(S, A, atol, rtol):
    """PyTorch's cut-off: max(atol, rtol * the largest singular value), rtol defaulting to eps * max(m, n) when
    neither is given (0 when only atol is)."""
    eps = _eps(A.dtype)
    if rtol is None:
        rtol = 0.0 if (atol is not None and (not isinstance(atol, (int, float)) or atol > 0)) else eps * builtins.max(
            A.shape[-2], A.shape[-1])
    smax = S.amax(-1, keepdim=True) if S.shape[-1] > 0 else rill.zeros(*S.shape[:-1], 1, dtype=S.dtype)
    tol = smax * (rtol.unsqueeze(-1) if isinstance(rtol, rill.Tensor) else rtol)
    if atol is not None:
        tol = rill.maximum(tol, atol.unsqueeze(-1) if isinstance(atol, rill.Tensor) else
                           rill.full_like(tol, float(atol)))
    return tol


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """The Moore-Penrose pseudo-inverse: singular values below max(atol, rtol * the largest) count as 0 (rcond: the
    older spelling of rtol). hermitian=True is accepted for a symmetric A, whose singular values are its absolute
    eigenvalues: only the lower triangle is read, as in PyTorch."""
    if rcond is not None:
        rtol = rcond
    with rill.no_grad():
        if hermitian:  # from eigh, which reads A's lower triangle
            L, V = eigh(A.detach())
            absL = L.abs()
            keep = absL > _tolerance(absL, A, atol, rtol)
            linv = rill.where(keep, 1 / rill.where(keep, L, rill.ones_like(L)), rill.zeros_like(L))
            X = rill.matmul(V * linv.unsqueeze(-2), _mT(V))
        else:
            U, S, Vh = svd(A.detach(), full_matrices=False)
            keep = S > _tolerance(S, A, atol, rtol)
            sinv = rill.where(keep, 1 / rill.where(keep, S, rill.ones_like(S)), rill.zeros_like(S))
            X = rill.matmul(_mT(Vh) * sinv.unsqueeze(-2), _mT(U))
    if not (A.requires_grad and rill.is_grad_enabled()):
        return _out(out, X)
    return _out(out, _PinvGrad.apply(A, X))


class _PinvGrad(rill.autograd.Function):
    """X = pinv(A) (already computed) with PyTorch's gradient.

    Note [pinv's gradient]: the derivative of A+ on A's constant-rank neighbourhood (Golub and Pereyra),
    dX = -X dA X + X X^T dA^T (I - A X) + (I - X A) dA^T X^T X; its adjoint below is written in differentiable ops
    of A and X (X's history is this node), so gradients of gradients (create_graph) are right too. Through the SVD
    the gradient would divide by differences of the zero singular values. PyTorch uses this derivative with
    hermitian=True too, at A itself (whose upper triangle the value never read)."""

    @staticmethod
    def forward(ctx, A, X):
        X = X.clone()  # the output, saved: its history is this node
        ctx.save_for_backward(A, X)
        return X

    @staticmethod
    def backward(ctx, gX):
        A, X = ctx.saved_tensors
        Xt, gXt = _mT(X), _mT(gX)
        P = rill.eye(A.shape[-2], dtype=A.dtype) - rill.matmul(A, X)
        Q = rill.eye(A.shape[-1], dtype=A.dtype) - rill.matmul(X, A)
        gA = (-rill.matmul(rill.matmul(Xt, gX), Xt) + rill.matmul(rill.matmul(P, gXt), rill.matmul(X, Xt))
              + rill.matmul(rill.matmul(rill.matmul(Xt, X), gXt), Q))
        return gA, None


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None, out=None):
    """The number of singular (or, hermitian, absolute eigen-) values above the tolerance."""
    if tol is not None:
        atol, rtol = tol, 0.0
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor A must have at least 2 dimensions.")
    S = eigvalsh(A).abs() if hermitian else svdvals(A)
    return _out(out, (S > _tolerance(S, A, atol, rtol)).sum(-1))


def lstsq(A, B, rcond=None, *, driver=None, out=None):
    """The least-squares (minimum-norm) solution X of A X = B, with PyTorch's CPU result fields: residuals (for a
    full-rank tall A and driver 'gelsd'/'gelss'), rank and singular values (for 'gelsy', 'gelsd', 'gelss')."""
    driver = "gelsy" if driver is None else driver
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    vector = B.dim() == A.dim() - 1
    if vector:
        B = B.unsqueeze(-1)
    if B.dtype != A.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {A.dtype} and other's dtype {B.dtype}")
    m, n = A.shape[-2], A.shape[-1]
    if B.shape[-2] != m:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    A_, B_ = _broadcast_batch(A, B)
    U, S, Vh = svd(A_, full_matrices=False)
    eps = _eps(A.dtype)
    cut = (eps * builtins.max(m, n) if rcond is None or rcond < 0 else rcond) if driver != "gels" else 0.0
    smax = S.amax(-1, keepdim=True) if S.shape[-1] else S
    keep = S > smax * cut
    sinv = rill.where(keep, 1 / rill.where(keep, S, rill.ones_like(S)), rill.zeros_like(S))
    X = rill.matmul(_mT(Vh) * sinv.unsqueeze(-2), rill.matmul(_mT(U), B_))
    rank = keep.sum(-1) if driver != "gels" else rill.empty(0, dtype=rill.int64)
    sv = S.detach() if driver in ("gelsd", "gelss") else rill.empty(0, dtype=A.dtype)
    if m > n and driver != "gelsy" and (driver == "gels" or bool((rank == n).all())):
        residuals = ((rill.matmul(A_, X) - B_) ** 2).sum(-2)
    else:
        residuals = X.reshape(-1)[:0]  # empty, but part of the graph, as PyTorch's
    if vector:
        X = X.squeeze(-1)
    return LstsqResult(X, residuals, rank, sv)


def cond(A, p=None, *, out=None):
    """A's condition number in the p-norm (2 when None: the ratio of the extreme singular values)."""
    if p is None or p in (2, -2):
        S = svdvals(A)
        ratio = S[..., 0] / S[..., -1]
        return _out(out, ratio if p != -2 else S[..., -1] / S[..., 0])
    _square(A, "linalg.cond")
    return _out(out, matrix_norm(A, p) * matrix_norm(inv(A), p))


def matrix_exp(A):
    """e^A by scaling and squaring with a degree-13 Pade approximant (Higham 2005)."""
    _square(A, "linalg.matrix_exp")
    if A.shape[-1] == 0:
        return A.clone()
    if A.shape[-1] == 1:
        return A.exp()
    if A.dtype in (rill.float16, rill.bfloat16):
        return matrix_exp(A.float()).to(A.dtype)
    if A.dtype == rill.float32:  # float64 inside: the squarings amplify float32's rounding (PyTorch's own is no closer)
        return matrix_exp(A.double()).float()
    b = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
         10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
    norm1 = A.abs().sum(-2).amax(-1)  # the 1-norm of each matrix
    theta13 = 5.371920351148152
    s = rill.clamp(rill.ceil(rill.log2(norm1 / theta13)), min=0).detach()
    scale = (2.0 ** s).unsqueeze(-1).unsqueeze(-1)
    X = A / scale
    ident = _eye_like(X)
    X2 = rill.matmul(X, X)
    X4 = rill.matmul(X2, X2)
    X6 = rill.matmul(X4, X2)
    U = rill.matmul(X, rill.matmul(X6, b[13] * X6 + b[11] * X4 + b[9] * X2) + b[7] * X6 + b[5] * X4 + b[3] * X2
                    + b[1] * ident)
    V = rill.matmul(X6, b[12] * X6 + b[10] * X4 + b[8] * X2) + b[6] * X6 + b[4] * X4 + b[2] * X2 + b[0] * ident
    R = solve(V - U, V + U)
    steps = int(s.max().item()) if s.numel() else 0
    for i in range(steps):  # square each matrix s times (matrices that need fewer squarings keep their value)
        R = rill.where((s > i).unsqueeze(-1).unsqueeze(-1), rill.matmul(R, R), R)
    return R


# --- norms ------------------------------------------------------------------------------------------------------
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """The matrix norm 'fro', 'nuc', 2, -2, 1, -1, inf or -inf over the two dims."""
    x = A if dtype is None else A.to(dtype)
    if x.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    d0, d1 = (d % x.dim() for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if ord == "fro":
        return _out(out, vector_norm(x, 2, (d0, d1), keepdim))
    if ord in ("nuc", 2, -2):
        moved = x.movedim((d0, d1), (-2, -1))
        S = svdvals(moved)
        if S.shape[-1] == 0:  # an empty matrix's norm is 0
            r = S.sum(-1)
        else:
            r = S.sum(-1) if ord == "nuc" else S.amax(-1) if ord == 2 else S.amin(-1)
        if keepdim:
            r = r.unsqueeze(builtins.min(d0, d1)).unsqueeze(builtins.max(d0, d1))
        return _out(out, r)
    reducers = {1: (d0, d1, "amax"), -1: (d0, d1, "amin"), float("inf"): (d1, d0, "amax"),
                float("-inf"): (d1, d0, "amin")}
    if ord not in reducers:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    inner, outer, pick = reducers[ord]
    sums = x.abs().sum(inner, keepdim=True)
    if sums.shape[outer] == 0:  # an empty matrix's norm is 0
        shape = list(sums.shape)
        shape[outer] = 1
        r = rill.zeros(*shape, dtype=sums.dtype)
    else:
        r = getattr(sums, pick)(outer, keepdim=True)
    return _out(out, r if keepdim else r.squeeze((d0, d1)))


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """A vector norm (dim an int, or a 1-D A with dim None) or a matrix norm (dim a pair, or a 2-D A), as
    torch.linalg.norm; ord None: the 2-norm of the flattened input."""
    if isinstance(dim, int):
        dim = (dim,)
    if ord is None:
        if dim is not None and len(dim) == 2:
            return matrix_norm(A, "fro", dim, keepdim, dtype=dtype, out=out)
        return _out(out, vector_norm(A, 2, dim, keepdim, dtype=dtype))
    if isinstance(ord, str) or (dim is not None and len(dim) == 2) or (dim is None and A.dim() == 2):
        if dim is None and A.dim() != 2:
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                               f"Got {A.dim()}D.")
        return matrix_norm(A, ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype, out=out)
    if dim is None and A.dim() != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                           f"Got {A.dim()}D.")
    return _out(out, vector_norm(A, ord, dim, keepdim, dtype=dtype))


def _out(out, result):
    """result, copied into out when given (out= of the functions above)."""
    if out is None:
        return result
    if tuple(out.shape) != tuple(result.shape):
        raise RuntimeError(f"out= expected a tensor of shape {tuple(result.shape)}, got {tuple(out.shape)}")
    out.copy_(result)
    return out


# --- the torch-level forms (torch.det, Tensor.det, torch.svd, ...) ----------------------------------------------
def cholesky_solve(B, L, upper=False, *, out=None):
    """X with A X = B for A = L L^T (or U^T U when upper), given its Cholesky factor. The gradient is PyTorch's,
    which treats the factor as a full matrix (A = L L^T over all of L)."""
    A = rill.matmul(_mT(L), L) if upper else rill.matmul(L, _mT(L))
    return _out(out, solve(*_broadcast_batch(A, B)))


def cholesky_inverse(L, upper=False, *, out=None):
    """The inverse of A = L L^T (or U^T U when upper), given its Cholesky factor."""
    _square(L, "cholesky_inverse")
    return _out(out, cholesky_solve(_eye_like(L), L, upper))


def _torch_cholesky(input, upper=False, *, out=None):
    return cholesky(input, upper=upper, out=out)


def _torch_cholesky_solve(input, input2, upper=False, *, out=None):
    return cholesky_solve(input, input2, upper, out=out)


def _torch_cholesky_inverse(input, upper=False, *, out=None):
    return cholesky_inverse(input, upper, out=out)


_TorchSlogdet = _result("slogdet", "sign logabsdet")
_TorchQr = _result("qr", "Q R")
_TorchSvd = _result("svd", "U S V")
_TorchTriangularSolve = _result("triangular_solve", "solution cloned_coefficient")
_TorchLuUnpack = _result("lu_unpack", "P L U")


def _torch_slogdet(input):
    return _TorchSlogdet(*slogdet(input))


def _torch_qr(input, some=True, *, out=None):
    return _TorchQr(*qr(input, "reduced" if some else "complete"))


def _torch_svd(input, some=True, compute_uv=True, *, out=None):
    """torch.svd: V rather than Vh; zero-filled U and V when compute_uv is False."""
    if not compute_uv:
        m, n = input.shape[-2], input.shape[-1]
        return _TorchSvd(rill.zeros(*input.shape[:-2], m, m, dtype=input.dtype), svdvals(input),
                         rill.zeros(*input.shape[:-2], n, n, dtype=input.dtype))
    U, S, Vh = svd(input, full_matrices=not some)
    return _TorchSvd(U, S, _mT(Vh))


def _torch_pinverse(input, rcond=1e-15):
    return pinv(input, rtol=rcond)


def _torch_inverse(input, *, out=None):
    return inv(input, out=out)


def _torch_lu(self, pivot=True, get_infos=False, *, out=None):
    LU, pivots, info = lu_factor_ex(self, pivot=pivot)
    return (LU, pivots, info) if get_infos else (LU, pivots)


def _torch_lu_solve(input, LU_data, LU_pivots, *, out=None):
    return lu_solve(LU_data, LU_pivots, input, out=out)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """(P, L, U) from a packed LU factorization and its pivots (torch.lu_unpack)."""
    return _TorchLuUnpack(*_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots))


def _torch_triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """torch.triangular_solve: X with op(A) X = input (op(A) = A^T when transpose), and a copy of A."""
    coefficient = _mT(A) if transpose else A
    X = solve_triangular(coefficient, input, upper=upper != transpose, unitriangular=unitriangular)
    return _TorchTriangularSolve(X, A.clone())


def _torch_matrix_power(input, n):
    return matrix_power(input, n)


def _torch_matrix_exp(input):
    return matrix_exp(input)


def _torch_det(input):
    return det(input)


def _torch_logdet(input):
    return logdet(input)


def _torch_geqrf(input, *, out=None):
    return geqrf(input)


def _torch_orgqr(input, input2):
    return householder_product(input, input2)


def _torch_ormqr(input, input2, input3, left=True, transpose=False, *, out=None):
    return ormqr(input, input2, input3, left, transpose, out=out)


_TORCH_LEVEL = {  # name: (function, also a Tensor method)
    "det": (_torch_det, True), "logdet": (_torch_logdet, True), "slogdet": (_torch_slogdet, True),
    "inverse": (_torch_inverse, True), "cholesky": (_torch_cholesky, True),
    "cholesky_solve": (_torch_cholesky_solve, True), "cholesky_inverse": (_torch_cholesky_inverse, True),
    "qr": (_torch_qr, True), "svd": (_torch_svd, True), "pinverse": (_torch_pinverse, True),
    "matrix_exp": (_torch_matrix_exp, True), "matrix_power": (_torch_matrix_power, True),
    "lu": (_torch_lu, True), "lu_solve": (_torch_lu_solve, True), "lu_unpack": (lu_unpack, False),
    "triangular_solve": (_torch_triangular_solve, True), "geqrf": (_torch_geqrf, True),
    "ormqr": (_torch_ormqr, True), "orgqr": (_torch_orgqr, True),
}


def _norm_with_nuc(plain):
    """torch.norm / Tensor.norm, with p='nuc' (the nuclear norm over the last two dims, or the two dims given)."""
    def norm(input, p="fro", dim=None, keepdim=False, dtype=None, **kwargs):
        if isinstance(p, str) and p == "nuc":
            return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim, dtype=dtype, **kwargs)
        return plain(input, p, dim, keepdim, dtype=dtype, **kwargs)
    norm.__doc__ = plain.__doc__
    return norm


def _install():
    rill.norm = _norm_with_nuc(rill.norm)
    rill.Tensor.norm = _norm_with_nuc(rill.Tensor.norm)
    for name, (fn, method) in _TORCH_LEVEL.items():
        if not hasattr(rill, name):
            setattr(rill, name, fn)
        if method and not hasattr(rill.Tensor, name):
            setattr(rill.Tensor, name, fn)


_install()
