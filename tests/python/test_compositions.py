"""The compositions (python/rill/_compositions.py and rill.nn.functional's): errors for bad input and the
keyword names and defaults the OpInfo samples do not exercise, checked against PyTorch."""
import numpy as np
import pytest
import torch

import rill
import rill.nn.functional as F


def r(t):
    return rill.tensor(t.numpy().copy())


def same(a, t):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), t.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_split_family_errors():
    x = rill.arange(6)
    with pytest.raises(RuntimeError, match="divisible"):
        rill.hsplit(x, 4)
    with pytest.raises(RuntimeError, match="at least 2 dimension"):
        rill.vsplit(x, 2)
    with pytest.raises(RuntimeError, match="larger than 0"):
        rill.tensor_split(x, 0)
    assert [t.tolist() for t in rill.tensor_split(x, [1, 4])] == [[0], [1, 2, 3], [4, 5]]
    assert [t.tolist() for t in x.tensor_split(4)] == [[0, 1], [2, 3], [4], [5]]


def test_broadcast_shapes_and_mismatch():
    assert rill.broadcast_shapes((2, 1), (3,), 1) == torch.broadcast_shapes((2, 1), (3,), 1)
    with pytest.raises(RuntimeError, match="Shape mismatch"):
        rill.broadcast_shapes((2,), (3,))


def test_meshgrid_indexing():
    a, b = torch.arange(3), torch.arange(2)
    for indexing in ("ij", "xy"):
        for got, want in zip(rill.meshgrid(r(a), r(b), indexing=indexing), torch.meshgrid(a, b, indexing=indexing)):
            assert got.tolist() == want.tolist()
    with pytest.raises(ValueError, match="indexing"):
        rill.meshgrid(r(a), indexing="yx")


def test_products_check_shapes_and_dtypes():
    with pytest.raises(RuntimeError, match="same dtype"):
        rill.dot(rill.ones(3), rill.ones(3, dtype=rill.float64))
    with pytest.raises(RuntimeError, match="1-D"):
        rill.mv(rill.ones(2, 3), rill.ones(3, 1))
    with pytest.raises(RuntimeError, match="contracted dimensions"):
        rill.tensordot(rill.ones(2, 3), rill.ones(4, 2), dims=1)
    m, a, b = torch.randn(2, 4), torch.randn(2, 3), torch.randn(3, 4)
    same(rill.addmm(r(m), r(a), r(b), beta=0.5, alpha=2), torch.addmm(m, a, b, beta=0.5, alpha=2))
    nan = torch.full((2, 4), float("nan"))
    assert not rill.addmm(r(nan), r(a), r(b), beta=0).isnan().any().item()  # beta=0 ignores input


def test_rot90_and_diag_embed_errors():
    with pytest.raises(RuntimeError, match="rotation dims"):
        rill.rot90(rill.ones(2, 2), 1, [0, 0])
    with pytest.raises(RuntimeError, match="total rotation dims"):
        rill.rot90(rill.ones(2, 2), 1, [0])
    with pytest.raises(RuntimeError, match="identical"):
        rill.diag_embed(rill.ones(3), 0, 0, 0)


def test_isclose_keywords_and_allclose():
    a = torch.tensor([1.0, float("nan"), float("inf"), 2.0])
    b = torch.tensor([1.0 + 1e-6, float("nan"), float("inf"), 2.1])
    assert rill.isclose(r(a), r(b), equal_nan=True).tolist() == torch.isclose(a, b, equal_nan=True).tolist()
    assert rill.isclose(r(a), r(b), rtol=0.1).tolist() == torch.isclose(a, b, rtol=0.1).tolist()
    assert rill.allclose(r(a[:1]), r(b[:1])) is True
    assert rill.equal(rill.ones(2), rill.ones(2)) and not rill.equal(rill.ones(2), rill.ones(3))


def test_searchsorted_side_and_scalar():
    seq = torch.tensor([1.0, 2.0, 2.0, 5.0])
    assert rill.searchsorted(r(seq), 2.0).item() == torch.searchsorted(seq, 2.0).item()
    assert rill.searchsorted(r(seq), r(torch.tensor([2.0])), side="right").tolist() == [3]
    with pytest.raises(RuntimeError, match="opposites"):
        rill.searchsorted(r(seq), 2.0, right=True, side="left")
    assert rill.searchsorted(r(seq), 2.0, out_int32=True).dtype == rill.int32


def test_unique_consecutive_flags():
    x = torch.tensor([1, 1, 2, 2, 3, 1, 1, 2])
    got = rill.unique_consecutive(r(x), return_inverse=True, return_counts=True)
    want = torch.unique_consecutive(x, return_inverse=True, return_counts=True)
    assert [g.tolist() for g in got] == [w.tolist() for w in want]


def test_cummax_values_indices_and_grad():
    x = torch.tensor([1.0, 3.0, 2.0, 3.0, 0.0], dtype=torch.float64, requires_grad=True)
    rx = rill.tensor(x.detach().numpy().copy(), requires_grad=True)
    got, want = rill.cummax(rx, 0), torch.cummax(x, 0)
    assert got.indices.tolist() == want.indices.tolist()
    got.values.sum().backward()
    want.values.sum().backward()
    same(rx.grad, x.grad)


def test_inplace_methods_refuse_a_wider_result():
    x = rill.arange(3)
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.deg2rad_()
    y = rill.ones(3)
    y.deg2rad_()
    same(y, torch.ones(3).deg2rad())


def test_functional_errors():
    with pytest.raises(RuntimeError, match="even"):
        F.glu(rill.ones(3))
    with pytest.raises(RuntimeError, match="divisible"):
        F.pixel_shuffle(rill.ones(1, 3, 2, 2), 2)
    with pytest.raises(RuntimeError, match="divisible by groups"):
        F.channel_shuffle(rill.ones(1, 3, 2), 2)
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(rill.ones(2), rill.ones(2), -rill.ones(2))
    with pytest.raises(RuntimeError, match="lambda"):
        F.softshrink(rill.ones(2), -1.0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout2d(rill.ones(1, 2, 2, 2), 1.5)


def test_functional_keywords_match_torch():
    x, y = torch.randn(4, 5), torch.randn(4, 5)
    same(F.kl_div(r(x), r(y.softmax(1)), reduction="batchmean"),
         torch.nn.functional.kl_div(x, y.softmax(1), reduction="batchmean"))
    same(F.huber_loss(r(x), r(y), delta=0.5, reduction="sum"),
         torch.nn.functional.huber_loss(x, y, delta=0.5, reduction="sum"))
    same(F.normalize(r(x), p=1.0, dim=0), torch.nn.functional.normalize(x, p=1.0, dim=0))
    same(F.rms_norm(r(x), [5], eps=1e-3), torch.nn.functional.rms_norm(x, [5], eps=1e-3))
    same(F.celu(r(x), alpha=0.5), torch.nn.functional.celu(x, alpha=0.5))
    same(F.triplet_margin_loss(r(x), r(y), r(x * 2), swap=True, reduction="none"),
         torch.nn.functional.triplet_margin_loss(x, y, x * 2, swap=True, reduction="none"))


def test_dropout2d_zeroes_whole_channels():
    rill.manual_seed(0)
    out = F.dropout2d(rill.ones(8, 16, 3, 3), 0.5, training=True)
    per_channel = out.reshape(8, 16, 9)
    assert (per_channel.amax(-1) == per_channel.amin(-1)).all().item()
    assert F.dropout2d(rill.ones(2, 2, 2, 2), 0.5, training=False).sum().item() == 16


def test_modules_match_torch():
    x = torch.randn(2, 4, 3, 3)
    for name, args in (("PixelShuffle", (2,)), ("ReLU6", ()), ("Hardswish", ()), ("Threshold", (0.1, 20.0)),
                       ("ZeroPad2d", ((1, 0, 2, 1),)), ("Softmin", (1,))):
        same(getattr(rill.nn, name)(*args)(r(x)), getattr(torch.nn, name)(*args)(x))


@pytest.mark.parametrize("equation, shapes", [
    ("bij,jk->bik", [(2, 3, 4), (4, 5)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("...j,jk->...k", [(2, 3, 4), (4, 5)]),
    ("ij,ij->", [(3, 3), (3, 3)]), ("bij,jk,kl->bil", [(2, 3, 4), (4, 5), (5, 2)]), ("ij,jk", [(3, 3), (3, 3)]),
])
def test_einsum_matches_torch_with_gradients(equation, shapes):
    torch.manual_seed(0)
    ts = [torch.randn(*s, dtype=torch.float64, requires_grad=True) for s in shapes]
    rs = [rill.tensor(t.detach().numpy().copy(), requires_grad=True) for t in ts]
    got, want = rill.einsum(equation, *rs), torch.einsum(equation, *ts)
    same(got, want)
    got.sum().backward()
    want.sum().backward()
    for r_, t in zip(rs, ts):
        same(r_.grad, t.grad)


def test_einsum_sublists_and_errors():
    a, b = torch.randn(2, 3), torch.randn(3, 4)
    same(rill.einsum(r(a), [0, 1], r(b), [1, 2], [0, 2]), torch.einsum(a, [0, 1], b, [1, 2], [0, 2]))
    with pytest.raises(RuntimeError, match="number of subscripts"):
        rill.einsum("ijk,jk->i", r(a), r(b))
    with pytest.raises(ValueError, match="operands"):
        rill.einsum("ij,jk->ik", r(a))


def test_median_quantile_nan_handling():
    x = torch.tensor([[1.0, float("nan"), 2.0, 0.5], [3.0, 1.0, 2.0, 2.0]])
    for fn in ("median", "nanmedian"):
        got, want = getattr(rill, fn)(r(x), 1), getattr(torch, fn)(x, 1)
        same(got.values, want.values)
        assert got.indices.tolist() == want.indices.tolist()
    q = torch.tensor([0.25, 0.5])
    for interpolation in ("linear", "lower", "higher", "midpoint", "nearest"):
        same(rill.nanquantile(r(x), r(q), 1, interpolation=interpolation),
             torch.nanquantile(x, q, 1, interpolation=interpolation))
        same(rill.quantile(r(x), 0.3, 1, keepdim=True, interpolation=interpolation),
             torch.quantile(x, 0.3, 1, keepdim=True, interpolation=interpolation))
    with pytest.raises(RuntimeError, match="range"):
        rill.quantile(r(x), 1.5)
    with pytest.raises(ValueError, match="interpolation"):
        rill.quantile(r(x), 0.5, interpolation="cubic")


def test_shift_operators_and_widths():
    x = torch.tensor([-5, 3, 100], dtype=torch.int32)
    s = torch.tensor([1, 31, 40], dtype=torch.int32)
    assert (r(x) << r(s)).tolist() == (x << s).tolist()
    assert (r(x) >> r(s)).tolist() == (x >> s).tolist()
    with pytest.raises(RuntimeError):
        rill.bitwise_left_shift(rill.ones(2), 1)


def test_signal_windows_periodic_and_errors():
    for name in ("hann", "hamming", "blackman", "bartlett", "cosine", "nuttall", "kaiser", "gaussian"):
        same(getattr(rill.signal.windows, name)(7, sym=False, dtype=rill.float64),
             getattr(torch.signal.windows, name)(7, sym=False, dtype=torch.float64))
    with pytest.raises(ValueError, match="non-negative"):
        rill.signal.windows.hann(-1)
    with pytest.raises(ValueError, match="Center"):
        rill.signal.windows.exponential(5, center=1.0)


def test_linalg_compositions():
    a = torch.randn(2, 3, 3)
    same(rill.linalg.matrix_power(r(a), 3), torch.linalg.matrix_power(a, 3))
    same(rill.linalg.matrix_power(r(a), 0), torch.linalg.matrix_power(a, 0))
    for ord_ in ("fro", "nuc", 2, -2, 1, -1, float("inf"), float("-inf")):
        same(rill.linalg.matrix_norm(r(a), ord_), torch.linalg.matrix_norm(a, ord_))


def test_masked_reductions_with_fully_masked_rows():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    m = torch.tensor([[True, False], [False, False]])
    for name in ("sum", "mean", "amax", "amin", "prod", "logsumexp"):
        same(getattr(rill.masked, name)(r(x), 1, mask=r(m)), getattr(torch.masked, name)(x, 1, mask=m))
    same(rill.masked.softmax(r(x), 1, mask=r(m)), torch.masked.softmax(x, 1, mask=m))
    same(rill.masked.cumsum(r(x), 1, mask=r(m)), torch.masked.cumsum(x, 1, mask=m))


def test_index_reduce_include_self_and_bad_reduce():
    x, src = torch.arange(6.0).reshape(2, 3), torch.tensor([[10.0, -1.0], [0.5, 7.0]])
    index = torch.tensor([0, 0])
    for reduce in ("prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            same(rill.index_reduce(r(x), 1, r(index), r(src), reduce, include_self=include_self),
                 x.index_reduce(1, index, src, reduce, include_self=include_self))
    with pytest.raises(RuntimeError, match="reduce"):
        rill.index_reduce(r(x), 1, r(index), r(src), "sum")
