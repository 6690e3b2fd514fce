"""Bernoulli(probs | logits) and Categorical(probs | logits) over the last dim."""
import rill
from rill.distributions import constraints
from rill.distributions.distribution import Distribution, _as_tensor, lazy_property
from rill.distributions.utils import logits_to_probs, probs_to_logits


def _one_of(probs, logits, name):
    if (probs is None) == (logits is None):
        raise ValueError(f"{name}: either `probs` or `logits` must be specified, but not both.")


class Bernoulli(Distribution):
    """1 with probability probs (or sigmoid(logits)), else 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits, "Bernoulli")
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


class Categorical(Distribution):
    """One of K categories, with probabilities (or unnormalised logits) given over the last dim."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits, "Categorical")
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


class OneHotCategorical(Distribution):
    """A Categorical whose draws are one-hot vectors of size K (event_shape (K,))."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        param = self._categorical.probs if probs is not None else self._categorical.logits
        super().__init__(param.shape[:-1], param.shape[-1:], validate_args=False)
        self._validate_args = self._categorical._validate_args

    def expand(self, batch_shape, _instance=None):
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._categorical = self._categorical.expand(batch_shape)
        new._batch_shape = rill.Size(batch_shape)
        return new

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        return rill.nn.functional.one_hot(self.probs.argmax(-1), self.probs.shape[-1]).to(self.probs.dtype)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        indices = self._categorical.sample(sample_shape)
        return rill.nn.functional.one_hot(indices, self._event_shape[0]).to(self.probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        k = self._event_shape[0]
        values = rill.eye(k, dtype=self.probs.dtype).reshape((k,) + (1,) * len(self._batch_shape) + (k,))
        return values.expand((k,) + tuple(self._batch_shape) + (k,)) if expand else values
