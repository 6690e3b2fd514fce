"""Anomaly detection, as torch.autograd's: while enabled (with check_nan), backward reads each node's
gradients as the node returns them and raises PyTorch's "Function 'XBackward0' returned nan values in its
0th output." on a NaN. Process-wide, as in PyTorch; it makes every backward step a sync point, so it is for
debugging. (A kernel error already names the line that issued the failing op (Note [Errors inside the VM]), so
there is no separate forward trace to record.)"""
import functools
import warnings

from rill import _C


def is_anomaly_enabled():
    return _C._anomaly_mode()[0]


def is_anomaly_check_nan_enabled():
    return _C._anomaly_mode()[1]


def set_anomaly_enabled(enabled, check_nan=True):
    _C._set_anomaly_mode(bool(enabled), bool(check_nan))


class detect_anomaly:
    """Context manager or decorator turning anomaly detection on (check_nan: NaN gradients raise)."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only "
                      "be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        self._previous = _C._anomaly_mode()
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc):
        set_anomaly_enabled(*self._previous)
        return False

    def __call__(self, fn):
        check_nan = self.check_nan

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            previous = _C._anomaly_mode()
            set_anomaly_enabled(True, check_nan)
            try:
                return fn(*args, **kwargs)
            finally:
                set_anomaly_enabled(*previous)
        return wrapper


class set_detect_anomaly:
    """set_detect_anomaly(mode, check_nan=True): switches anomaly detection at once and, used as a context
    manager, restores the previous setting afterwards."""

    def __init__(self, mode, check_nan=True):
        self._previous = _C._anomaly_mode()
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        set_anomaly_enabled(*self._previous)
        return False
