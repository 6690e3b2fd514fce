"""The legacy typed constructors: rill.FloatTensor, rill.LongTensor, ... as PyTorch's CPU ones behave.

``FloatTensor(*sizes)`` makes an uninitialised float32 tensor of that shape, ``FloatTensor(data)`` a
float32 tensor of a sequence or array's values, ``FloatTensor(t)`` returns t when it is float32 already,
``FloatTensor()`` an empty one. What they make is a plain rill.Tensor, and ``isinstance(t,
rill.FloatTensor)`` is true for every float32 tensor, as in PyTorch.
"""
import builtins

from rill import _C
from rill._C import Tensor

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
           "ShortTensor", "IntTensor", "LongTensor", "BoolTensor"]


class _LegacyTensorType(type):
    """Metaclass of the typed constructors: calling one builds a Tensor; isinstance checks the dtype."""

    def __call__(cls, *args, device=None):
        if device is not None and str(device) != "cpu":
            raise RuntimeError(f"[{cls.__name__}] rill runs on the CPU only; got device={device!r}")
        if not args:
            return _C.empty(0, dtype=cls.dtype)
        if len(args) == 1 and isinstance(args[0], Tensor):
            if args[0].dtype != cls.dtype:
                raise TypeError(f"[{cls.__name__}] expected a tensor of dtype {cls.dtype}, got {args[0].dtype}; "
                                f"convert it with .to({cls.dtype})")
            return args[0]
        sizes = args[0] if len(args) == 1 and isinstance(args[0], _sizes_types()) else args
        if all(isinstance(s, builtins.int) and not isinstance(s, builtins.bool) for s in sizes):
            return _C.empty(*sizes, dtype=cls.dtype)
        if len(args) != 1:
            raise TypeError(f"[{cls.__name__}] takes sizes (ints) or one sequence of values, got {args!r}")
        from rill._creation import tensor
        return tensor(args[0], dtype=cls.dtype)

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype


def _sizes_types():
    from rill._tensor import Size
    return (Size,)


def _legacy(name, dtype):
    return _LegacyTensorType(name, (), {"dtype": dtype, "__doc__": f"Legacy constructor of {dtype} tensors."})


FloatTensor = _legacy("FloatTensor", _C.float32)
DoubleTensor = _legacy("DoubleTensor", _C.float64)
HalfTensor = _legacy("HalfTensor", _C.float16)
BFloat16Tensor = _legacy("BFloat16Tensor", _C.bfloat16)
ByteTensor = _legacy("ByteTensor", _C.uint8)
CharTensor = _legacy("CharTensor", _C.int8)
ShortTensor = _legacy("ShortTensor", _C.int16)
IntTensor = _legacy("IntTensor", _C.int32)
LongTensor = _legacy("LongTensor", _C.int64)
BoolTensor = _legacy("BoolTensor", _C.bool)
