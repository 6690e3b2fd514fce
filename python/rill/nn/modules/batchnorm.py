"""torch.nn.modules.batchnorm's classes at the same path (rill defines them in normalization.py and lazy.py), so
pickles and imports that name torch's module find them."""
from rill.nn.modules.lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d  # noqa: F401
from rill.nn.modules.normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d  # noqa: F401
