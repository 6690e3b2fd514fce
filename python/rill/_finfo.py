"""rill.finfo and rill.iinfo: the numerical limits of rill's floating and integer dtypes, as in PyTorch."""
import rill

# (bits, eps, max, tiny (smallest normal), resolution) per floating dtype: IEEE 754 half/single/double
# and bfloat16 (float32's exponent with a 7-bit fraction).
_FLOAT_LIMITS = {
    "float16": (16, 2.0 ** -10, 65504.0, 2.0 ** -14, 0.001),
    "bfloat16": (16, 2.0 ** -7, (2 - 2.0 ** -7) * 2.0 ** 127, 2.0 ** -126, 0.01),
    "float32": (32, 2.0 ** -23, (2 - 2.0 ** -23) * 2.0 ** 127, 2.0 ** -126, 1e-06),
    "float64": (64, 2.0 ** -52, 1.7976931348623157e308, 2.0 ** -1022, 1e-15),
}

_INT_BITS = {"uint8": (8, False), "int8": (8, True), "int16": (16, True), "int32": (32, True), "int64": (64, True),
             "bool": (8, False)}


def _dtype_name(dtype):
    if not isinstance(dtype, rill.dtype):
        raise TypeError(f"expected a rill.dtype, got {type(dtype).__name__}")
    return str(dtype).replace("rill.", "")


class finfo:
    """Limits of a floating dtype: bits, eps, max, min, tiny (= smallest_normal), resolution, dtype."""

    def __init__(self, type=None):
        name = _dtype_name(rill.get_default_dtype() if type is None else type)
        if name not in _FLOAT_LIMITS:
            raise TypeError(f"rill.finfo() requires a floating point input type, got {name}. "
                            "Use rill.iinfo to handle integer types")
        self.bits, self.eps, self.max, self.tiny, self.resolution = _FLOAT_LIMITS[name]
        self.min = -self.max
        self.smallest_normal = self.tiny
        self.dtype = name

    def __eq__(self, other):
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self):
        return hash(("finfo", self.dtype))

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.tiny:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype: bits, max, min, dtype."""

    def __init__(self, type):
        name = _dtype_name(type)
        if name not in _INT_BITS or name == "bool":
            raise TypeError(f"rill.iinfo() requires an integer input type, got {name}. "
                            "Use rill.finfo to handle floating types")
        self.bits, signed = _INT_BITS[name]
        self.min = -(2 ** (self.bits - 1)) if signed else 0
        self.max = 2 ** (self.bits - 1) - 1 if signed else 2 ** self.bits - 1
        self.dtype = name

    def __eq__(self, other):
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self):
        return hash(("iinfo", self.dtype))

    def __repr__(self):
        return f"iinfo(min={float(self.min):g}, max={float(self.max):g}, dtype={self.dtype})"
