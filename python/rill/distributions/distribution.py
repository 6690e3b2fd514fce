"""Distribution: the base of rill.distributions (shapes, argument validation, sample from rsample)."""
import rill

_validate_default = True


def _as_tensor(value, like=None):
    """value as a floating tensor (numbers take like's dtype, else the default dtype)."""
    if isinstance(value, rill.Tensor):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"rill.distributions: expected a tensor or a number, got {type(value).__name__}")
    dtype = like.dtype if isinstance(like, rill.Tensor) and like.is_floating_point() else rill.get_default_dtype()
    return rill.tensor(float(value), dtype=dtype)


def broadcast_all(*values):
    """The arguments (tensors or numbers) as tensors broadcast to one shape."""
    like = next((v for v in values if isinstance(v, rill.Tensor)), None)
    tensors = [_as_tensor(v, like) for v in values]
    shape = rill.broadcast_shapes(*[tuple(t.shape) for t in tensors])
    return tuple(t.expand(shape) for t in tensors)


class lazy_property:
    """A parameter computed on first use from the one given (logits from probs, or probs from logits)."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = self.fn(instance)
        instance.__dict__[self.fn.__name__] = value
        return value


class Distribution:
    """A batch of probability distributions, each over events of event_shape.

    Subclasses set arg_constraints, support, and implement what they can of rsample/sample, log_prob,
    entropy, mean and variance."""

    has_rsample = False
    arg_constraints = {}
    support = None

    @staticmethod
    def set_default_validate_args(value):
        """Whether distributions check their arguments when validate_args is not given (default True)."""
        global _validate_default
        if value not in (True, False):
            raise ValueError("Distribution.set_default_validate_args: expected True or False")
        _validate_default = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = rill.Size(batch_shape)
        self._event_shape = rill.Size(event_shape)
        self._validate_args = _validate_default if validate_args is None else bool(validate_args)
        if self._validate_args:
            for name, constraint in self.arg_constraints.items():
                if name not in self.__dict__ and isinstance(getattr(type(self), name, None), lazy_property):
                    continue  # a parameter given the other way (probs for logits), derived lazily
                value = getattr(self, name)
                valid = constraint.check(value)
                if not bool(rill.all(valid)):
                    raise ValueError(
                        f"Expected parameter {name} ({type(value).__name__} of shape {tuple(value.shape)}) "
                        f"of distribution {self!r} to satisfy the constraint {constraint!r}, "
                        f"but found invalid values:\n{value}")

    @property
    def batch_shape(self):
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self):
        """The shape of a single sample."""
        return self._event_shape

    @property
    def mean(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement variance")

    @property
    def stddev(self):
        """The standard deviation, sqrt(variance)."""
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """Draws of shape sample_shape + batch_shape + event_shape, without gradient."""
        with rill.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """Reparameterised draws: differentiable in the parameters."""
        raise NotImplementedError(f"{type(self).__name__} does not implement rsample")

    def sample_n(self, n):
        return self.sample((n,))

    def log_prob(self, value):
        raise NotImplementedError(f"{type(self).__name__} does not implement log_prob")

    def cdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} does not implement cdf")

    def icdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} does not implement icdf")

    def entropy(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement entropy")

    def perplexity(self):
        """exp(entropy)."""
        return rill.exp(self.entropy())

    def enumerate_support(self, expand=True):
        raise NotImplementedError(f"{type(self).__name__} does not implement enumerate_support")

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameters expanded (not copied) to batch_shape."""
        batch_shape = rill.Size(batch_shape)
        new = _instance if _instance is not None else type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        for name in self.arg_constraints:
            value = self.__dict__.get(name)
            if isinstance(value, rill.Tensor):
                trailing = tuple(value.shape[len(self._batch_shape):])
                new.__dict__[name] = value.expand(tuple(batch_shape) + trailing)
        rill.broadcast_shapes(tuple(self._batch_shape), tuple(batch_shape))  # raises unless expandable
        new._batch_shape = batch_shape
        return new

    def _extended_shape(self, sample_shape=()):
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        return rill.Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value):
        """Raise ValueError unless value is a tensor broadcastable to the batch and event shapes, in support."""
        if not isinstance(value, rill.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim = len(self._event_shape)
        if tuple(value.shape[len(value.shape) - event_dim:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{tuple(value.shape)} vs {tuple(self._event_shape)}.")
        actual, expected = tuple(value.shape), tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual} vs {expected}.")
        if self.support is not None and not bool(rill.all(self.support.check(value))):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {actual}) to be within the support "
                f"({self.support!r}) of the distribution {self!r}, but found invalid values:\n{value}")

    def __repr__(self):
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(
            f"{k}: {self.__dict__[k] if self.__dict__[k].numel() == 1 else tuple(self.__dict__[k].shape)}"
            for k in names)
        return f"{type(self).__name__}({args})"
