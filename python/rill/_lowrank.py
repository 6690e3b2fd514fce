"""torch.svd_lowrank and torch.pca_lowrank: the randomized range finder of Halko, Martinsson and Tropp
(2009, algorithms 4.4 and 5.1). A few power iterations on a random sketch give an orthonormal basis Q
of A's leading column space; the SVD of the small matrix Q^H (A - M) then gives A's leading singular
triplets. Differentiable, since every step (matmul, qr, svd) is."""
import rill


def _approximate_basis(A, q, niter, M):
    """An orthonormal m x q basis whose span approximates the range of A - M."""
    def times(X):
        return A @ X if M is None else A @ X - M @ X

    def times_adjoint(X):
        return A.mT @ X if M is None else A.mT @ X - M.mT @ X

    R = rill.randn(A.shape[-1], q, dtype=A.dtype)
    Q = rill.linalg.qr(times(R)).Q
    for _ in range(niter):
        Q = rill.linalg.qr(times_adjoint(Q)).Q
        Q = rill.linalg.qr(times(Q)).Q
    return Q


def _svd_lowrank(A, q, niter, M):
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(tuple(A.shape))
    wide = m < n
    if wide:  # factor A^H instead, whose basis is the smaller one
        A = A.mT
        M = None if M is None else M.mT
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mT @ A if M is None else Q.mT @ A - Q.mT @ M
    U, S, Vh = rill.linalg.svd(B, full_matrices=False)
    U, V = Q @ U, Vh.mT
    return (V, S, U) if wide else (U, S, V)


def _check(A, name):
    if not isinstance(A, rill.Tensor) or A.dim() < 2:
        raise ValueError(f"{name}: A must be a tensor of at least 2 dimensions (a matrix or a batch of them)")
    if not A.is_floating_point():
        raise TypeError(f"{name}: A must be floating point (got {A.dtype}); convert it with .double() or .float()")


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V) with A - M ~ U diag(S) V^H, of rank q, by randomized power iteration."""
    _check(A, "svd_lowrank")
    q = 6 if q is None else q
    if not 0 <= q <= min(A.shape[-2:]):
        raise ValueError(f"svd_lowrank: q={q} must lie in [0, min(m, n)] = [0, {min(A.shape[-2:])}]")
    if niter < 0:
        raise ValueError(f"svd_lowrank: niter={niter} must be non-negative")
    return _svd_lowrank(A, q, niter, M)


def pca_lowrank(A, q=None, center=True, niter=2):
    """(U, S, V) of the rank-q principal components of A (its columns centred first unless center=False)."""
    _check(A, "pca_lowrank")
    m, n = A.shape[-2:]
    q = min(6, m, n) if q is None else q
    if not 0 <= q <= min(m, n):
        raise ValueError(f"pca_lowrank: q={q} must lie in [0, min(m, n)] = [0, {min(m, n)}]")
    if niter < 0:
        raise ValueError(f"pca_lowrank: niter={niter} must be non-negative")
    if center:
        A = A - A.mean(-2, keepdim=True)
    return _svd_lowrank(A, q, niter, None)
