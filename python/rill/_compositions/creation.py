"""Creation functions: eye, linspace, logspace, tril/triu_indices, ..."""
import math

import rill
from rill._C import Tensor
from rill._compositions._common import _to_integer


# --- creation ------------------------------------------------------------------------------------------------------

def eye(n, m=None, *, dtype=None, layout=None, device=None, requires_grad=False, out=None, pin_memory=False):
    """The n x m identity matrix."""
    m = n if m is None else m
    if n < 0 or m < 0:
        raise RuntimeError(f"n and m must be non-negative, got n={n}, m={m}")
    out = (rill.arange(n).reshape(-1, 1) == rill.arange(m).reshape(1, -1)).to(
        rill.get_default_dtype() if dtype is None else dtype)
    return out.requires_grad_() if requires_grad else out


def _triangle_indices(row, col, offset, dtype, keep):
    if row < 0 or col < 0:
        raise RuntimeError(f"row and col must be non-negative, got row={row}, col={col}")
    diag = rill.arange(col).reshape(1, -1) - rill.arange(row).reshape(-1, 1)
    return rill.nonzero(keep(diag, offset)).transpose(0, 1).to(dtype).contiguous()


def tril_indices(row, col, offset=0, *, dtype=rill.int64, device=None, layout=None):
    """The (2, N) coordinates of the lower triangle (at and below the offset diagonal) of a row x col matrix."""
    return _triangle_indices(row, col, offset, dtype, lambda d, k: d <= k)


def triu_indices(row, col, offset=0, *, dtype=rill.int64, device=None, layout=None):
    """The (2, N) coordinates of the upper triangle (at and above the offset diagonal) of a row x col matrix."""
    return _triangle_indices(row, col, offset, dtype, lambda d, k: d >= k)


def _scalar(v):
    return v.item() if isinstance(v, Tensor) else v


def linspace(start, end, steps, *, dtype=None, layout=None, device=None, requires_grad=False, out=None):
    """steps values evenly spaced from start to end (inclusive)."""
    start, end = _scalar(start), _scalar(end)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dtype = dtype if dtype is not None else rill.get_default_dtype()
    if steps == 1:
        return rill.full((1,), start, dtype=dtype).requires_grad_(requires_grad)
    if dtype.is_floating_point:
        out = _linspace_in(rill.tensor(start, dtype=dtype), rill.tensor(end, dtype=dtype), steps, dtype)
    else:
        # integral: start and end are truncated to the dtype first, the values stepped in float64
        out = _linspace_in(int(start), int(end), steps, rill.float64).to(dtype)
    return out.requires_grad_() if requires_grad else out


def _linspace_in(start, end, steps, dtype):
    """steps values from start to end, every step of the arithmetic rounded to dtype as PyTorch's CPU kernel
    rounds it: step = (end - start) / (steps - 1), the first half start + step * i and the second half
    end - step * (steps - 1 - i), with the counts i themselves rounded to dtype (float16 and bfloat16 hold
    large counts inexactly, and PyTorch's values follow those rounded counts)."""
    index = rill.arange(steps)
    step = (end - start) / rill.tensor(steps - 1, dtype=dtype) if steps > 1 else rill.tensor(0.0, dtype=dtype)
    from_start = start + step * index.to(dtype)
    from_end = end - step * (steps - 1 - index).to(dtype)
    return rill.where(index < steps // 2, from_start, from_end)


def logspace(start, end, steps, base=10.0, *, dtype=None, layout=None, device=None, requires_grad=False, out=None):
    """base ** linspace(start, end, steps)."""
    dtype = dtype if dtype is not None else rill.get_default_dtype()
    if not dtype.is_floating_point and dtype != rill.bool and steps >= 1:
        return _integer_logspace(_scalar(start), _scalar(end), steps, base, dtype)
    exponents = linspace(start, end, steps, dtype=rill.float64)
    out = rill.pow(rill.full((steps,), float(base), dtype=rill.float64), exponents).to(dtype)
    return out.requires_grad_() if requires_grad else out


def _integer_logspace(start, end, steps, base, dtype):
    """logspace's integer values as PyTorch's CPU kernel computes them: start and end converted to dtype first
    (logspace(0, 1.2, 2) is [1, 10]), the step, each exponent (the first half counted from start, the rest from
    end) and the power in float64, and the power converted to dtype as x86 does: truncated through int32 for the
    narrower dtypes (int8 keeps the low bits of 1000: -24), and the int32 (int64) minimum where it does not fit
    (NaN included)."""
    if steps == 1:  # base ** start in float64, held by dtype or refused (as fill_ refuses it)
        try:
            value = float(base) ** float(start)
        except (ZeroDivisionError, OverflowError):
            value = math.inf
        return rill.full((1,), value if isinstance(value, float) else math.nan, dtype=dtype)  # complex: NaN
    lo, hi = _to_integer(start, dtype), _to_integer(end, dtype)
    index = rill.arange(steps)
    step = (hi - lo) / (steps - 1)
    from_start = lo + step * index.double()
    from_end = hi - step * (steps - 1 - index).double()
    exponents = rill.where(index < steps // 2, from_start, from_end)
    values = rill.pow(rill.full((steps,), float(base), dtype=rill.float64), exponents)
    bits = 63 if dtype == rill.int64 else 31
    fits = rill.isfinite(values) & (values >= -2.0 ** bits) & (values < 2.0 ** bits)
    return rill.where(fits, rill.trunc(values), -2.0 ** bits).to(rill.int64).to(dtype)


def _strided_extent(size, stride, name):
    size, stride = [int(n) for n in size], [int(st) for st in stride]
    if len(size) != len(stride):
        raise RuntimeError(f"[{name}] mismatch in length of strides and shape: {len(size)} sizes but "
                           f"{len(stride)} strides")
    if any(n < 0 for n in size) or any(st < 0 for st in stride):
        raise RuntimeError(f"[{name}] sizes and strides must be non-negative, got {size} and {stride}")
    if any(n == 0 for n in size):
        return size, stride, 0
    return size, stride, 1 + sum((n - 1) * st for n, st in zip(size, stride))


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """An uninitialised tensor of size whose elements lie stride apart in fresh memory."""
    size, stride, extent = _strided_extent(size, stride, "empty_strided")
    out = rill.empty(extent, dtype=rill.get_default_dtype() if dtype is None else dtype).as_strided(size, stride, 0)
    return out.requires_grad_() if requires_grad else out


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """An uninitialised tensor of size whose dims lie in memory in the order physical_layout (outermost first)."""
    size, order = [int(n) for n in size], [int(d) for d in physical_layout]
    if sorted(order) != list(range(len(size))):
        raise RuntimeError(f"[empty_permuted] physical_layout {order} must be a permutation of the "
                           f"{len(size)} dims of size {size}")
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    dense = rill.empty([size[d] for d in order], dtype=rill.get_default_dtype() if dtype is None else dtype)
    out = dense.permute(inverse)
    return out.requires_grad_() if requires_grad else out


def _new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                       pin_memory=False):
    """An uninitialised tensor of size and stride, of this tensor's dtype unless dtype is given."""
    return empty_strided(size, stride, dtype=self.dtype if dtype is None else dtype, requires_grad=requires_grad)


if not hasattr(Tensor, "new_empty_strided"):
    Tensor.new_empty_strided = _new_empty_strided


__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and callable(_v) and getattr(_v, "__module__", None) == __name__]
