"""The in-place view methods (Tensor.squeeze_, unsqueeze_, t_, transpose_, swapdims_, swapaxes_,
as_strided_): each
computes the view and makes the tensor object hold it (Tensor._become), so the object's shape and strides
change while its memory is shared, and its grad_fn is the view's, as in PyTorch."""
from rill import _C
from rill._C import Tensor


def _check_inplace_view(self, name):
    if self.requires_grad and self.is_leaf and _C.is_grad_enabled():
        raise RuntimeError(f"[Tensor.{name}] a leaf Variable that requires grad is being used in an in-place "
                           "operation; call it under rill.no_grad() or on a non-leaf (e.g. x.clone())")


def _inplace_view(name, make_view):
    def method(self, *args, **kwargs):
        _check_inplace_view(self, name)
        return self._become(make_view(self, *args, **kwargs))
    method.__name__ = name
    method.__qualname__ = "Tensor." + name
    method.__doc__ = f"In-place {name[:-1]}: this tensor becomes the view Tensor.{name[:-1]} returns."
    return method


def _squeeze(self, dim=None):
    return self.squeeze() if dim is None else self.squeeze(dim)


_VIEWS = {
    "squeeze_": _squeeze,
    "unsqueeze_": lambda self, dim: self.unsqueeze(dim),
    "t_": lambda self: self.t(),
    "transpose_": lambda self, dim0, dim1: self.transpose(dim0, dim1),
    "swapdims_": lambda self, dim0, dim1: self.transpose(dim0, dim1),
    "swapaxes_": lambda self, axis0, axis1: self.transpose(axis0, axis1),
    "as_strided_": lambda self, size, stride, storage_offset=None: self.as_strided(size, stride, storage_offset),
}

for _name, _make in _VIEWS.items():
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _inplace_view(_name, _make))


def _contiguous_strides(size):
    strides, step = [], 1
    for n in reversed(size):
        strides.append(step)
        step *= max(n, 1)
    return strides[::-1]


def _resize_(self, *size, memory_format=None):
    """Give this tensor the shape size, contiguous: its memory when large enough (the elements in it kept),
    otherwise new memory starting with its elements (the rest uninitialised), as Tensor.resize_ does."""
    if len(size) == 1 and not isinstance(size[0], int):
        size = tuple(size[0])
    size = [int(n) for n in size]
    if any(n < 0 for n in size):
        raise RuntimeError(f"[Tensor.resize_] sizes must be non-negative, got {size}")
    if self.requires_grad:
        raise RuntimeError("[Tensor.resize_] cannot resize variables that require grad; resize a detached "
                           "tensor (x.detach().resize_(...))")
    numel = 1
    for n in size:
        numel *= n
    strides = _contiguous_strides(size)
    with _no_grad():
        available = self._storage_numel - self.storage_offset()
        if numel <= available:
            return self._become(self.as_strided(size, strides, self.storage_offset()))
        grown = _C.empty([numel], dtype=self.dtype)
        keep = min(self.numel(), numel)
        if keep:
            grown[:keep].copy_(self.reshape(-1)[:keep])
        return self._become(grown.as_strided(size, strides, 0))


def _resize_as_(self, the_template, memory_format=None):
    """Tensor.resize_ to other's shape."""
    return _resize_(self, tuple(the_template.shape))


def _no_grad():
    from rill.autograd.grad_mode import no_grad
    return no_grad()


for _name, _fn in (("resize_", _resize_), ("resize_as_", _resize_as_)):
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _fn)
