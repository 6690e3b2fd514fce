"""Optimizer: parameter groups, per-parameter state, zero_grad, and state dicts in PyTorch's format."""
import functools
import struct
from collections import defaultdict
from copy import deepcopy
from itertools import chain

import rill
from rill._C import Tensor


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    """Base class: Optimizer(params, defaults) where params is an iterable of tensors or of dicts (param groups)."""

    def __init_subclass__(cls, **kwargs):
        # Every optimizer's step() checks, under strict dtype mode, that each gradient has its parameter's
        # dtype (the update would convert it implicitly).
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is None or getattr(step, "_checks_strict_dtype", False):
            return

        @functools.wraps(step)
        def checked_step(self, *args, **kwargs):
            if rill.is_strict_dtype():
                self._check_strict_dtype()
            return step(self, *args, **kwargs)

        checked_step._checks_strict_dtype = True
        cls.step = checked_step

    def _check_strict_dtype(self):
        """TypeError when a parameter's gradient has another dtype than the parameter."""
        for gi, group in enumerate(self.param_groups):
            for pi, p in enumerate(group["params"]):
                g = p.grad
                if g is not None and g.dtype != p.dtype:
                    raise TypeError(f"[{type(self).__name__}.step] strict dtype mode: parameter {pi} of group {gi} "
                                    f"is {p.dtype.name} and its gradient is {g.dtype.name}; "
                                    f"convert explicitly, e.g. p.grad = p.grad.to(rill.{p.dtype.name})")

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)  # keyed by the parameter tensor itself (Tensor hashes by identity)
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {type(params).__name__}")
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    def add_param_group(self, param_group):
        """Add a group of parameters with its own options (missing options take the defaults)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + type(param).__name__)
            if not param.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            raise ValueError("optimizer contains a parameter group with duplicate parameters")
        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
        if any(id(p) in seen for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        """Clear every parameter's gradient: None by default, zeros with set_to_none=False."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g = g.detach()
                        p.grad = g
                    g.zero_()

    def step(self, closure=None):
        raise NotImplementedError

    def _closure_loss(self, closure):
        if closure is None:
            return None
        with rill.enable_grad():
            return closure()

    # --- state dicts ---
    def state_dict(self):
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}, as PyTorch's."""
        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {param_mappings[id(k)]: v for k, v in self.state.items()}
        return {"state": packed_state, "param_groups": param_groups}

    def load_state_dict(self, state_dict):
        """Restore state and options from state_dict (matched to this optimizer's parameters by position)."""
        state_dict = state_dict.copy()
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        param_lens = (len(g["params"]) for g in groups)
        saved_lens = (len(g["params"]) for g in saved_groups)
        if any(p_len != s_len for p_len, s_len in zip(param_lens, saved_lens)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, key=None):
            if isinstance(value, Tensor) or type(value).__module__.startswith("torch"):
                from rill.nn.modules.module import _as_rill_tensor
                value = _as_rill_tensor(value)
                if key == "step":
                    return value.clone()
                if (param.is_floating_point() and value.is_floating_point() and value.dtype != param.dtype
                        and rill.is_strict_dtype()):
                    raise TypeError(f"[{type(self).__name__}.load_state_dict] strict dtype mode: state '{key}' is "
                                    f"{value.dtype.name} and its parameter is {param.dtype.name}; "
                                    f"convert the state explicitly with .to(rill.{param.dtype.name})")
                return value.to(param.dtype) if param.is_floating_point() and value.is_floating_point() \
                    else value.clone()
            if isinstance(value, dict):
                return {k: cast(param, v, key=k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            return new_group

        self.__setstate__({"state": state,
                           "param_groups": [update_group(g, ng) for g, ng in zip(groups, saved_groups)]})


def _increment_step(opt, p, state):
    """Advance the 'step' counter of p's state and return it as a float. The counter is a float32 0-dim tensor,
    as PyTorch keeps it (so state dicts match); its value is mirrored in Python so a step never waits on the VM
    to read it."""
    steps = opt.__dict__.setdefault("_step_values", {})
    step_t = state["step"]
    value = steps.get(p)
    if value is None or value[0] is not step_t:
        value = (step_t, float(step_t.item()))
    step_t.add_(1)
    steps[p] = (step_t, value[1] + 1)
    return value[1] + 1


def _round_float32(value):
    """value rounded to the nearest float32, as a Python float (what a 0-d float32 tensor holds)."""
    return struct.unpack("f", struct.pack("f", value))[0]


def _scalar_state(opt, p, state, key):
    """The value of the 0-dim float32 tensor state[key] of parameter p, as a Python float. Mirrored in Python
    as _increment_step mirrors the step, so reading it does not wait on the VM; a tensor put there by
    anything else (load_state_dict) is read once."""
    mirror = opt.__dict__.setdefault("_scalar_values", {}).setdefault(key, {})
    tensor = state[key]
    value = mirror.get(p)
    if value is None or value[0] is not tensor:
        value = (tensor, float(tensor.item()))
        mirror[p] = value
    return value[1]


def _set_scalar_state(opt, p, state, key, value):
    """Write value into the 0-dim float32 tensor state[key] of p, rounded as the tensor stores it; returns the
    rounded value."""
    value = _round_float32(value)
    tensor = state[key]
    tensor.fill_(value)
    opt.__dict__.setdefault("_scalar_values", {}).setdefault(key, {})[p] = (tensor, value)
    return value


def _check_no_differentiable(name, differentiable):
    if differentiable:
        raise NotImplementedError(f"[{name}] differentiable=True is not supported")


__all__ = ["Optimizer", "required"]
