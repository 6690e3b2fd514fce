"""Fused optimizer steps: every parameter of an SGD, Adam, AdamW or RMSprop optimizer updated by one op call
(rill._sgd_update, _adam_update, _rmsprop_update) instead of a dozen elementwise ops, as graph mode's optimizer
step emits them.

prepare_state(optimizer) creates the state tensors the fused update reads, eagerly; fused_step(optimizer,
lr_tensors) runs one update, the learning rate of each param group given as a 0-d tensor (so a graph can
feed it each step), and writes the results back with Tensor.copy_ into the parameters and their state.
The state lives where the eager optimizer keeps it (state["exp_avg"], state["step"], ...), so eager and
fused steps alternate freely and state_dict() has eager's shape, and the ops round like the eager
optimizer (Note [Fused updates round like the eager optimizer] in src/rill/kernels/cpu/optim.cpp).

Note [The fused SGD momentum buffer]
PyTorch's SGD sets the momentum buffer to the gradient on the first step and knows the first step by the
buffer being absent; its state has no step counter. The fused op knows it from a step tensor instead, and
a graph needs the buffer before the first step, so the fused SGD keeps a buffer and a step counter of its
own (optimizer._fused_sgd_state) until its first update, then stores the buffer in state["momentum_buffer"]
as eager SGD does. A buffer found in the state that is not the fused one (an eager step came first, or
load_state_dict replaced it) is adopted with the step counter at 1: it has seen a step.
"""
import rill
from rill import _global

_FLOAT_DTYPES = (rill.float32, rill.float64)


def _family(optimizer):
    """'sgd', 'adam' or 'rmsprop': the eager step this optimizer runs; TypeError for any other."""
    from rill.optim.adam import Adam
    from rill.optim.rmsprop import RMSprop
    from rill.optim.sgd import SGD
    step = getattr(type(optimizer), "step", None)
    for family, cls in (("sgd", SGD), ("adam", Adam), ("rmsprop", RMSprop)):
        if step is cls.step:
            return family
    raise TypeError(f"[fused_step] supports rill.optim.SGD, Adam, AdamW and RMSprop (and subclasses that keep "
                    f"their step()), got {type(optimizer).__name__}: rill.nn.Graph runs only those updates; step "
                    f"any other optimizer eagerly (optimizer.step() outside the graph)")


# The options each family's op takes as attrs: Python numbers (the learning rate alone travels as a tensor).
_NUMBER_OPTIONS = {"sgd": ("momentum", "dampening", "weight_decay"), "adam": ("eps", "weight_decay"),
                   "rmsprop": ("alpha", "eps", "weight_decay", "momentum")}


def _check_group(optimizer, family, gi, group):
    """TypeError for a param group option or parameter the fused update cannot take."""
    name = type(optimizer).__name__
    for key in _NUMBER_OPTIONS[family]:
        if isinstance(group[key], bool) or not isinstance(group[key], (int, float)):
            raise TypeError(f"[fused_step] {name} group {gi}: {key} must be a Python number for the fused update, "
                            f"got {type(group[key]).__name__}")
    if "betas" in group:
        betas = group["betas"]
        if len(betas) != 2 or not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in betas):
            raise TypeError(f"[fused_step] {name} group {gi}: betas must be two Python numbers, got {betas!r}")
    for pi, p in enumerate(group["params"]):
        if p.dtype not in _FLOAT_DTYPES:
            raise TypeError(f"[fused_step] {name} group {gi} parameter {pi} is {p.dtype.name}; the fused update "
                            f"takes float32 and float64 parameters")


def check_supported(optimizer):
    """TypeError (or ValueError) now, when optimizer or one of its groups cannot be updated by the fused ops."""
    family = _family(optimizer)
    for gi, group in enumerate(optimizer.param_groups):
        _check_group(optimizer, family, gi, group)


def _sgd_state(optimizer):
    return optimizer.__dict__.setdefault("_fused_sgd_state", {})


def prepare_state(optimizer):
    """Create, eagerly, every state tensor the fused update of optimizer reads, for every parameter that
    requires grad (zeros and step 0, as the eager optimizer's first step creates them); existing state is
    kept."""
    family = _family(optimizer)
    for gi, group in enumerate(optimizer.param_groups):
        _check_group(optimizer, family, gi, group)
        for p in group["params"]:
            if p.requires_grad:
                _prepare_param(optimizer, family, group, p)


def _prepare_param(optimizer, family, group, p):
    """The state of one parameter, created where missing."""
    with rill.no_grad():
        if family == "sgd":
            if group["momentum"] != 0:
                _sgd_buffer(optimizer, p)
            return
        state = optimizer.state[p]
        if "step" not in state:
            state["step"] = rill.tensor(0.0, dtype=rill.float32)
        for key in _state_keys(family, group):
            if key not in state:
                state[key] = _global.state_like(p)


def _state_keys(family, group):
    """The state tensors of one Adam or RMSprop parameter, in the fused op's order (step apart)."""
    if family == "adam":
        return ["exp_avg", "exp_avg_sq"] + (["max_exp_avg_sq"] if group["amsgrad"] else [])
    keys = ["square_avg"]
    if group["momentum"] > 0:
        keys.append("momentum_buffer")
    if group["centered"]:
        keys.append("grad_avg")
    return keys


def _sgd_buffer(optimizer, p):
    """(momentum buffer, step counter) of p for the fused SGD (Note [The fused SGD momentum buffer])."""
    fused = _sgd_state(optimizer)
    buf = optimizer.state[p].get("momentum_buffer") if p in optimizer.state else None
    entry = fused.get(p)
    if buf is None:
        if entry is None:
            entry = (_global.state_like(p), rill.tensor(0.0, dtype=rill.float32))
            fused[p] = entry
    elif entry is None or entry[0] is not buf:
        entry = (buf, rill.tensor(1.0, dtype=rill.float32))
        fused[p] = entry
    return entry


def _lr_tensors(optimizer, lr_tensors):
    groups = optimizer.param_groups
    if lr_tensors is None:
        return [rill.tensor(float(g["lr"]), dtype=rill.float64) for g in groups]
    lr_tensors = list(lr_tensors)
    if len(lr_tensors) != len(groups):
        raise ValueError(f"[fused_step] expected one learning-rate tensor per param group ({len(groups)}), "
                         f"got {len(lr_tensors)}")
    for gi, lr in enumerate(lr_tensors):
        if not isinstance(lr, rill.Tensor) or lr.ndim != 0 or not lr.is_floating_point():
            raise TypeError(f"[fused_step] the learning rate of group {gi} must be a 0-d floating-point tensor "
                            f"(rill.tensor(lr, dtype=rill.float64)), got {lr!r}")
    return lr_tensors


def _options(family, group):
    """The fused op of family and its options for group's parameters (the same for each of them)."""
    if family == "sgd":
        return "_sgd_update", dict(momentum=float(group["momentum"]), dampening=float(group["dampening"]),
                                   nesterov=bool(group["nesterov"]), weight_decay=float(group["weight_decay"]),
                                   maximize=bool(group["maximize"]))
    if family == "adam":
        beta1, beta2 = group["betas"]
        return "_adam_update", dict(beta1=float(beta1), beta2=float(beta2), eps=float(group["eps"]),
                                    weight_decay=float(group["weight_decay"]), amsgrad=bool(group["amsgrad"]),
                                    maximize=bool(group["maximize"]),
                                    decoupled_weight_decay=bool(group.get("decoupled_weight_decay", False)))
    return "_rmsprop_update", dict(alpha=float(group["alpha"]), eps=float(group["eps"]),
                                   weight_decay=float(group["weight_decay"]), momentum=float(group["momentum"]),
                                   centered=bool(group["centered"]), maximize=bool(group["maximize"]))


def _args(optimizer, family, group, p, grad, lr):
    """The fused op's tensor arguments for p, and the tensors its outputs update, in the op's output order."""
    if family == "sgd":
        if group["momentum"] == 0:
            step = rill.tensor(0.0, dtype=rill.float32)
            return (p, grad, None, step, lr), [p, step]
        buf, step = _sgd_buffer(optimizer, p)
        optimizer.state[p]["momentum_buffer"] = buf
        return (p, grad, buf, step, lr), [p, buf, step]
    state = optimizer.state[p]
    states = [state[k] for k in _state_keys(family, group)]
    # The eager step mirrors each step counter in Python; this one moves, so the mirror is dropped and the
    # next eager step reads the tensor (optimizer.py's _increment_step).
    optimizer.__dict__.get("_step_values", {}).pop(p, None)
    targets = [p] + states + [state["step"]]
    if family == "adam":
        amsgrad = bool(group["amsgrad"])
        return (p, grad, states[0], states[1], states[2] if amsgrad else None, state["step"], lr), targets
    has_buf, centered = group["momentum"] > 0, bool(group["centered"])
    return (p, grad, states[0], states[1] if has_buf else None, states[-1] if centered else None, state["step"],
            lr), targets


def _lr_tensor(optimizer, group):
    """group's learning rate as the 0-d float64 tensor the fused ops read, made again only when the lr changes
    (the ops never write it)."""
    lr = group["lr"]
    if isinstance(lr, rill.Tensor):
        return lr
    cache = optimizer.__dict__.setdefault("_fused_lr_tensors", {})
    held = cache.get(id(group))
    if held is None or held[0] != lr or held[1] is not group:
        held = cache[id(group)] = (lr, group, rill.full((), float(lr), dtype=rill.float64))
    return held[2]


# Note [Eager optimizers step in place]
# SGD, Adam, AdamW and RMSprop run their eager step() as one fused op per parameter, writing the parameter
# and its state in place (rill._C._adam_update_ and its siblings: eager::update_in_place), where the per-op
# loop of PyTorch's single-tensor step ran about a dozen elementwise ops, each a pass over memory: on an
# MLP 784-512-512-10 the Adam step took 2.1x PyTorch's time that way. The fused ops round like the loop
# (Note [Fused updates round like the eager optimizer] in src/rill/kernels/cpu/optim.cpp), so the values are
# the loop's to the last bit (tests/python/test_optim_in_place.py) and foreach/fused change nothing but
# their defaults' names. A group or parameter the ops cannot take (differentiable=True, a non-number option,
# a float16 parameter, an lr tensor not float64, a gradient of another dtype or shape, state replaced by one of another shape) is
# stepped by the loop, as before. So is plain SGD (no momentum, weight decay or maximize): the loop's one add_
# per parameter is the fused op's work, and costs less to call (the tiny MLP's step: 6 parameters, 100 us of
# fused calls, each making its lr and step tensors, against 18 us of add_). The lr tensor is made once per
# value of the lr (_lr_tensor). IN_PLACE = False turns the fused path off (the tests compare the two).
IN_PLACE = True


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _group_fusable(family, group):
    """Whether the in-place fused update can take this param group's options."""
    if not IN_PLACE or group.get("differentiable"):
        return False
    if not all(_is_number(group[key]) for key in _NUMBER_OPTIONS[family]):
        return False
    betas = group.get("betas")
    if betas is not None and (len(betas) != 2 or not all(_is_number(b) for b in betas)):
        return False
    lr = group["lr"]
    if isinstance(lr, rill.Tensor):  # the loop's arithmetic on a float32 lr rounds otherwise
        return lr.ndim == 0 and lr.dtype == rill.float64
    return _is_number(lr)


def _param_fusable(optimizer, family, group, p, grad):
    """Whether the in-place fused update can take p with this gradient and the state it has."""
    dtype, shape = p.dtype, p.shape
    if dtype not in _FLOAT_DTYPES or grad.dtype != dtype or grad.shape != shape or grad.device != p.device:
        return False
    state = optimizer.state.get(p)
    if not state:
        return True
    step = state.get("step")
    if step is not None and (not isinstance(step, rill.Tensor) or step.ndim != 0 or not step.is_floating_point()):
        return False
    keys = ["momentum_buffer"] if family == "sgd" else _state_keys(family, group)
    for key in keys:
        t = state.get(key)
        if t is not None and (not isinstance(t, rill.Tensor) or t.dtype != dtype or t.shape != shape):
            return False
    return True


def step_in_place(optimizer, family, group):
    """Update every parameter of group that has a gradient by one fused op writing in place (Note [Eager
    optimizers step in place]); returns the parameters it left for the optimizer's own loop."""
    params = [p for p in group["params"] if p.grad is not None]
    if not params or not _group_fusable(family, group):
        return params
    if family == "sgd" and group["momentum"] == 0 and group["weight_decay"] == 0 and not group["maximize"]:
        return params  # one add_ per parameter either way, and the loop's costs less to call
    lr = _lr_tensor(optimizer, group)
    name, options = _options(family, group)
    update = getattr(rill._C, name + "_")
    rest = []
    for p in params:
        grad = p.grad
        if not _param_fusable(optimizer, family, group, p, grad):
            rest.append(p)
            continue
        _prepare_param(optimizer, family, group, p)
        update(*_args(optimizer, family, group, p, grad, lr)[0], **options)
    return rest


def fused_step(optimizer, lr_tensors=None):
    """One update of every parameter with a gradient by the fused ops. lr_tensors: one 0-d float tensor per
    param group (None: each group's lr)."""
    family = _family(optimizer)
    lrs = _lr_tensors(optimizer, lr_tensors)
    for gi, group in enumerate(optimizer.param_groups):
        _check_group(optimizer, family, gi, group)
    with rill.no_grad():
        for group, lr in zip(optimizer.param_groups, lrs):
            name, options = _options(family, group)
            for p in group["params"]:
                if p.grad is None:
                    continue
                _prepare_param(optimizer, family, group, p)
                args, targets = _args(optimizer, family, group, p, p.grad, lr)
                for target, value in zip(targets, getattr(rill, name)(*args, **options)):
                    target.copy_(value)


__all__ = ["prepare_state", "fused_step", "step_in_place"]
