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


@pytest.mark.parametrize("kwargs", [
    {}, {"spacing": 2.0}, {"edge_order": 2}, {"spacing": [2.0, 0.5], "dim": (0, -1)}, {"dim": 1, "edge_order": 2},
    {"spacing": "coords", "dim": (0, 2), "edge_order": 1}, {"spacing": "coords", "dim": (0, 2), "edge_order": 2},
])
def test_gradient_matches_torch(kwargs):
    tx, rx = _pair((4, 3, 5), requires_grad=True)
    if kwargs.get("spacing") == "coords":
        coords = [np.array([0.0, 0.5, 2.0, 2.25]), np.array([1.0, 3.0, 3.5, 6.0, 6.1])]
        tk = dict(kwargs, spacing=[torch.tensor(c) for c in coords])
        rk = dict(kwargs, spacing=[rill.tensor(c) for c in coords])
    else:
        tk = rk = kwargs
    tout, rout = torch.gradient(tx, **tk), rill.gradient(rx, **rk)
    assert len(tout) == len(rout)
    for t, r in zip(tout, rout):
        np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
    sum(t.sum() * (i + 1) for i, t in enumerate(tout)).backward()
    sum(r.sum() * (i + 1) for i, r in enumerate(rout)).backward()
    np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_gradient_bad_input_raises():
    with pytest.raises(RuntimeError, match="edge_order"):
        rill.gradient(rill.zeros(2, 3), edge_order=2)
    with pytest.raises(ValueError, match="edge_order"):
        rill.gradient(rill.zeros(4), edge_order=3)


@pytest.mark.parametrize("bins", [1, 4, "edges"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("density", [False, True])
def test_histogram_matches_torch(bins, weighted, density):
    data = np.random.default_rng(1).standard_normal(50).astype(np.float32)
    data[:3] = [0.0, 1.0, 1.0]  # values on edges
    w = np.random.default_rng(2).random(50).astype(np.float32)
    kw = {"density": density}
    tk, rk = dict(kw), dict(kw)
    if weighted:
        tk["weight"], rk["weight"] = torch.tensor(w), rill.tensor(w)
    tb = torch.tensor([-1.0, 0.0, 0.5, 1.0]) if bins == "edges" else bins
    rb = rill.tensor([-1.0, 0.0, 0.5, 1.0]) if bins == "edges" else bins
    t, r = torch.histogram(torch.tensor(data), tb, **tk), rill.histogram(rill.tensor(data), rb, **rk)
    np.testing.assert_allclose(r.hist.numpy(), t.hist.numpy(), rtol=1e-6)
    np.testing.assert_allclose(r.bin_edges.numpy(), t.bin_edges.numpy(), rtol=1e-6)
    t = torch.histogram(torch.tensor(data), 3, range=(0.0, 1.0))
    r = rill.histogram(rill.tensor(data), 3, range=(0.0, 1.0))
    np.testing.assert_allclose(r.hist.numpy(), t.hist.numpy())


def test_histogramdd_matches_torch():
    data = np.random.default_rng(3).standard_normal((40, 2))
    w = np.random.default_rng(4).random(40)
    for bins, tb, rb in [(None, [3, 2], [3, 2]), (None, [torch.tensor([-1.0, 0.0, 2.0], dtype=torch.float64),
                                                   torch.tensor([-2.0, 1.0], dtype=torch.float64)],
                                                  [rill.tensor([-1.0, 0.0, 2.0], dtype=rill.float64),
                                                   rill.tensor([-2.0, 1.0], dtype=rill.float64)])]:
        t = torch.histogramdd(torch.tensor(data), tb, weight=torch.tensor(w), density=True)
        r = rill.histogramdd(rill.tensor(data), rb, weight=rill.tensor(w), density=True)
        np.testing.assert_allclose(r.hist.numpy(), t.hist.numpy(), rtol=1e-10)
        for te, re in zip(t.bin_edges, r.bin_edges):
            np.testing.assert_allclose(re.numpy(), te.numpy(), rtol=1e-10)
    t = torch.histogramdd(torch.tensor(data), 4, range=[-1.0, 1.0, 0.0, 2.0])
    r = rill.histogramdd(rill.tensor(data), 4, range=[-1.0, 1.0, 0.0, 2.0])
    np.testing.assert_allclose(r.hist.numpy(), t.hist.numpy())
    with pytest.raises(RuntimeError, match="range"):
        rill.histogramdd(rill.tensor(data), 4, range=[0.0, 1.0])
    with pytest.raises(RuntimeError, match="dtype"):
        rill.histogramdd(rill.tensor(data), [rill.tensor([0.0, 1.0]), rill.tensor([0.0, 1.0])])


@pytest.mark.parametrize("size,stride,offset", [
    ((2, 2), (1, 2), 0), ((2, 2), (1, 2), 3), ((2, 2, 2, 2), (1, 1, 1, 1), 0), ((2, 1, 1, 2), (1, 7, 7, 1), 0),
    ((3,), (0,), 2), ((), (), 4), ((0, 3), (1, 1), 0), ((2, 2), (1, 2), None),
])
def test_as_strided_matches_torch(size, stride, offset):
    tx, rx = _pair((16,), requires_grad=True)
    ty, ry = tx.as_strided(size, stride, offset), rill.as_strided(rx, size, stride, offset)
    assert tuple(ry.shape) == tuple(ty.shape) and tuple(ry.stride()) == tuple(ty.stride())
    assert ry.storage_offset() == ty.storage_offset()
    np.testing.assert_allclose(ry.detach().numpy(), ty.detach().numpy())
    weight = np.arange(1, ty.numel() + 1, dtype=np.float64).reshape(ty.shape)
    (ty * torch.tensor(weight)).sum().backward()
    (ry * rill.tensor(weight)).sum().backward()
    np.testing.assert_allclose(rx.grad.numpy(), tx.grad.numpy())


def test_as_strided_of_a_view_and_in_place():
    base = rill.arange(12.0)
    view = base[2:8]
    np.testing.assert_allclose(view.as_strided((2, 2), (1, 3)).numpy(), [[2.0, 5.0], [3.0, 6.0]])
    np.testing.assert_allclose(view.as_strided((2,), (1,), 0).numpy(), [0.0, 1.0])  # storage_offset is absolute
    y = base.clone()
    assert y.as_strided_((3, 2), (2, 1), 1) is y and tuple(y.shape) == (3, 2)
    np.testing.assert_allclose(y.numpy(), np.arange(1.0, 7.0).reshape(3, 2))
    with pytest.raises(RuntimeError, match="storage"):
        base.as_strided((4,), (4,))
    with pytest.raises(RuntimeError, match="negative strides"):
        base.as_strided((2,), (-1,), 5)


def test_as_strided_copy_and_scatter():
    x = rill.arange(9.0).reshape(3, 3)
    c = rill.as_strided_copy(x, (2, 2), (1, 2), 1)
    np.testing.assert_allclose(c.numpy(), torch.as_strided_copy(torch.arange(9.0).reshape(3, 3), (2, 2), (1, 2), 1))
    assert c.is_contiguous()
    src = np.array([[10.0, 20.0], [30.0, 40.0]])
    r = rill.as_strided_scatter(x, rill.tensor(src), (2, 2), (1, 2), 1)
    t = torch.as_strided_scatter(torch.arange(9.0).reshape(3, 3), torch.tensor(src, dtype=torch.float32), (2, 2),
                                 (1, 2), 1)
    np.testing.assert_allclose(r.numpy(), t.numpy())
    np.testing.assert_allclose(x.numpy(), np.arange(9.0).reshape(3, 3))  # input untouched


def test_empty_strided_and_permuted():
    for size, stride in [((2, 3), (1, 2)), ((5, 5, 5), (2, 0, 1)), ((), ()), ((0, 4), (4, 1))]:
        r, t = rill.empty_strided(size, stride), torch.empty_strided(size, stride)
        assert tuple(r.shape) == tuple(t.shape) and tuple(r.stride()) == tuple(t.stride()) and r.dtype == rill.float32
        r = rill.ones(2).new_empty_strided(size, stride, dtype=rill.float64)
        assert tuple(r.stride()) == tuple(t.stride()) and r.dtype == rill.float64
    for layout in [(0, 1, 2), (0, 2, 1), (2, 1, 0)]:
        r, t = rill.empty_permuted((1, 3, 5), layout), torch.empty_permuted((1, 3, 5), layout)
        assert tuple(r.shape) == tuple(t.shape) and tuple(r.stride()) == tuple(t.stride())
    with pytest.raises(RuntimeError, match="permutation"):
        rill.empty_permuted((2, 3), (0, 0))


@pytest.mark.parametrize("size", [(2, 2), (3, 3), (6,), (0,), (1, 2, 3)])
def test_resize_matches_torch(size):
    t, r = torch.arange(6.0), rill.arange(6.0)
    t2, r2 = t.clone().resize_(size), r.clone().resize_(size)
    assert tuple(r2.shape) == tuple(t2.shape) and tuple(r2.stride()) == tuple(t2.stride()) and r2.is_contiguous()
    keep = min(6, r2.numel())
    np.testing.assert_allclose(r2.reshape(-1)[:keep].numpy(), t2.reshape(-1)[:keep].numpy())
    r3 = rill.arange(6.0)
    assert r3.resize_as_(rill.zeros(size)) is r3 and tuple(r3.shape) == tuple(size)


def test_resize_keeps_memory_when_shrinking_and_refuses_grad():
    x = rill.arange(6.0)
    y = x[:]
    y.resize_(2)
    y[0] = 9.0
    assert x[0].item() == 9.0
    with pytest.raises(RuntimeError, match="require grad"):
        rill.zeros(3, requires_grad=True).resize_(2)


def test_slice_and_chunk_cat_match_torch():
    tx, rx = _pair((6, 7, 5), requires_grad=True)
    for kw in [{}, {"dim": 1, "start": 1, "end": -2}, {"dim": 1, "start": 1, "end": -2, "step": 3},
               {"dim": 0, "start": -10, "end": -2, "step": 2}, {"dim": -1, "start": 2}]:
        t, r = torch.ops.aten.slice.Tensor(tx, **kw), rill.slice(rx, **kw)
        np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy())
    with pytest.raises(RuntimeError, match="step"):
        rill.slice(rx, 0, 0, 2, 0)
    for shapes, dim, chunks in [([(1, 2, 3), (1, 2, 3)], -1, 5), ([(3, 3, 2, 1), (1, 4, 2, 2), (2, 1, 3, 3)], 0, 2),
                                ([(2, 3, 3), (2, 3, 1, 2), (2, 3)], 1, 3)]:
        data = [np.random.default_rng(i).standard_normal(s) for i, s in enumerate(shapes)]
        t = torch._chunk_cat([torch.tensor(d) for d in data], dim, chunks)
        r = rill._chunk_cat([rill.tensor(d) for d in data], dim, chunks)
        assert tuple(r.shape) == tuple(t.shape)
        np.testing.assert_allclose(r.numpy(), t.numpy())
