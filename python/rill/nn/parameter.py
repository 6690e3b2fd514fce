"""Parameter: a Tensor that a Module registers as a learnable weight."""
from rill import _C
from rill._C import Tensor


class Parameter(Tensor):
    """A leaf Tensor that Modules register as a parameter when assigned as an attribute.

    Parameter(data=None, requires_grad=True): shares data's memory, as torch.nn.Parameter does.
    """

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"[Parameter] expected a Tensor as data, got {type(data).__name__}")
        return Tensor._make_subclass(cls, data, requires_grad)

    def __init__(self, data=None, requires_grad=True):  # the work is done in __new__
        pass

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, proto):
        return (Parameter, (self.detach(), self.requires_grad))


class Buffer(Tensor):
    """A marker like torch.nn.Buffer: `self.x = Buffer(t)` registers t as a buffer (a plain Tensor)."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _C.empty(0)
        out = Tensor._make_subclass(cls, data, False)
        out.persistent = persistent
        return out

    def __init__(self, data=None, *, persistent=True):
        pass


def __getattr__(name):
    # torch.nn.parameter.UninitializedParameter's home; defined with the lazy modules (Note [Lazy parameters])
    if name == "UninitializedParameter":
        from rill.nn.modules.lazy import UninitializedParameter
        return UninitializedParameter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
