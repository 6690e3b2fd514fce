"""Shape, indexing and sorting ops beyond the parity table: errors (PyTorch's exception types), in-place
semantics, duplicate indices, kernel errors found inside the VM, large inputs on the parallel paths, and
the sync-point ops (nonzero, masked indexing, unique)."""
import numpy as np
import pytest
import torch

import rill
from conftest import assert_close


def pair(data, dtype=None):
    a = np.asarray(data)
    t = torch.tensor(a) if dtype is None else torch.tensor(a, dtype=getattr(torch, dtype))
    r = rill.tensor(a) if dtype is None else rill.tensor(a, dtype=getattr(rill, dtype))
    return r, t


def arange2(n, m):
    return pair(np.arange(n * m, dtype=np.float32).reshape(n, m))


# --- errors ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn,exc", [
    (lambda m: m.cat([]), ValueError),
    (lambda m: m.cat([m.zeros(2, 3), m.zeros(3, 3)], 1), RuntimeError),
    (lambda m: m.cat([m.zeros(2, 3), m.zeros(2)], 0), RuntimeError),
    (lambda m: m.cat([m.zeros(()), m.zeros(())]), RuntimeError),
    (lambda m: m.cat([m.zeros(2, 3)], 2), IndexError),
    (lambda m: m.stack([m.zeros(2), m.zeros(3)]), RuntimeError),
    (lambda m: m.stack([]), RuntimeError),
    (lambda m: m.zeros(3, 4).split([1, 1], 0), RuntimeError),
    (lambda m: m.zeros(3, 4).chunk(0), RuntimeError),
    (lambda m: m.zeros(3, 4).repeat(2), RuntimeError),
    (lambda m: m.zeros(3, 4).flip(0, 0), RuntimeError),
    (lambda m: m.roll(m.zeros(3, 4), (1, 2), 0), RuntimeError),
    (lambda m: m.tril(m.zeros(3)), RuntimeError),
    (lambda m: m.diag(m.zeros(2, 2, 2)), RuntimeError),
    (lambda m: m.movedim(m.zeros(2, 3), (0, 1), (0,)), RuntimeError),
    (lambda m: m.zeros(3, 4)[m.tensor([0.5])], IndexError),
    (lambda m: m.zeros(3, 4)[[0], [0], [0]], IndexError),
    (lambda m: m.zeros(3, 4)[m.tensor([True, False])], IndexError),
    (lambda m: m.zeros(3, 4)[m.tensor([0, 1]), m.tensor([0, 1, 2])], IndexError),
    (lambda m: m.zeros(3, 4)["a"], (IndexError, TypeError)),
    (lambda m: m.index_select(m.zeros(3), 0, m.tensor([[0]])), IndexError),
    (lambda m: m.gather(m.zeros(3, 4), 1, m.tensor([[0]]).short()), RuntimeError),
    (lambda m: m.zeros(3)[m.tensor([0])].__setitem__(m.tensor([0]), m.ones(1, dtype=m.float64)), RuntimeError),
    (lambda m: m.gather(m.zeros(3, 4), 1, m.tensor([0])), RuntimeError),
    (lambda m: m.gather(m.zeros(3, 4), 1, m.zeros(4, 1, dtype=m.int64)), RuntimeError),
    (lambda m: m.zeros(3, 4).scatter(1, m.tensor([[0]]), m.zeros(1, 1, dtype=m.float64)), RuntimeError),
    (lambda m: m.zeros(3, 4).masked_fill(m.ones(3, 4), 1.0), RuntimeError),
    (lambda m: m.zeros(3, 4).masked_fill(m.ones(3, 4).bool(), m.ones(2)), RuntimeError),
    (lambda m: m.masked_select(m.zeros(3), m.ones(3)), RuntimeError),
    (lambda m: m.take_along_dim(m.zeros(3, 4), m.tensor([0]), 1), RuntimeError),
    (lambda m: m.topk(m.zeros(3), 4), RuntimeError),
    (lambda m: m.kthvalue(m.zeros(3), 4), RuntimeError),
    (lambda m: m.sort(m.zeros(3), 1), IndexError),
])
def test_errors_match_pytorch(fn, exc):
    with pytest.raises(exc):
        fn(torch)
    with pytest.raises(exc):
        r = fn(rill)
        rill.synchronize()
        r.tolist() if isinstance(r, rill.Tensor) else None


def test_error_messages_say_what_to_do():
    with pytest.raises(RuntimeError, match=r"\[cat\] Sizes of tensors must match"):
        rill.cat([rill.zeros(2, 3), rill.zeros(3, 3)], 1)
    with pytest.raises(IndexError, match="does not match the shape of the indexed tensor"):
        rill.zeros(3, 4)[rill.tensor([True, False])]
    with pytest.raises(RuntimeError, match=r"\.long\(\)"):
        rill.gather(rill.zeros(3, 4), 1, rill.tensor([[0]]).short())
    with pytest.raises(RuntimeError, match="dtypes match"):
        rill.zeros(3)[rill.tensor([0])] = rill.ones(1, dtype=rill.float64)


@pytest.mark.parametrize("fn,exc", [
    (lambda m: m.zeros(3, 4)[m.tensor([0, 5])], IndexError),
    (lambda m: m.zeros(3, 4)[:, m.tensor([-5])], IndexError),
    (lambda m: m.gather(m.zeros(3, 4), 1, m.tensor([[4]])), RuntimeError),
    (lambda m: m.zeros(3, 4).scatter(0, m.tensor([[3]]), 1.0), RuntimeError),
    (lambda m: m.zeros(3, 4).index_add(0, m.tensor([7]), m.ones(1, 4)), (IndexError, RuntimeError)),
])
def test_out_of_range_indices_raise_at_the_next_sync_point(fn, exc):
    with pytest.raises(exc):
        fn(torch)
    y = fn(rill)  # the kernel fails inside the VM: the result is poisoned
    with pytest.raises(exc, match="out of bounds"):
        y.tolist()
    assert rill.ones(2).sum().item() == 2.0  # the VM keeps working


def test_out_of_range_setitem_poisons_the_destination():
    x = rill.zeros(3)
    x[rill.tensor([3])] = 1.0
    with pytest.raises(IndexError, match="out of bounds"):
        x.tolist()


# --- semantics ----------------------------------------------------------------------------------

def test_setitem_with_duplicate_indices_does_not_accumulate():
    r, t = pair(np.zeros(4, dtype=np.float32))
    for x in (r, t):
        x[[0, 0, 1]] += 1
    assert_close(r, t)
    r, t = pair(np.zeros(4, dtype=np.float32))
    r.index_put_((rill.tensor([0, 0, 1]),), rill.tensor(1.0), accumulate=True)
    t.index_put_((torch.tensor([0, 0, 1]),), torch.tensor(1.0), accumulate=True)
    assert_close(r, t)


def test_getitem_gradient_accumulates_duplicates():
    x = rill.ones(3, requires_grad=True)
    x[[0, 0, 2, 0]].sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 1.0]


def test_index_select_and_gather_gradients_accumulate():
    x = rill.ones(3, 2, requires_grad=True)
    rill.index_select(x, 0, rill.tensor([1, 1])).sum().backward()
    assert x.grad.tolist() == [[0, 0], [2, 2], [0, 0]]
    x = rill.ones(2, 3, requires_grad=True)
    x.gather(1, rill.tensor([[0, 0], [2, 2]])).sum().backward()
    assert x.grad.tolist() == [[2, 0, 0], [0, 0, 2]]


@pytest.mark.parametrize("index", [
    (slice(None), [0, 2], [1, 3]), ([0, 1], slice(None), [1, 3]), (0, slice(None), [1, 2]),
    (Ellipsis, [1]), (None, [0, 1]), ([[0], [1]], [1, 2]), (slice(1, None), slice(None, None, 2), [0]),
    ([True, False],), (True,), (False,), (1, [True, False, True]),
])
def test_getitem_and_setitem_rules(index):
    r, t = pair(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert_close(r[index], t[index])
    value = float(-1)
    r2, t2 = r.clone(), t.clone()
    r2[index] = value
    t2[index] = value
    assert_close(r2, t2)
    shape = tuple(t[index].shape)
    v = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) + 100
    r2[index] = rill.tensor(v)
    t2[index] = torch.tensor(v)
    assert_close(r2, t2)


def test_setitem_broadcasts_values_and_converts_dtype():
    r, t = pair(np.zeros((3, 4), dtype=np.int64))
    for x, m in ((r, rill), (t, torch)):
        x[[0, 2]] = m.tensor([1, 2, 3, 4])[None]
        x[[1]] = 7.9
        x[x > 3] = 9
    assert_close(r, t)


def test_mask_getitem_is_a_sync_point_and_uses_the_producers_value():
    x = rill.arange(10.0)
    y = x * 2 - 5  # still in flight, perhaps
    assert y[y > 0].tolist() == [1.0, 3.0, 5.0, 7.0, 9.0, 11.0, 13.0]
    assert rill.nonzero(y > 0).shape == (7, 1)


def test_cat_type_promotion_and_empty():
    a = rill.tensor([1, 2], dtype=rill.int32)
    b = rill.tensor([True])
    c = rill.tensor([0.5], dtype=rill.float16)
    assert rill.cat([a, b]).dtype == rill.int32
    assert rill.cat([a, c]).dtype == rill.float16
    assert rill.cat([rill.zeros(0), rill.zeros(0)]).shape == (0,)
    assert rill.cat([rill.zeros(2, 0), rill.zeros(2, 3)], 1).shape == (2, 3)


def test_split_chunk_unflatten_shapes():
    for m in (rill, torch):
        x = m.zeros(5, 6)
        assert [tuple(p.shape) for p in x.split(2)] == [(2, 6), (2, 6), (1, 6)]
        assert [tuple(p.shape) for p in m.chunk(x, 4, 1)] == [(5, 2), (5, 2), (5, 2)]
        assert [tuple(p.shape) for p in m.chunk(m.zeros(0), 3)] == [(0,), (0,), (0,)]
        assert tuple(x.unflatten(1, (3, -1)).shape) == (5, 3, 2)
    assert rill.zeros(5, 6).split(2)[0]._shares_storage(rill.zeros(1)) is False


def test_views_stay_views():
    x = rill.zeros(4, 6)
    assert x.split(2)[1]._shares_storage(x)
    assert x.chunk(3, 1)[2]._shares_storage(x)
    assert x.movedim(0, 1)._shares_storage(x)
    assert x.diagonal()._shares_storage(x)
    assert x.unflatten(1, (2, 3))._shares_storage(x)
    assert not x.flip(0)._shares_storage(x)
    assert not x.repeat(1, 1)._shares_storage(x)
    assert not x.roll(0, 0)._shares_storage(x)


def test_inplace_on_leaf_requiring_grad_raises():
    x = rill.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        x[[0]] = 1.0
    with pytest.raises(RuntimeError, match="leaf"):
        x.masked_fill_(x > 0, 1.0)


def test_setitem_on_view_flows_gradient_to_base():
    a = rill.ones(3, 4, requires_grad=True)
    b = rill.full((2,), 2.0, requires_grad=True)
    ta = torch.ones(3, 4, requires_grad=True)
    tb = torch.full((2,), 2.0, requires_grad=True)
    for x, v in ((a, b), (ta, tb)):
        h = x * 3
        h[1:][:, [0, 2]] = v
        (h * h).sum().backward()
    assert_close(a.grad, ta.grad)
    assert_close(b.grad, tb.grad)


def test_sort_nan_and_stability():
    data = [3.0, float("nan"), 1.0, 3.0, -float("inf"), float("nan"), 1.0]
    r, t = pair(np.array(data, dtype=np.float32))
    for desc in (False, True):
        rv, ri = r.sort(descending=desc, stable=True)
        tv, ti = t.sort(descending=desc, stable=True)
        assert_close(rv, tv)
        assert_close(ri, ti)


def test_sort_result_is_a_named_tuple():
    s = rill.sort(rill.tensor([2.0, 1.0]))
    assert s.values.tolist() == [1.0, 2.0] and s.indices.tolist() == [1, 0]
    v, i = rill.topk(rill.tensor([2.0, 1.0, 3.0]), 2)
    assert v.tolist() == [3.0, 2.0] and i.tolist() == [2, 0]
    k = rill.kthvalue(rill.tensor([2.0, 1.0, 3.0]), 2)
    assert k.values.item() == 2.0 and k.indices.item() == 0
    d = rill.tensor([[2.0, 1.0], [0.0, 3.0]]).sort(0, True)  # dim and descending positionally, as PyTorch's
    assert d.values.tolist() == [[2.0, 3.0], [0.0, 1.0]] and d.indices.tolist() == [[0, 1], [1, 0]]
    for result, name in ((s, "sort"), (rill.topk(rill.tensor([1.0]), 1), "topk"), (k, "kthvalue")):
        assert type(result) is getattr(rill.return_types, name) and type(result).__name__ == name


def test_unique_variants():
    data = np.array([[3, 1, 2], [1, 3, 3]])
    r, t = pair(data)
    for kw in ({}, {"return_inverse": True}, {"return_counts": True},
               {"return_inverse": True, "return_counts": True}):
        ro, to = rill.unique(r, **kw), torch.unique(t, **kw)
        if isinstance(to, tuple):
            for a, b in zip(ro, to):
                assert_close(a, b)
        else:
            assert_close(ro, to)
    assert sorted(r.unique(sorted=False).tolist()) == [1, 2, 3]


def test_unique_dim():
    # op_cases has the parity rows; here NaN slices (never equal, not even to themselves), -0.0 == 0.0, and
    # PyTorch's errors for empty and 0-d tensors.
    data = np.array([[1.0, 2, np.nan], [1, 2, np.nan], [0, 5, 1], [0, 5, 1], [-0.0, 5, 1]])
    r, t = pair(data)
    for a, b in zip(rill.unique(r, dim=0, return_inverse=True, return_counts=True),
                    torch.unique(t, dim=0, return_inverse=True, return_counts=True)):
        assert_close(a, b)
    for shape, dim in [((2, 0), 0), ((0, 0), 0)]:
        r, t = pair(np.zeros(shape))
        with pytest.raises(RuntimeError) as t_err:
            torch.unique(t, dim=dim)
        with pytest.raises(RuntimeError, match=r"\[unique\] ") as r_err:
            rill.unique(r, dim=dim)
        assert str(t_err.value).strip() in str(r_err.value)
    with pytest.raises(IndexError, match=r"\[unique\] Dimension specified as 0"):
        rill.unique(rill.tensor(3.0), dim=0)
    with pytest.raises(IndexError, match=r"\[unique\] Dimension out of range"):
        rill.unique(rill.ones(2, 3), dim=2)


def test_unique_nan():
    r, t = pair(np.array([3.0, np.nan, 1.0, np.nan, 3.0], dtype=np.float32))
    for a, b in zip(rill.unique(r, return_inverse=True, return_counts=True),
                    torch.unique(t, return_inverse=True, return_counts=True)):
        assert_close(a, b)


def test_where_one_arg_and_nonzero_tuple():
    r, t = pair(np.array([[0, 1], [2, 0]]))
    for a, b in zip(rill.where(r), torch.where(t)):
        assert_close(a, b)
    for a, b in zip(r.nonzero(as_tuple=True), t.nonzero(as_tuple=True)):
        assert_close(a, b)
    for a, b in zip(rill.nonzero(rill.tensor(5), as_tuple=True), torch.nonzero(torch.tensor(5), as_tuple=True)):
        assert_close(a, b)


def test_scatter_multiply_has_no_gradient():
    x = rill.ones(2, 3, requires_grad=True)
    with pytest.raises(NotImplementedError):
        x.scatter(1, rill.tensor([[0], [1]]), 2.0, reduce="multiply")
    with rill.no_grad():
        y = x.scatter(1, rill.tensor([[0], [1]]), 2.0, reduce="multiply")
    assert y.tolist() == [[2, 1, 1], [1, 2, 1]]


def test_index_put_module_function_and_methods():
    r, t = arange2(3, 4)
    idx = ([0, 2], [1, 1])
    out_r = rill.index_put(r, tuple(rill.tensor(i) for i in idx), rill.tensor([5.0, 6.0]))
    out_t = torch.index_put(t, tuple(torch.tensor(i) for i in idx), torch.tensor([5.0, 6.0]))
    assert_close(out_r, out_t)
    assert_close(r, t)  # unchanged
    assert r.index_put_((rill.tensor([1]),), rill.tensor(0.0)) is r


# --- large inputs: the parallel paths -----------------------------------------------------------

def test_large_gather_scatter_sort_index_match_torch():
    g = np.random.default_rng(0)
    a = g.standard_normal((300, 700)).astype(np.float32)
    idx = g.integers(0, 700, size=(300, 500))
    r, t = pair(a)
    ri, ti = pair(idx)
    assert_close(r.gather(1, ri), t.gather(1, ti))
    assert_close(r.gather(1, ri.int()), t.gather(1, ti.int()))
    src_r, src_t = pair(g.standard_normal((300, 500)).astype(np.float32))
    assert_close(r.scatter_add(1, ri, src_r), t.scatter_add(1, ti, src_t), rtol=1e-5, atol=1e-5)
    rv, rix = r.sort(dim=1, stable=True)
    tv, tix = t.sort(dim=1, stable=True)
    assert_close(rv, tv)
    assert_close(rix, tix)
    assert_close(r.sort(0, descending=True).values, t.sort(0, descending=True).values)
    rows = g.integers(0, 300, size=5000)
    assert_close(r[rill.tensor(rows)], t[torch.tensor(rows)])
    assert_close(r.t()[rill.tensor(rows[:600])],
                 t.t()[torch.tensor(rows[:600])])
    assert_close(rill.cat([r, r.t()[:300]], 1), torch.cat([t, t.t()[:300]], 1))
    assert_close(r.tril(3), t.tril(3))
    assert_close(r.topk(5, 0).values, t.topk(5, 0).values)


def test_int_index_past_int64_with_advanced_index_machinery_raises():
    # Regression: an out-of-range int index used to crash (a shadowed loop variable read the items list).
    r = rill.zeros(3, 4)
    with pytest.raises(IndexError):
        r[2 ** 70]
    with pytest.raises(IndexError):
        r[[0], 2 ** 70]
