"""rill.special: the torch.special functions that are compositions of rill's ops."""
import math

import rill
from rill._compositions import _float, _opmath, _promote_pair, erfc, xlogy, i0  # noqa: F401


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


@_opmath
def ndtr(input):
    """The standard normal cumulative distribution function."""
    x = _float(input)
    return 0.5 * (1 + rill.erf(x * (1 / math.sqrt(2))))


@_opmath
def i0e(input):
    """exp(-|x|) I0(x)."""
    x = _float(input)
    return i0(x) * rill.exp(-x.abs())
