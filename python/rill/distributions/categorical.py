"""Categorical(probs | logits): one of K categories, over the last dim."""
import rill
from rill.distributions import constraints
from rill.distributions.distribution import Distribution, lazy_property
from rill.distributions.utils import logits_to_probs, one_of, probs_to_logits


class Categorical(Distribution):
    """One of K categories, with probabilities (or unnormalised logits) given over the last dim."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        one_of(probs, logits, "Categorical")
        if probs is not None:
            if not isinstance(probs, rill.Tensor) or probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            param = self.probs
        else:
            if not isinstance(logits, rill.Tensor) or logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
            param = self.logits
        self._num_events = param.shape[-1]
        super().__init__(param.shape[:-1], validate_args=validate_args)

    @property
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def param_shape(self):
        return rill.Size(tuple(self._batch_shape) + (self._num_events,))

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    def _nan(self):
        return rill.full(tuple(self._batch_shape), float("nan"), dtype=self.probs.dtype)

    @property
    def mean(self):
        return self._nan()

    @property
    def variance(self):
        return self._nan()

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    def sample(self, sample_shape=()):
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        n = 1
        for s in sample_shape:
            n *= int(s)
        with rill.no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            draws = rill.multinomial(probs_2d, n, replacement=True).transpose(0, 1)
            return draws.reshape(tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        shape = rill.broadcast_shapes(tuple(value.shape), tuple(self.logits.shape[:-1]) + (1,))
        value = value.expand(shape)
        logits = self.logits.expand(shape[:-1] + (self._num_events,))
        return logits.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        min_real = rill.finfo(self.logits.dtype).min
        logits = rill.clamp(self.logits, min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = rill.arange(self._num_events).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((self._num_events,) + tuple(self._batch_shape)) if expand else values
