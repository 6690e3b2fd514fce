"""rill.distributions.transforms, TransformedDistribution and LogNormal against torch (float64, 1e-6)."""
import math

import numpy as np
import pytest
import torch

import rill
import rill.distributions as D
import rill.distributions.transforms as T
import torch.distributions as TD
import torch.distributions.transforms as TT

rng = np.random.default_rng(0)


def pair(a):
    a = np.asarray(a, dtype=np.float64)
    return rill.tensor(a), torch.tensor(a)


def close(r, t, tol=1e-6):
    np.testing.assert_allclose(np.asarray(r.tolist(), dtype=np.float64), t.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("make", [
    lambda m: m.ExpTransform(), lambda m: m.TanhTransform(), lambda m: m.SigmoidTransform(),
    lambda m: m.AffineTransform(0.5, -2.0),
    lambda m: m.ComposeTransform([m.AffineTransform(1.0, 3.0), m.TanhTransform()]),
])
def test_transforms(make):
    r, t = make(T), make(TT)
    x = pair(rng.normal(size=(2, 3)))
    y = r(x[0]), t(x[1])
    close(*y)
    close(r.inv(y[0]), t.inv(y[1]))
    close(r.log_abs_det_jacobian(x[0], y[0]), t.log_abs_det_jacobian(x[1], y[1]))
    close(r.inv.log_abs_det_jacobian(y[0], x[0]), t.inv.log_abs_det_jacobian(y[1], x[1]))


def test_tanh_cache_returns_the_input():
    t = T.TanhTransform(cache_size=1)
    x = rill.tensor([20.0, -20.0], dtype=rill.float64)
    assert t.inv(t(x)) is x
    with pytest.raises(ValueError):
        T.TanhTransform(cache_size=2)


def test_tanh_normal_policy():
    (rl, tl), (rs, ts) = pair(rng.normal(size=(4, 2))), pair(rng.uniform(0.5, 1.5, size=(4, 2)))
    rd = D.TransformedDistribution(D.Normal(rl, rs), [T.TanhTransform(cache_size=1)])
    td = TD.TransformedDistribution(TD.Normal(tl, ts), [TT.TanhTransform(cache_size=1)])
    v = pair(rng.uniform(-0.9, 0.9, size=(4, 2)))
    close(rd.log_prob(v[0]), td.log_prob(v[1]))
    assert tuple(rd.batch_shape) == (4, 2) and tuple(rd.event_shape) == ()
    loc = rill.zeros(3, requires_grad=True)
    pol = D.TransformedDistribution(D.Normal(loc, rill.ones(3)), T.TanhTransform(cache_size=1))
    a = pol.rsample()
    assert float(a.abs().max()) <= 1.0
    pol.log_prob(a).sum().backward()
    assert loc.grad is not None
    ri = D.Independent(rd, 1)
    ti = TD.Independent(td, 1)
    close(ri.log_prob(v[0]), ti.log_prob(v[1]))


def test_affine_event_dim_and_cdf():
    base_r = D.Independent(D.Normal(rill.zeros(3, dtype=rill.float64), rill.ones(3, dtype=rill.float64)), 1)
    base_t = TD.Independent(TD.Normal(torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)), 1)
    sc = pair([1.0, 2.0, 3.0])
    rd = D.TransformedDistribution(base_r, T.AffineTransform(1.0, sc[0], event_dim=1))
    td = TD.TransformedDistribution(base_t, TT.AffineTransform(1.0, sc[1], event_dim=1))
    v = pair(rng.normal(size=(2, 3)))
    close(rd.log_prob(v[0]), td.log_prob(v[1]))
    nr = D.TransformedDistribution(D.Normal(0.0, 1.0), T.AffineTransform(0.0, -2.0))
    nt = TD.TransformedDistribution(TD.Normal(0.0, 1.0), TT.AffineTransform(0.0, -2.0))
    close(nr.cdf(rill.tensor([0.5, -1.0])), nt.cdf(torch.tensor([0.5, -1.0])))


def test_log_normal():
    (rl, tl), (rs, ts) = pair(rng.normal(size=(3,))), pair(rng.uniform(0.2, 1, size=(3,)))
    rd, td = D.LogNormal(rl, rs), TD.LogNormal(tl, ts)
    v = pair(rng.uniform(0.1, 3, size=(2, 3)))
    close(rd.log_prob(v[0]), td.log_prob(v[1]))
    close(rd.entropy(), td.entropy())
    close(rd.mean, td.mean)
    close(rd.variance, td.variance)
    close(rd.cdf(v[0]), td.cdf(v[1]))
    s = D.LogNormal(rill.tensor(0.0, dtype=rill.float64), rill.tensor(0.25, dtype=rill.float64)).sample((20000,))
    assert float(s.min()) > 0
    assert abs(float(s.mean()) - math.exp(0.25 ** 2 / 2)) < 5 * 0.26 / math.sqrt(20000)
    with pytest.raises(ValueError, match="support"):
        rd.log_prob(rill.tensor([-1.0, 1.0, 1.0], dtype=rill.float64))
    with pytest.raises(ValueError, match="scale"):
        D.LogNormal(0.0, -1.0)
