"""Shape compositions: stacking, splitting and broadcasting, real-tensor identities and copies of views, scatters
into copies, indexing and counting."""
import builtins
import math
import numbers

import numpy as np

import rill
from rill._C import Tensor
from rill._compositions._common import _along, _dim, _false_like, _inf


# --- stacking, splitting, broadcasting -----------------------------------------------------------------------------

def _each(tensors, fn):
    if len(tensors) == 1 and isinstance(tensors[0], Tensor):
        return fn(tensors[0])
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    return tuple(fn(t) for t in tensors)


def atleast_1d(*tensors):
    """Each tensor with at least one dimension."""
    return _each(tensors, lambda t: t.reshape(1) if t.dim() == 0 else t)


def atleast_2d(*tensors):
    """Each tensor with at least two dimensions (new ones in front)."""
    return _each(tensors, lambda t: t.reshape((1,) * (2 - t.dim()) + tuple(t.shape)) if t.dim() < 2 else t)


def atleast_3d(*tensors):
    """Each tensor with at least three dimensions: (n,) -> (1, n, 1), (m, n) -> (m, n, 1)."""
    shapes = {0: lambda s: (1, 1, 1), 1: lambda s: (1, s[0], 1), 2: lambda s: (s[0], s[1], 1)}
    return _each(tensors, lambda t: t.reshape(shapes[t.dim()](tuple(t.shape))) if t.dim() < 3 else t)


def _sequence(name, tensors):
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' must be a tuple or list of Tensors")
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


def hstack(tensors):
    """Tensors concatenated column-wise (along dim 0 for 1-D ones)."""
    ts = atleast_1d(tuple(_sequence("hstack", tensors)))
    return rill.cat(ts, 0 if ts[0].dim() == 1 else 1)


def vstack(tensors):
    """Tensors concatenated row-wise, 1-D ones as rows."""
    return rill.cat(atleast_2d(tuple(_sequence("vstack", tensors))), 0)


row_stack = vstack


def dstack(tensors):
    """Tensors concatenated along the third dimension."""
    return rill.cat(atleast_3d(tuple(_sequence("dstack", tensors))), 2)


def column_stack(tensors):
    """Tensors as columns: 0-D and 1-D ones become columns, the rest are concatenated along dim 1."""
    ts = _sequence("column_stack", tensors)
    return rill.cat([t.reshape(-1, 1) if t.dim() < 2 else t for t in ts], 1)


def _one_of(name, **given):
    """The one argument given (not None) among alternatives named by PyTorch's overloads."""
    values = [v for v in given.values() if v is not None]
    if len(values) != 1:
        raise TypeError(f"{name}() takes one of the arguments {', '.join(given)}")
    return values[0]


# The most slices repeat_interleave makes along its dim (more could not be allocated, or would not finish).
_MAX_REPEATED = 1 << 32
# The most tensors one call may return: a larger count (tensor_split(x, 10**18)) would not finish.
_MAX_PIECES = 1 << 24


def tensor_split(input, sections=None, dim=0, *, indices=None, tensor_indices_or_sections=None,
                 indices_or_sections=None):
    """input split along dim into sections nearly equal parts (an int) or at indices (a sequence)."""
    indices_or_sections = _one_of("tensor_split", sections=sections, indices=indices,
                                  tensor_indices_or_sections=tensor_indices_or_sections,
                                  indices_or_sections=indices_or_sections)
    d = _dim(dim, input.dim())
    size = input.shape[d]
    if isinstance(indices_or_sections, Tensor):
        if indices_or_sections.dim() > 1 or indices_or_sections.is_floating_point():
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               "one-dimensional tensor of integers")
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, numbers.Integral):
        n = builtins.int(indices_or_sections)
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        if n > _MAX_PIECES:
            raise RuntimeError(f"tensor_split into {n} sections would make {n} tensors; the most is {_MAX_PIECES}")
        small, extra = divmod(size, n)
        bounds = [i * small + builtins.min(i, extra) for i in range(1, n)]
    else:
        bounds = [builtins.int(i) for i in indices_or_sections]
    starts = [0] + bounds
    ends = bounds + [size]
    out = []
    for s, e in zip(starts, ends):
        s, e = builtins.min(builtins.max(s if s >= 0 else s + size, 0), size), builtins.min(
            builtins.max(e if e >= 0 else e + size, 0), size)
        out.append(input.narrow(d, s, builtins.max(e - s, 0)))
    return tuple(out)


def _split_at(name, input, sections, indices, dim, min_dim):
    indices_or_sections = _one_of(name, sections=sections, indices=indices)
    if input.dim() < min_dim:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} dimension, but got a tensor "
                           f"with {input.dim()} dimensions!")
    if isinstance(indices_or_sections, numbers.Integral) and (
            indices_or_sections == 0 or input.shape[dim] % indices_or_sections):
        raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                           f"dimension {input.shape[dim]} is not divisible by the split_size "
                           f"{indices_or_sections}!")
    return tensor_split(input, indices_or_sections, dim)


def hsplit(input, sections=None, *, indices=None):
    """tensor_split along dim 1 (dim 0 for a 1-D tensor), equal parts only."""
    return _split_at("hsplit", input, sections, indices, 1 if input.dim() > 1 else 0, 1)


def vsplit(input, sections=None, *, indices=None):
    """tensor_split along dim 0, equal parts only."""
    return _split_at("vsplit", input, sections, indices, 0, 2)


def dsplit(input, sections=None, *, indices=None):
    """tensor_split along dim 2, equal parts only."""
    return _split_at("dsplit", input, sections, indices, 2, 3)


def unbind(input, dim=0):
    """The slices of input along dim, as a tuple."""
    d = _dim(dim, input.dim())
    return tuple(input.select(d, i) for i in range(input.shape[d]))


def broadcast_shapes(*shapes):
    """The shape tensors of the given shapes broadcast to."""
    shapes = [(s,) if isinstance(s, numbers.Integral) else tuple(s) for s in shapes]
    ndim = builtins.max([len(s) for s in shapes], default=0)
    out = [1] * ndim
    for s in shapes:
        for i, n in enumerate(s, ndim - len(s)):
            if n < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(s)}")
            if n != out[i] and n != 1 and out[i] != 1:
                raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape. "
                                   f"Mismatch is between {list(out)} and {list(s)}.")
            out[i] = n if out[i] == 1 else out[i]
    return rill.Size(out)


def broadcast_to(input, size):
    """input expanded to size (a view)."""
    return input.expand(*size)


def broadcast_tensors(*tensors):
    """The tensors expanded to their common shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    shape = broadcast_shapes(*[tuple(t.shape) for t in tensors])
    return tuple(t.expand(*shape) for t in tensors)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 1-D tensors; indexing 'ij' (matrix, the default) or 'xy' (Cartesian)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.dim()}D")
    ts = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t.shape[0] for t in ts]
    grids = [t.reshape([-1 if i == k else 1 for i in range(len(ts))]).expand(*shape) for k, t in enumerate(ts)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    """The Cartesian product of 1-D tensors, one row per combination."""
    if len(tensors) == 1:
        return tensors[0]
    return rill.stack([g.reshape(-1) for g in meshgrid(*tensors, indexing="ij")], 1)


def ravel(input):
    """input flattened to 1-D."""
    return input.reshape(-1)


def rot90(input, k=1, dims=(0, 1)):
    """input rotated by 90 degrees k times in the plane of dims (from the first towards the second)."""
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = _dim(dims[0], input.dim()), _dim(dims[1], input.dim())
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return input.flip([d1]).transpose(d0, d1)
    if k == 2:
        return input.flip([d0, d1])
    if k == 3:
        return input.flip([d0]).transpose(d0, d1)
    return input.clone()


def msort(input):
    """input sorted along dim 0."""
    return rill.sort(input, 0)[0]


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along dim (logical xor for bool tensors)."""
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n == 0:
        return input
    d = _dim(dim, input.dim())
    parts = [p for p in (prepend, input, append) if p is not None]
    x = rill.cat([p.expand(*[1 if i == d else s for i, s in enumerate(input.shape)]) if p.dim() == 0 else p
                  for p in parts], d) if len(parts) > 1 else input
    for _ in range(n):
        size = x.shape[d]
        if size == 0:
            break
        hi, lo = x.narrow(d, 1, size - 1), x.narrow(d, 0, size - 1)
        x = rill.logical_xor(hi, lo) if x.dtype == rill.bool else hi - lo
    return x


def cross(input, other, dim=None):
    """The cross product of 3-vectors along dim (the first dimension of size 3 when dim is None)."""
    input, other = broadcast_tensors(input, other)
    if dim is None:
        dims = [i for i, s in enumerate(input.shape) if s == 3]
        if not dims:
            raise RuntimeError("no dimension of size 3 in input")
        dim = dims[0]
    d = _dim(dim, input.dim())
    if input.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} and "
                           f"{other.shape[d]}")
    return (rill.roll(input, -1, d) * rill.roll(other, -2, d)) - (rill.roll(input, -2, d) * rill.roll(other, -1, d))


def take(input, index):
    """The elements of input (as if flattened) at index, shaped like index."""
    return input.reshape(-1)[index.reshape(-1)].reshape(tuple(index.shape))


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element (or slice along dim) repeated repeats times; repeat_interleave(r) repeats arange(len(r))."""
    if repeats is None:
        return repeat_interleave(rill.arange(input.shape[0], dtype=input.dtype), input, 0)
    if dim is None:
        input, dim = input.reshape(-1), 0
    d = _dim(dim, input.dim())
    counts = repeats.reshape(-1).tolist() if isinstance(repeats, Tensor) else [repeats]
    if builtins.any(c < 0 for c in counts):
        raise RuntimeError("repeats can not be negative")
    if len(counts) == 1:
        counts = counts * input.shape[d]
    if len(counts) != input.shape[d]:
        raise RuntimeError("repeats must have the same size as input along dim")
    total = builtins.sum(builtins.int(c) for c in counts)
    if total > _MAX_REPEATED:
        raise RuntimeError(f"repeat_interleave would make {total} slices along dim {d}; the most is {_MAX_REPEATED}")
    index = np.repeat(np.arange(len(counts), dtype=np.int64), np.asarray(counts, dtype=np.int64))
    return input.index_select(d, rill.from_numpy(index))

# --- real-tensor identities and copies of views --------------------------------------------------------------------

def _same(input):
    return input


real = conj = resolve_conj = resolve_neg = _same


def conj_physical(input):
    """A copy of input (the conjugate of a real tensor)."""
    return input.clone()


def fill(input, value):
    """A tensor like input filled with value."""
    value = value.to(input.dtype) if isinstance(value, Tensor) else value
    return rill.where(rill.ones(tuple(input.shape), dtype=rill.bool), value, input)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    """A 0-D tensor holding s (float32 by default)."""
    return rill.tensor(s, dtype=rill.get_default_dtype() if dtype is None else dtype, requires_grad=requires_grad)


def split_with_sizes(input, split_sizes, dim=0):
    """input split along dim into pieces of the given sizes (which must add up to its size)."""
    d = _dim(dim, input.dim())
    if builtins.sum(split_sizes) != input.shape[d]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {input.shape[d]} (input "
                           f"tensor's size at dimension {dim}), but got split_sizes={list(split_sizes)}")
    return rill.split(input, list(split_sizes), d)


def unsafe_split(input, split_size, dim=0):
    """split (rill's pieces are always safe to modify)."""
    return rill.split(input, split_size, dim)


def unsafe_chunk(input, chunks, dim=0):
    """chunk (rill's pieces are always safe to modify)."""
    return rill.chunk(input, chunks, dim)


def _copy_of(view, name):
    def copy(input, *args, **kwargs):
        out = view(input, *args, **kwargs)
        return tuple(t.clone() for t in out) if isinstance(out, (tuple, list)) else out.clone()
    copy.__name__ = f"{name}_copy"
    copy.__doc__ = f"A copy of {name}'s view."
    return copy


def _unfold(self, dimension, size, step):
    """The windows of length size, step apart, along dimension, in a new last dimension."""
    d = _dim(dimension, self.dim())
    length = self.shape[d] if self.dim() else 1
    if size > length or size < 0:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    x = self if self.dim() else self.reshape(1)
    count = (length - size) // step + 1
    index = (rill.arange(count).reshape(-1, 1) * step + rill.arange(size).reshape(1, -1)).reshape(-1)
    windows = x.index_select(d, index)
    shape = list(x.shape[:d]) + [count, size] + list(x.shape[d + 1:])
    out = rill.movedim(windows.reshape(shape), d + 1, -1)
    return out if self.dim() else out.reshape(size)


def _views():
    return {"expand": lambda input, *size, implicit=False: input.expand(*size), "view": lambda input, *shape:
            input.view(*shape), "permute": lambda input, *dims: input.permute(*dims), "t": lambda input: input.t(),
            "transpose": lambda input, dim0, dim1: input.transpose(dim0, dim1),
            "unsqueeze": lambda input, dim: input.unsqueeze(dim), "squeeze": lambda input, *dim: input.squeeze(*dim),
            "diagonal": rill.diagonal, "unbind": unbind, "unfold": _unfold,
            "narrow": lambda input, dim, start, length: input.narrow(dim, start, length),
            "alias": lambda input: input, "split_with_sizes": split_with_sizes}


for _view_name, _view in _views().items():
    globals()[f"{_view_name}_copy"] = _copy_of(_view, _view_name)

# --- scatters into copies ------------------------------------------------------------------------------------------

def _index_positions(size, index):
    """(mask, source position) along a dim of the given size for the positions in index."""
    index = index.reshape(-1).to(rill.int64)
    index = rill.where(index < 0, index + size, index)
    position = rill.zeros((size,), dtype=rill.int64).index_put((index,), rill.arange(index.shape[0]))
    mask = rill.zeros((size,), dtype=rill.bool).index_put((index,), rill.ones((index.shape[0],), dtype=rill.bool))
    return mask, position


def index_fill(input, dim, index, value):
    """A copy of input with the slices at index along dim set to value."""
    d = _dim(dim, input.dim())
    mask, _ = _index_positions(input.shape[d] if input.dim() else 1, index)
    value = value.to(input.dtype) if isinstance(value, Tensor) else value
    return rill.where(_along(mask, d, input.dim()), value, input)


def index_copy(input, dim, index, source):
    """A copy of input with the slices at index along dim taken from source's in order."""
    d = _dim(dim, input.dim())
    mask, position = _index_positions(input.shape[d] if input.dim() else 1, index)
    full = source.index_select(d, position) if source.dim() else source
    return rill.where(_along(mask, d, input.dim()), full, input)


def select_scatter(input, src, dim, index):
    """A copy of input with input.select(dim, index) replaced by src."""
    d = _dim(dim, input.dim())
    size = input.shape[d]
    i = index + size if index < 0 else index
    if not 0 <= i < size:
        raise IndexError(f"select_scatter(): index {index} out of range for tensor of size {list(input.shape)} at "
                         f"dimension {dim}")
    return rill.where(_along(rill.arange(size) == i, d, input.dim()), src.unsqueeze(d), input)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of input with input[start:end:step] along dim replaced by src."""
    d = _dim(dim, input.dim())
    positions = rill.tensor(list(range(input.shape[d]))[slice(start, end, step)], dtype=rill.int64)
    return index_copy(input, d, positions, src)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of input with its diagonal (offset, dim1, dim2) replaced by src."""
    d1, d2 = _dim(dim1, input.dim()), _dim(dim2, input.dim())
    moved = rill.movedim(input, (d1, d2), (-2, -1))
    rows, cols = rill.arange(moved.shape[-2]).reshape(-1, 1), rill.arange(moved.shape[-1]).reshape(1, -1)
    mask = (cols - rows) == offset
    index = (rows if offset >= 0 else cols).expand(moved.shape[-2], moved.shape[-1])
    index = index.clamp(0, builtins.max(src.shape[-1] - 1, 0)).reshape(-1)
    values = src.index_select(-1, index).reshape(tuple(moved.shape)) if src.shape[-1] else moved
    return rill.movedim(rill.where(mask, values, moved), (-2, -1), (d1, d2))


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """A copy of input with source's slices reduced ('prod', 'mean', 'amax' or 'amin') into the slices at index
    along dim (together with input's own values when include_self)."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin, got {reduce}.")
    d = _dim(dim, input.dim())
    x = input.movedim(d, -1) if input.dim() else input.reshape(1)
    src = (source.movedim(d, -1) if source.dim() else source.reshape(1)).to(input.dtype)
    mask = index.reshape(-1, 1) == rill.arange(x.shape[-1]).reshape(1, -1)
    touched = mask.any(0)
    fill = {"prod": 1, "mean": 0, "amax": _lowest_of(x.dtype), "amin": -_lowest_of(x.dtype) if x.is_floating_point()
            else _highest_of(x.dtype)}[reduce]
    spread = rill.where(mask, src.unsqueeze(-1), rill.full((), fill, dtype=x.dtype))
    if reduce == "mean":
        count = mask.sum(0).to(x.dtype) + (1 if include_self else 0)
        if x.dtype in (rill.float16, rill.bfloat16):
            # PyTorch adds the slices one index at a time in the 16-bit dtype, each sum rounded
            total = x.clone() if include_self else rill.zeros_like(x)
            for j, i in enumerate(index.reshape(-1).tolist()):
                total[..., i] += src[..., j]
        else:
            total = spread.sum(-2) + (x if include_self else 0)
        out = total / count.clamp_min(1) if x.is_floating_point() else rill.floor_divide(total, count.clamp_min(1))
    elif reduce == "prod":
        out = spread.prod(-2) * (x if include_self else 1)
    else:
        candidates = rill.cat([x.unsqueeze(-2), spread], -2) if include_self else spread
        out = getattr(candidates, reduce)(-2)
    out = rill.where(touched, out.to(x.dtype), x)
    return out.movedim(-1, d) if input.dim() else out.reshape(())


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """A copy of input with src's elements reduced ('sum', 'prod', 'mean', 'amax' or 'amin') into the positions
    index names along dim (together with input's own values there when include_self), as torch.scatter_reduce.
    Each line along dim is reduced through a (len(index), len(input)) mask, as index_reduce does."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if index.dtype != rill.int64:
        raise RuntimeError(f"scatter_reduce(): Expected dtype int64 for index, got {index.dtype}")
    if input.dim() == 0:
        return scatter_reduce(input.reshape(1), 0, index.reshape(-1), src.reshape(-1), reduce,
                              include_self=include_self).reshape(())
    d = _dim(dim, input.dim())
    if index.dim() != input.dim() or src.dim() != input.dim():
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if index.numel() == 0:
        return input.clone()
    for k in range(input.dim()):
        if index.shape[k] > src.shape[k] or (k != d and index.shape[k] > input.shape[k]):
            raise RuntimeError(f"Expected index {list(index.shape)} to be smaller than self {list(input.shape)} "
                               f"apart from dimension {d} and to be smaller size than src {list(src.shape)}")
    n = input.shape[d]
    if bool(((index < 0) | (index >= n)).any()):
        raise RuntimeError(f"index out of bounds for dimension {d} with size {n}")
    block = tuple(slice(0, index.shape[k]) if k != d else slice(None) for k in range(input.dim()))
    x = input[block].movedim(d, -1)
    idx = index.movedim(d, -1)
    s = src[tuple(slice(0, m) for m in index.shape)].movedim(d, -1).to(input.dtype)
    mask = idx.unsqueeze(-1) == rill.arange(n)
    touched = mask.any(-2)
    fill = {"sum": 0, "mean": 0, "prod": 1, "amax": _lowest_of(x.dtype),
            "amin": -_lowest_of(x.dtype) if x.is_floating_point() else _highest_of(x.dtype)}[reduce]
    spread = rill.where(mask, s.unsqueeze(-1), rill.full((), fill, dtype=x.dtype))
    if reduce in ("sum", "mean"):
        total = spread.sum(-2) + (x if include_self else 0)
        if reduce == "sum":
            out = total
        else:
            count = mask.sum(-2).to(x.dtype) + (1 if include_self else 0)
            out = total / count.clamp_min(1) if x.is_floating_point() else rill.floor_divide(total,
                                                                                             count.clamp_min(1))
    elif reduce == "prod":
        out = spread.prod(-2) * (x if include_self else 1)
    else:
        candidates = rill.cat([x.unsqueeze(-2), spread], -2) if include_self else spread
        out = getattr(candidates, reduce)(-2)
    out = rill.where(touched, out.to(x.dtype), x).movedim(-1, d)
    if all(index.shape[k] == input.shape[k] for k in range(input.dim()) if k != d):
        return out
    result = input.clone()
    result[block] = out
    return result


def _lowest_of(dtype):
    return -_inf if dtype.is_floating_point else {rill.uint8: 0, rill.int8: -128, rill.int16: -2 ** 15,
                                                  rill.int32: -2 ** 31, rill.int64: -2 ** 63, rill.bool: 0}[dtype]


def _highest_of(dtype):
    return _inf if dtype.is_floating_point else {rill.uint8: 255, rill.int8: 127, rill.int16: 2 ** 15 - 1,
                                                 rill.int32: 2 ** 31 - 1, rill.int64: 2 ** 63 - 1, rill.bool: 1}[dtype]

# --- indexing and counting -----------------------------------------------------------------------------------------

def masked_scatter(input, mask, source):
    """A copy of input with the positions where mask is True filled, in order, from source's elements."""
    if mask.dtype != rill.bool:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype {mask.dtype}")
    mask, input = broadcast_tensors(mask, input)
    flat = mask.reshape(-1)
    if flat.sum().item() > source.numel():
        raise RuntimeError("masked_scatter: expected source to have at least as many elements as ones in mask")
    index = (rill.cumsum(flat.to(rill.int64), 0) - 1).clamp_min(0)
    values = source.reshape(-1).index_select(0, index) if source.numel() else input.reshape(-1)
    return rill.where(mask, values.reshape(tuple(input.shape)), input)


def put(input, index, source, accumulate=False):
    """A copy of input with the elements at index (of input as if flattened) set to (or, with accumulate,
    increased by) source's."""
    flat = input.reshape(-1)
    index = index.reshape(-1)
    index = rill.where(index < 0, index + flat.shape[0], index)
    return flat.index_put((index,), source.reshape(-1), accumulate).reshape(tuple(input.shape))


def bincount(input, weights=None, minlength=0):
    """The number of occurrences of each value 0..max(input) of a 1-D non-negative integer tensor (summed
    weights with weights)."""
    if input.dim() != 1 or input.is_floating_point():
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input.numel() and input.min().item() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    size = builtins.max(minlength, input.max().item() + 1 if input.numel() else 0)
    if weights is None:
        values, dtype = rill.ones((input.shape[0],), dtype=rill.int64), rill.int64
    else:
        dtype = weights.dtype if weights.is_floating_point() and weights.dtype != rill.float16 else rill.float64
        dtype = rill.float64 if weights.dtype != rill.float32 else rill.float32
        values = weights.to(dtype)
    return rill.zeros((size,), dtype=dtype).index_add(0, input.to(rill.int64), values)


def histc(input, bins=100, min=0, max=0):
    """A histogram of input's values in bins equal bins over [min, max] (input's range when both are 0)."""
    if bins <= 0:
        raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins} for bins")
    lo, hi = builtins.float(min), builtins.float(max)
    if lo == hi and input.numel():
        lo, hi = input.min().item(), input.max().item()
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError(f"torch.histc(): max must be larger than min, but got min {lo} max {hi}")
    # As PyTorch: the outer edges are linspace's (rounded to input's dtype), and each value's bin is
    # (x - left) * bins / (right - left) with every step rounded to that dtype, then truncated. The counts are
    # exact, rounded to the dtype once.
    x = input.reshape(-1)
    x = x if x.is_floating_point() else x.to(rill.float64)
    edges = rill.linspace(lo, hi, bins + 1, dtype=x.dtype)
    left, right = edges[0], edges[-1]
    x = x[(x >= left) & (x <= right)]
    index = ((x - left) * rill.tensor(bins, dtype=x.dtype) / (right - left)).to(rill.int64).clamp(0, bins - 1)
    counts = rill.zeros((bins,), dtype=rill.float64).index_add(0, index, rill.ones(index.shape, dtype=rill.float64))
    return counts.to(input.dtype)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """True where an element of elements is among test_elements (False with invert)."""
    e = elements if isinstance(elements, Tensor) else rill.tensor(elements)
    t = test_elements if isinstance(test_elements, Tensor) else rill.tensor(test_elements)
    found = (e.unsqueeze(-1) == t.reshape(-1)).any(-1) if t.numel() else _false_like(e)
    return rill.logical_not(found) if invert else found


def combinations(input, r=2, with_replacement=False):
    """The r-length combinations of a 1-D tensor's elements, one per row."""
    import itertools
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    index = [i for combination in pick(range(input.shape[0]), r) for i in combination] if r else []
    out = input.index_select(0, rill.tensor(index, dtype=rill.int64) if index else rill.zeros((0,), dtype=rill.int64))
    return out.reshape(-1, r) if r else out


def unravel_index(indices, shape):
    """The coordinates in shape of each flat index, as a tuple of tensors."""
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    if not isinstance(indices, Tensor):
        indices = rill.tensor(indices)
    if indices.is_floating_point() or indices.dtype == rill.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    total = math.prod(shape)
    indices = indices.to(rill.int64)
    if indices.numel() and ((indices < -total) | (indices >= total)).any().item():
        raise RuntimeError("'indices' must be in range [-prod(shape), prod(shape) - 1]")
    rest = rill.where(indices < 0, indices + total, indices).to(rill.int64)
    coords = []
    for n in reversed(tuple(shape)):
        coords.append(rill.remainder(rest, n))
        rest = rill.floor_divide(rest, n)
    return tuple(reversed(coords))


def _euclid(a, b):
    a, b = broadcast_tensors(a.abs(), b.abs())
    while (b != 0).any().item():
        nonzero = b != 0
        a, b = rill.where(nonzero, b, a), rill.where(nonzero, rill.remainder(a, rill.where(nonzero, b, 1)), 0)
    return a


def gcd(input, other):
    """The greatest common divisor, elementwise (integer tensors)."""
    if input.is_floating_point() or other.is_floating_point():
        raise RuntimeError("gcd is only implemented for integer tensors")
    return _euclid(input, other)


def lcm(input, other):
    """The least common multiple, elementwise (integer tensors)."""
    g = gcd(input, other)
    return rill.where(g == 0, 0, rill.floor_divide((input * other).abs(), rill.where(g == 0, 1, g))).to(
        rill.promote_types(input.dtype, other.dtype))


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero(input) cut or padded (with fill_value) to size rows."""
    found = rill.nonzero(input)
    found = found[:size]
    if found.shape[0] < size:
        pad = rill.full((size - found.shape[0], input.dim()), fill_value, dtype=rill.int64)
        found = rill.cat([found, pad])
    return found

def as_strided_copy(input, size, stride, storage_offset=None):
    """The elements of input.as_strided(size, stride, storage_offset), in new contiguous memory."""
    return input.as_strided(size, stride, storage_offset).clone().contiguous()


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A contiguous copy of input with src written into its as_strided(size, stride, storage_offset) view."""
    out = input.clone().contiguous()
    view = out.as_strided(size, stride, 0 if storage_offset is None else storage_offset)
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"[as_strided_scatter] expected src of shape {list(view.shape)} (the view's), "
                           f"got {list(src.shape)}")
    view.copy_(src)
    return out


def _slice(input, dim=0, start=None, end=None, step=1):
    """input[start:end:step] along dim (a view), with Python's clamping of start and end."""
    if step <= 0:
        raise RuntimeError(f"[slice] step must be positive, got {step}")
    d = _dim(dim, input.dim())
    return input[(builtins.slice(None),) * d + (builtins.slice(start, end, step),)]


def _chunk_cat(tensors, dim, num_chunks):
    """Each tensor zero-padded along dim to a multiple of num_chunks, split into num_chunks chunks whose dims from
    dim on are flattened, and the chunks joined: shape tensors[0].shape[:dim] + (num_chunks, total)."""
    tensors = list(tensors)
    if not tensors or num_chunks < 1:
        raise RuntimeError("[_chunk_cat] expects a non-empty list of tensors and num_chunks >= 1")
    parts = []
    for t in tensors:
        d = _dim(dim, t.dim())
        if tuple(t.shape[:d]) != tuple(tensors[0].shape[:d]):
            raise RuntimeError("[_chunk_cat] the tensors must have the same sizes before dim, got "
                               f"{list(t.shape)} and {list(tensors[0].shape)}")
        size = t.shape[d]
        padded = -(-size // num_chunks) * num_chunks
        if padded != size:
            pad_shape = list(t.shape)
            pad_shape[d] = padded - size
            t = rill.cat([t, rill.zeros(pad_shape, dtype=t.dtype)], d)
        parts.append(t.reshape(*t.shape[:d], num_chunks, -1))
    return rill.cat(parts, len(parts[0].shape) - 1)


__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and callable(_v) and getattr(_v, "__module__", None) == __name__]
