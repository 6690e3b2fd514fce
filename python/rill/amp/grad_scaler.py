"""rill.amp.GradScaler: loss scaling as PyTorch's CPU GradScaler does it (scale, unscale_, step, update)."""
import math
import warnings
from collections import defaultdict

import numpy as np

import rill
from rill import _C

_READY, _UNSCALED, _STEPPED = 0, 1, 2


class GradScaler:
    """GradScaler(device='cpu', init_scale=2.**16, growth_factor=2., backoff_factor=.5, growth_interval=2000,
    enabled=True). The scale is a float32 number; a step whose gradients hold inf or NaN is skipped and the scale
    multiplied by backoff_factor; growth_interval clean steps in a row multiply it by growth_factor."""

    def __init__(self, device="cpu", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if device != "cpu" and enabled:
            warnings.warn(f"GradScaler is enabled, but device {device!r} is not available in this build of rill "
                          "(CPU tensors only). Disabling.", stacklevel=2)
            enabled = False
        if growth_factor <= 1.0:
            raise ValueError("The growth factor must be > 1.0.")
        if backoff_factor >= 1.0:
            raise ValueError("The backoff factor must be < 1.0.")
        self._device = device
        self._enabled = bool(enabled)
        self._init_scale = init_scale
        self._scale = None  # set lazily, as in PyTorch (state_dict reports init_scale until then)
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        self._growth_tracker = None
        self._per_optimizer = defaultdict(lambda: {"stage": _READY, "found_inf": None})

    def _lazy_init(self):
        self._scale = rill.full((), self._init_scale, dtype=rill.float32)
        self._growth_tracker = self._init_growth_tracker

    def is_enabled(self):
        return self._enabled

    def scale(self, outputs):
        """outputs (a tensor, or nested lists/tuples of them) multiplied by the scale."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._lazy_init()
        if isinstance(outputs, _C.Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            scaled = [self.scale(o) for o in outputs]
            return type(outputs)(scaled) if isinstance(outputs, tuple) else scaled
        if hasattr(outputs, "__iter__"):
            return map(self.scale, outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _grads(self, optimizer):
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    yield p.grad

    def unscale_(self, optimizer, allow_fp16=False):
        """Divide optimizer's gradients by the scale, in place, and note whether any is inf or NaN."""
        if not self._enabled:
            return
        if self._scale is None:
            raise RuntimeError("unscale_() called before scale(): scale the loss first")
        state = self._per_optimizer[id(optimizer)]
        if state["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = float(np.float32(1.0 / float(self._scale.item())))  # PyTorch: reciprocal in float64, then float32
        found_inf = False
        with rill.no_grad():
            for g in self._grads(optimizer):
                if not allow_fp16 and g.dtype == _C.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                if not found_inf and not bool(g.isfinite().all().item()):
                    found_inf = True
                g.mul_(inv_scale)
        state["found_inf"] = found_inf
        state["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step(*args, **kwargs) unless the unscaled gradients hold inf or NaN; returns its result."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        state = self._per_optimizer[id(optimizer)]
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        result = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return result

    def update(self, new_scale=None):
        """Back the scale off after a skipped step, grow it after growth_interval clean ones (or set new_scale)."""
        if not self._enabled:
            return
        if self._scale is None:
            raise RuntimeError("update() called before scale(): scale the loss first")
        if new_scale is not None:
            value = float(new_scale.item() if isinstance(new_scale, _C.Tensor) else new_scale)
        else:
            found = [s["found_inf"] for s in self._per_optimizer.values() if s["found_inf"] is not None]
            if not found:
                raise RuntimeError("No inf checks were recorded prior to update().")
            value = float(self._scale.item())
            if any(found):
                value *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    value *= self._growth_factor
                    self._growth_tracker = 0
        value = float(np.float32(value))
        if not math.isfinite(value):
            value = float(self._scale.item())
        self._scale = rill.full((), value, dtype=rill.float32)
        self._per_optimizer = defaultdict(lambda: {"stage": _READY, "found_inf": None})

    def get_scale(self):
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale = rill.full((), float(state_dict["scale"]), dtype=rill.float32)
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker = state_dict["_growth_tracker"]
