"""rill.nn.utils.parametrize and weight_norm (hook and parametrization forms) against torch."""
import numpy as np
import pytest
import torch

import rill
from rill.nn.utils import parametrize as P

rng = np.random.default_rng(0)


def pair_linear(i=3, o=4):
    w, b = rng.normal(size=(o, i)).astype(np.float32), rng.normal(size=(o,)).astype(np.float32)
    r, t = rill.nn.Linear(i, o), torch.nn.Linear(i, o)
    with rill.no_grad():
        r.weight.copy_(rill.tensor(w))
        r.bias.copy_(rill.tensor(b))
    with torch.no_grad():
        t.weight.copy_(torch.tensor(w))
        t.bias.copy_(torch.tensor(b))
    return r, t


def close(r, t):
    np.testing.assert_allclose(np.asarray(r.tolist()), t.detach().numpy(), rtol=1e-5, atol=1e-6)


class Symmetric(rill.nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(0, 1)


class Scale(rill.nn.Module):
    def forward(self, x):
        return 2 * x

    def right_inverse(self, x):
        return x / 2


def test_register_and_remove():
    m = rill.nn.Linear(3, 3)
    w0 = m.weight
    P.register_parametrization(m, "weight", Symmetric())
    assert P.is_parametrized(m) and P.is_parametrized(m, "weight") and not P.is_parametrized(m, "bias")
    assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, rill.nn.Linear)
    assert P.type_before_parametrizations(m) is rill.nn.Linear
    assert m.parametrizations.weight.original is w0
    w = m.weight
    assert bool((w == w.transpose(0, 1)).all())
    names = sorted(n for n, _ in m.named_parameters())
    assert names == ["bias", "parametrizations.weight.original"]
    assert sorted(m.state_dict()) == names
    m(rill.randn(2, 3)).sum().backward()
    g = m.parametrizations.weight.original.grad
    assert g is not None and float(g.tril(-1).abs().sum()) == 0.0  # the lower triangle is not used
    P.remove_parametrizations(m, "weight")
    assert type(m) is rill.nn.Linear and not P.is_parametrized(m)
    assert isinstance(m.weight, rill.nn.Parameter) and bool((m.weight == w).all())
    assert m.weight is w0  # the same Parameter object, now holding the parametrized value


def test_right_inverse_chain_and_setter():
    m = rill.nn.Linear(2, 2)
    w = m.weight.detach().clone()
    P.register_parametrization(m, "weight", Scale())
    close(m.parametrizations.weight.original, torch.tensor(np.asarray((w / 2).tolist())))
    close(m.weight, torch.tensor(np.asarray(w.tolist())))
    P.register_parametrization(m, "weight", Scale())
    close(m.weight, torch.tensor(np.asarray((2 * w).tolist())))
    m.weight = rill.ones(2, 2)
    close(m.weight, torch.ones(2, 2))
    close(m.parametrizations.weight.original, torch.full((2, 2), 0.25))
    P.remove_parametrizations(m, "weight", leave_parametrized=False)
    close(m.weight, torch.full((2, 2), 0.25))


def test_cached():
    calls = []

    class Count(rill.nn.Module):
        def forward(self, x):
            calls.append(1)
            return x + 1

    m = rill.nn.Linear(2, 2)
    P.register_parametrization(m, "weight", Count())
    with P.cached():
        a, b = m.weight, m.weight
    assert a is b and len(calls) == 2  # one at registration (the shape check), one in the context
    m.weight
    assert len(calls) == 3


def test_parametrize_errors():
    m = rill.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="does not have a parameter"):
        P.register_parametrization(m, "nope", Symmetric())
    with pytest.raises(TypeError):
        P.register_parametrization(m, "weight", lambda x: x)

    class Flatten(rill.nn.Module):
        def forward(self, x):
            return x.reshape(-1)

    with pytest.raises(ValueError, match="shape"):
        P.register_parametrization(m, "weight", Flatten())
    P.register_parametrization(m, "weight", Flatten(), unsafe=True)
    assert m.weight.shape == (4,)
    with pytest.raises(ValueError, match="does not have a parametrization"):
        P.remove_parametrizations(m, "bias")


@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm_hook(dim):
    r, t = pair_linear()
    rill.nn.utils.weight_norm(r, dim=dim)
    with pytest.warns(FutureWarning):
        torch.nn.utils.weight_norm(t, dim=dim)
    close(r.weight_g, t.weight_g)
    close(r.weight_v, t.weight_v)
    assert sorted(r.state_dict()) == sorted(t.state_dict())
    with rill.no_grad():
        r.weight_g.mul_(2.0)
    with torch.no_grad():
        t.weight_g.mul_(2.0)
    x = rng.normal(size=(2, 3)).astype(np.float32)
    ro, to = r(rill.tensor(x)), t(torch.tensor(x))
    close(ro, to)
    ro.sum().backward()
    to.sum().backward()
    close(r.weight_g.grad, t.weight_g.grad)
    close(r.weight_v.grad, t.weight_v.grad)
    with pytest.raises(RuntimeError, match="two weight_norm"):
        rill.nn.utils.weight_norm(r, dim=dim)
    rill.nn.utils.remove_weight_norm(r)
    torch.nn.utils.remove_weight_norm(t)
    close(r.weight, t.weight)
    assert sorted(n for n, _ in r.named_parameters()) == ["bias", "weight"]
    with pytest.raises(ValueError, match="not found"):
        rill.nn.utils.remove_weight_norm(r)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization(dim):
    r, t = pair_linear()
    rill.nn.utils.parametrizations.weight_norm(r, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(t, dim=dim)
    close(r.parametrizations.weight.original0, t.parametrizations.weight.original0)
    close(r.parametrizations.weight.original1, t.parametrizations.weight.original1)
    close(r.weight, t.weight)
    assert sorted(r.state_dict()) == sorted(t.state_dict())
    x = rng.normal(size=(2, 3)).astype(np.float32)
    r(rill.tensor(x)).pow(2).sum().backward()
    t(torch.tensor(x)).pow(2).sum().backward()
    close(r.parametrizations.weight.original0.grad, t.parametrizations.weight.original0.grad)
    close(r.parametrizations.weight.original1.grad, t.parametrizations.weight.original1.grad)
    P.remove_parametrizations(r, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(t, "weight")
    close(r.weight, t.weight)


def test_weight_norm_conv():
    r = rill.nn.Conv2d(2, 3, 3)
    rill.nn.utils.weight_norm(r)
    assert tuple(r.weight_g.shape) == (3, 1, 1, 1)
    assert r(rill.randn(1, 2, 5, 5)).shape == (1, 3, 3, 3)
