"""rill.masked: torch.masked's reductions and normalisations of a plain tensor under a boolean mask (the
elements where mask is False take no part; mask broadcasts to the input, None means all)."""
import math

import rill
from rill._C import Tensor

_INT_LIMITS = {rill.uint8: (0, 255), rill.int8: (-128, 127), rill.int16: (-2 ** 15, 2 ** 15 - 1),
               rill.int32: (-2 ** 31, 2 ** 31 - 1), rill.int64: (-2 ** 63, 2 ** 63 - 1), rill.bool: (0, 1)}


def _prepare(input, mask, dtype):
    """(input converted to dtype, mask broadcast to it as a bool tensor)."""
    x = input if dtype is None else input.to(dtype)
    if mask is None:
        return x, rill.ones(tuple(x.shape), dtype=rill.bool)
    if not isinstance(mask, Tensor) or mask.dtype != rill.bool:
        raise ValueError("masked: mask must be a bool tensor")
    return x, mask.expand(*x.shape) if tuple(mask.shape) != tuple(x.shape) else mask


def _dims(dim, ndim):
    if dim is None:
        return list(range(ndim))
    return [dim] if isinstance(dim, int) else list(dim)


def _lowest(dtype):
    return -math.inf if dtype.is_floating_point else _INT_LIMITS[dtype][0]


def _highest(dtype):
    return math.inf if dtype.is_floating_point else _INT_LIMITS[dtype][1]


def _filled(x, mask, value):
    return rill.where(mask, x, rill.full((), value, dtype=x.dtype))


def _reduce(x, method, dim, keepdim):
    dims = _dims(dim, x.dim())
    if x.dim() == 0:
        return getattr(x, method)()
    return getattr(x, method)(dims, keepdim=keepdim) if method != "prod" else _prod(x, dims, keepdim)


def _prod(x, dims, keepdim):
    for d in sorted((d % x.dim() for d in dims), reverse=True):
        x = x.prod(d, keepdim=keepdim)
    return x


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The sum of the unmasked elements."""
    x, m = _prepare(input, mask, dtype)
    return _reduce(_filled(x, m, 0), "sum", dim, keepdim)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The product of the unmasked elements."""
    x, m = _prepare(input, mask, dtype)
    return _reduce(_filled(x, m, 1), "prod", dim, keepdim)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The largest unmasked element (the dtype's lowest value where all are masked)."""
    x, m = _prepare(input, mask, dtype)
    return _reduce(_filled(x, m, _lowest(x.dtype)), "amax", dim, keepdim)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The smallest unmasked element (the dtype's highest value where all are masked)."""
    x, m = _prepare(input, mask, dtype)
    return _reduce(_filled(x, m, _highest(x.dtype)), "amin", dim, keepdim)


def _arg(method, fill, input, dim, keepdim, dtype, mask):
    x, m = _prepare(input, mask, dtype)
    filled = _filled(x, m, fill(x.dtype))
    out = getattr(filled, method)() if dim is None else getattr(filled, method)(dim, keepdim=keepdim)
    return out.to(x.dtype)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The index of the largest unmasked element."""
    return _arg("argmax", _lowest, input, dim, keepdim, dtype, mask)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The index of the smallest unmasked element."""
    return _arg("argmin", _highest, input, dim, keepdim, dtype, mask)


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The mean of the unmasked elements (NaN where all are masked)."""
    x, m = _prepare(input, mask, dtype)
    return _reduce(_filled(x, m, 0), "sum", dim, keepdim) / _reduce(m.to(x.dtype), "sum", dim, keepdim)


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """The variance of the unmasked elements (correction 1 unless unbiased=False or correction says)."""
    x, m = _prepare(input, mask, dtype)
    if not x.is_floating_point():
        x = x.to(rill.get_default_dtype())
    c = correction if correction is not None else (0 if unbiased is False else 1)
    count = _reduce(m.to(x.dtype), "sum", dim, True)
    centered = _filled(x - _reduce(_filled(x, m, 0), "sum", dim, True) / count, m, 0)
    out = _reduce(centered * centered, "sum", dim, True) / (count - c).clamp_min(0)
    return out if keepdim else out.squeeze(tuple(d % x.dim() for d in _dims(dim, x.dim()))) if x.dim() else out


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """The standard deviation of the unmasked elements."""
    return rill.sqrt(var(input, dim, unbiased, correction=correction, keepdim=keepdim, dtype=dtype, mask=mask))


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The ord-norm of the unmasked elements."""
    x, m = _prepare(input, mask, dtype)
    return rill.linalg.vector_norm(_filled(x, m, 0), ord, _dims(dim, x.dim()) if x.dim() else None, keepdim)


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """log(sum(exp(x))) over the unmasked elements (-inf where all are masked), computed in input's dtype and
    returned in dtype (input's by default). As in PyTorch, an integer input gives an integer result (the float
    logsumexp truncated), and its masked elements count as the dtype's lowest value, so an all-masked uint8 row
    of three gives int(log(3)) = 1."""
    x, m = _prepare(input, mask, None)
    out = rill.logsumexp(_filled(x, m, _lowest(x.dtype)), _dims(dim, x.dim()), keepdim)
    return out.to(input.dtype if dtype is None else dtype)


def cumsum(input, dim, *, dtype=None, mask=None):
    """The running sum along dim, masked elements counted as 0."""
    x, m = _prepare(input, mask, dtype)
    return rill.cumsum(_filled(x, m, 0), dim).to(x.dtype)


def cumprod(input, dim, *, dtype=None, mask=None):
    """The running product along dim, masked elements counted as 1."""
    x, m = _prepare(input, mask, dtype)
    return rill.cumprod(_filled(x, m, 1), dim).to(x.dtype)


def softmax(input, dim, *, dtype=None, mask=None):
    """softmax over the unmasked elements (0 at masked ones)."""
    x, m = _prepare(input, mask, dtype)
    return rill.nn.functional.softmax(_filled(x, m, -math.inf), dim)


def log_softmax(input, dim, *, dtype=None, mask=None):
    """log_softmax over the unmasked elements (-inf at masked ones)."""
    x, m = _prepare(input, mask, dtype)
    return rill.nn.functional.log_softmax(_filled(x, m, -math.inf), dim)


def softmin(input, dim, *, dtype=None, mask=None):
    """softmin over the unmasked elements (0 at masked ones)."""
    x, m = _prepare(input, mask, dtype)
    return rill.nn.functional.softmax(_filled(-x, m, -math.inf), dim)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    """input divided by the ord-norm of its unmasked elements along dim (at least eps)."""
    x, m = _prepare(input, mask, dtype)
    return x / norm(x, ord, dim, keepdim=True, mask=m).clamp_min(eps)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """log(exp(input) + exp(other)), each side's masked elements counted as -inf."""
    x, mx = _prepare(input, input_mask, None)
    y, my = _prepare(other, other_mask, None)
    out = rill.logaddexp(_filled(x, mx, -math.inf), _filled(y, my, -math.inf))
    return out.to(input.dtype if dtype is None else dtype)


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    """The median of the unmasked elements along dim (NaN where all are masked; an integer input must have
    no fully masked row)."""
    floating = input.is_floating_point()
    x, m = _prepare(input if floating else input.to(rill.float32), mask, None)
    out = rill.nanmedian(_filled(x, m, math.nan), dim % max(x.dim(), 1), keepdim).values
    if floating:
        return out
    if bool(rill.isnan(out).any()):
        raise ValueError("masked.median: an integer input needs at least one unmasked element per row")
    return out.to(input.dtype if dtype is None else dtype)
