"""rill.cpu: the CPU device module (rill.cpu.amp as torch.cpu.amp)."""
from rill.cpu import amp  # noqa: F401


def is_available():
    return True


def device_count():
    return 1


def synchronize(device=None):
    """Wait for rill's queued CPU work (rill.synchronize)."""
    import rill
    rill.synchronize()
