"""The random distributions of torch and torch.Tensor beyond rand/randn/randint: bernoulli, multinomial, normal's
tensor forms, randperm, randint_like and the in-place fills (bernoulli_, cauchy_, exponential_, geometric_,
log_normal_, random_). Each transforms draws from rill's MT19937 generator (or a rill.Generator given as
generator=) as PyTorch's CPU kernels do (on a CPU where PyTorch does not take MKL's streams), so the same seed
gives PyTorch's numbers."""
import math

import numpy as np

import rill
from rill import _C
from rill._C import Tensor
from rill._generator import _as_tensor, _randint, _randperm, _resolve, _samples
from rill._tensor_extras import _fill_, _sample_dtype


def _uniform(shape, dtype, generator):
    return _samples("uniform", tuple(shape), dtype, generator)


def _check_probability(p, name):
    if not 0 <= p <= 1:
        raise RuntimeError(f"{name} expects p to be in [0, 1], but got p={p}")


def _bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 1 where a U[0, 1) draw is below p (a number, or a tensor broadcast to self), else 0."""
    # PyTorch: a tensor p compares a uniform of p's dtype per element, a number p a float64 one
    if isinstance(p, Tensor):
        probs = p.to(_sample_dtype(p)).expand(*self.shape)
        return _fill_(self, _uniform(self._shape, probs.dtype, generator) < probs)
    _check_probability(p, "bernoulli_")
    return _fill_(self, _uniform(self._shape, _C.float64, generator) < p)


def bernoulli(input, p=None, *, generator=None, out=None):
    """0/1 draws with probabilities input (or p), of input's dtype."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"bernoulli_ expects a floating-point input, got {input.dtype}")
    if p is None and not bool(((input >= 0) & (input <= 1)).all()):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be "
                           "improved?  If so, please report an enhancement request to PyTorch.)")
    result = rill.empty(*input.shape, dtype=input.dtype)
    _bernoulli_(result, input.detach() if p is None else p, generator=generator)
    if out is not None:
        return out.copy_(result)
    return result


def _cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with Cauchy(median, sigma) draws: median + sigma tan(pi (u - 1/2))."""
    if sigma <= 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    u = _uniform(self._shape, _sample_dtype(self), generator)
    return _fill_(self, rill.tan((u - 0.5) * math.pi) * sigma + median)


def _exponential_(self, lambd=1.0, *, generator=None):
    """Fill with Exponential(lambd) draws: -log(1 - u) / lambd, u a float64 uniform (as PyTorch's CPU kernel)."""
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    u = _uniform(self._shape, _C.float64, generator)
    return _fill_(self, -rill.log1p(-u) / lambd)


def _geometric_(self, p, *, generator=None):
    """Fill with Geometric(p) draws (trials up to the first success, >= 1): ceil(log(1 - u) / log(1 - p))."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    u = _uniform(self._shape, _C.float64, generator)
    return _fill_(self, rill.clamp(rill.ceil(rill.log1p(-u) / math.log1p(-p)), 1))


def _log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with exp(N(mean, std^2)) draws."""
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    z = _samples("normal", tuple(self._shape), _sample_dtype(self), generator)
    return _fill_(self, rill.exp(z * std + mean))


def _random_(self, *args, generator=None):
    """random_(): integers in [0, 2^mantissa] (floats) or the dtype's range; random_(to): [0, to);
    random_(from, to): [from, to)."""
    if len(args) == 0:
        low, high = 0, {_C.float16: 2 ** 11 + 1, _C.bfloat16: 2 ** 8 + 1, _C.float32: 2 ** 24 + 1,
                        _C.float64: 2 ** 53 + 1, _C.bool: 2, _C.uint8: 256, _C.int8: 128, _C.int16: 2 ** 15,
                        _C.int32: 2 ** 31}.get(self.dtype, 2 ** 63)
    elif len(args) == 1:
        low, high = 0, args[0]
    else:
        low, high = args[0], args[1]
        if high is None:
            high = 2 ** 63 - 1
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    n = int(np.prod(tuple(self._shape), dtype=np.int64))
    return _fill_(self, _as_tensor(_randint(_resolve(generator), low, high, n), self._shape))


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """num_samples category indices per row of input (non-negative weights, 1-D or 2-D): with replacement by the
    inverse CDF of each row, without by the Gumbel top-k of log-weights."""
    if input.dim() not in (1, 2):
        raise RuntimeError(f"prob_dist must be 1 or 2 dim, got {input.dim()}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {input.dtype}")
    if num_samples <= 0:
        raise RuntimeError(f"cannot sample n_sample <= 0 samples, got {num_samples}")
    w = input.double() if input.dim() == 2 else input.double().unsqueeze(0)
    categories = w.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if not bool(rill.isfinite(w).all()) or bool((w < 0).any()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    totals = w.sum(-1, keepdim=True)
    if bool((totals <= 0).any()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rows = w.shape[0]
    if replacement:
        # PyTorch: per row the running sum of the weights (float64) normalised by its last value; per sample
        # (row-major) a float64 uniform, located by the first cumulative value not below it
        cdf = np.cumsum(w.numpy(), -1)
        cdf = cdf / cdf[:, -1:]
        u = _resolve(generator)._uniform(rows * num_samples, True).reshape(rows, num_samples)
        idx = np.stack([np.searchsorted(cdf[r], u[r], side="left") for r in range(rows)])
        # draws past the last positive weight (rounding in the cumulative sum) take that category
        last = (categories - 1) - np.argmax(np.flip(w.numpy() > 0, -1), -1)[:, None]
        idx = _as_tensor(np.minimum(idx, last).astype(np.int64), (rows, num_samples))
    else:
        if bool(((w > 0).sum(-1) < num_samples).any()):
            raise RuntimeError("invalid multinomial distribution (with replacement=False, not enough non-negative "
                               "category to sample)")
        # PyTorch: the top num_samples of p / q, q exponential draws in input's dtype
        dt = _sample_dtype(input)
        p = input if input.dim() == 2 else input.unsqueeze(0)
        q = _exponential_(rill.empty(rows, categories, dtype=dt), generator=generator)
        keys = p.to(dt) / q
        idx = rill.argmax(keys, -1, keepdim=True) if num_samples == 1 else rill.topk(keys, num_samples, -1).indices
    idx = idx if input.dim() == 2 else idx.squeeze(0)
    if out is not None:
        return out.copy_(idx)
    return idx


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, **kwargs):
    """N(mean, std^2) draws: mean and std tensors or numbers (broadcast), or numbers with a size."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        if size is not None:
            raise RuntimeError("normal: size is only accepted with a number mean and std")
        like = mean if isinstance(mean, Tensor) else std
        shape = like.shape
        if isinstance(mean, Tensor) and isinstance(std, Tensor):
            shape = rill.broadcast_shapes(tuple(mean.shape), tuple(std.shape))
        if isinstance(std, Tensor) and bool((std < 0).any()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
        z = _samples("normal", tuple(shape), _sample_dtype(like), generator)
        result = (z * std + mean).to(like.dtype)
    else:
        if size is None:
            raise TypeError("normal() with number mean and std needs a size")
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        shape = (size,) if isinstance(size, int) else tuple(size)
        dt = dtype if dtype is not None else rill.get_default_dtype()
        result = _samples("normal", shape, dt if dt in (_C.float32, _C.float64) else _C.float32, generator,
                          mean, std).to(dt)
    if out is not None:
        return out.copy_(result)
    return result


def randperm(n, *, generator=None, dtype=None, out=None, **kwargs):
    """A random permutation of 0 .. n-1."""
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    perm = _as_tensor(_randperm(_resolve(generator), n), (n,))
    result = perm if dtype is None else perm.to(dtype)
    if out is not None:
        return out.copy_(result)
    return result


def randint_like(input, low=0, high=None, *, dtype=None, generator=None, **kwargs):
    """Integers drawn uniformly from [low, high) (randint_like(input, high) for [0, high)), of input's shape."""
    if high is None:
        low, high = 0, low
    result = rill.empty(*input.shape, dtype=dtype or input.dtype)
    return _random_(result, low, high, generator=generator)


FUNCTIONS = {"bernoulli": bernoulli, "multinomial": multinomial, "normal": normal, "randperm": randperm,
             "randint_like": randint_like}
METHODS = {"bernoulli_": _bernoulli_, "bernoulli": bernoulli, "cauchy_": _cauchy_, "exponential_": _exponential_,
           "geometric_": _geometric_, "log_normal_": _log_normal_, "random_": _random_, "multinomial": multinomial}


def install(module):
    for name, fn in FUNCTIONS.items():
        if not hasattr(module, name):
            setattr(module, name, fn)
    for name, fn in METHODS.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, fn)
