"""The in-place view methods and the numeric compositions (gradient, histogram), against PyTorch."""
import numpy as np
import pytest
import torch

import rill


def _pair(shape, requires_grad=False):
    data = np.random.default_rng(0).standard_normal(shape)
    return (torch.tensor(data, requires_grad=requires_grad),
            rill.tensor(data, dtype=rill.float64, requires_grad=requires_grad))


@pytest.mark.parametrize("name,args", [
    ("squeeze_", ()), ("squeeze_", (1,)), ("squeeze_", ((1, 3),)), ("unsqueeze_", (0,)), ("unsqueeze_", (-1,)),
    ("t_", ()), ("transpose_", (0, 2)), ("swapdims_", (1, 3)), ("swapaxes_", (0, -1)),
])
def test_inplace_view_matches_torch(name, args):
    shape = (2, 3) if name == "t_" else (4, 1, 3, 1)
    tx, rx = _pair(shape, requires_grad=True)
    ty, ry = tx.clone(), rx.clone()
    tz, rz = getattr(ty, name)(*args), getattr(ry, name)(*args)
    assert tz is ty and rz is ry
    assert tuple(ry.shape) == tuple(ty.shape) and tuple(ry.stride()) == tuple(ty.stride())
    np.testing.assert_allclose(ry.detach().numpy(), ty.detach().numpy())
    weight = np.arange(ty.numel(), dtype=np.float64).reshape(ty.shape)
    (ty * torch.tensor(weight)).sum().backward()
    (ry * rill.tensor(weight)).sum().backward()
    np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy())


def test_inplace_view_shares_memory():
    x = rill.zeros(3, 1)
    y = x[:]
    y.squeeze_()
    y[1] = 5.0
    assert tuple(y.shape) == (3,) and x[1, 0].item() == 5.0


def test_inplace_view_on_leaf_requiring_grad_raises():
    x = rill.zeros(3, 1, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        x.squeeze_()
    with rill.no_grad():
        x.squeeze_()
    assert tuple(x.shape) == (3,)
