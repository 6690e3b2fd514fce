"""rill.autocast / rill.amp.autocast: CPU mixed precision (Note [Autocast] in src/rill/eager/autocast.h).

Inside ``with rill.autocast("cpu"):`` (bfloat16 by default; float16 also allowed) the ops on PyTorch's CPU
lower-precision list (matmul and what reaches it: mm, bmm, addmm, baddbmm, linear, the convolutions) run in the
autocast dtype, and those on its float32 list (prod, the LAPACK solvers, the losses) run in float32. The state is
per thread, as in PyTorch; backward passes run the dtypes the forward chose."""
import functools
import warnings

from rill import _C

_CPU_DTYPES = (_C.bfloat16, _C.float16)


def _check_device(device_type, what):
    if not isinstance(device_type, str):
        raise TypeError(f"[{what}] expected device_type as a str ('cpu'), got {type(device_type).__name__}")
    if device_type not in ("cpu", "cuda", "xpu", "mps", "hpu", "xla", "mtia", "meta"):
        raise RuntimeError(f"[{what}] unknown device_type {device_type!r}; rill autocasts on 'cpu'")


class autocast:
    """autocast(device_type, dtype=None, enabled=True, cache_enabled=None): a context manager and decorator."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        _check_device(device_type, "autocast")
        self.device = device_type
        self.fast_dtype = _C.bfloat16 if dtype is None else dtype
        self._enabled = bool(enabled)
        if device_type != "cpu":
            if enabled:
                warnings.warn(f"User provided device_type of {device_type!r}, but this build of rill has CPU tensors "
                              "only. Disabling autocast.", stacklevel=2)
            self._enabled = False
        elif self._enabled and self.fast_dtype not in _CPU_DTYPES:
            warnings.warn(f"In CPU autocast, but the target dtype {self.fast_dtype} is not supported. Disabling "
                          "autocast.\nCPU Autocast only supports dtype of rill.bfloat16, rill.float16 currently.",
                          stacklevel=2)
            self._enabled = False

    def __enter__(self):
        self._previous = _C._autocast_state()
        if self.device == "cpu":
            dtype = self.fast_dtype if self.fast_dtype in _CPU_DTYPES else self._previous[1]
            _C._set_autocast_state(self._enabled, dtype)
        return self

    def __exit__(self, *exc):
        _C._set_autocast_state(*self._previous)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with autocast(self.device, dtype=self.fast_dtype, enabled=self._enabled):
                return func(*args, **kwargs)
        return wrapper


def is_autocast_enabled(device_type=None):
    """True inside an enabled autocast for device_type (no argument: the CUDA one, always False here)."""
    if device_type is None or device_type != "cpu":
        return False
    return _C._autocast_state()[0]


def get_autocast_dtype(device_type):
    _check_device(device_type, "get_autocast_dtype")
    return _C._autocast_state()[1] if device_type == "cpu" else _C.float16


def set_autocast_enabled(device_type, enabled):
    if device_type == "cpu":
        _C._set_autocast_state(bool(enabled), _C._autocast_state()[1])


def set_autocast_dtype(device_type, dtype):
    if device_type == "cpu":
        _C._set_autocast_state(_C._autocast_state()[0], dtype)


def is_autocast_cpu_enabled():
    return _C._autocast_state()[0]


def get_autocast_cpu_dtype():
    return _C._autocast_state()[1]


def is_autocast_available(device_type):
    return device_type == "cpu"


def _policy(cast):
    """A decorator for a Python function on one of PyTorch's CPU autocast lists: under autocast, its tensor
    arguments go through cast(tensor, autocast dtype) and it runs with autocast off (the ops inside keep the
    dtypes chosen here, as PyTorch runs them below autocast)."""
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            state = _C._autocast_state()
            if not state[0]:
                return fn(*args, **kwargs)

            def arg(a):
                return cast(a, state[1]) if isinstance(a, _C.Tensor) else a
            _C._set_autocast_state(False, state[1])
            try:
                return fn(*[arg(a) for a in args], **{k: arg(v) for k, v in kwargs.items()})
            finally:
                _C._set_autocast_state(*state)
        return wrapper
    return decorate


# PyTorch's "lower_precision_fp" list: float32 tensors (and the other 16-bit type) run in the autocast dtype
_lower_precision_policy = _policy(lambda t, dtype: t.to(dtype) if t.dtype == _C.float32 or t.dtype in _CPU_DTYPES
                                  else t)
# PyTorch's "fp32" list: float16/bfloat16 tensors run in float32
_float32_policy = _policy(lambda t, dtype: t.float() if t.dtype in _CPU_DTYPES else t)


def custom_fwd(fwd=None, *, device_type="cpu", cast_inputs=None):
    """Decorator for a custom autograd.Function's forward (as torch.amp.custom_fwd): with cast_inputs, floating
    tensor arguments are cast to it and the forward runs with autocast off."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    if cast_inputs is None:
        return fwd
    return _policy(lambda t, dtype: t.to(cast_inputs) if t.is_floating_point() else t)(fwd)


def custom_bwd(bwd=None, *, device_type="cpu"):
    """Decorator for a custom autograd.Function's backward (as torch.amp.custom_bwd)."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    return bwd
