"""Pointwise compositions: predicates (isnan, isclose, ...), pointwise functions (deg2rad, xlogy, hypot, ...),
trigonometric and hyperbolic functions, bit shifts."""
import builtins
import collections
import math

import rill
from rill._C import Tensor
from rill._compositions._common import _false_like, _float, _inf, _opmath, _pi


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


_frexp_result = collections.namedtuple("frexp", ["mantissa", "exponent"])


def frexp(input, *, out=None):
    """(mantissa, exponent) with input = mantissa * 2 ** exponent, |mantissa| in [0.5, 1), the exponent int32."""
    mantissa, exponent = rill._frexp(input)
    if out is not None:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError("frexp(): out= must be a tuple of two tensors (mantissa, exponent)")
        if out[1].dtype != rill.int32:
            raise RuntimeError(f"torch.frexp() expects exponent to have int dtype but got {out[1].dtype}")
        for dst, src in zip(out, (mantissa, exponent)):
            dst.copy_(src)
        return _frexp_result(*out)
    return _frexp_result(mantissa, exponent)


def polygamma(n, input, *, out=None):
    """The n-th derivative of digamma (n >= 0), by rill's _polygamma op (input first, for its method form)."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' must be an int, got {type(n).__name__}")
    if not isinstance(input, Tensor):
        raise TypeError(f"polygamma(): argument 'input' must be a Tensor, got {type(input).__name__}")
    return rill._polygamma(input, n, out=out)


def ldexp(input, other):
    """input * 2 ** other."""
    x, e = _promote_pair(input, other)
    return x * rill.pow(rill.full((), 2.0, dtype=x.dtype), e)


def angle(input):
    """The argument of each element: pi for negative numbers, 0 otherwise (NaN stays NaN)."""
    x = _float(input)
    return rill.where(x < 0, _pi, rill.where(isnan(x), x, 0.0)) + x * 0 if x.requires_grad else rill.where(
        x < 0, _pi, rill.where(isnan(x), x, 0.0))

# --- bit shifts ----------------------------------------------------------------------------------------------------

def _shift_operands(name, input, other):
    if not isinstance(input, Tensor):
        input = rill.tensor(input, dtype=other.dtype if isinstance(other, Tensor) else None)
    if input.is_floating_point() or (isinstance(other, Tensor) and other.is_floating_point()) or isinstance(
            other, float):
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Float'")
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

__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and callable(_v) and getattr(_v, "__module__", None) == __name__]
