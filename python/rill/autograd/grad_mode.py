"""Grad mode switches, usable as context managers and as decorators (like torch's)."""
import functools
import threading

from rill import _C


class _GradModeContext:
    """Base of the grad mode switches: sets the mode on enter, restores the previous one on exit."""

    mode = True

    def __enter__(self):
        self._previous = _C.is_grad_enabled()
        _C._set_grad_enabled(self.mode)
        return None

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._previous)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__._fresh(self):
                return fn(*args, **kwargs)
        return wrapper

    def _fresh(self):
        return self.__class__()

    def clone(self):
        return self._fresh()


class no_grad(_GradModeContext):
    """Ops inside do not record the autograd graph: `with rill.no_grad():` or `@rill.no_grad()`."""

    mode = False

    def __init__(self, orig_func=None):
        # `@rill.no_grad` without parentheses, as torch allows.
        self._orig = orig_func

    def __new__(cls, orig_func=None):
        if orig_func is not None and callable(orig_func):
            return cls()(orig_func)
        return super().__new__(cls)


class enable_grad(no_grad):
    """Ops inside record the autograd graph again (inside no_grad)."""

    mode = True


class set_grad_enabled(_GradModeContext):
    """set_grad_enabled(mode): sets grad mode at once (a function call) and, used as a context manager or a
    decorator, restores the previous mode afterwards."""

    def __init__(self, mode):
        self.mode = bool(mode)
        self._previous = _C.is_grad_enabled()
        _C._set_grad_enabled(self.mode)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._previous)
        return False

    def __call__(self, fn):
        # The constructor already switched: as a decorator, undo that and switch per call instead.
        _C._set_grad_enabled(self._previous)
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            previous = _C.is_grad_enabled()
            _C._set_grad_enabled(mode)
            try:
                return fn(*args, **kwargs)
            finally:
                _C._set_grad_enabled(previous)
        return wrapper


class inference_mode(no_grad):
    """rill has no separate inference mode: inference_mode(True) is no_grad, inference_mode(False) changes
    nothing."""

    def __init__(self, mode=True):
        self._mode_arg = mode

    def __new__(cls, mode=True):
        if callable(mode):
            return cls()(mode)
        return object.__new__(cls)

    def __enter__(self):
        self._previous = _C.is_grad_enabled()
        if self._mode_arg:
            _C._set_grad_enabled(False)
            _INFERENCE.depth = _inference_depth() + 1

    def __exit__(self, *exc):
        if self._mode_arg:
            _INFERENCE.depth -= 1
        return super().__exit__(*exc)

    def _fresh(self):
        return self.__class__(self._mode_arg)


_INFERENCE = threading.local()  # how many inference_mode(True) blocks the thread is in


def _inference_depth():
    return getattr(_INFERENCE, "depth", 0)


def is_grad_enabled():
    """True when ops record the autograd graph on this thread."""
    return _C.is_grad_enabled()
