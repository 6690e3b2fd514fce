"""rill.special: torch.special. The special functions with kernels of their own are rill's `special_<name>` ops
(ops/special.cpp); the rest are compositions of rill's ops."""
import math

import rill
from rill import _C
from rill._C import Tensor
from rill._compositions import _float, _opmath, _promote_pair, erfc, xlogy, i0  # noqa: F401

digamma = psi = _C.digamma
gammaln = _C.lgamma
erfinv = _C.erfinv
multigammaln = _C.mvlgamma
gammainc = _C.igamma
gammaincc = _C.igammac
erfcx = _C.special_erfcx
log_ndtr = _C.special_log_ndtr
ndtri = _C.special_ndtri
i0e = _C.special_i0e
i1 = _C.special_i1
i1e = _C.special_i1e
airy_ai = _C.special_airy_ai
bessel_j0 = _C.special_bessel_j0
bessel_j1 = _C.special_bessel_j1
bessel_y0 = _C.special_bessel_y0
bessel_y1 = _C.special_bessel_y1
modified_bessel_i0 = _C.special_modified_bessel_i0
modified_bessel_i1 = _C.special_modified_bessel_i1
modified_bessel_k0 = _C.special_modified_bessel_k0
modified_bessel_k1 = _C.special_modified_bessel_k1
scaled_modified_bessel_k0 = _C.special_scaled_modified_bessel_k0
scaled_modified_bessel_k1 = _C.special_scaled_modified_bessel_k1
spherical_bessel_j0 = _C.special_spherical_bessel_j0


def polygamma(n, input, *, out=None):
    """The n-th derivative of digamma."""
    return rill.polygamma(n, input, out=out)


def _tensor_of(v, other):
    """A Python number given for one operand of a two-operand special function, as a 0-dim tensor that promotes
    with the other operand as the number would (a float: the default dtype; an int: int64; a bool: bool)."""
    if isinstance(v, Tensor):
        return v
    if not isinstance(other, Tensor):
        raise TypeError(f"expected at least one tensor argument, got {type(v).__name__} and {type(other).__name__}")
    if isinstance(v, bool):
        dtype = rill.bool
    elif isinstance(v, int):
        dtype = rill.int64
    elif isinstance(v, float):
        dtype = rill.get_default_dtype()
    else:
        raise TypeError(f"expected a tensor or a number, got {type(v).__name__}")
    return rill.tensor(v, dtype=dtype)


def _two_operands(op, first, second, doc):
    def fn(*args, out=None, **kwargs):
        names = (first, second)
        values = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names or k in values:
                raise TypeError(f"{op.__name__}() got an unexpected or repeated argument '{k}'")
            values[k] = v
        if len(values) != 2:
            raise TypeError(f"{op.__name__}() takes 2 arguments ({first}, {second}), got {len(values)}")
        a, b = values[first], values[second]
        return op(_tensor_of(a, b), _tensor_of(b, a), out=out)
    fn.__doc__ = doc
    return fn


def _define_two_operand_functions():
    zeta_fn = _two_operands(_C.special_zeta, "input", "other", "The Hurwitz zeta function zeta(input, other).")
    zeta_fn.__name__ = "zeta"
    globals()["zeta"] = zeta_fn
    for kind in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                 "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
                 "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                 "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"):
        fn = _two_operands(getattr(_C, "special_" + kind), "input", "n",
                           f"The {kind.replace('_', ' ')} of degree n (truncated to an integer) at input.")
        fn.__name__ = kind
        globals()[kind] = fn


_define_two_operand_functions()


@_opmath
def entr(input):
    """-x log x (0 at 0, -inf for negative x)."""
    x = _float(input)
    return rill.where(x > 0, -xlogy(x, x), rill.where(x == 0, 0.0, rill.where(x < 0, -math.inf, x)))


@_opmath
def xlog1py(input, other):
    """input * log1p(other), 0 where input is 0 (unless other is NaN)."""
    x, y = _promote_pair(input, other)
    return rill.where((x == 0) & (y == y), 0.0, x * rill.log1p(y))


def ndtr(input):
    """The standard normal cumulative distribution function. Each step is rounded to input's dtype, as PyTorch
    composes it for float16/bfloat16 too (so its far tails are 0 and 1 there)."""
    x = _float(input)
    return 0.5 * (1 + rill.erf(x * (1 / math.sqrt(2))))
