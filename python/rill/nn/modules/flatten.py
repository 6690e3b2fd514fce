"""torch.nn.modules.flatten's classes at the same path (rill defines them in linear.py)."""
from rill.nn.modules.linear import Flatten, Unflatten  # noqa: F401
