"""Parametrizations, as torch.nn.utils.parametrize: register_parametrization(module, "weight", p) makes
module.weight a value computed as p(original) on every access, training `original` instead.

The module's class is swapped for a subclass holding a property per parametrized name (the getter runs
the chain of parametrizations, the setter their right_inverse); the originals live in
module.parametrizations[name], a ParametrizationList, as `original` or, when right_inverse returns a
sequence, as original0, original1, ...  Inside `cached()` each parametrized value is computed once."""
import contextlib

import rill
from rill.nn.modules.container import ModuleDict, ModuleList
from rill.nn.modules.module import Module
from rill.nn.parameter import Parameter

_cache_depth = 0
_cache = {}


@contextlib.contextmanager
def cached():
    """Within this context each parametrized tensor is computed on first access and then reused."""
    global _cache_depth
    _cache_depth += 1
    try:
        yield
    finally:
        _cache_depth -= 1
        if not _cache_depth:
            _cache.clear()


def _register_original(owner, name, value, like):
    """Store value on owner as a Parameter when like was one (keeping its requires_grad), else a buffer."""
    if isinstance(like, Parameter):
        owner.register_parameter(name, value if isinstance(value, Parameter)
                                 else Parameter(value.detach(), requires_grad=like.requires_grad))
    else:
        owner.register_buffer(name, value.detach())


def _check_like(name, new, original, unsafe):
    if unsafe:
        return
    if not isinstance(new, rill.Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(new).__name__}.")
    if new.dtype != original.dtype:
        raise ValueError(f"Registering a parametrization may not change the dtype of the tensor, unless "
                         f"`unsafe` flag is enabled.\nunparametrized dtype: {original.dtype}\n"
                         f"parametrized dtype: {new.dtype}")
    if tuple(new.shape) != tuple(original.shape):
        raise ValueError(f"Registering a parametrization may not change the shape of the tensor, unless "
                         f"`unsafe` flag is enabled.\nunparametrized shape: {tuple(original.shape)}\n"
                         f"parametrized shape: {tuple(new.shape)}")


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the original tensor(s) they start from."""

    def __init__(self, modules, original, unsafe=False):
        super().__init__(modules)
        self.unsafe = unsafe
        with rill.no_grad():
            new = original
            for m in reversed(list(self)):
                if hasattr(m, "right_inverse"):
                    new = m.right_inverse(new)
        if isinstance(new, rill.Tensor):
            self.is_tensor = True
            self.ntensors = 1
            if (isinstance(original, Parameter) and tuple(new.shape) == tuple(original.shape)
                    and new.dtype == original.dtype):
                with rill.no_grad():
                    original.copy_(new)  # keep the Parameter object: optimizers built on it still train it
                new = original
            _register_original(self, "original", new, original)
        elif isinstance(new, (tuple, list)):
            self.is_tensor = False
            self.ntensors = len(new)
            for i, t in enumerate(new):
                if not isinstance(t, rill.Tensor):
                    raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors "
                                     f"(list, tuple...). Got element {i} of the sequence with type {type(t).__name__}.")
                _register_original(self, f"original{i}", t, original)
        else:
            raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        if not unsafe:
            _check_like("parametrization", self(), original, unsafe)

    def right_inverse(self, value):
        """Set the original(s) so that the parametrized value becomes value."""
        with rill.no_grad():
            for m in reversed(list(self)):
                if not hasattr(m, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(m).__name__} does not implement right_inverse.")
                value = m.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, rill.Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                self.original.copy_(value)
            else:
                if not isinstance(value, (tuple, list)) or len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of {self.ntensors} tensors")
                for i, t in enumerate(value):
                    getattr(self, f"original{i}").copy_(t)

    def forward(self):
        mods = list(self)
        if self.is_tensor:
            x = mods[0](self.original)
        else:
            x = mods[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in mods[1:]:
            x = m(x)
        return x


def _inject_class(module):
    cls = module.__class__
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {"_rill_unparametrized_class": cls})


def _inject_property(module, name):
    def getter(self):
        key = (id(self), name)
        if _cache_depth:
            if key not in _cache:
                _cache[key] = self.parametrizations[name]()
            return _cache[key]
        return self.parametrizations[name]()

    def setter(self, value):
        self.parametrizations[name].right_inverse(value)

    setattr(module.__class__, name, property(getter, setter))


def is_parametrized(module, tensor_name=None):
    """Whether module has any parametrization (or one on tensor_name)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make module.<tensor_name> the output of parametrization applied to the original tensor (a parameter
    or buffer, or a tensor already parametrized, whose chain this extends). Returns module."""
    if not isinstance(module, Module):
        raise TypeError(f"register_parametrization: expected a Module, got {type(module).__name__}")
    if not isinstance(parametrization, Module):
        raise TypeError(f"register_parametrization: the parametrization must be a rill.nn.Module, "
                        f"got {type(parametrization).__name__}")
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            current = getattr(module, tensor_name)
            _check_like(tensor_name, parametrization(current), current, unsafe)
        plist.append(parametrization)
        plist.unsafe |= unsafe
        return module
    if tensor_name in module._parameters or tensor_name in module._buffers:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_class(module)
            module.parametrizations = ModuleDict()
        module.parametrizations[tensor_name] = plist
        _inject_property(module, tensor_name)
        return module
    raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element "
                     f"with name '{tensor_name}'")


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo register_parametrization on tensor_name: the tensor becomes a plain parameter (or buffer) again,
    holding its current parametrized value (leave_parametrized) or the original. Returns module."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with rill.no_grad():
                value = getattr(module, tensor_name)
            if tuple(value.shape) == tuple(original.shape) and value.dtype == original.dtype:
                with rill.no_grad():
                    original.copy_(value)
            else:
                original = (Parameter(value.detach(), original.requires_grad) if isinstance(original, Parameter)
                            else value.detach())
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                             "parametrized in terms of a sequence of tensors.")
        with rill.no_grad():
            value = getattr(module, tensor_name)
        first = plist.original0
        original = Parameter(value.detach(), first.requires_grad) if isinstance(first, Parameter) else value.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(original, Parameter):
        module.register_parameter(tensor_name, original)
    else:
        module.register_buffer(tensor_name, original)
    if not is_parametrized(module):
        del module.parametrizations
        module.__class__ = module.__class__._rill_unparametrized_class
    return module


def type_before_parametrizations(module):
    """The module's class before any parametrization swapped it."""
    if is_parametrized(module):
        return module.__class__._rill_unparametrized_class
    return type(module)
