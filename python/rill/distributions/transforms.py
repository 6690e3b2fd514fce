"""Invertible transforms y = f(x) with log|det df/dx|, for TransformedDistribution: Exp, Affine, Tanh,
Sigmoid and their composition. cache_size=1 remembers the last (x, y) pair, so inv(f(x)) returns x exactly
(what tanh-squashed policies rely on near y = +-1)."""
import math

import rill
from rill.distributions import constraints


def _sum_rightmost(value, n):
    for _ in range(n):
        value = value.sum(-1)
    return value


class Transform:
    """Base of the transforms: __call__ (forward), inv (inverse) and log_abs_det_jacobian(x, y)."""

    domain = constraints.real
    codomain = constraints.real
    bijective = True
    sign = 1

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError(f"cache_size must be 0 or 1, got {cache_size}")
        self._cache_size = cache_size
        self._cached = None

    @property
    def event_dim(self):
        return 0

    @property
    def inv(self):
        """The inverse transform."""
        return _InverseTransform(self)

    def __call__(self, x):
        if self._cache_size and self._cached is not None and self._cached[0] is x:
            return self._cached[1]
        y = self._call(x)
        if self._cache_size:
            self._cached = (x, y)
        return y

    def _inv_call(self, y):
        if self._cache_size and self._cached is not None and self._cached[1] is y:
            return self._cached[0]
        x = self._inverse(y)
        if self._cache_size:
            self._cached = (x, y)
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError(f"{type(self).__name__} has no inverse")

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def __repr__(self):
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    def __init__(self, transform):
        super().__init__(0)
        self._inv = transform

    @property
    def event_dim(self):
        return self._inv.event_dim

    @property
    def inv(self):
        return self._inv

    def __call__(self, x):
        return self._inv._inv_call(x)

    def _inv_call(self, y):
        return self._inv(y)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)


class ExpTransform(Transform):
    """y = exp(x)."""

    codomain = constraints.positive

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class SigmoidTransform(Transform):
    """y = sigmoid(x)."""

    codomain = constraints.unit_interval

    def _call(self, x):
        info = rill.finfo(x.dtype)
        return rill.clamp(rill.sigmoid(x), min=info.tiny, max=1.0 - info.eps)

    def _inverse(self, y):
        info = rill.finfo(y.dtype)
        y = rill.clamp(y, min=info.tiny, max=1.0 - info.eps)
        return y.log() - rill.log1p(-y)

    def log_abs_det_jacobian(self, x, y):
        softplus = rill.nn.functional.softplus
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    """y = tanh(x)."""

    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return 0.5 * (rill.log1p(y) - rill.log1p(-y))

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2), written stably
        return 2.0 * (math.log(2.0) - x - rill.nn.functional.softplus(-2.0 * x))


class AffineTransform(Transform):
    """y = loc + scale * x (loc and scale tensors or numbers), over event_dim rightmost dims."""

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @property
    def sign(self):
        if isinstance(self.scale, (int, float)):
            return 1 if self.scale > 0 else -1
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        scale = self.scale
        if isinstance(scale, (int, float)):
            result = rill.full_like(x, math.log(abs(scale)))
        else:
            result = scale.abs().log().expand(tuple(rill.broadcast_shapes(tuple(scale.shape), tuple(x.shape))))
        return _sum_rightmost(result, self._event_dim)


class ComposeTransform(Transform):
    """Apply parts in order."""

    def __init__(self, parts, cache_size=0):
        super().__init__(cache_size)
        self.parts = list(parts)

    @property
    def event_dim(self):
        return max((p.event_dim for p in self.parts), default=0)

    @property
    def domain(self):
        return self.parts[0].domain if self.parts else constraints.real

    @property
    def codomain(self):
        return self.parts[-1].codomain if self.parts else constraints.real

    @property
    def inv(self):
        return ComposeTransform([p.inv for p in reversed(self.parts)])

    def _call(self, x):
        for p in self.parts:
            x = p(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return rill.zeros_like(x)
        total, event_dim = 0, self.event_dim
        for p in self.parts:
            y_p = p(x)
            total = total + _sum_rightmost(p.log_abs_det_jacobian(x, y_p), event_dim - p.event_dim)
            x = y_p
        return total
