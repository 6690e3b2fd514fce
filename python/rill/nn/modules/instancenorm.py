"""torch.nn.modules.instancenorm's classes at the same path (rill defines them in normalization.py)."""
from rill.nn.modules.normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: F401
