"""torch's aten-level index and reduction functions that rill composes from its ops (rill/_compositions):
_unsafe_masked_index and _unsafe_masked_index_put_accumulate, _segment_reduce, hash_tensor, against PyTorch:
values, float64 gradients and the errors for bad input."""
import numpy as np
import pytest
import torch

import rill


def to_rill(t):
    if t is None:
        return None
    return rill.tensor(t.detach().numpy()).requires_grad_(t.requires_grad)


def close(r, t, tol=1e-12):
    np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


# --- _unsafe_masked_index, _unsafe_masked_index_put_accumulate ----------------------------------------------------

def masked_case(seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(4, 5, 6, generator=g, dtype=torch.float64)
    i = torch.randint(-4, 9, (3, 1), generator=g)  # out of range (and negative) where the mask is off
    k = torch.randint(0, 6, (1, 2), generator=g)
    mask = ((i >= 0) & (i < 4) & (k >= 0)).unsqueeze(-1)  # broadcast with x[i, :, k] of shape (3, 2, 5)
    return x, mask, [i, None, k]


def test_unsafe_masked_index_equals_torch_with_gradient():
    x, mask, indices = masked_case()
    tx = x.clone().requires_grad_()
    want = torch.ops.aten._unsafe_masked_index(tx, mask, indices, -1.5)
    rx = to_rill(tx)
    got = rill._unsafe_masked_index(rx, to_rill(mask), [to_rill(i) for i in indices], -1.5)
    assert tuple(got.shape) == tuple(want.shape) == (3, 2, 5)
    close(got, want)
    g = torch.randn(want.shape, dtype=torch.float64)
    (want * g).sum().backward()
    (got * to_rill(g)).sum().backward()
    close(rx.grad, tx.grad)
    ints = rill._unsafe_masked_index(rill.tensor(x.numpy()).long(), to_rill(mask), [to_rill(i) for i in indices], 7)
    np.testing.assert_array_equal(ints.numpy(), torch.ops.aten._unsafe_masked_index(x.long(), mask, indices, 7))


def test_unsafe_masked_index_put_accumulate_equals_torch_with_gradients():
    x, mask, indices = masked_case(1)
    values = torch.randn(3, 2, 5, dtype=torch.float64)
    tx, tv = x.clone().requires_grad_(), values.clone().requires_grad_()
    want = torch.ops.aten._unsafe_masked_index_put_accumulate(tx, mask, indices, tv)
    rx, rv = to_rill(tx), to_rill(tv)
    got = rill._unsafe_masked_index_put_accumulate(rx, to_rill(mask), [to_rill(i) for i in indices], rv)
    close(got, want)
    g = torch.randn(want.shape, dtype=torch.float64)
    (want * g).sum().backward()
    (got * to_rill(g)).sum().backward()
    close(rx.grad, tx.grad)
    close(rv.grad, tv.grad)


def test_unsafe_masked_index_bad_input():
    x = rill.zeros(3, 3)
    i = rill.tensor([0, 1])
    with pytest.raises(RuntimeError, match="bool"):
        rill._unsafe_masked_index(x, rill.tensor([1, 0]), [i], 0.0)
    with pytest.raises(RuntimeError, match="int64 or int32"):
        rill._unsafe_masked_index(x, rill.tensor([True, False]), [i.float()], 0.0)
    with pytest.raises(IndexError, match="too many indices"):
        rill._unsafe_masked_index_put_accumulate(x, rill.tensor(True), [i, i, i], rill.ones(2))
    empty = rill._unsafe_masked_index(rill.zeros(0, 5), rill.tensor(True), [rill.tensor([[1], [2]]), None], 2.0)
    assert tuple(empty.shape) == (2, 1, 5) and (empty.numpy() == 2).all()


# --- _segment_reduce ------------------------------------------------------------------------------------------------

REDUCTIONS = ["sum", "mean", "max", "min", "prod"]


def segment_both(data, reduce, weights=None, **kwargs):
    """_segment_reduce's result and data's gradient (of the result times weights) in torch and rill."""
    t = data.clone().requires_grad_()
    r = to_rill(t)
    rk = {k: to_rill(v) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    want, got = torch._segment_reduce(t, reduce, **kwargs), rill._segment_reduce(r, reduce, **rk)
    w = torch.ones(want.shape, dtype=data.dtype) if weights is None else weights
    (want * w).sum().backward()
    (got * to_rill(w)).sum().backward()
    return got, want, r.grad, t.grad


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("initial", [None, 3.0])
def test_segment_reduce_edge_segments_equal_torch(reduce, initial):
    """Empty segments, ties (with the initial value), zeros, NaN and a negative gradient on a tie."""
    data = torch.tensor([3.0, 3.0, 1.0, float("nan"), 2.0, -1.0, 0.0, 2.0, 0.0, 0.0, 5.0], dtype=torch.float64)
    lengths = torch.tensor([3, 0, 2, 1, 2, 3])
    weights = torch.tensor([-1.0, 2.0, 3.0, 1.0, 0.5, 2.0], dtype=torch.float64)
    for kwargs in (dict(lengths=lengths), dict(offsets=torch.cat([torch.zeros(1, dtype=torch.long),
                                                                   lengths.cumsum(0)]))):
        got, want, rg, tg = segment_both(data, reduce, weights, initial=initial, **kwargs)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12, equal_nan=True)
        np.testing.assert_allclose(rg.numpy(), tg.numpy(), rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_segment_reduce_along_an_inner_axis(reduce):
    data = torch.randn(2, 5, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    lengths = torch.tensor([[2, 3, 0], [1, 1, 3]])
    got, want, rg, tg = segment_both(data, reduce, lengths=lengths, axis=1)
    assert tuple(got.shape) == (2, 3, 3)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(rg.numpy(), tg.numpy(), rtol=1e-12)
    half = rill._segment_reduce(to_rill(data).detach().half(), reduce, lengths=to_rill(lengths), axis=1)
    assert half.dtype == rill.float16
    np.testing.assert_allclose(half.float().numpy(), want.detach().half().float().numpy(), rtol=2e-3, atol=2e-3)


def test_segment_reduce_bad_input():
    data = rill.arange(6.0)
    with pytest.raises(RuntimeError, match="sum to"):
        rill._segment_reduce(data, "sum", lengths=rill.tensor([2, 2]))
    with pytest.raises(RuntimeError, match="negative"):
        rill._segment_reduce(data, "sum", lengths=rill.tensor([-1, 7]))
    with pytest.raises(RuntimeError, match="int64 or int32"):
        rill._segment_reduce(data, "sum", lengths=rill.tensor([2.0, 4.0]))
    with pytest.raises(RuntimeError, match="Either lengths or offsets"):
        rill._segment_reduce(data, "sum")
    with pytest.raises(RuntimeError, match="reduce argument"):
        rill._segment_reduce(data, "avg", lengths=rill.tensor([6]))
    with pytest.raises(RuntimeError, match="non-decreasing"):
        rill._segment_reduce(data, "sum", offsets=rill.tensor([0, 4, 2, 6]))
    with pytest.raises(RuntimeError, match="last dimension"):
        rill._segment_reduce(data.reshape(2, 3), "sum", lengths=rill.tensor([1, 2]), axis=1)
    # unsafe skips the covering check; offsets may start past 0, as in PyTorch
    assert rill._segment_reduce(data, "sum", lengths=rill.tensor([2, 2]), unsafe=True).tolist() == [1.0, 5.0]
    assert rill._segment_reduce(data, "sum", offsets=rill.tensor([1, 2, 4])).tolist() == [1.0, 5.0]
