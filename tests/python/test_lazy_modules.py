"""Lazy modules (rill/nn/modules/lazy.py, Note [Lazy parameters]): parameters inferred from the first input,
the module turned into its eager class, state dicts loaded before any forward, against PyTorch's."""
import copy

import numpy as np
import pytest
import torch

import rill

CASES = [
    ("LazyLinear", (5,), {}, (3, 4), "Linear"),
    ("LazyConv1d", (4, 3), dict(stride=2, groups=2), (2, 6, 9), "Conv1d"),
    ("LazyConv2d", (4, (2, 3)), dict(padding=1, bias=False), (3, 7, 6), "Conv2d"),
    ("LazyConv3d", (2, 2), dict(dilation=2), (1, 3, 5, 5, 5), "Conv3d"),
    ("LazyConvTranspose1d", (4, 3), dict(stride=2, output_padding=1), (2, 3, 5), "ConvTranspose1d"),
    ("LazyConvTranspose2d", (6, 3), dict(groups=3), (2, 3, 4, 4), "ConvTranspose2d"),
    ("LazyConvTranspose3d", (2, 2), dict(stride=(1, 2, 1)), (3, 3, 2, 3), "ConvTranspose3d"),
]


@pytest.mark.parametrize("name,args,kwargs,shape,becomes", CASES)
def test_first_forward_initialises(name, args, kwargs, shape, becomes):
    m = getattr(rill.nn, name)(*args, **kwargs)
    assert m.has_uninitialized_params()
    assert isinstance(m.weight, rill.nn.UninitializedParameter)
    x = rill.randn(*shape)
    y = m(x)
    assert type(m) is getattr(rill.nn, becomes)
    t = getattr(torch.nn, name)(*args, **kwargs)
    t(torch.randn(*shape))
    assert tuple(m.weight.shape) == tuple(t.weight.shape)
    assert (m.bias is None) == (t.bias is None)
    assert sorted(m.state_dict()) == sorted(t.state_dict())
    t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()})
    np.testing.assert_allclose(y.detach().numpy(), t(torch.tensor(x.numpy())).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    assert m(x).shape == y.shape  # the hook is gone: a second call is a plain forward


@pytest.mark.parametrize("name,args,kwargs,shape,becomes", CASES)
def test_load_state_dict_before_forward(name, args, kwargs, shape, becomes):
    t = getattr(torch.nn, name)(*args, **kwargs).double()
    xt = torch.randn(*shape, dtype=torch.float64)
    expected = t(xt)
    m = getattr(rill.nn, name)(*args, **kwargs).to(rill.float64)
    assert m.weight.dtype == rill.float64 and m.has_uninitialized_params()
    m.load_state_dict({k: rill.tensor(v.numpy()) for k, v in t.state_dict().items()})
    assert not m.has_uninitialized_params()
    y = m(rill.tensor(xt.numpy()))
    np.testing.assert_allclose(y.detach().numpy(), expected.detach().numpy(), rtol=1e-10)
    assert type(m) is getattr(rill.nn, becomes)


def test_deepcopy_and_errors():
    m = rill.nn.LazyConv2d(4, 3, groups=2)
    c = copy.deepcopy(m)
    assert c.has_uninitialized_params()
    with pytest.raises(ValueError, match="divisible by groups"):
        c(rill.randn(1, 3, 5, 5))
    with pytest.raises(RuntimeError, match="Expected 3D"):
        m(rill.randn(5, 5))
    m(rill.randn(1, 4, 5, 5))
    assert m.in_channels == 4 and tuple(m.weight.shape) == (4, 2, 3, 3)


def test_lazy_in_sequential_trains():
    model = rill.nn.Sequential(rill.nn.LazyConv2d(4, 3), rill.nn.ReLU(), rill.nn.Flatten(), rill.nn.LazyLinear(2))
    x = rill.randn(2, 3, 6, 6)
    model(x)
    opt = rill.optim.SGD(model.parameters(), lr=1e-3)
    loss = model(x).pow(2).sum()
    loss.backward()
    opt.step()
    assert model(x).pow(2).sum().item() < loss.item()


@pytest.mark.parametrize("name,shape", [("LazyBatchNorm1d", (4, 3)), ("LazyBatchNorm1d", (2, 3, 5)),
                                        ("LazyBatchNorm2d", (2, 3, 4, 4)), ("LazyBatchNorm3d", (2, 3, 2, 3, 2))])
def test_lazy_batch_norm(name, shape):
    m = getattr(rill.nn, name)(momentum=0.2).to(rill.float64)
    t = getattr(torch.nn, name)(momentum=0.2).double()
    assert m.has_uninitialized_params() and isinstance(m.running_mean, rill.nn.UninitializedBuffer)
    x = torch.randn(*shape, dtype=torch.float64)
    np.testing.assert_allclose(m(rill.tensor(x.numpy())).detach().numpy(), t(x).detach().numpy(), rtol=1e-10)
    assert type(m) is getattr(rill.nn, name[4:]) and m.num_features == 3
    for k, v in t.state_dict().items():
        np.testing.assert_allclose(m.state_dict()[k].numpy(), v.numpy(), rtol=1e-10, err_msg=k)
    loaded = getattr(rill.nn, name)()
    loaded.load_state_dict({k: rill.tensor(v.numpy()) for k, v in t.state_dict().items()})
    assert not loaded.has_uninitialized_params() and loaded.num_features == 3


def test_lazy_batch_norm_without_affine_or_stats():
    m = rill.nn.LazyBatchNorm2d(affine=False, track_running_stats=False)
    assert m(rill.randn(2, 3, 2, 2)).shape == (2, 3, 2, 2)
    assert m.weight is None and m.running_mean is None and type(m) is rill.nn.BatchNorm2d
