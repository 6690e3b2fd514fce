"""The random distributions of python/rill/_random.py: shapes, dtypes, supports, sample means against the
distributions' own (n = 20000, so a mean is off by more than 5 standard errors about once in 3 million runs),
generators, and the errors for bad parameters."""
import math

import pytest

import rill

N = 20000


def mean_close(x, expected, sd):
    assert abs(float(x.double().mean()) - expected) < 5 * sd / math.sqrt(N)


def test_fills_draw_from_their_distributions():
    x = rill.empty(N, dtype=rill.float64)
    mean_close(x.exponential_(2.0), 0.5, 0.5)
    g = x.geometric_(0.25)
    assert float(g.min()) >= 1 and bool((g == g.floor()).all())
    mean_close(g, 4.0, math.sqrt(0.75) / 0.25)
    mean_close(x.log_normal_(0.0, 0.25), math.exp(0.25 ** 2 / 2), 0.26)
    b = x.bernoulli_(0.3)
    assert set(b.unique().tolist()) <= {0.0, 1.0}
    mean_close(b, 0.3, math.sqrt(0.21))
    c = x.cauchy_(1.0, 2.0)
    assert abs(float(c.median()) - 1.0) < 0.1
    r = rill.empty(N, dtype=rill.int64).random_(3, 7)
    assert set(r.unique().tolist()) == {3, 4, 5, 6}


def test_functions():
    p = rill.full((N,), 0.25, dtype=rill.float64)
    mean_close(rill.bernoulli(p), 0.25, math.sqrt(0.1875))
    assert rill.bernoulli(p).dtype == rill.float64
    z = rill.normal(rill.full((N,), 3.0), 2.0)
    mean_close(z, 3.0, 2.0)
    assert rill.normal(0.0, 1.0, (2, 3)).shape == (2, 3)
    assert rill.normal(rill.zeros(2, 1), rill.ones(3)).shape == (2, 3)
    assert sorted(rill.randperm(50).tolist()) == list(range(50))
    assert rill.randperm(0).shape == (0,)
    ri = rill.randint_like(rill.zeros(N), 2, 5)
    assert set(ri.unique().tolist()) == {2.0, 3.0, 4.0}


def test_multinomial():
    w = rill.tensor([0.2, 0.0, 0.3, 0.5])
    m = rill.multinomial(w, N, replacement=True)
    assert m.dtype == rill.int64 and m.shape == (N,)
    for i, p in enumerate((0.2, 0.0, 0.3, 0.5)):
        mean_close((m == i).double(), p, math.sqrt(p * (1 - p)) + 1e-9)
    rows = rill.multinomial(rill.tensor([[1.0, 2.0, 3.0], [0.0, 1.0, 1.0]]), 2)
    assert rows.shape == (2, 2)
    for r in rows.tolist():
        assert len(set(r)) == 2  # without replacement: distinct
    assert 0 not in rows[1].tolist()
    with pytest.raises(RuntimeError, match="not enough"):
        rill.multinomial(rill.tensor([0.0, 1.0]), 2)
    with pytest.raises(RuntimeError, match="element < 0"):
        rill.multinomial(rill.tensor([-1.0, 1.0]), 1)
    with pytest.raises(RuntimeError, match="1 or 2 dim"):
        rill.multinomial(rill.ones(2, 2, 2), 1)


def test_generators_make_draws_repeatable():
    a = rill.empty(100).exponential_(generator=rill.Generator().manual_seed(7))
    b = rill.empty(100).exponential_(generator=rill.Generator().manual_seed(7))
    assert bool((a == b).all())


def test_bad_parameters_raise():
    with pytest.raises(RuntimeError, match="lambda > 0"):
        rill.empty(3).exponential_(0.0)
    with pytest.raises(RuntimeError, match=r"p to be in \(0, 1\)"):
        rill.empty(3).geometric_(1.5)
    with pytest.raises(RuntimeError, match="sigma > 0"):
        rill.empty(3).cauchy_(0.0, -1.0)
    with pytest.raises(RuntimeError, match="std > 0"):
        rill.empty(3).log_normal_(0.0, 0.0)
    with pytest.raises(RuntimeError, match="p_in >= 0"):
        rill.bernoulli(rill.tensor([1.5]))
    with pytest.raises(RuntimeError, match="less than 'to'"):
        rill.empty(3).random_(5, 2)
