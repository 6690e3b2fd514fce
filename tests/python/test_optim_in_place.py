"""Eager SGD, Adam, AdamW and RMSprop step in place with one fused op per parameter (Note [Eager optimizers
step in place] in rill/optim/_fused.py): their values equal the per-op loop's (_fused.IN_PLACE = False) bit for
bit; what the ops cannot take (float16, a tensor option, strided state, differentiable=True) falls back to the
loop; the rill._C._<op>_update_ functions write their arguments and refuse tensors that require grad."""
import contextlib

import numpy as np
import pytest
from test_fused_optim import CASES, _assert_states_equal, _grads, _np, _rill_params, _set_grads

import rill
from rill.optim import _fused


@contextlib.contextmanager
def _loop():
    """Step by the per-op loop inside this block."""
    saved, _fused.IN_PLACE = _fused.IN_PLACE, False
    try:
        yield
    finally:
        _fused.IN_PLACE = saved


def _run_pair(make, steps, dtype=np.float32, params=_rill_params):
    """(in-place optimizer, loop optimizer) after the same steps on the same gradients."""
    a_params, b_params = params(dtype), params(dtype)
    a, b = make(rill.optim, a_params), make(rill.optim, b_params)
    for step in range(steps):
        gs = _grads(dtype, step)
        _set_grads(a_params, gs, rill)
        _set_grads(b_params, gs, rill)
        a.step()
        with _loop():
            b.step()
    return a, b


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", sorted(CASES))
def test_in_place_steps_equal_the_loop(case, dtype):
    a, b = _run_pair(CASES[case], 25, dtype)
    _assert_states_equal(a, b)
    assert a.state_dict()["param_groups"] == b.state_dict()["param_groups"]


def test_the_parameters_are_updated_in_place(monkeypatch):
    calls = []
    update = rill._C._adam_update_
    monkeypatch.setattr(rill._C, "_adam_update_", lambda *a, **k: calls.append(1) or update(*a, **k))
    params = _rill_params(np.float32)
    opt = rill.optim.Adam(params, lr=0.01)
    before = [p.data_ptr() for p in params]
    versions = [p._version for p in params]
    _set_grads(params, _grads(np.float32, 0), rill)
    opt.step()
    assert [p.data_ptr() for p in params] == before
    assert all(p._version > v for p, v in zip(params, versions))
    exp_avg = opt.state[params[0]]["exp_avg"]
    ptr = exp_avg.data_ptr()
    _set_grads(params, _grads(np.float32, 1), rill)
    opt.step()
    assert opt.state[params[0]]["exp_avg"] is exp_avg and exp_avg.data_ptr() == ptr
    assert opt.state[params[0]]["step"].item() == 2.0
    assert len(calls) == 2 * len(params)  # one fused op per parameter and step


@pytest.mark.parametrize("lr_dtype", [rill.float64, rill.float32])  # float32: the loop steps it
def test_a_tensor_learning_rate_and_a_schedule(lr_dtype):
    def make(o, p):
        return o.Adam([{"params": p[:2]}, {"params": p[2:], "lr": rill.tensor(0.003, dtype=lr_dtype),
                                          "amsgrad": True}], lr=0.01)
    a_params, b_params = _rill_params(np.float32), _rill_params(np.float32)
    a, b = make(rill.optim, a_params), make(rill.optim, b_params)
    sa, sb = (rill.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5) for o in (a, b))
    for step in range(8):
        gs = _grads(np.float32, step)
        _set_grads(a_params, gs, rill)
        _set_grads(b_params, gs, rill)
        a.step()
        with _loop():
            b.step()
        sa.step()
        sb.step()
    _assert_states_equal(a, b)


def _with_view_param(dtype):
    """The usual parameters, the first a transposed view (not contiguous) and the second a slice of a larger
    buffer (contiguous, at an offset)."""
    params = _rill_params(dtype)
    first = rill.tensor(_np(params[0]).T.copy()).t().requires_grad_()
    big = rill.zeros(params[1].numel() + 5, dtype=params[1].dtype)
    big[5:] = params[1].detach()
    second = big[5:].requires_grad_()
    return [first, second] + params[2:]


@pytest.mark.parametrize("case", ["sgd_momentum", "adam_wd_amsgrad", "rmsprop_centered_momentum"])
def test_strided_and_offset_parameters(case):
    a, b = _run_pair(CASES[case], 6, params=_with_view_param)
    _assert_states_equal(a, b)


@pytest.mark.parametrize("case", ["sgd_nesterov", "adamw", "rmsprop_centered"])
def test_state_replaced_by_a_strided_tensor_falls_back(case):
    a, b = _run_pair(CASES[case], 2)
    for opt in (a, b):  # a state tensor of the right values but transposed memory
        for p, entry in opt.state.items():
            for key, value in list(entry.items()):
                if key != "step" and value.ndim == 2:
                    entry[key] = rill.tensor(_np(value).T.copy()).t()
    for step in range(2, 5):
        gs = _grads(np.float32, step)
        _set_grads([p for g in a.param_groups for p in g["params"]], gs, rill)
        _set_grads([p for g in b.param_groups for p in g["params"]], gs, rill)
        a.step()
        with _loop():
            b.step()
    _assert_states_equal(a, b)


def test_float16_parameters_and_other_options_use_the_loop():
    half = [rill.tensor(a, dtype=rill.float16, requires_grad=True) for a in _rill_params(np.float32)[:2]]
    opt = rill.optim.Adam(half, lr=0.01)
    for p in half:
        p.grad = rill.ones_like(p)
    opt.step()
    assert all(p.dtype == rill.float16 for p in half)
    assert opt.state[half[0]]["exp_avg"].dtype == rill.float16
    # a group the ops cannot take is stepped by the loop: the two paths still agree
    assert _fused.step_in_place(opt, "adam", dict(opt.param_groups[0], differentiable=True)) == half
    group = dict(rill.optim.SGD(half, lr=0.1).param_groups[0], momentum=rill.tensor(0.9))
    assert not _fused._group_fusable("sgd", group)


def test_load_state_dict_then_in_place_steps():
    a, b = _run_pair(CASES["adam_wd_amsgrad"], 3)
    resumed_params = [rill.tensor(_np(p), requires_grad=True) for g in a.param_groups for p in g["params"]]
    resumed = CASES["adam_wd_amsgrad"](rill.optim, resumed_params)
    resumed.load_state_dict(a.state_dict())
    b_params = [p for g in b.param_groups for p in g["params"]]
    for step in range(3, 6):
        gs = _grads(np.float32, step)
        _set_grads(resumed_params, gs, rill)
        _set_grads(b_params, gs, rill)
        resumed.step()
        with _loop():
            b.step()
    _assert_states_equal(resumed, b)


def test_the_update_functions_write_their_arguments():
    rng = np.random.default_rng(1)
    p, g, m = (rill.tensor(rng.standard_normal(6).astype(np.float32)) for _ in range(3))
    v = rill.tensor(np.abs(rng.standard_normal(6)).astype(np.float32))
    step, lr = rill.tensor(0.0), rill.tensor(0.01, dtype=rill.float64)
    want = rill._adam_update(p, g, m, v, None, step, lr, beta1=0.9, beta2=0.99, eps=1e-8)
    assert rill._C._adam_update_(p, g, m, v, None, step, lr, beta1=0.9, beta2=0.99, eps=1e-8) is None
    for got, expected in zip((p, m, v, step), want):
        np.testing.assert_array_equal(_np(got), _np(expected))
    # a state tensor aliasing another operand: computed out of place, then copied back
    p2, g2 = rill.tensor(_np(g)), rill.tensor(_np(g))
    want = rill._sgd_update(p2, g2, g2, rill.tensor(1.0), lr, momentum=0.9)
    rill._C._sgd_update_(p2, g2, g2, rill.tensor(1.0), lr, momentum=0.9)
    np.testing.assert_array_equal(_np(p2), _np(want[0]))
    np.testing.assert_array_equal(_np(g2), _np(want[1]))


def test_the_update_functions_refuse_a_tensor_that_requires_grad():
    p = rill.zeros(4, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"_sgd_update_.*requires grad.*no_grad"):
        rill._C._sgd_update_(p, rill.ones(4), None, rill.tensor(0.0), rill.tensor(0.1, dtype=rill.float64))
    with pytest.raises(TypeError, match=r"_sgd_update.*float16"):
        rill._C._sgd_update_(rill.zeros(2).half(), rill.zeros(2).half(), None, rill.tensor(0.0),
                             rill.tensor(0.1, dtype=rill.float64))
    with rill.no_grad():
        rill._C._sgd_update_(p, rill.ones(4), None, rill.tensor(0.0), rill.tensor(0.5, dtype=rill.float64))
    np.testing.assert_array_equal(_np(p), np.full(4, -0.5, np.float32))
