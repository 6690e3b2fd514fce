"""Views (they share storage with their base), clone/detach/contiguous, and basic indexing, against PyTorch."""
import math
import warnings

import pytest
import torch

import rill
from conftest import assert_close, raises_like


def pair(*shape, dtype="float32"):
    """The same arange-valued tensor in rill and torch."""
    n = 1
    for s in shape:
        n *= s
    return (rill.arange(n).to(getattr(rill, dtype)).reshape(shape),
            torch.arange(n).to(getattr(torch, dtype)).reshape(shape))


def assert_same_view(r, t):
    """Same shape, strides, storage offset, contiguity and values."""
    assert tuple(r.shape) == tuple(t.shape)
    assert r.stride() == t.stride()
    assert r.storage_offset() == t.storage_offset()
    assert r.is_contiguous() == t.is_contiguous()
    assert r.tolist() == t.tolist()




def assert_writes_through(base, view):
    """Writing every element of view changes base: they share memory."""
    assert view._shares_storage(base)
    before = base.tolist()
    view.fill_(-7)
    assert base.tolist() != before
    assert all(v == -7 for v in _flat(view.tolist()))


def _flat(x):
    if isinstance(x, list):
        return [v for e in x for v in _flat(e)]
    return [x]


# --- view-producing methods ----------------------------------------------------------------------------------------

VIEW_CASES = [
    ((2, 3, 4), lambda x: x.view(6, 4)),
    ((2, 3, 4), lambda x: x.view(-1)),
    ((2, 3, 4), lambda x: x.view(2, -1)),
    ((2, 3, 4), lambda x: x.view((4, -1, 3))),
    ((2, 3, 4), lambda x: x.view([24])),
    ((2, 3, 4), lambda x: x.view(1, 2, 1, 12, 1)),
    ((6,), lambda x: x.view(2, 3)),
    ((1,), lambda x: x.view(())),
    ((), lambda x: x.view(1, 1)),
    ((0, 3), lambda x: x.view(3, 0)),
    ((4, 6), lambda x: x.t().view(6, 2, 2)),
    ((4, 6), lambda x: x[:, 1:5].view(4, 2, 2)),
    ((2, 3, 4), lambda x: x.permute(1, 0, 2).view(3, 2, 2, 2)),
    ((1, 1, 4), lambda x: x.transpose(0, 2).view(4, 1, 1)),
    ((1, 1, 4), lambda x: x.transpose(0, 2).reshape(1, 4, 1)),
    ((1, 1, 4), lambda x: x.transpose(0, 2).flatten(0, 0)),
    ((3, 1, 2), lambda x: x.view(1, 6, 1)),
    ((0, 3), lambda x: x.t().view(3, 0)),
    ((0, 3), lambda x: x.t().view(-1, 3)),
    ((2, 3, 4), lambda x: x.reshape(3, 8)),
    ((2, 3, 4), lambda x: x.reshape(-1, 2)),
    ((2, 3, 4), lambda x: x.transpose(0, 2)),
    ((2, 3, 4), lambda x: x.transpose(-1, 0)),
    ((2, 3, 4), lambda x: x.transpose(1, 1)),
    ((2, 3, 4), lambda x: x.swapaxes(0, 1)),
    ((2, 3, 4), lambda x: x.permute(2, 0, 1)),
    ((2, 3, 4), lambda x: x.permute((1, 2, 0))),
    ((2, 3, 4), lambda x: x.permute([-1, -2, -3])),
    ((3, 4), lambda x: x.t()),
    ((4,), lambda x: x.t()),
    ((), lambda x: x.t()),
    ((3, 4), lambda x: x.T),
    ((3, 4), lambda x: x.mT),
    ((2, 3, 4), lambda x: x.mT),
    ((3, 1), lambda x: x.expand(3, 4)),
    ((3, 1), lambda x: x.expand(2, 3, 5)),
    ((3, 1), lambda x: x.expand(-1, 2)),
    ((3, 1), lambda x: x.expand((3, 1))),
    ((), lambda x: x.expand(2, 2)),
    ((1, 4), lambda x: x.expand([0, 4])),
    ((5, 6), lambda x: x.narrow(0, 1, 3)),
    ((5, 6), lambda x: x.narrow(1, -4, 2)),
    ((5, 6), lambda x: x.narrow(-1, 6, 0)),
    ((5, 6), lambda x: x.select(0, 2)),
    ((5, 6), lambda x: x.select(1, -1)),
    ((5,), lambda x: x.select(0, 4)),
    ((2, 3), lambda x: x.unsqueeze(0)),
    ((2, 3), lambda x: x.unsqueeze(2)),
    ((2, 3), lambda x: x.unsqueeze(-1)),
    ((2, 3), lambda x: x.unsqueeze(-3)),
    ((), lambda x: x.unsqueeze(0)),
    ((4, 6), lambda x: x.t().unsqueeze(1)),
    ((1, 3, 1, 2), lambda x: x.squeeze()),
    ((1, 3, 1, 2), lambda x: x.squeeze(0)),
    ((1, 3, 1, 2), lambda x: x.squeeze(1)),
    ((1, 3, 1, 2), lambda x: x.squeeze(-2)),
    ((1, 3, 1, 2), lambda x: x.squeeze((0, 2))),
    ((1, 3, 1, 2), lambda x: x.squeeze((0, 1, -2))),
    ((1,), lambda x: x.squeeze()),
    ((), lambda x: x.squeeze()),
    ((), lambda x: x.squeeze(0)),
    ((), lambda x: x.squeeze(-1)),
    ((2, 3, 4), lambda x: x.flatten()),
    ((2, 3, 4), lambda x: x.flatten(1)),
    ((2, 3, 4), lambda x: x.flatten(0, 1)),
    ((2, 3, 4), lambda x: x.flatten(start_dim=-2, end_dim=-1)),
    ((2, 3, 4), lambda x: x.flatten(1, 1)),
    ((), lambda x: x.flatten()),
    ((2, 3, 4), lambda x: x.permute(0, 2, 1).flatten(0, 1)),
    ((3, 4), lambda x: x.contiguous()),
    ((3, 4), lambda x: x.detach()),
    ((3, 4), lambda x: x[1:].T[::2]),
]


@pytest.mark.parametrize("shape,fn", VIEW_CASES)
def test_view_matches_torch_and_shares_storage(shape, fn):
    r, t = pair(*shape)
    rv, tv = fn(r), fn(t)
    assert_same_view(rv, tv)
    torch_shares = tv.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
    assert rv._shares_storage(r) == torch_shares
    if rv.numel() > 0 and torch_shares:
        assert_writes_through(r, rv)
        tv.fill_(-7)
        assert r.tolist() == t.tolist()


def test_functional_view_aliases():
    r, t = pair(2, 3, 4)
    assert_same_view(rill.reshape(r, (4, 6)), torch.reshape(t, (4, 6)))
    assert_same_view(rill.transpose(r, 0, 1), torch.transpose(t, 0, 1))
    assert_same_view(rill.permute(r, (2, 1, 0)), torch.permute(t, (2, 1, 0)))
    assert_same_view(rill.flatten(r, 1), torch.flatten(t, 1))
    assert_same_view(rill.squeeze(r[:1]), torch.squeeze(t[:1]))
    assert_same_view(rill.unsqueeze(r, 1), torch.unsqueeze(t, 1))
    assert_same_view(rill.narrow(r, 2, 1, 2), torch.narrow(t, 2, 1, 2))


def test_empty_tensor_is_always_contiguous():
    r, t = pair(0, 2, 3)
    assert r.permute(0, 2, 1).is_contiguous() == t.permute(0, 2, 1).is_contiguous()


def test_T_of_3d_matches_reversed_permute():
    r, t = pair(2, 3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch deprecates .T on tensors that aren't 2-D
        assert_same_view(r.T, t.T)


def test_expand_as():
    r, t = pair(3, 1)
    ro, to = rill.zeros(2, 3, 4), torch.zeros(2, 3, 4)
    assert_same_view(r.expand_as(ro), t.expand_as(to))


def test_reshape_copies_when_strides_forbid_a_view():
    r, t = pair(3, 4)
    rv, tv = r.t().reshape(12), t.t().reshape(12)
    assert rv.tolist() == tv.tolist() and rv.is_contiguous()
    assert not rv._shares_storage(r)
    rv.fill_(0)
    assert r.tolist() == t.tolist()


def test_reshape_views_when_possible():
    r, _ = pair(3, 4)
    assert r.reshape(2, 6)._shares_storage(r)
    assert r[:, :2].reshape(6).tolist() == [0, 1, 4, 5, 8, 9]


def test_view_error_when_strides_forbid():
    r, t = pair(3, 4)
    raises_like(lambda: t.t().view(12), lambda: r.t().view(12))
    raises_like(lambda: t[:, :2].view(6), lambda: r[:, :2].view(6))
    assert_same_view(r[:, ::2].view(6), t[:, ::2].view(6))  # strides (4, 2) merge: still a view


@pytest.mark.parametrize("fn", [
    lambda x: x.view(5, 5), lambda x: x.view(-1, -1), lambda x: x.view(-1, 5), lambda x: x.view(-2, 12),
    lambda x: x.reshape(7), lambda x: x.transpose(0, 3), lambda x: x.transpose(-4, 0), lambda x: x.permute(0,),
    lambda x: x.permute(0, 1, 1), lambda x: x.permute(0, 1, 3), lambda x: x.expand(3, 4, 5), lambda x: x.expand(4),
    lambda x: x.expand(2, 4) if x.ndim == 2 else x.expand(2, 4, 4), lambda x: x.narrow(0, 0, 5),
    lambda x: x.narrow(0, 4, 1), lambda x: x.narrow(2, 0, 1), lambda x: x.narrow(1, -5, 1),
    lambda x: x.narrow(0, 1, -1), lambda x: x.select(0, 3), lambda x: x.select(1, -5), lambda x: x.select(2, 0),
    lambda x: x.unsqueeze(3), lambda x: x.unsqueeze(-4), lambda x: x.squeeze(2), lambda x: x.squeeze((0, 5)),
    lambda x: x.flatten(1, 0), lambda x: x.flatten(0, 2), lambda x: x[0, 0].flatten(1),
    lambda x: x[0, 0].flatten(0, -2), lambda x: x.mT.mT.unsqueeze(0).t(),
])
def test_view_errors_match_torch(fn):
    r, t = pair(3, 4)
    raises_like(lambda: fn(t), lambda: fn(r))


def test_view_errors_on_small_ranks():
    r1, t1 = pair(4)
    raises_like(lambda: t1.mT, lambda: r1.mT)
    r3, t3 = pair(2, 3, 4)
    raises_like(lambda: t3.t(), lambda: r3.t())
    r0, t0 = pair()
    raises_like(lambda: t0.select(0, 0), lambda: r0.select(0, 0))
    raises_like(lambda: t0.narrow(0, 0, 1), lambda: r0.narrow(0, 0, 1))
    raises_like(lambda: t0.squeeze(1), lambda: r0.squeeze(1))
    raises_like(lambda: t0.transpose(0, 1), lambda: r0.transpose(0, 1))


def test_view_as_dtype_not_supported():
    with pytest.raises(NotImplementedError):
        rill.zeros(4).view(rill.int32)


# --- contiguous / clone / detach -----------------------------------------------------------------------------------

def test_contiguous_returns_self_when_contiguous_else_copy():
    r, _ = pair(3, 4)
    assert r.contiguous()._is_same(r)
    c = r.t().contiguous()
    assert c.is_contiguous() and c.stride() == (3, 1)
    assert not c._shares_storage(r)
    assert c.tolist() == torch.arange(12.).reshape(3, 4).t().tolist()


@pytest.mark.parametrize("fn", [lambda x: x, lambda x: x.t(), lambda x: x[::2], lambda x: x.expand(2, 3, 4)])
def test_clone_does_not_share(fn):
    r, t = pair(3, 4)
    rv, tv = fn(r), fn(t)
    c = rv.clone()
    assert c.tolist() == tv.clone().tolist() and c.shape == tv.shape
    assert not c._shares_storage(r)
    r.fill_(99)
    assert c.tolist() == tv.tolist()


def test_clone_function_and_dtype():
    r = rill.ones(3, dtype=rill.int16)
    c = rill.clone(r)
    assert c.dtype == rill.int16 and c.tolist() == [1, 1, 1]


def test_detach_shares_and_drops_requires_grad():
    r = rill.ones(3, requires_grad=True)
    d = r.detach()
    assert not d.requires_grad and r.requires_grad
    assert d._shares_storage(r)
    d.fill_(5)
    assert r.tolist() == [5.0, 5.0, 5.0]


def test_views_keep_base_alive():
    r = rill.arange(12).reshape(3, 4)
    v = r.t()[1]
    del r
    import gc
    gc.collect()
    assert v.tolist() == [1, 5, 9]


# --- indexing ------------------------------------------------------------------------------------------------------

E = Ellipsis
INDEX_CASES = [
    ((5,), 0), ((5,), -1), ((5,), 4), ((5,), slice(None)), ((5,), slice(1, 4)), ((5,), slice(None, None, 2)),
    ((5,), slice(-3, None)), ((5,), slice(10, 20)), ((5,), slice(-10, 2)), ((5,), slice(3, 1)),
    ((5,), slice(1, None, 3)), ((5,), None), ((5,), E), ((5,), (None, 2)), ((5,), (E, None)),
    ((5,), (slice(None, None, 4), None)), ((5,), ()),
    ((3, 4), 1), ((3, 4), -3), ((3, 4), (1, 2)), ((3, 4), (-1, -1)), ((3, 4), (slice(None), 0)),
    ((3, 4), (E, 1)), ((3, 4), (1, E)), ((3, 4), (E, None)), ((3, 4), (None, E, None)),
    ((3, 4), (slice(None, None, 2), slice(1, None, 2))), ((3, 4), (None, 1, None, slice(2, None))),
    ((3, 4), (slice(None), None, slice(None))), ((3, 4), (0, E, 0)),
    ((2, 3, 4), (0,)), ((2, 3, 4), (E, 2)), ((2, 3, 4), (1, E, slice(None, None, 3))),
    ((2, 3, 4), (slice(None), 1, slice(1, 3))), ((2, 3, 4), (-1, -2, -3)), ((2, 3, 4), (None, E, None, 0)),
    ((2, 3, 4), (E,)), ((2, 3, 4), (slice(0, 0),)), ((2, 3, 4), (slice(None), slice(None), slice(None), E)),
    ((), E), ((), None), ((), (None, None)), ((), (E, None)), ((), ()),
    ((0, 3), slice(None)), ((0, 3), (slice(None), 1)), ((2, 0), (1,)),
]


@pytest.mark.parametrize("shape,index", INDEX_CASES)
def test_getitem_matches_torch(shape, index):
    r, t = pair(*shape)
    rv, tv = r[index], t[index]
    assert isinstance(rv, rill.Tensor)
    assert_same_view(rv, tv)
    if rv.numel() > 0:
        assert_writes_through(r, rv)


@pytest.mark.parametrize("shape,index", [
    ((5,), 5), ((5,), -6), ((3, 4), (0, 4)), ((3, 4), (3,)), ((3, 4), (0, -5)), ((), 0), ((0,), 0),
    ((3, 4), (0, 0, 0)), ((3, 4), (E, 0, 0, 0)), ((), (0,)), ((5,), 1.5), ((5,), (1.0,)), ((5,), object()),
    ((5,), {}), ((), slice(None)), ((5,), "float tensor"),
])
def test_getitem_errors_match_torch(shape, index):
    r, t = pair(*shape)
    # (tensors are made here: a rill tensor in the parameter list would outlive the module at exit)
    r_index, t_index = (rill.tensor(1.0), torch.tensor(1.0)) if index == "float tensor" else (index, index)
    raises_like(lambda: t[t_index], lambda: r[r_index])


def test_getitem_errors_deliberately_unlike_torch():
    r, _ = pair(3, 4)
    # torch accepts several ellipses; rill follows numpy and the array API: one at most
    with pytest.raises(IndexError):
        r[..., ...]
    # torch tries to turn a str into an index tensor (TypeError) and an int past int64 fails with ValueError
    # (an overflow while unpacking); rill reports both as what they are, a bad index
    with pytest.raises(IndexError):
        r["a"]
    with pytest.raises(IndexError):
        r[2 ** 70]


def test_getitem_accepts_index_objects():
    import numpy as np
    r, t = pair(3, 4)
    assert_same_view(r[np.int64(1)], t[np.int64(1)])
    assert_same_view(r[np.int32(-1), 1:np.int64(3)], t[np.int32(-1), 1:np.int64(3)])
    # a 0-dim integer tensor is an int index (a view), as in torch
    assert_same_view(r[rill.tensor(2)], t[torch.tensor(2)])
    assert_same_view(r[rill.tensor(-1, dtype=rill.int32), rill.tensor(1)], t[torch.tensor(-1), torch.tensor(1)])
    assert_same_view(r[rill.tensor(1):], t[torch.tensor(1):])
    assert r[rill.tensor(0)]._shares_storage(r)


def test_getitem_negative_step():
    r, t = pair(5)
    raises_like(lambda: t[::-1], lambda: r[::-1])
    raises_like(lambda: t[::0], lambda: r[::0])


@pytest.mark.parametrize("index", [
    lambda m: m.tensor([0, 2]), lambda m: [0, 2], lambda m: m.tensor([True, False, True]), lambda m: True,
    lambda m: (slice(None), m.tensor([1])), lambda m: (0, [1, 2]), lambda m: m.zeros(3, 4, dtype=m.bool),
    lambda m: m.tensor(True), lambda m: m.tensor([1]), lambda m: m.tensor(1, dtype=m.uint8),
])
@pytest.mark.filterwarnings("ignore:indexing with dtype torch.uint8 is now deprecated")
def test_advanced_indexing_matches_torch(index):
    # Advanced indexing (tensors, lists, bools) gives torch's values, for reads and writes.
    # (A 0-dim uint8 tensor is a mask in torch, not an int: it must not be taken for one.)
    r, t = pair(3, 4)
    assert_close(r[index(rill)], t[index(torch)])
    r[index(rill)] = -1.0
    t[index(torch)] = -1.0
    assert_close(r, t)


# --- setitem -------------------------------------------------------------------------------------------------------

SETITEM_CASES = [
    ((5,), 0, 9.0), ((5,), -1, -2), ((5,), slice(1, 4), 3.5), ((5,), slice(None, None, 2), True),
    ((3, 4), 1, 7), ((3, 4), (slice(None), 2), 1.5), ((3, 4), (E, 0), 8), ((3, 4), (slice(1, None), slice(None, 2)), 0),
    ((2, 3, 4), (1, E), 5), ((2, 3, 4), (None, 0, 1), 6), ((), E, 3.0), ((), (), 4.0), ((3, 4), E, 2.0),
]


@pytest.mark.parametrize("shape,index,value", SETITEM_CASES)
def test_setitem_scalar(shape, index, value):
    r, t = pair(*shape)
    r[index] = value
    t[index] = value
    assert r.tolist() == t.tolist()


@pytest.mark.parametrize("shape,index,vshape", [
    ((3, 4), 1, (4,)), ((3, 4), 1, (1,)), ((3, 4), 1, ()), ((3, 4), (slice(None), 1), (3,)),
    ((3, 4), (slice(None), slice(1, 3)), (3, 1)), ((3, 4), (slice(None), slice(1, 3)), (2,)),
    ((3, 4), E, (4,)), ((2, 3, 4), (E, slice(None, None, 2)), (3, 2)), ((2, 3, 4), (0,), (1, 3, 4)),
])
def test_setitem_tensor_broadcasts(shape, index, vshape):
    r, t = pair(*shape)
    rv, tv = pair(*vshape)
    rv, tv = rv + 100, tv + 100
    r[index] = rv
    t[index] = tv
    assert r.tolist() == t.tolist()


@pytest.mark.parametrize("src_dtype,dst_dtype", [("int64", "float32"), ("float64", "int32"), ("bool", "float32"),
                                                 ("float32", "bfloat16")])
def test_setitem_tensor_converts_dtype(src_dtype, dst_dtype):
    r, t = pair(2, 3, dtype=dst_dtype)
    rv, tv = pair(3, dtype=src_dtype)
    r[1] = rv
    t[1] = tv
    assert r.dtype == getattr(rill, dst_dtype)
    assert r.tolist() == t.tolist()


def test_setitem_through_views():
    r, t = pair(4, 6)
    for m, x in ((rill, r), (torch, t)):
        v = x.t()[1:5:2]
        v[0] = -1
        v[:, ::3] = m.tensor([7.0, 8.0])
        w = x[2]
        w[...] = 3
        x.T[0, 0] = 42
    assert r.tolist() == t.tolist()


def test_setitem_errors():
    r, t = pair(3, 4)

    def bad_shape(m, x):
        x[0] = m.zeros(5)
    raises_like(lambda: bad_shape(torch, t), lambda: bad_shape(rill, r))

    def bad_index(m, x):
        x[3] = 1
    raises_like(lambda: bad_index(torch, t), lambda: bad_index(rill, r))

    def bad_value(m, x):
        x[0] = "a"
    raises_like(lambda: bad_value(torch, t), lambda: bad_value(rill, r))


# --- random chains of views ----------------------------------------------------------------------------------------

def _random_view(rng, shape):
    """One random view op valid for shape, as a function usable on rill and torch tensors alike."""
    nd = len(shape)
    choices = ["unsqueeze", "reshape", "view"]
    if nd >= 1:
        choices += ["slice", "select", "narrow", "flatten", "squeeze"]
    if nd >= 2:
        choices += ["transpose", "permute"]
    if 1 in shape:
        choices.append("expand")
    kind = rng.choice(choices)
    if kind == "unsqueeze":
        d = rng.randint(-nd - 1, nd)
        return lambda y: y.unsqueeze(d)
    if kind in ("reshape", "view"):
        n = math.prod(shape)
        a = rng.choice([f for f in (1, 2, 3, 4, 6) if n % f == 0] or [1]) if n else 0
        new = (a, -1) if n else (0, 2)
        return (lambda y: y.view(new)) if kind == "view" else (lambda y: y.reshape(new))
    d = rng.randrange(nd) if nd else 0
    if kind == "slice":
        start, step = rng.randint(-shape[d] - 1, shape[d]), rng.randint(1, 3)
        idx = (slice(None),) * d + (slice(start, None, step),)
        return lambda y: y[idx]
    if kind == "select" and shape[d] > 0:
        i = rng.randrange(-shape[d], shape[d])
        return lambda y: y.select(d, i)
    if kind == "narrow" and shape[d] > 0:
        start = rng.randrange(shape[d])
        length = rng.randint(0, shape[d] - start)
        return lambda y: y.narrow(d, start, length)
    if kind == "flatten":
        e = rng.randrange(d, nd)
        return lambda y: y.flatten(d, e)
    if kind == "squeeze":
        return lambda y: y.squeeze(d)
    if kind == "transpose":
        e = rng.randrange(nd)
        return lambda y: y.transpose(d, e)
    if kind == "permute":
        perm = list(range(nd))
        rng.shuffle(perm)
        return lambda y: y.permute(perm)
    if kind == "expand":
        new = tuple(rng.randint(0, 3) if s == 1 else s for s in shape)
        return lambda y: y.expand(new)
    return lambda y: y


@pytest.mark.parametrize("seed", range(150))
def test_random_view_chains_match_torch(seed):
    import random
    rng = random.Random(seed)
    r, t = pair(*rng.choice([(2, 3, 4), (4, 6), (1, 5, 1, 3), (24,), (3, 1, 4), (2, 2, 2, 3)]))
    rv, tv = r, t
    for _ in range(6):
        f = _random_view(rng, tuple(tv.shape))
        try:
            tv_next = f(tv)
        except RuntimeError:  # a view the strides don't allow: rill must refuse it too
            with pytest.raises(RuntimeError):
                f(rv)
            continue
        rv, tv = f(rv), tv_next
        assert tuple(rv.shape) == tuple(tv.shape)
        assert rv.stride() == tv.stride() and rv.storage_offset() == tv.storage_offset()
        if tv.numel():  # (empty tensors: see test_empty_tensor_is_always_contiguous)
            assert rv.is_contiguous() == tv.is_contiguous()
        assert rv.tolist() == tv.tolist()
        assert rv._shares_storage(r) == (tv.untyped_storage().data_ptr() == t.untyped_storage().data_ptr())
    if rv.numel() and 0 not in rv.stride():
        rv.fill_(-1)
        tv.fill_(-1)
        assert r.tolist() == t.tolist()
