"""rill.signal: torch.signal's window functions (rill.signal.windows)."""
from rill.signal import windows  # noqa: F401
