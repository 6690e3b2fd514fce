"""Ready-made parametrizations (torch.nn.utils.parametrizations): weight_norm."""
from rill.nn.modules.module import Module
from rill.nn.utils import parametrize
from rill.nn.utils.weight_norm_hook import _weight_norm, norm_except_dim


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Parametrize module.<name> as g * v / ||v|| (the norm over every dim but dim; the whole norm for dim
    None), stored as parametrizations.<name>.original0 (g) and original1 (v)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module
