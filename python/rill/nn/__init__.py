"""rill.nn: neural-network building blocks (``rill.nn.functional`` for now)."""
from rill.nn import functional  # noqa: F401
