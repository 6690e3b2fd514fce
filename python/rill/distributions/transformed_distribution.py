"""TransformedDistribution: a base distribution pushed through transforms."""
import rill
from rill.distributions.distribution import Distribution
from rill.distributions.transforms import Transform, _sum_rightmost


class TransformedDistribution(Distribution):
    """The distribution of y = transforms[-1](...transforms[0](x)) for x drawn from base_distribution;
    log_prob(y) = base.log_prob(x) - sum of log|det J| along the chain."""

    arg_constraints = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            transforms = [transforms]
        transforms = list(transforms)
        if not all(isinstance(t, Transform) for t in transforms):
            raise ValueError(f"transforms must be a Transform or a list of Transforms, but was {transforms}")
        self.base_dist, self.transforms = base_distribution, transforms
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = max([len(base_distribution.event_shape)] + [t.event_dim for t in transforms])
        if len(shape) < event_dim:
            raise ValueError(f"base_distribution needs at least {event_dim} dims, but got shape {shape}")
        cut = len(shape) - event_dim
        super().__init__(shape[:cut], shape[cut:], validate_args=validate_args)

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def support(self):
        return self.transforms[-1].codomain if self.transforms else self.base_dist.support

    def sample(self, sample_shape=()):
        with rill.no_grad():
            x = self.base_dist.sample(sample_shape)
            for t in self.transforms:
                x = t(x)
            return x

    def rsample(self, sample_shape=()):
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self._event_shape)
        log_prob, y = 0.0, value
        for t in reversed(self.transforms):
            x = t.inv(y)
            log_prob = log_prob - _sum_rightmost(t.log_abs_det_jacobian(x, y), event_dim - t.event_dim)
            y = x
        base = self.base_dist.log_prob(y)
        return log_prob + _sum_rightmost(base, event_dim - len(self.base_dist.event_shape))

    def cdf(self, value):
        sign = 1
        for t in reversed(self.transforms):
            value = t.inv(value)
            sign = sign * t.sign
        return sign * (self.base_dist.cdf(value) - 0.5) + 0.5  # a decreasing chain reverses the cdf
