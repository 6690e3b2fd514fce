"""PyTorch ops that are compositions of rill's ops, one module per family: pointwise, shape, products,
reductions, segment (_segment_reduce), creation. Each has torch's name, arguments and defaults; its gradient
comes from the ops it is made of. The Tensor methods torch has for them are installed here (only where the op
library does not define one)."""
from rill._C import Tensor
from rill._compositions import creation, native, numeric, pointwise, products, reductions, segment, shape
from rill._compositions._common import _float, _opmath  # noqa: F401  (rill.special, rill.nn.functional)
from rill._compositions.creation import *  # noqa: F401,F403
from rill._compositions.pointwise import *  # noqa: F401,F403
from rill._compositions.pointwise import _promote_pair, _rdiv  # noqa: F401
from rill._compositions.products import *  # noqa: F401,F403
from rill._compositions.reductions import *  # noqa: F401,F403
from rill._compositions.reductions import _pnorm  # noqa: F401
from rill._compositions.shape import *  # noqa: F401,F403
from rill._compositions.numeric import *  # noqa: F401,F403
from rill._compositions.native import *  # noqa: F401,F403
from rill._compositions.segment import *  # noqa: F401,F403
from rill._compositions.shape import _unfold

import rill

# --- Tensor methods ------------------------------------------------------------------------------------------------

_METHODS = (
    "isnan", "isinf", "isposinf", "isneginf", "isfinite", "isreal", "signbit", "isclose", "allclose", "equal",
    "sgn", "positive", "deg2rad", "rad2deg", "frac", "xlogy", "sinc", "logit", "hypot", "copysign", "heaviside",
    "fmax", "fmin", "float_power", "exp2", "log2", "log10", "logaddexp2", "tensor_split", "hsplit", "vsplit",
    "dsplit", "unbind", "broadcast_to", "ravel", "rot90", "msort", "diff", "cross", "take", "repeat_interleave",
    "mv", "dot", "vdot", "outer", "ger", "inner", "kron", "trace", "addmm", "addmv", "addr", "baddbmm", "addbmm",
    "diag_embed", "diagflat", "count_nonzero", "aminmax", "nansum", "nanmean", "logcumsumexp", "cummax", "cummin",
    "sum_to_size", "index_fill", "index_copy", "select_scatter", "slice_scatter", "diagonal_scatter", "as_strided_scatter", "cov",
    "corrcoef", "dist", "renorm", "unique_consecutive", "tan", "sinh", "cosh", "asin", "acos", "atan", "asinh",
    "acosh", "atanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "erfc", "ldexp", "angle",
    "conj", "conj_physical", "resolve_conj", "resolve_neg", "masked_scatter", "put", "bincount", "histc", "isin",
    "gcd", "lcm", "i0", "median", "nanmedian", "quantile", "nanquantile", "mode", "bitwise_left_shift",
    "bitwise_right_shift", "index_reduce", "scatter_reduce", "split_with_sizes", "unsafe_split", "unsafe_chunk", "true_divide", "narrow_copy", "nonzero_static", "histogram",
)
_INPLACE = {"deg2rad_": deg2rad, "rad2deg_": rad2deg, "frac_": frac, "xlogy_": xlogy, "sinc_": sinc,
            "logit_": logit, "hypot_": hypot, "copysign_": copysign, "heaviside_": heaviside,
            "float_power_": float_power, "exp2_": exp2, "log2_": log2, "log10_": log10, "sgn_": sgn,
            "addmm_": addmm, "addmv_": addmv, "addr_": addr, "baddbmm_": baddbmm, "addbmm_": addbmm,
            "index_fill_": index_fill, "index_copy_": index_copy, "renorm_": renorm, "tan_": tan, "sinh_": sinh,
            "cosh_": cosh, "asin_": asin, "acos_": acos, "atan_": atan, "asinh_": asinh, "acosh_": acosh,
            "atanh_": atanh, "arcsin_": asin, "arccos_": acos, "arctan_": atan, "arcsinh_": asinh, "arccosh_": acosh,
            "arctanh_": atanh, "erfc_": erfc, "i0_": i0, "bitwise_left_shift_": bitwise_left_shift,
            "bitwise_right_shift_": bitwise_right_shift, "index_reduce_": index_reduce, "scatter_reduce_": scatter_reduce, "ldexp_": ldexp, "masked_scatter_": masked_scatter, "put_": put,
            "gcd_": gcd, "lcm_": lcm, "eq_": rill.eq, "ne_": rill.ne, "lt_": rill.lt, "le_": rill.le, "gt_": rill.gt,
            "ge_": rill.ge, "clamp_min_": rill.clamp_min, "clamp_max_": rill.clamp_max, "true_divide_": rill.div,
            "conj_physical_": conj_physical}


def _inplace(fn, resize=False):
    """fn as an in-place method: its result copied into self. resize: self takes the result's shape first when
    they differ, as PyTorch's addbmm_ does (it writes through addbmm's out= form, which resizes its output, so
    an input that only broadcasts to the result, shape [1] for a [5, 10] result, grows to [5, 10])."""
    def method(self, *args, **kwargs):
        result = fn(self, *args, **kwargs)
        if result.dtype != self.dtype and not can_cast(result.dtype, self.dtype):
            raise RuntimeError(f"result type {result.dtype} can't be cast to the desired output type {self.dtype}")
        if resize and tuple(result.shape) != tuple(self.shape):
            self.resize_(tuple(result.shape))
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
if not hasattr(Tensor, "frexp"):
    Tensor.frexp = frexp
if not hasattr(Tensor, "polygamma"):
    Tensor.polygamma = lambda self, n: polygamma(n, self)
    Tensor.polygamma.__doc__ = "The n-th derivative of digamma."
    Tensor.polygamma_ = lambda self, n: self._polygamma_(n)
    Tensor.polygamma_.__doc__ = "In-place polygamma."
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
        setattr(Tensor, _name, _inplace(_fn, resize=_name == "addbmm_"))

__all__ = [*creation.__all__, *native.__all__, *numeric.__all__, *pointwise.__all__, *products.__all__,
           *reductions.__all__, *segment.__all__, *shape.__all__,
           *[_n for _n, _v in list(globals().items())
             if not _n.startswith("_") and callable(_v) and getattr(_v, "__module__", None) == __name__]]
