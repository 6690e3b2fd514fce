"""CPU autocast and GradScaler against PyTorch's: the dtype each op runs in, values, gradients, a training loop."""
import numpy as np
import pytest
import torch

import rill
import rill.nn.functional as F


def pair(*shape, seed=0, dtype="float32"):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return rill.tensor(a), torch.tensor(a)


def to_np(t):
    t = t.detach()
    return (t.float() if t.dtype in (rill.bfloat16, rill.float16) else t).numpy() if isinstance(t, rill.Tensor) \
        else t.float().numpy()


CASES = {
    "matmul": lambda L, a, b, c: a @ b,
    "mm": lambda L, a, b, c: L.mm(a, b),
    "bmm": lambda L, a, b, c: L.bmm(a.unsqueeze(0), b.unsqueeze(0)),
    "addmm": lambda L, a, b, c: L.addmm(c, a, b),
    "baddbmm": lambda L, a, b, c: L.baddbmm(c.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0)),
    "linear": lambda L, a, b, c: L.nn.functional.linear(a, b.t(), c),
    "conv2d": lambda L, a, b, c: L.nn.functional.conv2d(a.reshape(1, 1, 6, 4), b.reshape(1, 1, 4, 5)[..., :3, :3]),
    "conv1d": lambda L, a, b, c: L.nn.functional.conv1d(a.reshape(1, 2, 12), b.reshape(2, 2, 5)[..., :3]),
    "sdpa": lambda L, a, b, c: L.nn.functional.scaled_dot_product_attention(a, a, a),
    "prelu": lambda L, a, b, c: L.nn.functional.prelu(a, c[:1]),
    "mse_loss (fp32)": lambda L, a, b, c: L.nn.functional.mse_loss(a.bfloat16(), a * 2),
    "cross_entropy (fp32)": lambda L, a, b, c: L.nn.functional.cross_entropy(a.bfloat16(), L.tensor([0, 1, 2, 3, 0, 1])),
    "prod (fp32)": lambda L, a, b, c: L.prod(a.bfloat16()),
    "relu (as is)": lambda L, a, b, c: L.relu(a),
    "add of float64 (never cast)": lambda L, a, b, c: a.double() @ b.double(),
}


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", list(CASES))
def test_op_dtype_and_value_like_torch(name, dtype):
    (ra, ta), (rb, tb), (rc, tc) = pair(6, 4, seed=1), pair(4, 5, seed=2), pair(5, seed=3)
    with rill.autocast("cpu", dtype=getattr(rill, dtype)):
        got = CASES[name](rill, ra, rb, rc)
    with torch.autocast("cpu", dtype=getattr(torch, dtype)):
        want = CASES[name](torch, ta, tb, tc)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(to_np(got), to_np(want), rtol=2e-2, atol=2e-2)


def test_state_nesting_decorator_and_disabled():
    assert not rill.is_autocast_enabled("cpu")
    with rill.autocast("cpu"):
        assert rill.is_autocast_enabled("cpu") and rill.get_autocast_dtype("cpu") == rill.bfloat16
        with rill.autocast("cpu", enabled=False):
            assert not rill.is_autocast_enabled("cpu")
            assert (rill.ones(2, 2) @ rill.ones(2, 2)).dtype == rill.float32
        with rill.cpu.amp.autocast(dtype=rill.float16):
            assert rill.get_autocast_dtype("cpu") == rill.float16
        assert rill.get_autocast_dtype("cpu") == rill.bfloat16
    assert not rill.is_autocast_enabled("cpu")

    @rill.amp.autocast("cpu")
    def f(x):
        return x @ x
    assert f(rill.ones(2, 2)).dtype == rill.bfloat16
    assert not rill.is_autocast_enabled("cpu")
    with pytest.warns(UserWarning, match="CPU tensors only"):
        with rill.autocast("cuda"):
            assert (rill.ones(2, 2) @ rill.ones(2, 2)).dtype == rill.float32
    with pytest.raises(RuntimeError, match="unknown device_type"):
        rill.autocast("tpu")


def test_gradients_come_back_in_parameter_dtype():
    (ra, ta), (rb, tb) = pair(6, 4, seed=1), pair(4, 5, seed=2)
    ra.requires_grad_(True)
    rb.requires_grad_(True)
    ta.requires_grad_(True)
    tb.requires_grad_(True)
    with rill.autocast("cpu"):
        rill.relu(ra @ rb).float().sum().backward()
    with torch.autocast("cpu"):
        torch.relu(ta @ tb).float().sum().backward()
    assert ra.grad.dtype == rill.float32 and rb.grad.dtype == rill.float32
    np.testing.assert_allclose(ra.grad.numpy(), ta.grad.numpy(), rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(rb.grad.numpy(), tb.grad.numpy(), rtol=2e-2, atol=2e-2)


def make_models():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    rm = rill.nn.Sequential(rill.nn.Linear(8, 16), rill.nn.ReLU(), rill.nn.Linear(16, 3))
    rm.load_state_dict({k: rill.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    return rm, tm


def test_training_loop_with_grad_scaler_like_torch():
    rm, tm = make_models()
    ropt, topt = rill.optim.SGD(rm.parameters(), lr=0.1), torch.optim.SGD(tm.parameters(), lr=0.1)
    rs = rill.amp.GradScaler("cpu", init_scale=2.0 ** 4, growth_interval=2)
    ts = torch.amp.GradScaler("cpu", init_scale=2.0 ** 4, growth_interval=2)
    rng = np.random.default_rng(0)
    for step in range(6):
        x = rng.standard_normal((10, 8)).astype("float32")
        y = rng.integers(0, 3, 10)
        if step == 3:
            x[0, 0] = np.inf  # a step the scalers must both skip
        for lib, model, opt, scaler in ((rill, rm, ropt, rs), (torch, tm, topt, ts)):
            opt.zero_grad()
            with lib.autocast("cpu"):
                loss = lib.nn.functional.cross_entropy(model(lib.tensor(x)), lib.tensor(y))
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        assert rs.get_scale() == ts.get_scale(), step
        assert rs.state_dict() == ts.state_dict()
    for (name, p), q in zip(rm.named_parameters(), tm.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_grad_scaler_misuse_and_disabled():
    rm, _ = make_models()
    opt = rill.optim.SGD(rm.parameters(), lr=0.1)
    s = rill.amp.GradScaler("cpu")
    with pytest.raises(RuntimeError, match="before scale"):
        s.unscale_(opt)
    s.scale(rm(rill.ones(1, 8)).sum()).backward()
    s.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        s.unscale_(opt)
    off = rill.amp.GradScaler("cpu", enabled=False)
    t = rill.ones(2)
    assert off.scale(t) is t and off.get_scale() == 1.0 and off.state_dict() == {}
    with pytest.raises(ValueError, match="growth factor"):
        rill.amp.GradScaler("cpu", growth_factor=1.0)


def test_custom_fwd_casts_inputs_under_autocast():
    seen = rill.amp.custom_fwd(lambda x: (x.dtype, rill.is_autocast_enabled("cpu")), cast_inputs=rill.float32)
    plain = rill.amp.custom_fwd(lambda x: x.dtype)
    with rill.autocast("cpu"):
        assert seen(rill.ones(2).bfloat16()) == (rill.float32, False)
        assert plain(rill.ones(2).bfloat16()) == rill.bfloat16
    assert seen(rill.ones(2).bfloat16()) == (rill.bfloat16, False)
