"""rill.nn: neural-network building blocks, mirroring torch.nn."""
from rill.nn import functional  # noqa: F401
