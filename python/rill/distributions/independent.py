"""Independent: reinterpret a distribution's rightmost batch dims as event dims (log_prob sums over them)."""
from rill.distributions.distribution import Distribution


def _sum_rightmost(value, n):
    for _ in range(n):
        value = value.sum(-1)
    return value


class Independent(Distribution):
    """base_distribution with its last reinterpreted_batch_ndims batch dims moved into the event shape."""

    arg_constraints = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        if not isinstance(base_distribution, Distribution):
            raise TypeError(f"Independent: expected a Distribution, got {type(base_distribution).__name__}")
        n = len(base_distribution.batch_shape)
        if not 0 <= reinterpreted_batch_ndims <= n:
            raise ValueError("Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                             f"actual {reinterpreted_batch_ndims} vs {n}")
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = reinterpreted_batch_ndims + len(base_distribution.event_shape)
        super().__init__(shape[:len(shape) - event_dim], shape[len(shape) - event_dim:], validate_args=validate_args)

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def support(self):
        return self.base_dist.support

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        base_shape = batch_shape + tuple(self._event_shape[:self.reinterpreted_batch_ndims])
        return Independent(self.base_dist.expand(base_shape), self.reinterpreted_batch_ndims,
                           validate_args=self._validate_args)

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
