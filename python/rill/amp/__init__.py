"""rill.amp: CPU mixed precision, as torch.amp (autocast, GradScaler, custom_fwd/custom_bwd)."""
from rill.amp.autocast_mode import (  # noqa: F401
    autocast, custom_bwd, custom_fwd, get_autocast_dtype, is_autocast_available, is_autocast_enabled,
)
from rill.amp.grad_scaler import GradScaler  # noqa: F401
