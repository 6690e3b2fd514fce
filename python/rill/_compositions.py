"""PyTorch ops that are compositions of rill's ops: predicates, pointwise functions, stacking and splitting,
products, reductions, scatters and creation functions. Each has torch's name, arguments and defaults; its
gradient comes from the ops it is made of. The Tensor methods torch has for them are installed at the end
(only where the op library does not define one)."""
import builtins
import collections
import math
import numbers
import warnings

import numpy as np

import rill
from rill import _C
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
    wrapper.__name__, wrapper.__doc__, wrapper.__wrapped__ = fn.__name__, fn.__doc__, fn
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


# --- predicates ----------------------------------------------------------------------------------------------------

def isnan(input):
    """True where input is NaN."""
    return input != input if input.is_floating_point() else _false_like(input)


def isinf(input):
    """True where input is +inf or -inf."""
    return input.abs() == _inf if input.is_floating_point() else _false_like(input)


def isposinf(input):
    """True where input is +inf."""
    return input == _inf if input.is_floating_point() else _false_like(input)


def isneginf(input):
    """True where input is -inf."""
    return input == -_inf if input.is_floating_point() else _false_like(input)


def isfinite(input):
    """True where input is neither infinite nor NaN."""
    return (input - input) == 0 if input.is_floating_point() else rill.ones(tuple(input.shape), dtype=rill.bool)


def isreal(input):
    """True everywhere: rill's tensors are real."""
    return rill.ones(tuple(input.shape), dtype=rill.bool)


def signbit(input):
    """True where the sign bit is set (negative numbers and -0.0)."""
    if not input.is_floating_point():
        return input < 0
    return (input < 0) | ((input == 0) & (rill.reciprocal(input) < 0))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other|, elementwise (equal infinities are close)."""
    if input.dtype != other.dtype:
        raise RuntimeError(f"{input.dtype} did not match {other.dtype}")
    if rtol < 0 or atol < 0:
        raise RuntimeError(f"rtol and atol must be non-negative, got rtol={rtol}, atol={atol}")
    close = input == other
    if equal_nan and input.is_floating_point():
        close = close | (isnan(input) & isnan(other))
    if rtol == 0 and atol == 0:
        return close
    a, b = _float(input), _float(other)
    error = (a - b).abs()
    return close | (isfinite(error) & (error <= atol + (b * rtol).abs()))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element of input is close to other's (see isclose)."""
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other):
    """Whether input and other have the same shape and elements."""
    return tuple(input.shape) == tuple(other.shape) and builtins.bool((input == other).all().item())


# --- pointwise -----------------------------------------------------------------------------------------------------

def sgn(input):
    """The sign of input (for real tensors, sign)."""
    return rill.sign(input)


def positive(input):
    """input itself."""
    if input.dtype == rill.bool:
        raise TypeError("The `+` operator, on a bool tensor is not supported.")
    return input


def rsub(input, other, alpha=1):
    """other - alpha * input."""
    if not isinstance(other, Tensor):
        other = rill.tensor(other, dtype=rill.result_type(input, other))
    return rill.sub(other, input, alpha=alpha)


@_opmath
def deg2rad(input):
    """Degrees to radians."""
    return _float(input) * (_pi / 180)


@_opmath
def rad2deg(input):
    """Radians to degrees."""
    return _float(input) * (180 / _pi)


def frac(input):
    """The fractional part, input - trunc(input)."""
    return input - rill.trunc(input)


def _promote_pair(a, b):
    """Two operands (tensors or numbers) as floating tensors of their promoted dtype."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError("expected at least one tensor argument")
    dtype = rill.result_type(a, b)
    dtype = dtype if dtype.is_floating_point else rill.get_default_dtype()
    ref = a if isinstance(a, Tensor) else b
    return tuple(t.to(dtype) if isinstance(t, Tensor) else rill.tensor(t, dtype=dtype) for t in (a, b))


@_opmath
def xlogy(input, other):
    """input * log(other), 0 where input is 0 (unless other is NaN)."""
    x, y = _promote_pair(input, other)
    return rill.where((x == 0) & (y == y), 0.0, x * rill.log(y))


@_opmath
def sinc(input):
    """sin(pi x) / (pi x), 1 at 0."""
    x = _float(input)
    zero = x == 0
    safe = rill.where(zero, 1.0, x) * _pi
    return rill.where(zero, 1.0, rill.sin(safe) / safe)


def logit(input, eps=None):
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given."""
    x = _float(input)
    if eps is not None:
        x = x.clamp(eps, 1 - eps)
    return rill.log(x / (1 - x))


@_opmath
def hypot(input, other):
    """sqrt(input^2 + other^2)."""
    return rill.sqrt(input * input + other * other)


def copysign(input, other):
    """|input| with the sign of other."""
    x, y = _promote_pair(input, other)
    return rill.where(signbit(y), -x.abs(), x.abs())


def heaviside(input, values):
    """0 where input < 0, values where input == 0, 1 where input > 0."""
    if input.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
    return rill.where(input == 0, values, (input > 0).to(input.dtype))


def fmax(input, other):
    """The larger of input and other, elementwise, ignoring a NaN when the other is a number."""
    return rill.where((input >= other) | isnan(other), input, other)


def fmin(input, other):
    """The smaller of input and other, elementwise, ignoring a NaN when the other is a number."""
    return rill.where((input <= other) | isnan(other), input, other)


def float_power(input, exponent):
    """input ** exponent in float64."""
    to64 = (lambda v: v.to(rill.float64) if isinstance(v, Tensor) else v)
    if not isinstance(input, Tensor):
        input = rill.tensor(input, dtype=rill.float64)
    return rill.pow(to64(input), to64(exponent))


@_opmath
def exp2(input):
    """2 ** input."""
    return rill.exp(_float(input) * math.log(2))


@_opmath
def log2(input):
    """The base-2 logarithm."""
    return rill.log(_float(input)) / math.log(2)


@_opmath
def log10(input):
    """The base-10 logarithm."""
    return rill.log(_float(input)) / math.log(10)


@_opmath
def logaddexp2(input, other):
    """log2(2^input + 2^other)."""
    return rill.logaddexp(input * math.log(2), other * math.log(2)) / math.log(2)


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


# --- products ------------------------------------------------------------------------------------------------------

def _matmul(a, b):
    """a @ b in the dtype a and b promote to (integer products stay integer)."""
    return rill.matmul(a, b).to(rill.promote_types(a.dtype, b.dtype))


def _scaled_sum(input, product, beta, alpha):
    """beta * input + alpha * product; input is ignored (NaNs included) when beta is 0."""
    product = product if alpha == 1 else product * alpha
    if beta == 0:
        return product + rill.zeros_like(input) if input.dim() > product.dim() else product
    return (input if beta == 1 else input * beta) + product


def _check_dims(name, **tensors):
    for arg, (t, ndim) in tensors.items():
        if t.dim() != ndim:
            raise RuntimeError(f"{name}: {arg} must be a {ndim}-D tensor, got {t.dim()}-D")


def mv(input, vec):
    """Matrix-vector product."""
    _check_dims("mv", input=(input, 2), vec=(vec, 1))
    return _matmul(input, vec)


def dot(input, tensor):
    """The dot product of two 1-D tensors."""
    _check_dims("dot", input=(input, 1), tensor=(tensor, 1))
    if input.dtype != tensor.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {input.dtype} and "
                           f"{tensor.dtype}")
    if input.shape[0] != tensor.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
                           f"[{tensor.shape[0]}] to have the same number of elements, but got {input.shape[0]} "
                           f"and {tensor.shape[0]} elements respectively")
    return (input * tensor).sum().to(input.dtype)


def vdot(input, other):
    """The dot product of two 1-D tensors (of real ones: dot)."""
    return dot(input, other)


def outer(input, vec2):
    """The outer product of two 1-D tensors."""
    _check_dims("outer", input=(input, 1), vec2=(vec2, 1))
    return input.reshape(-1, 1) * vec2.reshape(1, -1)


ger = outer


def inner(input, other):
    """The inner product over the last dimensions (a product when either is 0-D)."""
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def tensordot(a, b, dims=2, out=None):
    """Sum of products over the dims of a and b given by dims (an int: a's last and b's first dims)."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, numbers.Integral):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, numbers.Integral) else list(d) for d in dims)
    da, db = [_dim(d, a.dim()) for d in da], [_dim(d, b.dim()) for d in db]
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    a = a.expand(*[b.shape[db[da.index(i)]] if i in da and a.shape[i] == 1 else s for i, s in enumerate(a.shape)])
    b = b.expand(*[a.shape[da[db.index(j)]] if j in db and b.shape[j] == 1 else s for j, s in enumerate(b.shape)])
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[i]} in dim {i} "
                               f"and second has size {b.shape[j]} in dim {j}")
    fa, fb = [i for i in range(a.dim()) if i not in da], [j for j in range(b.dim()) if j not in db]
    k = math.prod(a.shape[i] for i in da)
    left = a.permute(*(fa + da)).reshape(-1, k)
    right = b.permute(*(db + fb)).reshape(k, -1)
    return _matmul(left, right).reshape([a.shape[i] for i in fa] + [b.shape[j] for j in fb])


def kron(input, other):
    """The Kronecker product."""
    n = builtins.max(input.dim(), other.dim())
    sa = (1,) * (n - input.dim()) + tuple(input.shape)
    sb = (1,) * (n - other.dim()) + tuple(other.shape)
    a = input.reshape([v for s in sa for v in (s, 1)])
    b = other.reshape([v for s in sb for v in (1, s)])
    return (a * b).reshape([x * y for x, y in zip(sa, sb)])


def trace(input):
    """The sum of a matrix's diagonal."""
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    return input.diagonal().sum()


@_opmath
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2)."""
    _check_dims("addmm", mat1=(mat1, 2), mat2=(mat2, 2))
    return _scaled_sum(input, _matmul(mat1, mat2), beta, alpha)


@_opmath
def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec)."""
    return _scaled_sum(input, mv(mat, vec), beta, alpha)


@_opmath
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """beta * input + alpha * outer(vec1, vec2)."""
    return _scaled_sum(input, outer(vec1, vec2), beta, alpha)


@_opmath
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (batch1 @ batch2), batched."""
    _check_dims("baddbmm", batch1=(batch1, 3), batch2=(batch2, 3))
    return _scaled_sum(input, _matmul(batch1, batch2), beta, alpha)


@_opmath
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (the sum over the batch of batch1 @ batch2)."""
    _check_dims("addbmm", batch1=(batch1, 3), batch2=(batch2, 3))
    return _scaled_sum(input, _matmul(batch1, batch2).sum(0), beta, alpha)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices (in the planes dim1, dim2 of the result) with input's last dimension on their offset diagonal."""
    ndim = input.dim() + 1
    d1, d2 = _dim(dim1, ndim), _dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1] + builtins.abs(offset)
    rows, cols = rill.arange(n).reshape(-1, 1), rill.arange(n).reshape(1, -1)
    mask = (cols - rows) == offset
    index = rill.minimum(rows, cols).clamp(0, builtins.max(input.shape[-1] - 1, 0))
    values = input.index_select(-1, index.reshape(-1)).reshape(tuple(input.shape[:-1]) + (n, n)) if input.shape[
        -1] else rill.zeros(tuple(input.shape[:-1]) + (n, n), dtype=input.dtype)
    out = rill.where(mask, values, rill.zeros((), dtype=input.dtype))
    return rill.movedim(out, (-2, -1), (d1, d2))


def diagflat(input, offset=0):
    """A matrix with input (flattened) on its offset diagonal."""
    return diag_embed(input.reshape(-1), offset)


def block_diag(*tensors):
    """The tensors (0-D, 1-D or 2-D) as the blocks of a block-diagonal matrix."""
    blocks = []
    for t in tensors:
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input has "
                               f"{t.dim()} dimensions")
        blocks.append(t.reshape(1, -1) if t.dim() < 2 else t)
    if not blocks:
        return rill.zeros((1, 0))
    dtype = blocks[0].dtype
    for b in blocks[1:]:
        dtype = rill.promote_types(dtype, b.dtype)
    width = builtins.sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        parts = [rill.zeros((b.shape[0], left), dtype=dtype), b.to(dtype),
                 rill.zeros((b.shape[0], width - left - b.shape[1]), dtype=dtype)]
        rows.append(rill.cat(parts, 1))
        left += b.shape[1]
    return rill.cat(rows, 0)


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
    return fn(input, dim, unbiased, keepdim, correction=correction), input.mean(
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


def _trapezoid_terms(y, x, dx, dim):
    d = _dim(dim, y.dim())
    n = y.shape[d]
    y = y if y.is_floating_point() else y.to(rill.int64)
    mid = (y.narrow(d, 1, builtins.max(n - 1, 0)) + y.narrow(d, 0, builtins.max(n - 1, 0))) / 2
    if x is None:
        return mid * (1 if dx is None else dx), d
    if x.dim() == 1:
        x = _along(x, d, y.dim())
    xd = d if x.dim() == y.dim() else _dim(dim, x.dim())
    return mid * diff(x, dim=xd), d


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule along dim, with sample points x or spacing dx (default 1)."""
    terms, d = _trapezoid_terms(y, x, dx, dim)
    return terms.sum(d)


def trapz(y, x=None, *, dx=None, dim=-1):
    """trapezoid (the older name)."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid rule along dim."""
    terms, d = _trapezoid_terms(y, x, dx, dim)
    return rill.cumsum(terms, d)


def sum_to_size(input, *size):
    """input summed down to size (which input must broadcast to)."""
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    lead = input.dim() - len(size)
    if lead < 0 or builtins.any(s != 1 and s != n for s, n in zip(size, input.shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(input.shape)}}}.")
    dims = list(range(lead)) + [lead + i for i, s in enumerate(size) if s == 1 and input.shape[lead + i] != 1]
    out = input.sum(dims, keepdim=True) if dims else input
    return out.reshape(size) if lead else out


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
        total = spread.sum(-2) + (x if include_self else 0)
        out = total / count.clamp_min(1) if x.is_floating_point() else rill.floor_divide(total, count.clamp_min(1))
    elif reduce == "prod":
        out = spread.prod(-2) * (x if include_self else 1)
    else:
        candidates = rill.cat([x.unsqueeze(-2), spread], -2) if include_self else spread
        out = getattr(candidates, reduce)(-2)
    out = rill.where(touched, out.to(x.dtype), x)
    return out.movedim(-1, d) if input.dim() else out.reshape(())


def _lowest_of(dtype):
    return -_inf if dtype.is_floating_point else {rill.uint8: 0, rill.int8: -128, rill.int16: -2 ** 15,
                                                  rill.int32: -2 ** 31, rill.int64: -2 ** 63, rill.bool: 0}[dtype]


def _highest_of(dtype):
    return _inf if dtype.is_floating_point else {rill.uint8: 255, rill.int8: 127, rill.int16: 2 ** 15 - 1,
                                                 rill.int32: 2 ** 31 - 1, rill.int64: 2 ** 63 - 1, rill.bool: 1}[dtype]


# --- statistics and distances --------------------------------------------------------------------------------------

@_opmath
def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in input's rows (observations in its columns)."""
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    x = _float(input).reshape(1, -1) if input.dim() < 2 else _float(input)
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
        w = w.to(x.dtype)
        total = w.sum()
        mean = (x * w).sum(1, keepdim=True) / total
        if correction == 0 or aweights is None:
            norm = total - correction
        else:
            norm = total - correction * (w * aweights).sum() / total
    centered = x - mean
    weighted = centered if w is None else centered * w
    norm = rill.clamp_min(rill.tensor(norm, dtype=x.dtype) if not isinstance(norm, Tensor) else norm, 0)
    out = rill.matmul(weighted, centered.transpose(0, 1)) / norm
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
    i = rill.arange(steps, dtype=rill.float64)
    step = (end - start) / (steps - 1) if steps > 1 else 0.0
    half = steps // 2
    values = rill.where(i < half, start + i * step, end - (steps - 1 - i) * step)
    out = values.to(dtype)
    return out.requires_grad_() if requires_grad else out


def logspace(start, end, steps, base=10.0, *, dtype=None, layout=None, device=None, requires_grad=False, out=None):
    """base ** linspace(start, end, steps)."""
    dtype = dtype if dtype is not None else rill.get_default_dtype()
    exponents = linspace(start, end, steps, dtype=rill.float64)
    out = rill.pow(rill.full((steps,), float(base), dtype=rill.float64), exponents).to(dtype)
    return out.requires_grad_() if requires_grad else out


# --- trigonometric and hyperbolic functions -----------------------------------------------------------------------

@_opmath
def tan(input):
    """sin(x) / cos(x)."""
    x = _float(input)
    return rill.sin(x) / rill.cos(x)


@_opmath
def sinh(input):
    """(e^x - e^-x) / 2."""
    x = _float(input)
    return (rill.expm1(x) - rill.expm1(-x)) / 2


@_opmath
def cosh(input):
    """(e^x + e^-x) / 2."""
    x = _float(input)
    return (rill.exp(x) + rill.exp(-x)) / 2


@_opmath
def asin(input):
    """The inverse sine, in [-pi/2, pi/2] (NaN outside [-1, 1])."""
    x = _float(input)
    return rill.atan2(x, rill.sqrt((1 - x) * (1 + x)))


@_opmath
def acos(input):
    """The inverse cosine, in [0, pi] (NaN outside [-1, 1])."""
    x = _float(input)
    return rill.atan2(rill.sqrt((1 - x) * (1 + x)), x)


@_opmath
def atan(input):
    """The inverse tangent, in (-pi/2, pi/2)."""
    x = _float(input)
    return rill.atan2(x, rill.ones((), dtype=x.dtype))


@_opmath
def asinh(input):
    """The inverse hyperbolic sine, log(x + sqrt(x^2 + 1)), accurate near 0."""
    x = _float(input)
    a = x.abs()
    return rill.sign(x) * rill.log1p(a + a * a / (1 + rill.sqrt(a * a + 1)))


@_opmath
def acosh(input):
    """The inverse hyperbolic cosine, log(x + sqrt(x^2 - 1)) (NaN below 1)."""
    x = _float(input)
    return rill.log(x + rill.sqrt(x - 1) * rill.sqrt(x + 1))


@_opmath
def atanh(input):
    """The inverse hyperbolic tangent, log((1 + x) / (1 - x)) / 2."""
    x = _float(input)
    return 0.5 * rill.log1p(2 * x / (1 - x))


arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh


@_opmath
def erfc(input):
    """1 - erf(x)."""
    return 1 - rill.erf(_float(input))


@_opmath
def i0(input):
    """The modified Bessel function of the first kind of order 0, by its power series (|x| up to about 30)."""
    x = _float(input)
    term, total = rill.ones_like(x), rill.ones_like(x)
    quarter = x * x / 4
    for k in range(1, 100):
        term = term * quarter / (k * k)
        total = total + term
    return total


def ldexp(input, other):
    """input * 2 ** other."""
    x, e = _promote_pair(input, other)
    return x * rill.pow(rill.full((), 2.0, dtype=x.dtype), e)


def angle(input):
    """The argument of each element: pi for negative numbers, 0 otherwise (NaN stays NaN)."""
    x = _float(input)
    return rill.where(x < 0, _pi, rill.where(isnan(x), x, 0.0)) + x * 0 if x.requires_grad else rill.where(
        x < 0, _pi, rill.where(isnan(x), x, 0.0))


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
    x = input.reshape(-1).to(rill.float64)
    inside = (x >= lo) & (x <= hi)
    index = ((x - lo) * (bins / (hi - lo))).floor().clamp(0, bins - 1).to(rill.int64)
    return rill.zeros((bins,), dtype=input.dtype).index_add(0, index[inside], rill.ones_like(x[inside]).to(
        input.dtype))


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


# --- einsum --------------------------------------------------------------------------------------------------------

def _einsum_subscripts(term, ndim, ell, position):
    """The symbols of one operand's (or the output's, ndim None) subscripts; '...' stands for ell symbols
    ('...', k), right-aligned across operands."""
    if "..." not in term:
        if ndim is not None and len(term) != ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(term)}) does not match "
                               f"the number of dimensions ({ndim}) for operand {position} and no ellipsis was given")
        return list(term)
    head, tail = term.split("...")
    e = ell if ndim is None else ndim - len(head) - len(tail)
    return list(head) + [("...", ell - e + k) for k in range(e)] + list(tail)


def _einsum_diagonals(x, subs):
    """x with each repeated subscript (ii) reduced to its diagonal."""
    while True:
        dup = next((s for s in subs if subs.count(s) > 1), None)
        if dup is None:
            return x, subs
        p = subs.index(dup)
        q = subs.index(dup, p + 1)
        x = x.diagonal(0, p, q)
        subs = [s for k, s in enumerate(subs) if k not in (p, q)] + [dup]


def _einsum_sum_out(x, subs, keep):
    """x summed over the subscripts not in keep."""
    drop = [k for k, s in enumerate(subs) if s not in keep]
    if not drop:
        return x, subs
    return x.sum(drop), [s for k, s in enumerate(subs) if k not in drop]


def _einsum_pair(a, a_subs, b, b_subs, keep):
    """The contraction of two operands as one batched matrix product; keep: the subscripts needed later."""
    sizes = {}
    for x, subs in ((a, a_subs), (b, b_subs)):
        for s, n in zip(subs, x.shape):
            sizes[s] = builtins.max(sizes.get(s, 1), n)
    batch = [s for s in a_subs if s in b_subs and s in keep]
    contracted = [s for s in a_subs if s in b_subs and s not in keep]
    a_free = [s for s in a_subs if s not in b_subs]
    b_free = [s for s in b_subs if s not in a_subs]

    def arranged(x, subs, order):
        x = x.permute(*[subs.index(s) for s in order]) if order else x
        return x.expand(*[sizes[s] for s in order])
    size = (lambda group: math.prod(sizes[s] for s in group))
    left = arranged(a, a_subs, batch + a_free + contracted).reshape(size(batch), size(a_free), size(contracted))
    right = arranged(b, b_subs, batch + contracted + b_free).reshape(size(batch), size(contracted), size(b_free))
    out = _matmul(left, right).reshape([sizes[s] for s in batch + a_free + b_free])
    return out, batch + a_free + b_free


def _einsum_from_sublists(args):
    """(equation, operands) of einsum's sublist form: einsum(a, [0, 1], b, [1, 2], [0, 2])."""
    letters = (lambda sub: "".join("..." if v is Ellipsis else "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[v]
                                   for v in sub))
    operands, subs = args[0::2], args[1::2]
    if len(args) % 2:
        operands, output = operands[:-1], "->" + letters(args[-1])
    else:
        output = ""
    return ",".join(letters(sub) for sub in subs) + output, operands


def einsum(equation, *operands):
    """Sums of products of the operands' elements, as the Einstein-summation equation says ('ij,jk->ik');
    also the sublist form einsum(a, [0, 1], b, [1, 2], [0, 2])."""
    if isinstance(equation, Tensor):
        equation, operands = _einsum_from_sublists((equation,) + operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum(): the equation has {len(terms)} operands but {len(operands)} were given")
    ell = builtins.max([op.dim() - len(t) + 3 for t, op in zip(terms, operands) if "..." in t], default=0)
    subs = [_einsum_subscripts(t, op.dim(), ell, k) for k, (t, op) in enumerate(zip(terms, operands))]
    if arrow:
        out = _einsum_subscripts(rhs, None, ell, "output")
    else:
        counts = collections.Counter(s for ss in subs for s in ss if isinstance(s, str))
        out = [("...", k) for k in range(ell)] + sorted(s for s, c in counts.items() if c == 1)
    for s in out:
        if not builtins.any(s in ss for ss in subs):
            raise RuntimeError(f"einsum(): output subscript {s} does not appear in the equation for any input operand")
    pending = [_einsum_diagonals(op, ss) for op, ss in zip(operands, subs)]
    acc, acc_subs = pending[0]
    for k in range(1, len(pending) + 1):
        later = set(out).union(*[set(ss) for _, ss in pending[k:]])
        acc, acc_subs = _einsum_sum_out(acc, acc_subs, later)
        if k == len(pending):
            break
        b, b_subs = _einsum_sum_out(*pending[k], later | set(acc_subs))
        after = set(out).union(*[set(ss) for _, ss in pending[k + 1:]])
        acc, acc_subs = _einsum_pair(acc, acc_subs, b, b_subs, after)
    return acc.permute(*[acc_subs.index(s) for s in out]) if out else acc


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
    """The most frequent value along dim (the smallest of equally frequent ones) and the last index it is at."""
    d = _dim(dim, input.dim())
    x = (input if input.dim() else input.reshape(1)).movedim(d, -1)
    equal_to = x.unsqueeze(-1) == x.unsqueeze(-2)
    counts = equal_to.sum(-1)
    best = counts == counts.amax(-1, keepdim=True)
    sorted_values = rill.sort(x, -1)[0]
    big = sorted_values[..., -1:]
    value = rill.where(best, x, big).amin(-1, keepdim=True)
    n = x.shape[-1]
    index = rill.where(x == value, rill.arange(n), -1).amax(-1, keepdim=True)
    value = rill.take_along_dim(x, index, -1)
    value, index = value.movedim(-1, d), index.movedim(-1, d)
    if not keepdim or not input.dim():
        value, index = value.squeeze(d), index.squeeze(d)
    return _median_type["mode"](value, index)


# --- bit shifts ----------------------------------------------------------------------------------------------------

def _shift_operands(name, input, other):
    if not isinstance(input, Tensor):
        input = rill.tensor(input, dtype=other.dtype if isinstance(other, Tensor) else None)
    if input.is_floating_point() or (isinstance(other, Tensor) and other.is_floating_point()) or isinstance(
            other, float):
        raise RuntimeError(f"\"{name}_cpu\" not implemented for 'Float'")
    other = other if isinstance(other, Tensor) else rill.tensor(other, dtype=input.dtype)
    dtype = rill.promote_types(input.dtype, other.dtype)
    bits = {rill.uint8: 8, rill.int8: 8, rill.int16: 16, rill.int32: 32, rill.int64: 64, rill.bool: 8}[dtype]
    return input.to(dtype), other.to(rill.int64), bits


def bitwise_left_shift(input, other):
    """input * 2 ** other (bits shifted out are lost; a shift by the width or more gives 0)."""
    x, s, bits = _shift_operands("lshift", input, other)
    ok = (s >= 0) & (s < bits)
    factor = rill.pow(rill.full((), 2, dtype=rill.int64), rill.where(ok, s, 0)).to(x.dtype)
    return rill.where(ok, x * factor, 0).to(x.dtype)


def bitwise_right_shift(input, other):
    """floor(input / 2 ** other) (a shift by the width or more gives 0, or -1 for a negative input)."""
    x, s, bits = _shift_operands("rshift", input, other)
    ok = (s >= 0) & (s < bits)
    wide = x.to(rill.int64)
    factor = rill.pow(rill.full((), 2, dtype=rill.int64), rill.where(ok, s, 0).clamp_max(62))
    shifted = rill.floor_divide(wide, factor)
    return rill.where(ok & (s < 63), shifted, rill.where(wide < 0, -1, 0)).to(x.dtype)


def constant_pad_nd(input, pad, value=0):
    """input padded by pad (last dim first) with value; negative pads crop."""
    from rill.nn.functional import pad as _pad
    return _pad(input, pad, "constant", value)


def _rdiv(self, other):
    return rill.div(other if isinstance(other, Tensor) else rill.tensor(other, dtype=rill.result_type(
        self, other)), self)


# --- Tensor methods ------------------------------------------------------------------------------------------------

_METHODS = (
    "isnan", "isinf", "isposinf", "isneginf", "isfinite", "isreal", "signbit", "isclose", "allclose", "equal",
    "sgn", "positive", "deg2rad", "rad2deg", "frac", "xlogy", "sinc", "logit", "hypot", "copysign", "heaviside",
    "fmax", "fmin", "float_power", "exp2", "log2", "log10", "logaddexp2", "tensor_split", "hsplit", "vsplit",
    "dsplit", "unbind", "broadcast_to", "ravel", "rot90", "msort", "diff", "cross", "take", "repeat_interleave",
    "mv", "dot", "vdot", "outer", "ger", "inner", "kron", "trace", "addmm", "addmv", "addr", "baddbmm", "addbmm",
    "diag_embed", "diagflat", "count_nonzero", "aminmax", "nansum", "nanmean", "logcumsumexp", "cummax", "cummin",
    "sum_to_size", "index_fill", "index_copy", "select_scatter", "slice_scatter", "diagonal_scatter", "cov",
    "corrcoef", "dist", "renorm", "unique_consecutive", "tan", "sinh", "cosh", "asin", "acos", "atan", "asinh",
    "acosh", "atanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "erfc", "ldexp", "angle",
    "conj", "conj_physical", "resolve_conj", "resolve_neg", "masked_scatter", "put", "bincount", "histc", "isin",
    "gcd", "lcm", "i0", "median", "nanmedian", "quantile", "nanquantile", "mode", "bitwise_left_shift",
    "bitwise_right_shift", "index_reduce", "split_with_sizes", "unsafe_split", "unsafe_chunk", "true_divide", "narrow_copy", "nonzero_static",
)
_INPLACE = {"deg2rad_": deg2rad, "rad2deg_": rad2deg, "frac_": frac, "xlogy_": xlogy, "sinc_": sinc,
            "logit_": logit, "hypot_": hypot, "copysign_": copysign, "heaviside_": heaviside,
            "float_power_": float_power, "exp2_": exp2, "log2_": log2, "log10_": log10, "sgn_": sgn,
            "addmm_": addmm, "addmv_": addmv, "addr_": addr, "baddbmm_": baddbmm, "addbmm_": addbmm,
            "index_fill_": index_fill, "index_copy_": index_copy, "renorm_": renorm, "tan_": tan, "sinh_": sinh,
            "cosh_": cosh, "asin_": asin, "acos_": acos, "atan_": atan, "asinh_": asinh, "acosh_": acosh,
            "atanh_": atanh, "arcsin_": asin, "arccos_": acos, "arctan_": atan, "arcsinh_": asinh, "arccosh_": acosh,
            "arctanh_": atanh, "erfc_": erfc, "i0_": i0, "bitwise_left_shift_": bitwise_left_shift,
            "bitwise_right_shift_": bitwise_right_shift, "index_reduce_": index_reduce, "ldexp_": ldexp, "masked_scatter_": masked_scatter, "put_": put,
            "gcd_": gcd, "lcm_": lcm, "eq_": rill.eq, "ne_": rill.ne, "lt_": rill.lt, "le_": rill.le, "gt_": rill.gt,
            "ge_": rill.ge, "clamp_min_": rill.clamp_min, "clamp_max_": rill.clamp_max, "true_divide_": rill.div,
            "conj_physical_": conj_physical}


def _inplace(fn):
    def method(self, *args, **kwargs):
        result = fn(self, *args, **kwargs)
        if result.dtype != self.dtype and not can_cast(result.dtype, self.dtype):
            raise RuntimeError(f"result type {result.dtype} can't be cast to the desired output type {self.dtype}")
        if tuple(result.shape) != tuple(self.shape):
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                               f"{list(result.shape)}")
        return self.copy_(result)
    method.__name__ = fn.__name__ + "_"
    method.__doc__ = f"In-place {fn.__name__}."
    return method


def can_cast(from_, to):
    """Whether from_ converts to to under PyTorch's casting rules (no float to integer, nothing to bool)."""
    kind = (lambda d: 0 if d == rill.bool else 2 if d.is_floating_point else 1)
    return kind(from_) <= kind(to)


true_divide = rill.true_divide
def _unique_consecutive_method(self, return_inverse=False, return_counts=False, dim=None):
    return unique_consecutive(self, return_inverse, return_counts, dim)


_unique_consecutive_method.__doc__ = unique_consecutive.__doc__
if not hasattr(Tensor, "unique_consecutive"):
    Tensor.unique_consecutive = _unique_consecutive_method
for _name in _METHODS:
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, globals()[_name])
for _name, _fn in (("__rdiv__", _rdiv), ("__lshift__", bitwise_left_shift), ("__rshift__", bitwise_right_shift),
                   ("__rlshift__", lambda self, other: bitwise_left_shift(other, self)),
                   ("__rrshift__", lambda self, other: bitwise_right_shift(other, self))):
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _fn)
if not hasattr(Tensor, "unfold"):
    Tensor.unfold = _unfold
if not hasattr(Tensor, "mH"):
    Tensor.mH = Tensor.mT
    Tensor.H = property(lambda self: self.t(), doc="The transpose of a matrix (the conjugate transpose of a real one).")
for _name, _fn in _INPLACE.items():
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _inplace(_fn))

__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and callable(_v) and getattr(_v, "__module__", None) == __name__]
