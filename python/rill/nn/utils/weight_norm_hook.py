"""Weight normalisation w = g * v / ||v||: the hook form (weight_norm, remove_weight_norm) and the
parametrization form (rill.nn.utils.parametrizations.weight_norm)."""
import rill
from rill.nn.parameter import Parameter


def norm_except_dim(v, dim):
    """The 2-norm of v over every dim but dim, shaped to broadcast against v; dim None or -1: the whole norm."""
    if dim is None or dim == -1:
        return rill.sqrt((v * v).sum())
    if not -v.dim() <= dim < v.dim():
        raise IndexError(f"weight_norm: dim {dim} is out of range for a tensor of {v.dim()} dimensions")
    dim %= v.dim()
    others = [d for d in range(v.dim()) if d != dim]
    if not others:
        return v.abs()
    return rill.sqrt((v * v).sum(dim=others, keepdim=True))


def _weight_norm(v, g, dim):
    return v * (g / norm_except_dim(v, dim))


class _WeightNormHook:
    def __init__(self, name, dim):
        self.name, self.dim = name, dim

    def compute(self, module):
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    def __call__(self, module, inputs):
        object.__setattr__(module, self.name, self.compute(module))


def weight_norm(module, name="weight", dim=0):
    """Replace module.<name> by name_g (magnitudes, the norm over every dim but dim; the whole norm for
    dim None) and name_v (direction) parameters, recomputing name = g * v / ||v|| before each forward."""
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, _WeightNormHook) and hook.name == name:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    if name not in module._parameters:
        raise ValueError(f"weight_norm: module {type(module).__name__} has no parameter '{name}'")
    if dim is None:
        dim = -1
    hook = _WeightNormHook(name, dim)
    weight = module._parameters[name]
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, dim).detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    object.__setattr__(module, name, hook.compute(module))
    module.register_forward_pre_hook(hook)
    return module


def remove_weight_norm(module, name="weight"):
    """Undo weight_norm: module.<name> becomes one parameter again, holding g * v / ||v||."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, _WeightNormHook) and hook.name == name:
            with rill.no_grad():
                weight = hook.compute(module)
            del module._forward_pre_hooks[key]
            module.__dict__.pop(name, None)
            del module._parameters[name + "_g"]
            del module._parameters[name + "_v"]
            module.register_parameter(name, Parameter(weight.detach()))
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
