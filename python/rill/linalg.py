"""rill.linalg: the linear-algebra functions of torch.linalg that rill has (the products and norms below are
compositions of rill's ops)."""
import builtins

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
        raise RuntimeError("linalg.vander: x must have at least one dimension")
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


def matrix_power(A, n):
    """A multiplied by itself n times (n >= 0; the identity for n = 0)."""
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.matrix_power: A must be batches of square matrices")
    if n < 0:
        raise NotImplementedError("[matrix_power] negative powers need linalg.inv, which rill does not have yet")
    out, base = None, A
    while n:
        if n & 1:
            out = base if out is None else rill.matmul(out, base)
        n >>= 1
        if n:
            base = rill.matmul(base, base)
    return rill.eye(A.shape[-1], dtype=A.dtype).expand(*A.shape) if out is None else out


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The matrix norm 'fro', 1, -1, inf or -inf over the two dims (the spectral and nuclear norms need an SVD)."""
    x = A if dtype is None else A.to(dtype)
    d0, d1 = (d % builtins.max(x.dim(), 1) for d in dim)
    if ord == "fro":
        return vector_norm(x, 2, (d0, d1), keepdim)
    reducers = {1: (d0, d1, "amax"), -1: (d0, d1, "amin"), float("inf"): (d1, d0, "amax"),
                float("-inf"): (d1, d0, "amin")}
    if ord not in reducers:
        raise NotImplementedError(f"[matrix_norm] ord={ord!r} needs an SVD, which rill does not have yet")
    inner, outer, pick = reducers[ord]
    sums = x.abs().sum(inner, keepdim=True)
    out = getattr(sums, pick)(outer, keepdim=True)
    return out if keepdim else out.squeeze((d0, d1))
