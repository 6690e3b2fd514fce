"""Tensor methods the training stack needs: pickling (so tensors cross process boundaries, e.g. from
DataLoader workers), deepcopy, the in-place random fills uniform_/normal_ and softmax/log_softmax (each
installed only where the op library does not define it)."""
import copy

from rill import _C
from rill._C import Tensor


def _rebuild_tensor(array, dtype_name, requires_grad):
    from rill.serialization import _tensor_from_array
    t = _tensor_from_array(array, dtype_name)
    if requires_grad:
        t.requires_grad = True
    return t


def _reduce_ex(self, protocol):
    from rill.serialization import _tensor_bytes
    if self.grad_fn is not None:
        raise RuntimeError("[pickle] can't pickle a non-leaf tensor that requires grad; pickle t.detach()")
    return (_rebuild_tensor, (_tensor_bytes(self), self.dtype.name, bool(self.requires_grad)))


def _deepcopy(self, memo):
    if not self.is_leaf:
        raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                           "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
                           "because of a torch.nn.utils.weight_norm usage, see "
                           "https://github.com/pytorch/pytorch/pull/103001")
    if id(self) in memo:
        return memo[id(self)]
    out = self.detach().clone()
    if self.requires_grad:
        out.requires_grad = True
    if self.grad is not None:
        out.grad = copy.deepcopy(self.grad, memo)
    memo[id(self)] = out
    return out


def _sample_dtype(t):
    return t.dtype if t.dtype in (_C.float32, _C.float64) else _C.float32


def _fill_(t, values):
    """t's values replaced by values (converted to t's dtype), outside autograd; returns t."""
    from rill.autograd.grad_mode import no_grad
    with no_grad():
        t.copy_(values.to(t.dtype))
    return t


def _uniform_(self, *args, **kwargs):
    """uniform_(from=0, to=1, *, generator=None): fill with values drawn from U(from, to) (in place); generator:
    a rill.Generator to draw from. (`from` is PyTorch's keyword name, a Python keyword: pass it as **{"from": v}
    or positionally.)"""
    from rill._generator import _samples
    names = ["from", "to", "generator"]
    values = {"from": 0.0, "to": 1.0, "generator": None}
    if len(args) > 3:
        raise TypeError(f"[uniform_] takes at most 3 arguments, got {len(args)}")
    for name, v in zip(names, args):
        values[name] = v
    for name, v in kwargs.items():
        if name not in values or name in names[:len(args)]:
            raise TypeError(f"[uniform_] got an unexpected or repeated keyword argument '{name}'")
        values[name] = v
    lo, hi = values["from"], values["to"]
    return _fill_(self, _samples("uniform", self._shape, _sample_dtype(self), values["generator"], lo, hi))


def _normal_(self, mean=0.0, std=1.0, generator=None):
    """Fill with values drawn from N(mean, std^2) (in place); generator: a rill.Generator to draw from."""
    from rill._generator import _samples
    return _fill_(self, _samples("normal", self._shape, _sample_dtype(self), generator, mean, std))


def _softmax(self, dim, dtype=None):
    """softmax along dim (torch.Tensor.softmax: dim is required)."""
    from rill.nn.functional import softmax
    return softmax(self, dim, dtype=dtype)


def _log_softmax(self, dim, dtype=None):
    """log_softmax along dim (torch.Tensor.log_softmax: dim is required)."""
    from rill.nn.functional import log_softmax
    return log_softmax(self, dim, dtype=dtype)


Tensor.__reduce_ex__ = _reduce_ex
Tensor.__deepcopy__ = _deepcopy
for _name, _fn in (("uniform_", _uniform_), ("normal_", _normal_), ("softmax", _softmax),
                   ("log_softmax", _log_softmax)):
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _fn)


# --- div(..., rounding_mode=) -----------------------------------------------------------------------------------
def _rounded_quotient(a, b, rounding_mode):
    """a / b rounded toward zero ('trunc') or down ('floor'), in the promoted dtype as torch.div."""
    import rill
    if rounding_mode not in ("trunc", "floor"):
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                         f"'{rounding_mode}'")
    q = rill._C.div(a, b)
    if q.dtype.is_floating_point and (rill.is_tensor(a) and a.dtype.is_floating_point
                                      or rill.is_tensor(b) and b.dtype.is_floating_point
                                      or isinstance(a, float) or isinstance(b, float)):
        if rounding_mode == "trunc":
            return rill.trunc(q)  # zero gradient, as in PyTorch
        # Python's floor division (floor_divide: 1.0 // 0.1 is 9, float16 quotients floored before rounding),
        # with a zero gradient for each input, as in PyTorch (through an unselected branch of where: no NaN
        # from a zero divisor)
        with rill.no_grad():
            value = rill.floor_divide(a, b)
        grads = [v for v in (a, b) if rill.is_tensor(v) and v.requires_grad]
        if not rill.is_grad_enabled() or not grads:
            return value
        return rill.where(rill.zeros((), dtype=rill.bool), sum(v * 0 for v in grads), value)
    if rounding_mode == "floor":
        return rill.floor_divide(a, b)
    # integers: a - fmod(a, b) is a multiple of b, so its floor division is exact
    return rill.floor_divide(a - rill.fmod(a, b), b)


def _div_with_rounding(plain):
    def div(input, other, *, rounding_mode=None, out=None):
        if rounding_mode is None:
            return plain(input, other, out=out) if out is not None else plain(input, other)
        q = _rounded_quotient(input, other, rounding_mode)
        if out is not None:
            out.copy_(q)
            return out
        return q
    div.__name__ = getattr(plain, "__name__", "div")
    div.__doc__ = "input / other; rounding_mode 'trunc' rounds the quotient toward zero, 'floor' down."
    return div


def _div_inplace_with_rounding(plain):
    def div_(self, other, *, rounding_mode=None):
        if rounding_mode is None:
            return plain(self, other)
        return self.copy_(_rounded_quotient(self, other, rounding_mode))
    return div_


def _install_div():
    import rill
    for name in ("div", "divide"):
        setattr(rill, name, _div_with_rounding(getattr(rill._C, name)))
    div, div_ = _div_with_rounding(Tensor.div), _div_inplace_with_rounding(Tensor.div_)
    for name in ("div", "divide"):
        setattr(Tensor, name, div)
        setattr(Tensor, name + "_", div_)


_install_div()


# --- gather with an empty index ---------------------------------------------------------------------------------
def _gather_allowing_empty(plain):
    def gather(input, dim, index, *, sparse_grad=False):
        if isinstance(index, Tensor) and isinstance(input, Tensor) and index.numel() == 0:
            # PyTorch checks only dim when the index is empty: any index dtype (uint8, float) and any shape,
            # even one of other rank than input, gives an empty result shaped like the index
            from rill._compositions._common import _dim
            _dim(dim, input.dim())
            return input.reshape(-1)[:0].reshape(tuple(index.shape))
        return plain(input, dim, index, sparse_grad=sparse_grad)
    gather.__name__ = "gather"
    gather.__doc__ = plain.__doc__
    return gather


def _install_gather():
    import rill
    rill.gather = _gather_allowing_empty(rill._C.gather)
    Tensor.gather = _gather_allowing_empty(Tensor.gather)


_install_gather()
