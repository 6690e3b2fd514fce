"""LogNormal(loc, scale): exp of a Normal."""
import rill
from rill.distributions import constraints
from rill.distributions.normal import Normal
from rill.distributions.transformed_distribution import TransformedDistribution
from rill.distributions.transforms import ExpTransform


class LogNormal(TransformedDistribution):
    """exp(X) for X ~ Normal(loc, scale)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    @property
    def support(self):
        return constraints.positive

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.pow(2)).exp()

    @property
    def variance(self):
        s2 = self.scale.pow(2)
        return rill.expm1(s2) * (2 * self.loc + s2).exp()

    def expand(self, batch_shape, _instance=None):
        return LogNormal(self.loc.expand(tuple(batch_shape)), self.scale.expand(tuple(batch_shape)),
                         validate_args=self._validate_args)

    def entropy(self):
        return self.base_dist.entropy() + self.loc
