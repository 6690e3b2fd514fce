"""Bernoulli(probs | logits)."""
import rill
from rill.distributions import constraints
from rill.distributions.distribution import Distribution, _as_tensor, lazy_property
from rill.distributions.utils import logits_to_probs, one_of, probs_to_logits


class Bernoulli(Distribution):
    """1 with probability probs (or sigmoid(logits)), else 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        one_of(probs, logits, "Bernoulli")
        if probs is not None:
            self.probs = _as_tensor(probs)
            shape = self.probs.shape
        else:
            self.logits = _as_tensor(logits)
            shape = self.logits.shape
        super().__init__(shape, validate_args=validate_args)

    @property
    def param_shape(self):
        return self._batch_shape

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return rill.where(self.probs == 0.5, rill.full_like(mode, float("nan")), mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with rill.no_grad():
            return rill.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits = self.logits
        # -binary_cross_entropy_with_logits(logits, value), written stably.
        return -(rill.clamp(logits, min=0) - logits * value + rill.log1p(rill.exp(-logits.abs())))

    def entropy(self):
        logits, probs = self.logits, self.probs
        return rill.clamp(logits, min=0) - logits * probs + rill.log1p(rill.exp(-logits.abs()))

    def enumerate_support(self, expand=True):
        values = rill.arange(2, dtype=self.probs.dtype if "probs" in self.__dict__ else self.logits.dtype)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((2,) + tuple(self._batch_shape)) if expand else values
