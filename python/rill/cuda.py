"""rill.cuda: the part of torch.cuda that CPU programs touch, answering as PyTorch does on a machine without CUDA.

rill runs on the CPU only: ``is_available()`` is False and ``device_count()`` 0, so a script's
``device = "cuda" if torch.cuda.is_available() else "cpu"`` takes its CPU path. Seeding is a no-op
(there is no CUDA generator to seed; ``rill.manual_seed`` seeds the CPU one), as PyTorch's is when no
CUDA device is present. What needs a device (``current_device``, ``synchronize``, ...) raises, as
PyTorch's does without one.
"""

__all__ = ["is_available", "device_count", "is_initialized", "init", "manual_seed", "manual_seed_all", "seed",
           "seed_all", "empty_cache", "current_device", "get_device_name", "synchronize", "set_device"]

_NO_CUDA = "rill has no CUDA backend; it runs on the CPU: check rill.cuda.is_available() and use device='cpu'"


def is_available():
    """False: rill runs on the CPU only."""
    return False


def device_count():
    """0: no CUDA device is visible to rill."""
    return 0


def is_initialized():
    """False: there is no CUDA state to initialise."""
    return False


def init():
    """Raises RuntimeError, as torch.cuda.init does without CUDA."""
    raise RuntimeError(f"[cuda.init] {_NO_CUDA}")


def manual_seed(seed):
    """Seed the CUDA generators: none exist, so nothing is seeded (rill.manual_seed seeds the CPU's)."""
    int(seed)


def manual_seed_all(seed):
    """Seed every CUDA device's generator: there are none (see manual_seed)."""
    int(seed)


def seed():
    """Seed the CUDA generator from a random number: there is none, nothing happens."""


def seed_all():
    """Seed every CUDA generator from a random number: there are none, nothing happens."""


def empty_cache():
    """Free cached CUDA memory: none is held, nothing happens (rill.empty_cache frees rill's CPU cache)."""


def current_device():
    """Raises RuntimeError: there is no current CUDA device."""
    raise RuntimeError(f"[cuda.current_device] {_NO_CUDA}")


def get_device_name(device=None):
    """Raises RuntimeError: there is no CUDA device to name."""
    raise RuntimeError(f"[cuda.get_device_name] {_NO_CUDA}")


def synchronize(device=None):
    """Raises RuntimeError: there is no CUDA device to wait for (rill.synchronize waits for rill's CPU work)."""
    raise RuntimeError(f"[cuda.synchronize] {_NO_CUDA}")


def set_device(device):
    """Raises RuntimeError: there is no CUDA device to select."""
    raise RuntimeError(f"[cuda.set_device] {_NO_CUDA}")
