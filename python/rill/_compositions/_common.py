"""Helpers the composition modules share."""
import builtins
import math

import rill
from rill._C import Tensor

_inf = float("inf")
_pi = math.pi


def _float(x):
    """x as a floating tensor: integer and bool tensors become the default float dtype."""
    x = x if isinstance(x, Tensor) else rill.tensor(x)
    return x if x.is_floating_point() else x.to(rill.get_default_dtype())


def _opmath(fn):
    """fn computed in float32 for float16/bfloat16 tensors (as PyTorch's CPU kernels compute), result cast back."""
    halves = (rill.float16, rill.bfloat16)

    def up(v):
        return v.to(rill.float32) if isinstance(v, Tensor) and v.dtype in halves else v

    def wrapper(*args, **kwargs):
        dtype = next((v.dtype for v in args if isinstance(v, Tensor)), None)
        if dtype not in halves:
            return fn(*args, **kwargs)
        out = fn(*[up(v) for v in args], **{k: up(v) for k, v in kwargs.items()})
        return out.to(dtype) if isinstance(out, Tensor) and out.is_floating_point() else out
    wrapper.__name__, wrapper.__doc__, wrapper.__module__, wrapper.__wrapped__ = fn.__name__, fn.__doc__, fn.__module__, fn
    return wrapper


def _dim(d, ndim):
    """d wrapped into [0, ndim) (IndexError outside [-ndim, ndim))."""
    n = builtins.max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d % n


def _along(mask_1d, dim, ndim):
    """A 1-D tensor shaped to broadcast along dim of an ndim-dimensional tensor."""
    return mask_1d.reshape([-1 if i == dim else 1 for i in range(ndim)])


def _false_like(x):
    return rill.zeros(tuple(x.shape), dtype=rill.bool)


def _to_integer(value, dtype):
    """A Python number converted to an integer dtype as PyTorch converts a Scalar argument, else RuntimeError: a
    float must lie in the dtype's range (it is then truncated); an int may also be negative down to -max for an
    unsigned dtype, where it wraps (-7 is 249 in uint8)."""
    info = rill.iinfo(dtype)
    low = -info.max if info.min == 0 and not isinstance(value, float) else info.min
    if not low <= value <= info.max:
        raise RuntimeError(f"value cannot be converted to type {str(dtype).split('.')[-1]} without overflow")
    v = int(value)
    return v % (info.max + 1) if v < 0 and info.min == 0 else v
