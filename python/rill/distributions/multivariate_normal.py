"""MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril), held as its Cholesky factor."""
import math

import rill
from rill.distributions import constraints
from rill.distributions.distribution import Distribution, lazy_property


def _batch_mv(matrix, vector):
    """matrix @ vector over broadcast batch dims."""
    return rill.matmul(matrix, vector.unsqueeze(-1)).squeeze(-1)


def _solve_lower(L, b):
    """L^-1 b for lower-triangular L (..., n, n) and vectors b (..., n), batch dims broadcast."""
    batch = rill.broadcast_shapes(tuple(L.shape[:-2]), tuple(b.shape[:-1]))
    n = L.shape[-1]
    L = L.expand(batch + (n, n))
    b = b.expand(batch + (n,))
    return rill.linalg.solve_triangular(L, b.unsqueeze(-1), upper=False).squeeze(-1)


def _half_log_det(L):
    return rill.log(L.diagonal(dim1=-2, dim2=-1)).sum(-1)


class MultivariateNormal(Distribution):
    """N(loc, Sigma) over vectors of size loc.shape[-1]; give exactly one of covariance_matrix,
    precision_matrix and scale_tril (lower-triangular L with Sigma = L L^T)."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if not isinstance(loc, rill.Tensor) or loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        matrix = given[0]
        if not isinstance(matrix, rill.Tensor) or matrix.dim() < 2:
            raise ValueError("covariance_matrix, precision_matrix or scale_tril must be at least two-dimensional, "
                             "with optional leading batch dimensions")
        n = loc.shape[-1]
        if tuple(matrix.shape[-2:]) != (n, n):
            raise ValueError(f"the matrix must be ({n}, {n}) to match loc's event size {n}, got {tuple(matrix.shape)}")
        batch = rill.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        self.loc = loc.expand(batch + (n,))
        if scale_tril is not None:
            self.scale_tril = scale_tril.expand(batch + (n, n))
        elif covariance_matrix is not None:
            self.covariance_matrix = covariance_matrix.expand(batch + (n, n))
        else:
            self.precision_matrix = precision_matrix.expand(batch + (n, n))
        super().__init__(batch, (n,), validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = rill.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = rill.linalg.cholesky(rill.linalg.inv(precision_matrix))

    @lazy_property
    def scale_tril(self):
        n = self._event_shape[0]
        return self._unbroadcasted_scale_tril.expand(tuple(self._batch_shape) + (n, n))

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        n = self._event_shape[0]
        return rill.matmul(L, L.transpose(-1, -2)).expand(tuple(self._batch_shape) + (n, n))

    @lazy_property
    def precision_matrix(self):
        n = self._event_shape[0]
        L = self._unbroadcasted_scale_tril
        eye = rill.eye(n, dtype=L.dtype).expand(tuple(L.shape))
        L_inv = rill.linalg.solve_triangular(L, eye, upper=False)
        return rill.matmul(L_inv.transpose(-1, -2), L_inv).expand(tuple(self._batch_shape) + (n, n))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        n = self._event_shape[0]
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(tuple(self._batch_shape) + (n,))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = rill.randn(*shape, dtype=self.loc.dtype)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _solve_lower(self._unbroadcasted_scale_tril, diff).pow(2).sum(-1)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + m) - _half_log_det(self._unbroadcasted_scale_tril)

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + _half_log_det(self._unbroadcasted_scale_tril)
        return h.expand(tuple(self._batch_shape)) if len(self._batch_shape) else h
