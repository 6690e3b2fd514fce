"""rand, randn, randint (and their _like forms), manual_seed, seed, initial_seed, get_rng_state and
set_rng_state on rill's default generator, an MT19937 like PyTorch's (Note [Drawing on the host] in
rill/_generator.py): the values are drawn when the op is issued."""
import numpy as np

from rill import _C

from rill._generator import _as_tensor, _randint, _resolve, _samples, default_generator, tracing_graph


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list, _C.Size if hasattr(_C, "Size") else tuple)):
        size = tuple(size[0])
    shape = tuple(int(s) for s in size)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {shape}")
    return shape


def _finish(t, dtype, requires_grad, out):
    if dtype is not None and t.dtype != dtype:
        t = t.to(dtype)
    if out is not None:
        return out.resize_(*t.shape).copy_(t) if hasattr(out, "resize_") else out.copy_(t)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _check_factory_args(op, size, dtype, kwargs):
    """The size (positional sizes or size=), with dtype, device and the other factory keywords checked as the
    core's factories check them (a bad dtype is a TypeError, device='cuda' a RuntimeError, an unknown device a
    ValueError)."""
    if dtype is not None and not isinstance(dtype, _C.dtype):
        raise TypeError(f"{op}(): argument 'dtype' must be rill.dtype, not {type(dtype).__name__}")
    if "size" in kwargs:
        if size:
            raise TypeError(f"{op}() got multiple values for argument 'size'")
        size = (kwargs.pop("size"),)
    if kwargs:
        _C.empty(0, **kwargs)  # device=, layout=, pin_memory=: the core's checks and errors
    return size


def _float_dtype(dtype, op):
    from rill._creation import get_default_dtype
    dt = get_default_dtype() if dtype is None else dtype
    if not dt.is_floating_point:
        raise RuntimeError(f"\"{op}\" not implemented for '{dt}': pass a floating-point dtype")
    return dt


def _float_draws(op, kind, size, generator, dtype, out, requires_grad, kwargs):
    """rand (kind 'uniform') or randn (kind 'normal'): the core's Philox op while nn.Graph traces, else host draws."""
    size = _check_factory_args(op, size, dtype, kwargs)
    dt = _float_dtype(dtype, op)
    if generator is None and tracing_graph():
        return getattr(_C, op)(*_shape(size), dtype=dt, requires_grad=requires_grad)
    t = _samples(kind, _shape(size), _C.float64 if dt == _C.float64 else _C.float32, generator)
    return _finish(t, dt, requires_grad, out)


def rand(*size, generator=None, dtype=None, out=None, requires_grad=False, **kwargs):
    """U[0, 1) draws of the given size (PyTorch's numbers for the same seed)."""
    return _float_draws("rand", "uniform", size, generator, dtype, out, requires_grad, kwargs)


def randn(*size, generator=None, dtype=None, out=None, requires_grad=False, **kwargs):
    """N(0, 1) draws of the given size (PyTorch's numbers for the same seed)."""
    return _float_draws("randn", "normal", size, generator, dtype, out, requires_grad, kwargs)


def randint(*args, size=None, generator=None, dtype=None, out=None, requires_grad=False, **kwargs):
    """randint(high, size) or randint(low, high, size): integers drawn uniformly from [low, high)."""
    _check_factory_args("randint", (), dtype, kwargs)
    args = list(args)
    if size is None:
        if not args:
            raise TypeError("randint() missing required argument 'size'")
        size = args.pop()
    if len(args) == 1:
        low, high = 0, int(args[0])
    elif len(args) == 2:
        low, high = int(args[0]), int(args[1])
    else:
        raise TypeError("randint() takes (high, size) or (low, high, size)")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    shape = _shape((size,) if isinstance(size, int) else tuple(size))
    if generator is None and tracing_graph():
        return _C.randint(low, high, shape, dtype=_C.int64 if dtype is None else dtype)
    n = int(np.prod(shape, dtype=np.int64))
    t = _as_tensor(_randint(_resolve(generator), low, high, n), shape)
    return _finish(t, _C.int64 if dtype is None else dtype, requires_grad, out)


def rand_like(input, *, dtype=None, generator=None, requires_grad=False, **kwargs):
    return rand(*input.shape, dtype=dtype or input.dtype, generator=generator, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, generator=None, requires_grad=False, **kwargs):
    return randn(*input.shape, dtype=dtype or input.dtype, generator=generator, requires_grad=requires_grad)


def manual_seed(seed):
    """Seed the default generator (and the Philox generator graph mode's random ops draw from)."""
    seed = int(seed)
    default_generator.manual_seed(seed)
    _C.manual_seed(seed & 0xFFFFFFFFFFFFFFFF)
    return default_generator


def seed():
    s = default_generator.seed()
    _C.manual_seed(s)
    return s


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)


__all__ = ["rand", "randn", "randint", "rand_like", "randn_like", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state"]
