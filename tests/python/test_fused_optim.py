"""The fused optimizer updates (rill._sgd_update, _adam_update, _rmsprop_update and rill.optim._fused): 200 steps
of fused_step on an MLP's parameters equal rill's eager optimizer.step() bit for bit and torch.optim's within
float tolerance; eager and fused steps alternate; state dicts keep eager's shape; bad inputs raise."""
import numpy as np
import pytest
import torch

import rill
from rill.optim._fused import fused_step, prepare_state

SHAPES = [(24, 12), (24,), (6, 24), (6,)]  # two linear layers
STEPS = 200

CASES = {
    "sgd": lambda o, p: o.SGD(p, lr=0.05),
    "sgd_wd_maximize": lambda o, p: o.SGD(p, lr=0.05, weight_decay=0.01, maximize=True),
    "sgd_momentum": lambda o, p: o.SGD(p, lr=0.05, momentum=0.9),
    "sgd_dampening_wd": lambda o, p: o.SGD(p, lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01),
    "sgd_nesterov": lambda o, p: o.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.05),
    "sgd_momentum_maximize": lambda o, p: o.SGD(p, lr=0.05, momentum=0.5, maximize=True),
    "adam": lambda o, p: o.Adam(p, lr=0.01),
    "adam_wd_amsgrad": lambda o, p: o.Adam(p, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1, amsgrad=True),
    "adam_maximize_wd": lambda o, p: o.Adam(p, lr=0.01, maximize=True, weight_decay=0.05),
    "adam_beta1_high": lambda o, p: o.Adam(p, lr=0.003, betas=(0.3, 0.9)),  # lerp weight 0.7: the other formula
    "adamw": lambda o, p: o.AdamW(p, lr=0.01),
    "adamw_amsgrad_maximize": lambda o, p: o.AdamW(p, lr=0.01, weight_decay=0.1, amsgrad=True, maximize=True),
    "rmsprop": lambda o, p: o.RMSprop(p, lr=0.001),
    "rmsprop_centered": lambda o, p: o.RMSprop(p, lr=0.001, centered=True),
    "rmsprop_momentum_wd": lambda o, p: o.RMSprop(p, lr=0.001, momentum=0.5, weight_decay=0.01),
    "rmsprop_centered_momentum": lambda o, p: o.RMSprop(p, lr=0.001, alpha=0.9, eps=1e-6, momentum=0.9,
                                                        centered=True, weight_decay=0.01, maximize=True),
    "rmsprop_alpha_low": lambda o, p: o.RMSprop(p, lr=0.001, alpha=0.3, centered=True),  # lerp weight 0.7
}

_GRADS = {}


def _grads(dtype, step):
    """The gradients of one step: a fixed sequence, the same for every case."""
    if dtype not in _GRADS:
        rng = np.random.default_rng(7)
        _GRADS[dtype] = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(STEPS)]
    return _GRADS[dtype][step]


def _weights(dtype):
    rng = np.random.default_rng(3)
    return [(rng.standard_normal(s) * 0.5).astype(dtype) for s in SHAPES]


def _rill_params(dtype):
    return [rill.tensor(a, requires_grad=True) for a in _weights(dtype)]


def _set_grads(params, arrays, lib):
    for p, a in zip(params, arrays):
        p.grad = lib.tensor(a)


def _np(t):
    return t.detach().numpy() if isinstance(t, (rill.Tensor, torch.Tensor)) else t


def _assert_states_equal(a, b):
    """Two optimizers' parameters and state tensors are bit for bit equal."""
    sa, sb = a.state_dict()["state"], b.state_dict()["state"]
    assert sorted(sa) == sorted(sb)
    for k in sa:
        assert sorted(sa[k]) == sorted(sb[k])
        for name in sa[k]:
            np.testing.assert_array_equal(_np(sa[k][name]), _np(sb[k][name]), err_msg=f"state {k} {name}")
    for ga, gb in zip(a.param_groups, b.param_groups):
        for pa, pb in zip(ga["params"], gb["params"]):
            np.testing.assert_array_equal(_np(pa), _np(pb))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", sorted(CASES))
def test_200_fused_steps_equal_eager_and_torch(case, dtype):
    fused_params, eager_params = _rill_params(dtype), _rill_params(dtype)
    torch_params = [torch.tensor(a, requires_grad=True) for a in _weights(dtype)]
    fused, eager = CASES[case](rill.optim, fused_params), CASES[case](rill.optim, eager_params)
    reference = CASES[case](torch.optim, torch_params)
    prepare_state(fused)
    lrs = [rill.tensor(g["lr"], dtype=rill.float64) for g in fused.param_groups]
    for step in range(STEPS):
        gs = _grads(dtype, step)
        _set_grads(fused_params, gs, rill)
        _set_grads(eager_params, gs, rill)
        _set_grads(torch_params, gs, torch)
        fused_step(fused, lrs)
        eager.step()
        reference.step()
        if step in (0, 1, STEPS // 2):
            _assert_states_equal(fused, eager)
    _assert_states_equal(fused, eager)
    # against torch (whose kernels round otherwise): rtol, and an atol scaled to the tensor's largest value,
    # since elements near 0 carry the rounding of 200 steps of their larger neighbours
    rtol, atol = (1e-5, 1e-6) if dtype == np.float32 else (1e-10, 1e-12)
    tstate = reference.state_dict()["state"]
    pairs = [(_np(r), _np(t), "param") for r, t in zip(fused_params, torch_params)]
    pairs += [(_np(v), _np(tstate[k][name]), name) for k, entry in fused.state_dict()["state"].items()
              for name, v in entry.items()]
    for got, want, name in pairs:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * max(1.0, float(np.abs(want).max())),
                                   err_msg=name)


# Which step runs fused (True) or eager (False), repeated: both orders of the first step are covered.
PATTERNS = {"fused_first": [True, False, False, True, True], "eager_first": [False, True, False, True]}


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
@pytest.mark.parametrize("case", ["sgd_dampening_wd", "sgd_nesterov", "adam_wd_amsgrad", "adamw",
                                  "rmsprop_centered_momentum"])
def test_alternating_eager_and_fused_steps(case, pattern):
    mixed_params, eager_params = _rill_params(np.float32), _rill_params(np.float32)
    mixed, eager = CASES[case](rill.optim, mixed_params), CASES[case](rill.optim, eager_params)
    order = PATTERNS[pattern]
    for step in range(30):
        gs = _grads(np.float32, step)
        _set_grads(mixed_params, gs, rill)
        _set_grads(eager_params, gs, rill)
        if order[step % len(order)]:
            fused_step(mixed)
        else:
            mixed.step()
        eager.step()
    _assert_states_equal(mixed, eager)


@pytest.mark.parametrize("case", ["sgd_dampening_wd", "adam_wd_amsgrad"])
def test_prepare_state_then_an_eager_step(case):
    # a graph prepares the state before its first step; an eager step may still come first
    a_params, b_params = _rill_params(np.float32), _rill_params(np.float32)
    a, b = CASES[case](rill.optim, a_params), CASES[case](rill.optim, b_params)
    prepare_state(a)
    for step in range(4):
        gs = _grads(np.float32, step)
        _set_grads(a_params, gs, rill)
        _set_grads(b_params, gs, rill)
        (a.step if step % 2 == 0 else lambda: fused_step(a))()
        b.step()
    _assert_states_equal(a, b)


@pytest.mark.parametrize("case", sorted(CASES))
def test_state_dict_has_eagers_shape(case):
    fused_params, eager_params = _rill_params(np.float32), _rill_params(np.float32)
    fused_params[1].requires_grad_(False)  # a parameter that never gets a gradient
    eager_params[1].requires_grad_(False)
    fused, eager = CASES[case](rill.optim, fused_params), CASES[case](rill.optim, eager_params)
    for step in range(3):
        gs = _grads(np.float32, step)
        for opt_params in (fused_params, eager_params):
            for i, (p, g) in enumerate(zip(opt_params, gs)):
                p.grad = None if i == 1 else rill.tensor(g)
        fused_step(fused)
        eager.step()
    fsd, esd = fused.state_dict(), eager.state_dict()
    assert fsd["param_groups"] == esd["param_groups"]
    assert sorted(fsd["state"]) == sorted(esd["state"])
    for k, entry in esd["state"].items():
        assert sorted(fsd["state"][k]) == sorted(entry)
        for name, value in entry.items():
            got = fsd["state"][k][name]
            assert (got.dtype, tuple(got.shape)) == (value.dtype, tuple(value.shape)), name
    _assert_states_equal(fused, eager)
    # the fused state loads into an eager optimizer, which continues as the eager one does
    resumed_params = [rill.tensor(_np(p), requires_grad=p.requires_grad) for p in fused_params]
    resumed = CASES[case](rill.optim, resumed_params)
    resumed.load_state_dict(fsd)
    gs = _grads(np.float32, 3)
    for opt_params in (resumed_params, eager_params):
        for i, (p, g) in enumerate(zip(opt_params, gs)):
            p.grad = None if i == 1 else rill.tensor(g)
    resumed.step()
    eager.step()
    _assert_states_equal(resumed, eager)


def test_param_groups_with_learning_rates_fed_as_tensors():
    def make(o, p):
        return o.Adam([{"params": p[:2]}, {"params": p[2:], "lr": 0.003, "amsgrad": True}], lr=0.01)
    fused_params, eager_params = _rill_params(np.float32), _rill_params(np.float32)
    fused, eager = make(rill.optim, fused_params), make(rill.optim, eager_params)
    lrs = [rill.tensor(0.0, dtype=rill.float64) for _ in fused.param_groups]
    for step in range(20):
        gs = _grads(np.float32, step)
        _set_grads(fused_params, gs, rill)
        _set_grads(eager_params, gs, rill)
        for group, lr in zip(eager.param_groups, lrs):  # a schedule: the eager lr changes, the fused tensor too
            group["lr"] = group["lr"] * 0.9
            lr.fill_(group["lr"])
        fused_step(fused, lrs)
        eager.step()
    _assert_states_equal(fused, eager)


def test_the_ops_read_strided_inputs_and_any_float_step_and_lr():
    rng = np.random.default_rng(0)
    p, g, m, v = (rill.tensor(rng.standard_normal((5, 7)).astype(np.float32)) for _ in range(4))
    v = v.abs()
    step, lr = rill.tensor(3.0, dtype=rill.float64), rill.tensor(0.01, dtype=rill.float32)
    dense = rill._adam_update(p, g, m, v, None, step, lr, beta1=0.9, beta2=0.99, eps=1e-8)
    assert isinstance(dense, list) and len(dense) == 4
    assert dense[-1].dtype == rill.float64 and dense[-1].item() == 4.0
    assert not any(t.requires_grad for t in dense)
    pt, gt, mt, vt = (rill.tensor(_np(t).T.copy()).t() for t in (p, g, m, v))  # the same values, transposed memory
    strided = rill._adam_update(pt, gt, mt, vt, None, step, lr, beta1=0.9, beta2=0.99, eps=1e-8)
    for a, b in zip(dense, strided):
        np.testing.assert_array_equal(_np(a), _np(b))
    out = rill._sgd_update(p, g, None, rill.tensor(0.0, dtype=rill.float16), lr)
    assert len(out) == 2 and out[1].dtype == rill.float16 and out[1].item() == 1.0
    np.testing.assert_array_equal(_np(out[0]), _np(p) + _np(g) * np.float32(-0.01))
    buf = rill._sgd_update(p, g, rill.zeros_like(p), rill.tensor(0.0), lr, momentum=0.9, dampening=0.5)[1]
    np.testing.assert_array_equal(_np(buf), _np(g))  # step 0: the buffer is the gradient, whatever it held
    empty = rill._rmsprop_update(rill.zeros(0), rill.zeros(0), rill.zeros(0), None, None, rill.tensor(1.0), lr)
    assert [tuple(t.shape) for t in empty] == [(0,), (0,), ()]


def test_the_ops_reject_bad_dtypes_shapes_and_state_counts():
    p, lr, step = rill.zeros(4), rill.tensor(0.1, dtype=rill.float64), rill.tensor(0.0)
    with pytest.raises(TypeError, match=r"_sgd_update.*float32 and float64.*float16"):
        rill._sgd_update(p.half(), p.half(), None, step, lr)
    with pytest.raises(TypeError, match=r"_adam_update.*float32 and float64.*int64"):
        rill._adam_update(p.long(), p.long(), p.long(), p.long(), None, step, lr)
    with pytest.raises(TypeError, match=r"_sgd_update.*grad is float64"):
        rill._sgd_update(p, p.double(), None, step, lr)
    with pytest.raises(ValueError, match=r"_sgd_update.*grad has shape \[3\]"):
        rill._sgd_update(p, rill.zeros(3), None, step, lr)
    with pytest.raises(ValueError, match=r"_adam_update.*exp_avg_sq has shape \[2, 2\]"):
        rill._adam_update(p, p, p, rill.zeros(2, 2), None, step, lr)
    with pytest.raises(TypeError, match=r"_rmsprop_update.*grad_avg is float64"):
        rill._rmsprop_update(p, p, p, None, p.double(), step, lr, centered=True)
    with pytest.raises(ValueError, match=r"_sgd_update.*1 state tensor\(s\), got 0"):
        rill._sgd_update(p, p, None, step, lr, momentum=0.9)
    with pytest.raises(ValueError, match=r"_adam_update.*3 state tensor\(s\), got 2"):
        rill._adam_update(p, p, p, p, None, step, lr, amsgrad=True)
    with pytest.raises(ValueError, match=r"_rmsprop_update.*1 state tensor\(s\), got 2"):
        rill._rmsprop_update(p, p, p, p, None, step, lr)
    with pytest.raises(TypeError, match=r"_sgd_update.*step must be a 0-d floating-point tensor"):
        rill._sgd_update(p, p, None, rill.zeros(1), lr)
    with pytest.raises(TypeError, match=r"_adam_update.*lr must be a 0-d floating-point tensor"):
        rill._adam_update(p, p, p, p, None, step, rill.tensor(1))


def test_fused_step_rejects_what_it_cannot_fuse():
    params = _rill_params(np.float32)

    class Other(rill.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": 0.1})

        def step(self, closure=None):
            return None

    class OwnStep(rill.optim.SGD):
        def step(self, closure=None):
            return None

    with pytest.raises(TypeError, match=r"\[fused_step\] supports rill.optim.SGD.*got Other"):
        fused_step(Other(params))
    with pytest.raises(TypeError, match="got OwnStep"):
        prepare_state(OwnStep(params, lr=0.1))

    class Plain(rill.optim.AdamW):  # a subclass keeping AdamW's step fuses like AdamW
        pass

    opt = Plain(params, lr=0.01)
    with pytest.raises(ValueError, match="one learning-rate tensor per param group"):
        fused_step(opt, [])
    with pytest.raises(TypeError, match="0-d floating-point tensor"):
        fused_step(opt, [0.1])
    with pytest.raises(TypeError, match="0-d floating-point tensor"):
        fused_step(opt, [rill.tensor([0.1], dtype=rill.float64)])
    with pytest.raises(TypeError, match=r"betas must be two Python numbers"):
        fused_step(rill.optim.Adam(params, betas=(0.9, rill.tensor(0.99))))
    half = [rill.zeros(3, dtype=rill.float16, requires_grad=True)]
    with pytest.raises(TypeError, match=r"group 0 parameter 0 is float16"):
        fused_step(rill.optim.SGD(half, lr=0.1))
    _set_grads(params, _grads(np.float32, 0), rill)
    fused_step(opt)
    assert opt.state[params[0]]["step"].item() == 1.0
