"""rill.cpu.amp: torch.cpu.amp's spellings (autocast defaults to device 'cpu', bfloat16)."""
import rill.amp


class autocast(rill.amp.autocast):
    """autocast(enabled=True, dtype=rill.bfloat16, cache_enabled=True) on the CPU."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(rill.amp.GradScaler):
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval, enabled)
