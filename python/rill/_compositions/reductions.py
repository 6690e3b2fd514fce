"""Reductions: counts, nan-reductions, moments and cumulative extremes, statistics and distances (cov, cdist,
...), order statistics (median, quantile, mode)."""
import builtins
import collections

import rill
from rill._C import Tensor
from rill._compositions import _introsort
from rill._compositions._common import _along, _dim, _float, _inf, _opmath
from rill._compositions.pointwise import isfinite, isnan
from rill._compositions.shape import diff


# --- reductions ----------------------------------------------------------------------------------------------------

_aminmax = collections.namedtuple("aminmax", ["min", "max"])
_values_indices = {name: collections.namedtuple(name, ["values", "indices"]) for name in ("cummax", "cummin")}


def count_nonzero(input, dim=None):
    """The number of non-zero elements (along dim)."""
    return (input != 0).sum() if dim is None else (input != 0).sum(dim)


def aminmax(input, *, dim=None, keepdim=False):
    """(amin, amax) of input (along dim)."""
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        lo, hi = input.amin(), input.amax()
        if keepdim:
            lo, hi = lo.reshape([1] * input.dim()), hi.reshape([1] * input.dim())
        return _aminmax(lo, hi)
    return _aminmax(input.amin(dim, keepdim), input.amax(dim, keepdim))


def _reduce_args(dim):
    return () if dim is None else (dim,)


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """The sum, NaNs counted as zero."""
    x = rill.where(isnan(input), 0, input) if input.is_floating_point() else input
    return x.sum(*_reduce_args(dim), keepdim=keepdim, dtype=dtype) if dim is not None else (
        x.sum(dtype=dtype) if not keepdim else x.sum(list(range(x.dim())), keepdim=True, dtype=dtype))


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean of the non-NaN elements."""
    if not input.is_floating_point() and dtype is None:
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got {input.dtype}")
    x = input if dtype is None else input.to(dtype)
    count = nansum(rill.logical_not(isnan(x)).to(x.dtype), dim, keepdim)
    return nansum(x, dim, keepdim) / count


def _moments(fn, input, dim, unbiased, keepdim, correction):
    if isinstance(dim, builtins.bool):  # the (input, unbiased) overload
        dim, unbiased = None, dim
    if unbiased is None:
        moment = fn(input, dim, correction=correction, keepdim=keepdim)
    else:  # the (input, dim, unbiased, keepdim) overload, which takes no correction (a TypeError names both)
        moment = fn(input, dim, unbiased, keepdim, **({} if correction is None else {"correction": correction}))
    return moment, input.mean(
        *(() if dim is None else (dim,)), keepdim=keepdim) if dim is not None or not keepdim else input.mean(
        list(range(input.dim())), keepdim=True)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) of input (along dim)."""
    return _moments(rill.std, input, dim, unbiased, keepdim, correction)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) of input (along dim)."""
    return _moments(rill.var, input, dim, unbiased, keepdim, correction)


@_opmath
def logcumsumexp(input, dim):
    """log(cumsum(exp(input))) along dim, computed without overflow."""
    x = _float(input)
    if x.dim() == 0:
        return x.clone()
    shift = x.detach().amax(dim, keepdim=True)
    shift = rill.where(isfinite(shift), shift, 0.0)
    return rill.log(rill.cumsum(rill.exp(x - shift), dim)) + shift


def _cumulative_extreme(name, input, dim, better):
    d = _dim(dim, input.dim())
    if input.dim() == 0:
        return _values_indices[name](input.clone(), rill.zeros((), dtype=rill.int64))
    with rill.no_grad():
        x = input.detach()
        best, index = x.select(d, 0), rill.zeros(tuple(x.select(d, 0).shape), dtype=rill.int64)
        indices = [index]
        for i in range(1, x.shape[d]):
            v = x.select(d, i)
            take_new = better(v, best) if not x.is_floating_point() else (best == best) & (better(v, best) | (v != v))
            best, index = rill.where(take_new, v, best), rill.where(take_new, i, index)
            indices.append(index)
        indices = rill.stack(indices, d)
    return _values_indices[name](rill.take_along_dim(input, indices, d), indices)


def cummax(input, dim):
    """(running maximum along dim, the index it was taken from)."""
    return _cumulative_extreme("cummax", input, dim, lambda v, best: v >= best)


def cummin(input, dim):
    """(running minimum along dim, the index it was taken from)."""
    return _cumulative_extreme("cummin", input, dim, lambda v, best: v <= best)


def _trapezoid_pairs(y, x, dim):
    """(the dim, the sums of neighbouring samples along it in y's own dtype, and the spacings diff(x) or
    None), as PyTorch's formulas take them: integer sums wrap in their dtype there too."""
    d = _dim(dim, y.dim())
    n = y.shape[d]
    pairs = y.narrow(d, 1, builtins.max(n - 1, 0)) + y.narrow(d, 0, builtins.max(n - 1, 0)) if n else y
    if x is None:
        return d, pairs, None
    if x.dim() == 1:
        x = _along(x, d, y.dim())
    xd = d if x.dim() == y.dim() else _dim(dim, x.dim())
    return d, pairs, diff(x, dim=xd)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule along dim, with sample points x or spacing dx (default 1)."""
    if y.shape[_dim(dim, y.dim())] == 0:
        return rill.zeros([s for i, s in enumerate(y.shape) if i != _dim(dim, y.dim())], dtype=y.dtype)
    d, pairs, spacing = _trapezoid_pairs(y, x, dim)
    if spacing is not None:
        return (spacing * pairs).sum(d) / 2.0
    ends = y.select(d, 0) + y.select(d, -1)
    return (y.sum(d) - ends * 0.5) * (1 if dx is None else dx)


def trapz(y, x=None, *, dx=None, dim=-1):
    """trapezoid (the older name)."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid rule along dim."""
    d, pairs, spacing = _trapezoid_pairs(y, x, dim)
    terms = (spacing * pairs) / 2.0 if spacing is not None else ((1 if dx is None else dx) / 2.0) * pairs
    return rill.cumsum(terms, d)


def sum_to_size(input, *size):
    """input summed down to size (which input must broadcast to)."""
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    if not size:
        return input.sum()  # PyTorch sums to a 0-dim size even from a 0-dim input (bool becomes int64)
    lead = input.dim() - len(size)
    if lead < 0 or builtins.any(s != 1 and s != n for s, n in zip(size, input.shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(input.shape)}}}.")
    dims = list(range(lead)) + [lead + i for i, s in enumerate(size) if s == 1 and input.shape[lead + i] != 1]
    out = input.sum(dims, keepdim=True) if dims else input
    return out.reshape(size) if lead else out

# --- statistics and distances --------------------------------------------------------------------------------------

def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in input's rows (observations in its columns); in input's
    floating dtype promoted with aweights' (float16 input with float32 aweights gives float32), as PyTorch."""
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    out_dtype = _float(input).dtype
    if aweights is not None and aweights.is_floating_point():
        out_dtype = rill.promote_types(out_dtype, aweights.dtype)
    x = _float(input)
    x = x.float() if x.dtype in (rill.float16, rill.bfloat16) else x  # computed in float32, as PyTorch's CPU
    x = x.reshape(1, -1) if input.dim() < 2 else x
    w = None
    for name, weights in (("fweights", fweights), ("aweights", aweights)):
        if weights is not None:
            if weights.dim() > 1 or weights.shape[0] != x.shape[1]:
                raise RuntimeError(f"cov(): expected {name} to be a 1-D tensor with {x.shape[1]} elements")
            w = weights if w is None else w * weights
    if w is None:
        total = x.shape[1]
        mean = x.mean(1, keepdim=True)
        norm = total - correction
    else:
        total = w.sum()  # in the weights' dtype, as PyTorch (float32 aweights round the norm in float32)
        mean = (x * w).sum(1, keepdim=True) / total
        if correction == 0 or aweights is None:
            norm = total - correction
        else:
            norm = total - correction * (w * aweights).sum() / total
    centered = x - mean
    weighted = centered if w is None else centered * w
    norm = rill.clamp_min(rill.tensor(norm, dtype=x.dtype) if not isinstance(norm, Tensor) else norm, 0)
    out = (rill.matmul(weighted, centered.transpose(0, 1)) / norm).to(out_dtype)
    return out.reshape(()) if x.shape[0] == 1 else out


def corrcoef(input):
    """The Pearson correlation coefficients of the variables in input's rows."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    stddev = rill.sqrt(d)
    c = c / stddev.reshape(-1, 1) / stddev.reshape(1, -1)
    return c.clamp(-1, 1)


def _pnorm(x, p, dim):
    if p == 0:
        return rill.sign(x).abs().sum(dim)
    if p == _inf:
        return x.abs().amax(dim)
    return rill.linalg.vector_norm(x, p, dim)


@_opmath
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distances between each row of x1 and each row of x2 (batched)."""
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D, X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    return _pnorm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1)


@_opmath
def dist(input, other, p=2):
    """The p-norm of input - other."""
    return _pnorm((input - other).reshape(-1), p, 0)


@_opmath
def renorm(input, p, dim, maxnorm):
    """input with each slice along dim rescaled to p-norm at most maxnorm."""
    d = _dim(dim, input.dim())
    others = [i for i in range(input.dim()) if i != d]
    norms = rill.linalg.vector_norm(input, p, others, keepdim=True) if others else input.abs()
    return input * rill.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0).to(input.dtype)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """input with each run of equal consecutive elements (or slices along dim) collapsed to one."""
    x = input.reshape(-1) if dim is None else rill.movedim(input, dim, 0)
    n = x.shape[0]
    if n == 0:
        starts = rill.zeros((0,), dtype=rill.bool)
    else:
        changed = (x[1:] != x[:-1]).reshape(n - 1, -1).any(1) if n > 1 else rill.zeros((0,), dtype=rill.bool)
        starts = rill.cat([rill.ones((1,), dtype=rill.bool), changed])
    values = x[starts]
    if dim is not None:
        values = rill.movedim(values, 0, dim)
    out = [values]
    if return_inverse:
        inverse = rill.cumsum(starts.to(rill.int64), 0) - 1
        out.append(inverse.reshape(tuple(input.shape)) if dim is None else inverse)
    if return_counts:
        bounds = rill.cat([rill.nonzero(starts).reshape(-1), rill.tensor([n])])
        out.append(bounds[1:] - bounds[:-1])
    return out[0] if len(out) == 1 else tuple(out)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """For each value of input, the index in sorted_sequence's last dimension that keeps it sorted."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("side and right can't be set to opposites, got side of left while right was True")
        right = side == "right"
    seq = sorted_sequence if sorter is None else rill.take_along_dim(sorted_sequence, sorter, -1)
    scalar = not isinstance(input, Tensor)
    values = rill.tensor(input, dtype=seq.dtype) if scalar else input
    if seq.dim() > 1 and tuple(seq.shape[:-1]) != tuple(values.shape[:-1]):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match")
    v = values.unsqueeze(-1)
    s = seq if seq.dim() == 1 else seq.unsqueeze(-2)
    below = (s <= v) if right else (s < v)
    return below.sum(-1).to(rill.int32 if out_int32 else rill.int64)


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """For each value of input, the index of its bucket among the 1-D boundaries."""
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)

# --- order statistics ----------------------------------------------------------------------------------------------

_median_type = {name: collections.namedtuple(name, ["values", "indices"]) for name in ("median", "nanmedian", "mode")}


def _median(name, input, dim, keepdim, ignore_nan):
    if dim is None:
        flat = input.reshape(-1)
        if flat.numel() == 0:
            return rill.full((), float("nan"), dtype=input.dtype) if input.is_floating_point() else flat.sum()
        return _median(name, flat, 0, False, ignore_nan).values
    d = _dim(dim, input.dim())
    x = input if input.dim() else input.reshape(1)
    values, indices = rill.sort(x, d, stable=True)
    nan = isnan(x)
    if ignore_nan:
        position = ((rill.logical_not(nan).sum(d, keepdim=True) - 1) // 2).clamp_min(0)
    else:
        position = rill.full(tuple(nan.any(d, keepdim=True).shape), builtins.max((x.shape[d] - 1) // 2, 0),
                             dtype=rill.int64)
        if input.is_floating_point():  # the median of a slice with NaNs is its first NaN (sort puts them last)
            position = rill.where(nan.any(d, keepdim=True), x.shape[d] - nan.sum(d, keepdim=True), position)
    picked = rill.take_along_dim(values, position, d)
    index = rill.take_along_dim(indices, position, d)
    if not keepdim or not input.dim():
        picked, index = picked.squeeze(d), index.squeeze(d)
    return _median_type[name](picked, index)


def median(input, dim=None, keepdim=False):
    """The lower median (of all elements, or (values, indices) along dim); NaN when there is a NaN."""
    return _median("median", input, dim, keepdim, False)


def nanmedian(input, dim=None, keepdim=False):
    """median, ignoring NaNs."""
    return _median("nanmedian", input, dim, keepdim, True)


def _quantile(name, input, q, dim, keepdim, interpolation, ignore_nan):
    modes = ("linear", "lower", "higher", "midpoint", "nearest")
    if interpolation not in modes:
        raise ValueError(f"{name}() interpolation must be one of {', '.join(modes)}. Got '{interpolation}'")
    if not input.is_floating_point():
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    scalar_q = not isinstance(q, Tensor)
    qs = rill.tensor([q] if scalar_q else q.reshape(-1).tolist(), dtype=rill.float64)
    if ((qs < 0) | (qs > 1)).any().item():
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else _dim(dim, x.dim())
    x = x if x.dim() else x.reshape(1)
    values = rill.sort(x, d)[0]
    nan = isnan(x)
    count = (rill.logical_not(nan).sum(d, keepdim=True) if ignore_nan else rill.full_like(
        nan.sum(d, keepdim=True), x.shape[d])).to(rill.float64)
    qshape = [-1] + [1] * x.dim()
    rank = qs.reshape(qshape) * (count - 1).clamp_min(0).unsqueeze(0)
    lo, hi = rank.floor(), rank.ceil()
    if interpolation == "lower":
        lo = hi = lo
    elif interpolation == "higher":
        lo = hi = hi
    elif interpolation == "nearest":
        lo = hi = rill.round(rank)
    top = x.shape[d] - 1
    stack = values.unsqueeze(0).expand(qs.shape[0], *values.shape)
    a = rill.take_along_dim(stack, lo.to(rill.int64).clamp(0, top), d + 1)
    b = rill.take_along_dim(stack, hi.to(rill.int64).clamp(0, top), d + 1)
    if interpolation in ("linear", "midpoint"):
        out = a + (b - a) * ((rank - lo).to(x.dtype) if interpolation == "linear" else 0.5)
    else:
        out = a
    bad = (nan.any(d, keepdim=True) if not ignore_nan else count == 0).unsqueeze(0)
    out = rill.where(bad, float("nan"), out)
    if input.dim() == 0:
        out = out.reshape(qs.shape[0])
    elif not keepdim:
        out = out.squeeze(d + 1)
    elif dim is None:
        out = out.reshape([qs.shape[0]] + [1] * input.dim())
    return out.squeeze(0) if scalar_q or (isinstance(q, Tensor) and q.dim() == 0) else out


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles (of all elements, or along dim), interpolated as interpolation says."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile, ignoring NaNs."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


def mode(input, dim=-1, keepdim=False):
    """The most frequent value along dim (the smallest of equally frequent ones) and the index PyTorch's CPU
    kernel reports for it: the last one up to 16 elements, otherwise the one std::sort's unstable order leaves
    last (_introsort)."""
    d = _dim(dim, input.dim())
    x = (input if input.dim() else input.reshape(1)).movedim(d, -1)
    equal_to = x.unsqueeze(-1) == x.unsqueeze(-2)
    counts = equal_to.sum(-1)
    top = counts.amax(-1, keepdim=True)
    best = counts == top
    sorted_values = rill.sort(x, -1)[0]
    big = sorted_values[..., -1:]
    value = rill.where(best, x, big).amin(-1, keepdim=True)
    n = x.shape[-1]
    index = rill.where(x == value, rill.arange(n), -1).amax(-1, keepdim=True)
    index = _sorted_tie_index(x, index, top)
    value = rill.take_along_dim(x, index, -1)
    value, index = value.movedim(-1, d), index.movedim(-1, d)
    if not keepdim or not input.dim():
        value, index = value.squeeze(d), index.squeeze(d)
    return _median_type["mode"](value, index)


def _sorted_tie_index(x, index, top):
    """index with each row whose mode is tied beyond 16 elements (where std::sort is unstable), or that holds a
    NaN (which no order sorts), replaced by the index PyTorch's std::sort leaves last in the mode's run."""
    n = x.shape[-1]
    if n == 0:
        return index
    replay = top.reshape(-1) > (1 if n > _introsort._THRESHOLD else n)
    if x.is_floating_point():
        replay = replay | isnan(x).reshape(-1, n).any(-1)
    rows = replay.nonzero().reshape(-1).tolist()
    if not rows:
        return index
    flat = x.detach().reshape(-1, n)
    flat = flat.double() if flat.dtype in (rill.float16, rill.bfloat16) else flat  # exact, compared as PyTorch does
    picked = index.reshape(-1).tolist()
    for r in rows:
        picked[r] = _introsort.mode_index(flat[r].tolist())
    return rill.tensor(picked, dtype=rill.int64).reshape(tuple(index.shape))

__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and callable(_v) and getattr(_v, "__module__", None) == __name__]
