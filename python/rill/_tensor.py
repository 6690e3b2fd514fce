"""Tensor methods written in Python: shape as rill.Size, conversions, repr."""
import builtins

from rill import _C
from rill._C import Tensor
from rill._tensor_str import tensor_repr


class Size(tuple):
    """The shape of a tensor: a tuple of ints, like torch.Size."""

    def __repr__(self):
        return "rill.Size([" + ", ".join(builtins.str(s) for s in self) + "])"

    # Slicing, concatenation and repetition give a Size, as in PyTorch.
    def __getitem__(self, index):
        out = tuple.__getitem__(self, index)
        return Size(out) if isinstance(index, slice) else out

    # NotImplemented below is Python's binary-operator protocol (let the other operand try), not a stub.
    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n


def _shape(self):
    return Size(self._shape)


def _size(self, dim=None):
    if dim is None:
        return Size(self._shape)
    return self._size(dim)


class memory_format:
    """How a tensor's elements are laid out (torch.memory_format): rill.contiguous_format (row-major),
    rill.channels_last (NHWC strides of an NCHW tensor), rill.channels_last_3d (NDHWC), rill.preserve_format
    (keep the input's layout, the default of conversions)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"rill.{self.name}"

    def __reduce__(self):
        return self.name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")


def _with_memory_format(t, fmt, copied):
    """t laid out as fmt (copied: t is already a new tensor, so a preserve_format result may be t itself)."""
    if fmt is None or fmt is preserve_format:
        return t
    if fmt is contiguous_format:
        return t._contiguous_row_major()
    if fmt is channels_last or fmt is channels_last_3d:
        want = 4 if fmt is channels_last else 5
        if t.dim() != want:
            raise RuntimeError(f"required rank {want} tensor to use {fmt.name} format")
        last = list(range(2, want)) + [1]
        back = [0, want - 1] + list(range(1, want - 1))
        return t.permute(0, *last).contiguous().permute(*back)
    raise TypeError(f"memory_format must be a rill.memory_format, got {type(fmt).__name__}")


def _contiguous(self, memory_format=contiguous_format):
    if memory_format is contiguous_format:
        return self._contiguous_row_major()
    return _with_memory_format(self, memory_format, False) if memory_format is not preserve_format else self


def _is_contiguous(self, memory_format=contiguous_format):
    if memory_format is contiguous_format:
        return self._is_contiguous()
    if memory_format in (channels_last, channels_last_3d):
        want = 4 if memory_format is channels_last else 5
        return self.dim() == want and _with_memory_format(self, memory_format, False).stride() == self.stride()
    raise RuntimeError(f"is_contiguous: unsupported memory format {memory_format!r}")


def _to(self, *args, **kwargs):
    """to(dtype), to(device), to(device, dtype), to(other), with copy= and non_blocking= keywords."""
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    fmt = kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"[to] got an unexpected keyword argument '{next(iter(kwargs))}'")
    flags = [a for a in args if isinstance(a, builtins.bool)]  # positional non_blocking, then copy
    if len(flags) > 2:
        raise TypeError("[to] takes at most two positional bools (non_blocking, copy)")
    if len(flags) == 2:
        copy = flags[1]
    args = [a for a in args if not isinstance(a, builtins.bool)]
    for a in args:
        if isinstance(a, memory_format):
            fmt = a
        elif isinstance(a, _C.dtype) or a in (builtins.float, builtins.int, builtins.bool):
            dtype = a
        elif isinstance(a, (builtins.str, _C.device)):
            device = a
        elif isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        else:
            raise TypeError(f"[to] expected a dtype, a device or a Tensor, got {type(a).__name__}")
    if device is not None:
        _C.device(builtins.str(device)) if not isinstance(device, _C.device) else device  # validates
    out = (self.clone() if copy else self) if dtype is None else self._to_dtype(dtype, copy)
    return _with_memory_format(out, fmt, out is not self)


def _cpu(self):
    return self


def _cuda(self, *args, **kwargs):
    raise RuntimeError("[cuda] rill was built without CUDA; tensors live on 'cpu'")


def _convert(dt):
    def method(self, memory_format=preserve_format):
        return _with_memory_format(self._to_dtype(dt, False), memory_format, True)
    method.__name__ = dt.name
    return method


def _type_as(self, other):
    return self._to_dtype(other.dtype, False)


def _array(self, dtype=None, copy=None):
    arr = self.numpy(force=builtins.bool(copy)) if self.dtype != _C.bfloat16 else self.float().numpy()
    if dtype is not None:
        arr = arr.astype(dtype, copy=False)
    return arr


def _len(self):
    if self.ndim == 0:
        raise TypeError("len() of a 0-d tensor")
    return self._shape[0]


def _iter(self):
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    return (self[i] for i in range(self._shape[0]))


def _scalar_of(kind):
    def method(self):
        if self.numel() != 1:  # ValueError, as in PyTorch
            raise ValueError(f"[{kind.__name__}] only a Tensor with one element can be converted to a Python "
                             f"{kind.__name__}, got {self.numel()} elements")
        return kind(self.item())
    return method


def _bool(self):
    if self.numel() != 1:
        what = "no values" if self.numel() == 0 else "more than one value"
        raise RuntimeError(f"Boolean value of Tensor with {what} is ambiguous")
    return builtins.bool(self.item())


def _index(self):
    if self.numel() != 1 or self.dtype.is_floating_point or self.dtype == _C.bool:
        raise TypeError("only integer tensors of a single element can be converted to an index")
    return self.item()


def _format(self, spec):
    if self.ndim == 0:
        return self.item().__format__(spec)
    return object.__format__(self, spec)


def _requires_grad_(self, requires_grad=True):
    self.requires_grad = requires_grad
    return self


def _backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradient of this tensor into the .grad of the leaves (see rill.autograd.backward)."""
    from rill import autograd
    autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def _register_hook(self, hook):
    """Call hook(grad) when this tensor's gradient is computed; a returned Tensor replaces the gradient.
    Returns a handle whose remove() takes the hook off."""
    return self._register_hook(hook)


def _new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    from rill._creation import tensor
    return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)


def _new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    return _C.zeros(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)


def _new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    return _C.ones(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)


def _new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    return _C.full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad)


def _new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    return _C.empty(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)


_METHODS = {
    "shape": property(_shape),
    "size": _size,
    "to": _to,
    "cpu": _cpu,
    "cuda": _cuda,
    "float": _convert(_C.float32),
    "double": _convert(_C.float64),
    "half": _convert(_C.float16),
    "bfloat16": _convert(_C.bfloat16),
    "int": _convert(_C.int32),
    "long": _convert(_C.int64),
    "short": _convert(_C.int16),
    "char": _convert(_C.int8),
    "byte": _convert(_C.uint8),
    "bool": _convert(_C.bool),
    "type_as": _type_as,
    "contiguous": _contiguous,
    "is_contiguous": _is_contiguous,
    "__array__": _array,
    "__len__": _len,
    "__iter__": _iter,
    "__bool__": _bool,
    "__float__": _scalar_of(builtins.float),
    "__int__": _scalar_of(builtins.int),
    "__index__": _index,
    "__format__": _format,
    "__repr__": tensor_repr,
    "__str__": tensor_repr,
    "requires_grad_": _requires_grad_,
    "backward": _backward,
    "register_hook": _register_hook,
    "new_tensor": _new_tensor,
    "new_zeros": _new_zeros,
    "new_ones": _new_ones,
    "new_full": _new_full,
    "new_empty": _new_empty,
    "is_cuda": property(lambda self: False),
    "is_cpu": property(lambda self: True),
    "layout": property(lambda self: "strided"),
    "__array_priority__": 1000,
}
Tensor._is_contiguous = Tensor.is_contiguous  # the binding's row-major check
Tensor._contiguous_row_major = Tensor.contiguous
for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
