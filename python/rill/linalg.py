"""rill.linalg: the linear-algebra functions of torch.linalg that rill has."""
from rill import _C


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The vector ord-norm of x over dim (all elements when None), as torch.linalg.vector_norm."""
    return _C.linalg_vector_norm(x, ord, dim, keepdim, dtype=dtype)
