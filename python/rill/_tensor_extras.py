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
    return _fill_(self, _samples("uniform", self._shape, _sample_dtype(self), values["generator"]) * (hi - lo) + lo)


def _normal_(self, mean=0.0, std=1.0, generator=None):
    """Fill with values drawn from N(mean, std^2) (in place); generator: a rill.Generator to draw from."""
    from rill._generator import _samples
    return _fill_(self, _samples("normal", self._shape, _sample_dtype(self), generator) * std + mean)


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
