"""rill.distributions against torch.distributions on the same parameters (float64, 1e-6): log_prob,
entropy, mean, variance, cdf, kl_divergence; sample shapes; rsample gradients; sample means within 5
standard errors (n = 20000); and the ValueErrors of validate_args."""
import math

import numpy as np
import pytest
import torch

import rill
import rill.distributions as D
import torch.distributions as TD

N = 20000
rng = np.random.default_rng(0)


def pair(a):
    a = np.asarray(a, dtype=np.float64)
    return rill.tensor(a), torch.tensor(a)


def close(r, t, tol=1e-6):
    r = np.asarray(r.tolist(), dtype=np.float64)
    t = t.detach().numpy().astype(np.float64)
    assert r.shape == t.shape
    np.testing.assert_allclose(r, t, rtol=tol, atol=tol)


def mean_close(x, expected, sd):
    assert abs(float(x.double().mean()) - expected) < 5 * sd / math.sqrt(N)


def check_stats(rd, td, values, moments=True):
    rv, tv = values
    close(rd.log_prob(rv), td.log_prob(tv))
    close(rd.entropy(), td.entropy())
    if moments:
        close(rd.mean, td.mean)
        close(rd.variance, td.variance)
        close(rd.stddev, td.stddev)
    assert tuple(rd.batch_shape) == tuple(td.batch_shape)
    assert tuple(rd.event_shape) == tuple(td.event_shape)


def test_normal():
    (rl, tl), (rs, ts) = pair(rng.normal(size=(3, 1))), pair(rng.uniform(0.5, 2, size=(4,)))
    rd, td = D.Normal(rl, rs), TD.Normal(tl, ts)
    check_stats(rd, td, pair(rng.normal(size=(2, 3, 4))))
    v = pair(rng.normal(size=(3, 4)))
    close(rd.cdf(v[0]), td.cdf(v[1]))
    assert rd.sample().shape == (3, 4)
    assert rd.sample((5, 2)).shape == (5, 2, 3, 4)
    assert D.Normal(0.0, 1.0).sample((7,)).shape == (7,)
    mean_close(D.Normal(rill.tensor(2.0), rill.tensor(3.0)).sample((N,)), 2.0, 3.0)


def test_normal_rsample_gradient():
    loc = rill.tensor([1.0, -1.0], requires_grad=True)
    scale = rill.tensor([2.0, 0.5], requires_grad=True)
    x = D.Normal(loc, scale).rsample((10,))
    eps = (x.detach() - loc.detach()) / scale.detach()
    x.sum().backward()
    assert loc.grad.tolist() == [10.0, 10.0]
    np.testing.assert_allclose(scale.grad.tolist(), eps.sum(0).tolist(), rtol=1e-5)
    assert D.Normal(loc, scale).sample().requires_grad is False


def test_uniform():
    (rlo, tlo), (rhi, thi) = pair([0.0, -1.0, 2.0]), pair([1.0, 3.0, 2.5])
    rd, td = D.Uniform(rlo, rhi), TD.Uniform(tlo, thi)
    check_stats(rd, td, pair([[0.5, 0.0, 2.1], [0.9, 2.9, 2.4]]))
    v = pair([0.25, 1.0, 2.25])
    close(rd.cdf(v[0]), td.cdf(v[1]))
    close(rd.icdf(v[0].clamp(0, 1)), td.icdf(v[1].clamp(0, 1)))
    s = D.Uniform(2.0, 5.0).sample((N,))
    assert float(s.min()) >= 2.0 and float(s.max()) < 5.0
    mean_close(s, 3.5, 3 / math.sqrt(12))
    lo = rill.tensor(0.0, requires_grad=True)
    hi = rill.tensor(2.0, requires_grad=True)
    D.Uniform(lo, hi).rsample((4,)).sum().backward()
    assert lo.grad is not None and hi.grad is not None
    with pytest.raises(ValueError):
        D.Uniform(rill.tensor([1.0]), rill.tensor([0.0]))
    with pytest.raises(ValueError):
        rd.log_prob(rill.tensor([5.0, 5.0, 5.0]))


@pytest.mark.parametrize("use_logits", [False, True])
def test_bernoulli(use_logits):
    p = rng.uniform(0.05, 0.95, size=(2, 3))
    r, t = pair(np.log(p / (1 - p)) if use_logits else p)
    kw = "logits" if use_logits else "probs"
    rd, td = D.Bernoulli(**{kw: r}), TD.Bernoulli(**{kw: t})
    check_stats(rd, td, pair(rng.integers(0, 2, size=(4, 2, 3))))
    close(rd.probs, td.probs)
    close(rd.logits, td.logits)
    assert rd.sample((5,)).shape == (5, 2, 3)
    s = D.Bernoulli(probs=rill.tensor(0.3, dtype=rill.float64)).sample((N,))
    assert set(s.unique().tolist()) <= {0.0, 1.0}
    mean_close(s, 0.3, math.sqrt(0.21))
    assert tuple(rd.enumerate_support().shape) == tuple(td.enumerate_support().shape)


def test_bernoulli_edge_probs():
    r, t = pair([0.0, 1.0, 0.5])
    close(D.Bernoulli(r).log_prob(rill.tensor([0.0, 1.0, 1.0], dtype=rill.float64)),
          TD.Bernoulli(t).log_prob(torch.tensor([0.0, 1.0, 1.0], dtype=torch.float64)))
    close(D.Bernoulli(r).entropy(), TD.Bernoulli(t).entropy())


@pytest.mark.parametrize("use_logits", [False, True])
def test_categorical(use_logits):
    a = rng.normal(size=(2, 3, 5)) if use_logits else rng.uniform(0.1, 1, size=(2, 3, 5))
    r, t = pair(a)
    kw = "logits" if use_logits else "probs"
    rd, td = D.Categorical(**{kw: r}), TD.Categorical(**{kw: t})
    vals = rng.integers(0, 5, size=(4, 2, 3))
    check_stats(rd, td, (rill.tensor(vals), torch.tensor(vals)), moments=False)
    close(rd.log_prob(rill.tensor([1, 2, 3])), td.log_prob(torch.tensor([1, 2, 3])))
    close(rd.probs, td.probs)
    close(rd.logits, td.logits)
    assert rd.sample().shape == (2, 3) and rd.sample((4,)).shape == (4, 2, 3)
    assert rd.sample().dtype == rill.int64
    assert bool(rill.isnan(rd.mean).all()) and tuple(rd.mean.shape) == (2, 3)
    assert rd.mode.tolist() == td.mode.tolist()
    assert tuple(rd.enumerate_support().shape) == tuple(td.enumerate_support().shape)
    s = D.Categorical(probs=rill.tensor([0.2, 0.3, 0.5], dtype=rill.float64)).sample((N,))
    assert set(s.unique().tolist()) <= {0, 1, 2}
    mean_close(s, 1.3, math.sqrt(0.3 + 4 * 0.5 - 1.3 ** 2))


def test_categorical_zero_probs():
    r, t = pair([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]])
    close(D.Categorical(r).entropy(), TD.Categorical(t).entropy())
    close(D.Categorical(r).log_prob(rill.tensor([1, 0])), TD.Categorical(t).log_prob(torch.tensor([1, 0])))


def _spd(n, batch=()):
    a = rng.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


@pytest.mark.parametrize("form", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_multivariate_normal(form):
    cov = _spd(3, (2,))
    mat = {"covariance_matrix": cov, "precision_matrix": np.linalg.inv(cov),
           "scale_tril": np.linalg.cholesky(cov)}[form]
    (rl, tl), (rm, tm) = pair(rng.normal(size=(3,))), pair(mat)
    rd, td = D.MultivariateNormal(rl, **{form: rm}), TD.MultivariateNormal(tl, **{form: tm})
    check_stats(rd, td, pair(rng.normal(size=(4, 2, 3))))
    close(rd.covariance_matrix, td.covariance_matrix)
    close(rd.precision_matrix, td.precision_matrix)
    close(rd.scale_tril, td.scale_tril)
    assert rd.sample().shape == (2, 3) and rd.sample((5,)).shape == (5, 2, 3)


def test_multivariate_normal_sampling():
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    d = D.MultivariateNormal(rill.tensor([1.0, -2.0], dtype=rill.float64), rill.tensor(cov))
    s = d.sample((N,))
    mean_close(s[:, 0], 1.0, math.sqrt(2.0))
    mean_close(s[:, 1], -2.0, 1.0)
    c = ((s[:, 0] - 1.0) * (s[:, 1] + 2.0)).mean()
    assert abs(float(c) - 0.6) < 0.1
    loc = rill.zeros(2, dtype=rill.float64, requires_grad=True)
    L = rill.tensor(np.linalg.cholesky(cov), requires_grad=True)
    D.MultivariateNormal(loc, scale_tril=L).rsample((3,)).sum().backward()
    assert loc.grad.tolist() == [3.0, 3.0] and L.grad is not None


def test_kl_divergence():
    a, b = pair(rng.normal(size=(4,))), pair(rng.uniform(0.5, 2, size=(4,)))
    c, d = pair(rng.normal(size=(4,))), pair(rng.uniform(0.5, 2, size=(4,)))
    close(D.kl_divergence(D.Normal(a[0], b[0]), D.Normal(c[0], d[0])),
          TD.kl_divergence(TD.Normal(a[1], b[1]), TD.Normal(c[1], d[1])))
    p, q = pair([0.0, 0.3, 1.0, 0.5]), pair([0.2, 0.0, 0.7, 1.0])
    close(D.kl_divergence(D.Bernoulli(p[0]), D.Bernoulli(q[0])),
          TD.kl_divergence(TD.Bernoulli(p[1]), TD.Bernoulli(q[1])))
    p, q = pair([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5]]), pair([[0.1, 0.0, 0.9], [0.3, 0.3, 0.4]])
    close(D.kl_divergence(D.Categorical(p[0]), D.Categorical(q[0])),
          TD.kl_divergence(TD.Categorical(p[1]), TD.Categorical(q[1])))
    lo1, hi1, lo2, hi2 = pair([0.0, 0.0]), pair([1.0, 1.0]), pair([-1.0, 0.5]), pair([2.0, 3.0])
    close(D.kl_divergence(D.Uniform(lo1[0], hi1[0]), D.Uniform(lo2[0], hi2[0])),
          TD.kl_divergence(TD.Uniform(lo1[1], hi1[1]), TD.Uniform(lo2[1], hi2[1])))
    m1, m2, c1, c2 = pair(rng.normal(size=(3,))), pair(rng.normal(size=(2, 3))), pair(_spd(3)), pair(_spd(3, (2,)))
    close(D.kl_divergence(D.MultivariateNormal(m1[0], c1[0]), D.MultivariateNormal(m2[0], c2[0])),
          TD.kl_divergence(TD.MultivariateNormal(m1[1], c1[1]), TD.MultivariateNormal(m2[1], c2[1])))
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Bernoulli(0.5))


def test_register_kl():
    class MyNormal(D.Normal):
        pass

    # a subclass pair falls back to the base classes' rule, then to its own once registered
    assert float(D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0))) == pytest.approx(0.5)

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return rill.tensor(42.0)

    assert float(D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0))) == 42.0
    assert float(D.kl_divergence(D.Normal(0.0, 1.0), D.Normal(1.0, 1.0))) == pytest.approx(0.5)


def test_validate_args():
    with pytest.raises(ValueError, match="scale"):
        D.Normal(rill.tensor([0.0]), rill.tensor([-1.0]))
    D.Normal(rill.tensor([0.0]), rill.tensor([-1.0]), validate_args=False)
    with pytest.raises(ValueError, match="probs"):
        D.Bernoulli(probs=rill.tensor([1.5]))
    with pytest.raises(ValueError):
        D.Bernoulli(probs=rill.tensor([0.5]), logits=rill.tensor([0.0]))
    with pytest.raises(ValueError):
        D.Bernoulli()
    with pytest.raises(ValueError, match="support"):
        D.Bernoulli(probs=rill.tensor([0.5])).log_prob(rill.tensor([0.5]))
    with pytest.raises(ValueError, match="probs"):
        D.Categorical(probs=rill.tensor([-0.5, 1.0]))
    with pytest.raises(ValueError, match="support"):
        D.Categorical(probs=rill.tensor([0.5, 0.5])).log_prob(rill.tensor([2]))
    with pytest.raises(ValueError):
        D.Categorical(probs=rill.tensor(0.5))
    with pytest.raises(ValueError, match="broadcastable"):
        D.Normal(rill.zeros(3), rill.ones(3)).log_prob(rill.zeros(2))
    with pytest.raises(ValueError, match="covariance_matrix"):
        D.MultivariateNormal(rill.zeros(2), rill.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError):
        D.MultivariateNormal(rill.zeros(2), rill.eye(2), scale_tril=rill.eye(2))
    with pytest.raises(ValueError):
        D.MultivariateNormal(rill.zeros(3), rill.eye(2))
    with pytest.raises(TypeError):
        D.Normal("a", 1.0)


def test_exponential():
    r, t = pair(rng.uniform(0.5, 2, size=(3,)))
    rd, td = D.Exponential(r), TD.Exponential(t)
    check_stats(rd, td, pair(rng.uniform(0, 3, size=(2, 3))))
    v = pair([0.1, 1.0, 2.0])
    close(rd.cdf(v[0]), td.cdf(v[1]))
    close(rd.icdf(v[0] / 3), td.icdf(v[1] / 3))
    s = D.Exponential(rill.tensor(2.0, dtype=rill.float64)).sample((N,))
    assert float(s.min()) >= 0
    mean_close(s, 0.5, 0.5)
    rate = rill.tensor(2.0, requires_grad=True)
    D.Exponential(rate).rsample((5,)).sum().backward()
    assert rate.grad is not None and float(rate.grad) < 0
    with pytest.raises(ValueError, match="support"):
        rd.log_prob(rill.tensor([-1.0, 1.0, 1.0], dtype=rill.float64))


def test_laplace():
    (rl, tl), (rs, ts) = pair(rng.normal(size=(3,))), pair(rng.uniform(0.5, 2, size=(3,)))
    rd, td = D.Laplace(rl, rs), TD.Laplace(tl, ts)
    check_stats(rd, td, pair(rng.normal(size=(2, 3))))
    v = pair(rng.normal(size=(3,)))
    close(rd.cdf(v[0]), td.cdf(v[1]))
    u = pair([0.1, 0.5, 0.9])
    close(rd.icdf(u[0]), td.icdf(u[1]))
    mean_close(D.Laplace(rill.tensor(1.0, dtype=rill.float64), rill.tensor(2.0, dtype=rill.float64)).sample((N,)),
               1.0, 2 * math.sqrt(2))


def test_one_hot_categorical():
    r, t = pair(rng.uniform(0.1, 1, size=(2, 4)))
    rd, td = D.OneHotCategorical(r), TD.OneHotCategorical(t)
    vals = np.eye(4)[rng.integers(0, 4, size=(3, 2))]
    check_stats(rd, td, pair(vals))
    s = rd.sample((5,))
    assert s.shape == (5, 2, 4) and bool((s.sum(-1) == 1).all())
    assert tuple(rd.enumerate_support().shape) == tuple(td.enumerate_support().shape)
    q = pair(rng.uniform(0.1, 1, size=(2, 4)))
    close(D.kl_divergence(rd, D.OneHotCategorical(q[0])), TD.kl_divergence(td, TD.OneHotCategorical(q[1])))
    with pytest.raises(ValueError, match="support"):
        rd.log_prob(rill.tensor([[1.0, 1.0, 0.0, 0.0]] * 2, dtype=rill.float64))


def test_independent():
    (rl, tl), (rs, ts) = pair(rng.normal(size=(2, 3))), pair(rng.uniform(0.5, 2, size=(2, 3)))
    rd, td = D.Independent(D.Normal(rl, rs), 1), TD.Independent(TD.Normal(tl, ts), 1)
    check_stats(rd, td, pair(rng.normal(size=(4, 2, 3))))
    assert rd.rsample((5,)).shape == (5, 2, 3) and rd.has_rsample
    (ql, tql), (qs, tqs) = pair(rng.normal(size=(2, 3))), pair(rng.uniform(0.5, 2, size=(2, 3)))
    close(D.kl_divergence(rd, D.Independent(D.Normal(ql, qs), 1)),
          TD.kl_divergence(td, TD.Independent(TD.Normal(tql, tqs), 1)))
    m = pair(rng.normal(size=(3,)))
    close(D.Independent(D.Bernoulli(logits=m[0]), 1).log_prob(rill.tensor([1.0, 0.0, 1.0], dtype=rill.float64)),
          TD.Independent(TD.Bernoulli(logits=m[1]), 1).log_prob(torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64)))
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims"):
        D.Independent(D.Normal(rl, rs), 3)


def test_expand():
    (rl, tl), (rs, ts) = pair(rng.normal(size=(3,))), pair(rng.uniform(0.5, 2, size=(3,)))
    rd, td = D.Normal(rl, rs).expand((2, 3)), TD.Normal(tl, ts).expand((2, 3))
    check_stats(rd, td, pair(rng.normal(size=(2, 3))))
    assert rd.sample((4,)).shape == (4, 2, 3)
    p = pair(rng.uniform(0.1, 1, size=(4,)))
    rc, tc = D.Categorical(p[0]).expand((3,)), TD.Categorical(p[1]).expand((3,))
    close(rc.entropy(), tc.entropy())
    assert rc.sample().shape == (3,)
    cov = pair(_spd(2))
    rm = D.MultivariateNormal(rill.zeros(2, dtype=rill.float64), cov[0]).expand((5,))
    tm = TD.MultivariateNormal(torch.zeros(2, dtype=torch.float64), cov[1]).expand((5,))
    check_stats(rm, tm, pair(rng.normal(size=(5, 2))))
    ri = D.Independent(D.Normal(rl, rs), 1).expand((4,))
    ti = TD.Independent(TD.Normal(tl, ts), 1).expand((4,))
    check_stats(ri, ti, pair(rng.normal(size=(4, 3))))
    with pytest.raises(RuntimeError):
        D.Normal(rl, rs).expand((4,))
