"""Creation functions that take Python data, and small functional aliases."""
import builtins

import numpy as np

from rill import _C
from rill._C import Tensor


def _infer_dtype(data):
    """PyTorch's rule for Python data: bools -> bool, ints -> int64, any float -> the default dtype."""
    if isinstance(data, (str, bytes)):
        raise TypeError(f"[tensor] invalid data type '{type(data).__name__}'; expected numbers, nested lists of "
                        "numbers, or an array")
    try:
        arr = np.asarray(data)
    except ValueError as e:
        raise ValueError(f"[tensor] data must be rectangular (nested lists of equal lengths): {e}") from None
    if arr.dtype == np.bool_:
        return arr, _C.bool
    if arr.dtype.kind in "iu" and arr.dtype != np.uint64:
        return arr, _C.int64
    if arr.dtype == np.uint64 or (arr.dtype == object and all(isinstance(v, int) for v in arr.flat)):
        raise ValueError("[tensor] overflow: an integer in data does not fit in int64")
    if arr.dtype.kind == "f":
        return arr, _C.get_default_dtype()
    # RuntimeError, as PyTorch raises for data whose dtype it can't infer (None, objects, dicts)
    raise RuntimeError(f"[tensor] could not infer dtype of {type(data).__name__} (numpy dtype {arr.dtype}); "
                       "expected numbers, nested lists of numbers, or an array")


_NUMPY_DTYPES = {np.dtype(np.bool_): _C.bool, np.dtype(np.uint8): _C.uint8, np.dtype(np.int8): _C.int8,
                 np.dtype(np.int16): _C.int16, np.dtype(np.int32): _C.int32, np.dtype(np.int64): _C.int64,
                 np.dtype(np.float16): _C.float16, np.dtype(np.float32): _C.float32,
                 np.dtype(np.float64): _C.float64}


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of data (a number, nested lists, a numpy array or a tensor)."""
    if device is not None:
        _C.device(str(device)) if not isinstance(device, _C.device) else device
    if isinstance(data, Tensor):
        data = data.detach()
        out = data.clone() if dtype is None else data._to_dtype(dtype, True)
    else:
        if isinstance(data, np.ndarray):
            native = data.dtype.newbyteorder("=")
            if native not in _NUMPY_DTYPES:
                raise TypeError(f"[tensor] can't convert a numpy array of dtype {data.dtype}; supported: bool, "
                                "uint8, int8, int16, int32, int64, float16, float32, float64")
            arr, inferred = data, _NUMPY_DTYPES[native]
        elif isinstance(data, np.generic) and np.dtype(type(data)) in _NUMPY_DTYPES:
            arr, inferred = np.asarray(data), _NUMPY_DTYPES[np.dtype(type(data))]
        else:
            if dtype is None and _C.is_strict_dtype():
                from rill._strict import check_number_kinds
                check_number_kinds(data)
            arr, inferred = _infer_dtype(data)
        if not arr.flags.c_contiguous:  # never true for 0-dim, which ascontiguousarray would make 1-dim
            arr = np.ascontiguousarray(arr)
        if arr.dtype.byteorder not in ("=", "|"):
            arr = arr.astype(arr.dtype.newbyteorder("="))
        out = _C.from_numpy(arr)._copy_now(dtype or inferred)
    if requires_grad:
        out.requires_grad = True
    return out


def as_tensor(data, dtype=None, device=None):
    """data itself when it is a tensor of the right dtype, a tensor sharing a numpy array's memory when the
    dtypes agree (as in PyTorch), else a converted copy."""
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(dtype)
    if (isinstance(data, np.ndarray) and data.dtype in _NUMPY_DTYPES and dtype in (None, _NUMPY_DTYPES[data.dtype])
            and all(s >= 0 for s in data.strides)):
        if device is not None:
            _C.device(str(device)) if not isinstance(device, _C.device) else device
        return _C.from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def _like(factory):
    def like(input, dtype=None, device=None, requires_grad=False, **kwargs):
        kwargs.pop("memory_format", None)
        return factory(input._shape, dtype=dtype or input.dtype, requires_grad=requires_grad, **kwargs)
    like.__name__ = factory.__name__ + "_like"
    return like


zeros_like = _like(_C.zeros)
ones_like = _like(_C.ones)
empty_like = _like(_C.empty)
rand_like = _like(_C.rand)
randn_like = _like(_C.randn)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False):
    return _C.full(input._shape, fill_value, dtype=dtype or input.dtype, requires_grad=requires_grad)


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(input):
    return input.is_floating_point()


def numel(input):
    return input.numel()


def get_default_dtype():
    """The default floating dtype: float32 unless set_default_dtype changed it."""
    return _C.get_default_dtype()


def set_default_dtype(d):
    """Make d (rill.float32, float64, float16 or bfloat16) the dtype of Python floats, of factory functions without
    a dtype and of float-valued ops on integers, process-wide, as torch.set_default_dtype."""
    if not isinstance(d, _C.dtype):
        raise TypeError(f"set_default_dtype expects a rill.dtype, got {type(d).__name__}")
    _C.set_default_dtype(d)


_TENSOR_TYPES = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
                 "BFloat16Tensor": "bfloat16"}


def set_default_tensor_type(t):
    """torch.set_default_tensor_type: rill.FloatTensor / DoubleTensor (or their names, 'torch.DoubleTensor') set the
    default dtype; CPU tensors are the only kind."""
    name = t if isinstance(t, str) else getattr(t, "__name__", type(t).__name__)
    short = name.rsplit(".", 1)[-1]
    if short not in _TENSOR_TYPES:
        raise TypeError(f"set_default_tensor_type: only the floating-point CPU tensor types are supported "
                        f"({', '.join(_TENSOR_TYPES)}), got {name}")
    if isinstance(t, str) and "cuda" in name:
        raise TypeError(f"set_default_tensor_type: {name} is a CUDA type; this build of rill has CPU tensors only")
    _C.set_default_dtype(getattr(_C, _TENSOR_TYPES[short]))


def reshape(input, shape):
    return input.reshape(shape)


def permute(input, dims):
    return input.permute(dims)


def flatten(input, start_dim=0, end_dim=-1):
    return input.flatten(start_dim, end_dim)


def clone(input):
    return input.clone()


def negative(input):
    return -input


def absolute(input):
    return builtins.abs(input)
