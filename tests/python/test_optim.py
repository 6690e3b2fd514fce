"""rill.optim against torch.optim: 20 steps from the same weights and gradients, step for step; param groups,
state dicts (both ways), zero_grad, schedulers."""
import math

import numpy as np
import pytest
import torch

import rill
from conftest import assert_close

SHAPES = [(5, 4), (4,), (3, 3, 2)]


def _params(seed=0):
    g = np.random.default_rng(seed)
    arrays = [g.standard_normal(s).astype(np.float32) for s in SHAPES]
    r = [rill.tensor(a, requires_grad=True) for a in arrays]
    t = [torch.tensor(a, requires_grad=True) for a in arrays]
    return r, t


def _grads(step, seed=1):
    g = np.random.default_rng(seed * 1000 + step)
    return [g.standard_normal(s).astype(np.float32) for s in SHAPES]


def _set_grads(params, arrays, lib):
    for p, a in zip(params, arrays):
        p.grad = lib.tensor(a)


def _run_both(make, steps=20, seed=0, check_every_step=True):
    rp, tp = _params(seed)
    ropt = make(rill.optim, rp)
    topt = make(torch.optim, tp)
    for step in range(steps):
        gs = _grads(step)
        _set_grads(rp, gs, rill)
        _set_grads(tp, gs, torch)
        ropt.step()
        topt.step()
        if check_every_step or step == steps - 1:
            for r, t in zip(rp, tp):
                assert_close(r.detach(), t.detach(), rtol=1e-5, atol=1e-6)
    return ropt, topt, rp, tp


CASES = {
    "sgd": lambda o, p: o.SGD(p, lr=0.1),
    "sgd_momentum": lambda o, p: o.SGD(p, lr=0.05, momentum=0.9),
    "sgd_dampening_wd": lambda o, p: o.SGD(p, lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01),
    "sgd_nesterov": lambda o, p: o.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.05),
    "sgd_maximize": lambda o, p: o.SGD(p, lr=0.05, momentum=0.5, maximize=True),
    "adam": lambda o, p: o.Adam(p),
    "adam_wd_amsgrad": lambda o, p: o.Adam(p, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1, amsgrad=True),
    "adam_maximize": lambda o, p: o.Adam(p, lr=0.01, maximize=True),
    "adamw": lambda o, p: o.AdamW(p, lr=0.01),
    "adamw_amsgrad": lambda o, p: o.AdamW(p, lr=0.01, weight_decay=0.1, amsgrad=True),
    "rmsprop": lambda o, p: o.RMSprop(p),
    "rmsprop_centered_momentum": lambda o, p: o.RMSprop(p, lr=0.01, alpha=0.9, momentum=0.9, centered=True,
                                                        weight_decay=0.01),
    "rmsprop_momentum": lambda o, p: o.RMSprop(p, lr=0.001, momentum=0.5),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch_step_for_step(case):
    _run_both(CASES[case])


@pytest.mark.parametrize("case", ["sgd_momentum", "adam_wd_amsgrad", "rmsprop_centered_momentum"])
def test_state_dict_format_and_resume(case):
    ropt, topt, rp, tp = _run_both(CASES[case], steps=5)
    rsd, tsd = ropt.state_dict(), topt.state_dict()
    assert rsd["param_groups"] == tsd["param_groups"]
    assert sorted(rsd["state"]) == sorted(tsd["state"])
    for k in tsd["state"]:
        assert sorted(rsd["state"][k]) == sorted(tsd["state"][k])
        for name, tv in tsd["state"][k].items():
            rv = rsd["state"][k][name]
            assert_close(rv, tv.detach(), rtol=1e-5, atol=1e-6)
    # a fresh rill optimizer resumed from rill's state dict, and another from torch's, continue as torch does
    for source in (rsd, tsd):
        rp2 = [rill.tensor(p.detach().numpy(), requires_grad=True) for p in rp]
        ropt2 = CASES[case](rill.optim, rp2)
        ropt2.load_state_dict(source)
        tp2 = [torch.tensor(p.detach().numpy(), requires_grad=True) for p in tp]
        topt2 = CASES[case](torch.optim, tp2)
        topt2.load_state_dict(tsd)
        for step in range(5, 10):
            gs = _grads(step)
            _set_grads(rp2, gs, rill)
            _set_grads(tp2, gs, torch)
            ropt2.step()
            topt2.step()
        for r, t in zip(rp2, tp2):
            assert_close(r.detach(), t.detach(), rtol=1e-5, atol=1e-6)


def test_param_groups_with_their_own_options():
    def make(o, p):
        return o.SGD([{"params": p[:1]}, {"params": p[1:], "lr": 0.5, "momentum": 0.8}], lr=0.1)
    ropt, topt, _, _ = _run_both(make, steps=6)
    assert [g["lr"] for g in ropt.param_groups] == [0.1, 0.5]
    assert ropt.state_dict()["param_groups"] == topt.state_dict()["param_groups"]


def test_add_param_group_and_errors():
    rp, _ = _params()
    opt = rill.optim.Adam(rp[:2], lr=0.1)
    opt.add_param_group({"params": rp[2], "lr": 0.01})
    assert len(opt.param_groups) == 2 and opt.param_groups[1]["betas"] == (0.9, 0.999)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [rp[0]]})
    with pytest.raises(ValueError, match="empty parameter list"):
        rill.optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        rill.optim.SGD([rp[0] * 2], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        rill.optim.Adam(rp, lr=-1)
    with pytest.raises(ValueError, match="Nesterov"):
        rill.optim.SGD(rp, lr=0.1, nesterov=True)


def test_skips_parameters_without_grad_and_zero_grad():
    rp, _ = _params()
    opt = rill.optim.SGD(rp, lr=0.1, momentum=0.9)
    before = [p.detach().clone() for p in rp]
    rp[0].grad = rill.ones(*SHAPES[0])
    opt.step()
    assert not np.allclose(rp[0].detach().numpy(), before[0].numpy())
    np.testing.assert_array_equal(rp[1].detach().numpy(), before[1].numpy())
    assert len(opt.state) == 1
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(rp[0].grad.numpy(), np.zeros(SHAPES[0], np.float32))
    opt.zero_grad()
    assert rp[0].grad is None


def test_closure_is_called_with_grad_enabled():
    w = rill.tensor([1.0, 2.0], requires_grad=True)
    opt = rill.optim.SGD([w], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == pytest.approx(5.0)
    np.testing.assert_allclose(w.detach().numpy(), [0.8, 1.6], rtol=1e-6)


# --- schedulers ---

SCHEDULERS = {
    "step": lambda s, o: s.StepLR(o, step_size=3, gamma=0.5),
    "multistep": lambda s, o: s.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    "exponential": lambda s, o: s.ExponentialLR(o, gamma=0.9),
    "cosine": lambda s, o: s.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "lambda": lambda s, o: s.LambdaLR(o, lr_lambda=lambda e: 1.0 / (1 + e)),
    "onecycle": lambda s, o: s.OneCycleLR(o, max_lr=0.5, total_steps=25),
    "onecycle_3phase_linear": lambda s, o: s.OneCycleLR(o, max_lr=[0.5, 0.2], total_steps=25, three_phase=True,
                                                        anneal_strategy="linear"),
}


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_scheduler_matches_torch(name, opt):
    rp, tp = _params()

    def make(o, p):
        groups = [{"params": p[:2]}, {"params": p[2:], "lr": 0.05}]
        return o.SGD(groups, lr=0.1, momentum=0.9) if opt == "sgd" else o.Adam(groups, lr=0.1)

    ropt, topt = make(rill.optim, rp), make(torch.optim, tp)
    rs = SCHEDULERS[name](rill.optim.lr_scheduler, ropt)
    ts = SCHEDULERS[name](torch.optim.lr_scheduler, topt)
    assert rs.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)
    for step in range(24):
        gs = _grads(step)
        _set_grads(rp, gs, rill)
        _set_grads(tp, gs, torch)
        ropt.step()
        topt.step()
        rs.step()
        ts.step()
        assert rs.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12, abs=1e-15)
        for rg, tg in zip(ropt.param_groups, topt.param_groups):
            assert rg["lr"] == pytest.approx(tg["lr"], rel=1e-12, abs=1e-15)
            for key in ("momentum", "betas"):
                if key in tg:
                    assert rg[key] == pytest.approx(tg[key], rel=1e-12)
    for r, t in zip(rp, tp):
        assert_close(r.detach(), t.detach(), rtol=1e-4, atol=1e-5)
    sd = rs.state_dict()
    assert sd["last_epoch"] == ts.state_dict()["last_epoch"] == 24
    assert "optimizer" not in sd


def test_scheduler_state_dict_resume():
    rp, _ = _params()
    opt = rill.optim.SGD(rp, lr=1.0)
    s = rill.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    for _ in range(4):
        opt.step()
        s.step()
    sd = s.state_dict()
    opt2 = rill.optim.SGD(rp, lr=1.0)
    opt2.load_state_dict(opt.state_dict())
    s2 = rill.optim.lr_scheduler.CosineAnnealingLR(opt2, T_max=10)
    s2.load_state_dict(sd)
    for _ in range(3):
        s.step()
        s2.step()
    assert s2.get_last_lr() == pytest.approx(s.get_last_lr())
    assert s.get_last_lr()[0] == pytest.approx(0.5 * (1 + math.cos(math.pi * 7 / 10)))


def test_scheduler_rejects_non_optimizer():
    with pytest.raises(TypeError, match="is not an Optimizer"):
        rill.optim.lr_scheduler.StepLR(object(), step_size=1)
