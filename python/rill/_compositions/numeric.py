"""Numeric compositions: torch.gradient (finite differences) and torch.histogram / histogramdd."""
import builtins
import collections
import math
import numbers

import rill
from rill._C import Tensor

__all__ = ["gradient", "histogram", "histogramdd"]


# --- gradient ------------------------------------------------------------------------------------------------------

def _gradient_dims(input, dim):
    if dim is None:
        return list(range(input.dim()))
    dims = [dim] if isinstance(dim, numbers.Integral) else list(dim)
    out = []
    for d in dims:
        if not -input.dim() <= d < max(input.dim(), 1):
            raise IndexError(f"[gradient] dim {d} is out of range for a tensor of {input.dim()} dimensions")
        out.append(d % input.dim())
    if len(set(out)) != len(out):
        raise RuntimeError("[gradient] each dim may appear only once in dim")
    return out


def _gradient_spacing(spacing, dims):
    """One spacing per dim: a number (uniform steps) or a 1-D tensor of coordinates."""
    if spacing is None:
        return [1.0] * len(dims)
    if isinstance(spacing, (numbers.Number, Tensor)) and not (isinstance(spacing, Tensor) and spacing.dim() > 0):
        return [float(spacing)] * len(dims)
    spacing = list(spacing)
    if len(spacing) == 1 and len(dims) != 1 and not isinstance(spacing[0], Tensor):
        return [float(spacing[0])] * len(dims)
    if len(spacing) != len(dims):
        raise RuntimeError(f"[gradient] expected spacing to have one entry per dim in dim ({len(dims)}), "
                           f"got {len(spacing)}")
    return [s if isinstance(s, Tensor) and s.dim() > 0 else float(s) for s in spacing]


def _along(t, dim, start, length):
    return t.narrow(dim, start, length)


def _coords_view(x, dim, ndim, start, length):
    shape = [1] * ndim
    shape[dim] = length
    return x.narrow(0, start, length).reshape(shape)


def _gradient_uniform(f, dim, h, edge_order):
    n = f.shape[dim]
    interior = (_along(f, dim, 2, n - 2) - _along(f, dim, 0, n - 2)) / (2.0 * h)
    if edge_order == 1:
        first = (_along(f, dim, 1, 1) - _along(f, dim, 0, 1)) / h
        last = (_along(f, dim, n - 1, 1) - _along(f, dim, n - 2, 1)) / h
    else:
        first = (-1.5 * _along(f, dim, 0, 1) + 2.0 * _along(f, dim, 1, 1) - 0.5 * _along(f, dim, 2, 1)) / h
        last = (0.5 * _along(f, dim, n - 3, 1) - 2.0 * _along(f, dim, n - 2, 1) + 1.5 * _along(f, dim, n - 1, 1)) / h
    return rill.cat([first, interior, last], dim)


def _gradient_coords(f, dim, x, edge_order):
    n, nd = f.shape[dim], f.dim()
    if x.dim() != 1 or x.shape[0] != n:
        raise RuntimeError(f"[gradient] a spacing tensor must be 1-D with one coordinate per element of dim "
                           f"{dim} ({n}), got shape {tuple(x.shape)}")
    dx = x[1:] - x[:-1]
    hl, hr = _coords_view(dx, dim, nd, 0, n - 2), _coords_view(dx, dim, nd, 1, n - 2)
    interior = (hl * hl * _along(f, dim, 2, n - 2) - hr * hr * _along(f, dim, 0, n - 2)
                + (hr * hr - hl * hl) * _along(f, dim, 1, n - 2)) / (hl * hr * (hl + hr))
    if edge_order == 1:
        first = (_along(f, dim, 1, 1) - _along(f, dim, 0, 1)) / _coords_view(dx, dim, nd, 0, 1)
        last = (_along(f, dim, n - 1, 1) - _along(f, dim, n - 2, 1)) / _coords_view(dx, dim, nd, n - 2, 1)
    else:
        d1, d2 = _coords_view(dx, dim, nd, 0, 1), _coords_view(dx, dim, nd, 1, 1)
        first = (-(2.0 * d1 + d2) / (d1 * (d1 + d2)) * _along(f, dim, 0, 1)
                 + (d1 + d2) / (d1 * d2) * _along(f, dim, 1, 1)
                 - d1 / (d2 * (d1 + d2)) * _along(f, dim, 2, 1))
        d1, d2 = _coords_view(dx, dim, nd, n - 3, 1), _coords_view(dx, dim, nd, n - 2, 1)
        last = (d2 / (d1 * (d1 + d2)) * _along(f, dim, n - 3, 1)
                - (d2 + d1) / (d1 * d2) * _along(f, dim, n - 2, 1)
                + (2.0 * d2 + d1) / (d2 * (d1 + d2)) * _along(f, dim, n - 1, 1))
    return rill.cat([first, interior, last], dim)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The derivative of input estimated along each dim in dim (all by default) by central differences,
    with one- or two-sided edges (edge_order 1 or 2); spacing is a number, one number per dim, or one 1-D
    tensor of coordinates per dim."""
    if edge_order not in (1, 2):
        raise ValueError(f"[gradient] edge_order must be 1 or 2, got {edge_order}")
    if input.dim() == 0:
        raise RuntimeError("[gradient] expected a tensor with at least one dimension")
    dims = _gradient_dims(input, dim)
    steps = _gradient_spacing(spacing, dims)
    if not (input.is_floating_point()):
        input = input.to(rill.get_default_dtype())
    out = []
    for d, h in zip(dims, steps):
        if input.shape[d] < edge_order + 1:
            raise RuntimeError(f"[gradient] expected each dimension size to be at least edge_order+1 "
                               f"({edge_order + 1}), dim {d} has size {input.shape[d]}")
        if isinstance(h, Tensor):
            out.append(_gradient_coords(input, d, h.to(input.dtype), edge_order))
        else:
            out.append(_gradient_uniform(input, d, h, edge_order))
    return tuple(out)


# --- histogram -----------------------------------------------------------------------------------------------------

_histogram_result = collections.namedtuple("histogram", ["hist", "bin_edges"])
_histogramdd_result = collections.namedtuple("histogramdd", ["hist", "bin_edges"])


def _bin_edges(values, bins, lo_hi, dtype, name):
    """The edges of one dimension's bins: the given tensor, or bins equal bins over lo_hi (the values' range
    when None; an empty range is widened by 0.5 each way)."""
    if isinstance(bins, Tensor):
        if bins.dim() != 1 or bins.numel() < 1:
            raise RuntimeError(f"[{name}] bins must be a 1-D tensor with at least one edge")
        if bins.dtype != dtype:
            raise RuntimeError(f"[{name}] input and bins tensors must have the same dtype, got input {dtype} "
                               f"and bins {bins.dtype}; convert the bins with .to(input.dtype)")
        return bins
    if not isinstance(bins, numbers.Integral) or bins < 1:
        raise RuntimeError(f"[{name}] bins must be a positive int or a 1-D tensor of edges, got {bins!r}")
    if lo_hi is None:
        lo, hi = (float(values.min()), float(values.max())) if values.numel() else (0.0, 1.0)
    else:
        lo, hi = float(lo_hi[0]), float(lo_hi[1])
        if lo > hi:
            raise ValueError(f"[{name}] range must be (min, max) with min <= max, got ({lo}, {hi})")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"[{name}] range [{lo}, {hi}] is not finite; pass a finite range=")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    # linspace rounds as PyTorch's does, so values on an inner edge land in the bin PyTorch puts them in
    return rill.linspace(lo, hi, int(bins) + 1, dtype=dtype)


def _bin_index(values, edges):
    """Each value's bin (edges[i] <= v < edges[i+1], the last bin closed) and whether it falls in one."""
    nbins = edges.numel() - 1
    idx = rill.searchsorted(edges, values.contiguous(), right=True) - 1
    idx = rill.where(values == edges[-1], rill.full_like(idx, nbins - 1), idx)
    inside = (values >= edges[0]) & (values <= edges[-1]) & (idx >= 0) & (idx < nbins)
    return idx.clamp(0, max(nbins - 1, 0)), inside


def _histogram_counts(points, bins, ranges, weight, density, name):
    """points: (N, D). Counts over the product of each dimension's bins, and the edges."""
    n, d = points.shape
    dtype = points.dtype
    edges = [_bin_edges(points[:, k], bins[k], None if ranges is None else ranges[k], dtype, name)
             for k in range(d)]
    sizes = [e.numel() - 1 for e in edges]
    flat = rill.zeros(n, dtype=rill.int64)
    inside = rill.ones(n, dtype=rill.bool)
    for k in range(d):
        idx, ok = _bin_index(points[:, k], edges[k])
        flat = flat * sizes[k] + idx
        inside = inside & ok
    w = rill.ones(n, dtype=dtype) if weight is None else weight.reshape(-1).to(dtype)
    total = math.prod(sizes)
    hist = rill.zeros(total, dtype=dtype).index_add(0, flat, rill.where(inside, w, rill.zeros_like(w)))
    hist = hist.reshape(sizes)
    if density:
        volume = rill.ones(sizes, dtype=dtype)
        for k in range(d):
            shape = [1] * d
            shape[k] = sizes[k]
            volume = volume * (edges[k][1:] - edges[k][:-1]).reshape(shape)
        hist = hist / (hist.sum() * volume)
    return hist, edges


def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """A histogram of input's values: (hist, bin_edges), with bins equal bins over range (input's min and max
    by default) or the given 1-D tensor of edges; weight gives each value's weight, density normalizes the
    histogram to integrate to 1."""
    if not input.is_floating_point():
        raise RuntimeError(f"[histogram] input must be a floating-point tensor, got {input.dtype}")
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise RuntimeError("[histogram] weight must have the shape of input")
    hist, edges = _histogram_counts(input.reshape(-1, 1), [bins], None if range is None else [range], weight,
                                    density, "histogram")
    return _histogram_result(hist, edges[0])


def histogramdd(input, bins=10, range=None, weight=None, density=False):
    """A D-dimensional histogram of the points input[..., :] (its last dim is D): (hist, bin_edges), bins an
    int, one int per dim or one 1-D tensor of edges per dim; range a flat list (min0, max0, min1, ...)."""
    if not input.is_floating_point():
        raise RuntimeError(f"[histogramdd] input must be a floating-point tensor, got {input.dtype}")
    if input.dim() < 1:
        raise RuntimeError("[histogramdd] input must have at least one dimension (its last holds the points)")
    d = input.shape[-1]
    bins = [bins] * d if isinstance(bins, numbers.Integral) else list(bins)
    if len(bins) != d:
        raise RuntimeError(f"[histogramdd] expected one bins entry per dimension ({d}), got {len(bins)}")
    ranges = None
    if range is not None:
        range = list(range)
        if len(range) != 2 * d:
            raise RuntimeError(f"[histogramdd] range must have 2 * {d} entries (min and max per dim), "
                               f"got {len(range)}")
        ranges = [(range[2 * k], range[2 * k + 1]) for k in builtins.range(d)]
    if weight is not None and tuple(weight.shape) != tuple(input.shape[:-1]):
        raise RuntimeError("[histogramdd] weight must have input's shape without its last dimension")
    hist, edges = _histogram_counts(input.reshape(-1, d), bins, ranges, weight, density, "histogramdd")
    return _histogramdd_result(hist, tuple(edges))
