"""rill.nn.functional beyond the parity table (op_cases.py): errors raised like PyTorch's, dropout's
randomness, batch_norm's running statistics, ignore_index corner cases, and larger inputs that take the
vectorised and multi-threaded kernel paths."""
import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import rill
import rill.nn.functional as F
from conftest import assert_close as _assert_close, raises_like


def assert_close(actual, expected, **kw):
    """conftest.assert_close on detached tensors (results here often require grad)."""
    _assert_close(actual.detach(), expected.detach(), **kw)


def pair(*shape, seed=0, dtype="float32", scale=1.0, requires_grad=False):
    a = (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)
    r, t = rill.tensor(a), torch.tensor(a)
    if requires_grad:
        r.requires_grad_()
        t.requires_grad_()
    return r, t


def targets(shape, classes, seed=0):
    a = np.random.default_rng(seed).integers(0, classes, size=shape).astype(np.int64)
    return rill.tensor(a), torch.tensor(a)


# --- errors ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("call", [
    lambda m, x, t: m.nll_loss(x, t[:2]),                        # batch size mismatch: ValueError
    lambda m, x, t: m.nll_loss(x, t.int()),                      # int32 target: RuntimeError
    lambda m, x, t: m.nll_loss(x, t, reduction="avg"),           # bad reduction: ValueError
    lambda m, x, t: m.cross_entropy(x, t, label_smoothing=1.5),
    lambda m, x, t: m.softmax(x, 2),                             # dim out of range: IndexError
    lambda m, x, t: m.log_softmax(x, -3),
    lambda m, x, t: m.layer_norm(x, (4,)),                       # shape mismatch: RuntimeError
    lambda m, x, t: m.layer_norm(x, (5,), weight=x[0, :4]),
    lambda m, x, t: m.linear(x, x[:, :4]),                       # 4 in_features for 5
    lambda m, x, t: m.linear(x, x[:, :5].t(), x[0]),             # bias of the wrong size
    lambda m, x, t: m.dropout(x, 1.5),
    lambda m, x, t: m.dropout(x, -0.1),
    lambda m, x, t: m.one_hot(t.float()),
    lambda m, x, t: m.one_hot(t, 2),                             # class values too large
    lambda m, x, t: m.binary_cross_entropy(x.sigmoid(), x[:2].sigmoid()),
    lambda m, x, t: m.binary_cross_entropy_with_logits(x, x[:2]),
    lambda m, x, t: m.pad(x, (1, 2, 3)),
    lambda m, x, t: m.pad(x, (1, 1, 1, 1, 1, 1)),
    lambda m, x, t: m.pad(x, (-4, -4)),
    lambda m, x, t: m.group_norm(x.reshape(1, 3, 5), 2),
    lambda m, x, t: m.smooth_l1_loss(x, x, beta=-1.0),
    lambda m, x, t: m.scaled_dot_product_attention(x, x, x, attn_mask=x > 0, is_causal=True),
    lambda m, x, t: m.interpolate(x.reshape(1, 1, 3, 5), size=(4, 4), scale_factor=2),
    lambda m, x, t: m.interpolate(x.reshape(1, 1, 3, 5), size=(4, 4), mode="nearest", align_corners=True),
    lambda m, x, t: m.batch_norm(x, None, None, training=False),
    lambda m, x, t: m.batch_norm(x[:1], None, None, training=True),
])
def test_bad_arguments_raise_like_torch(call):
    (rx, tx), (rt, tt) = pair(3, 5), targets((3,), 5)
    raises_like(lambda: call(TF, tx, tt), lambda: call(F, rx, rt))


def test_softmax_of_integers_raises_not_implemented():
    raises_like(lambda: TF.softmax(torch.tensor([1, 2]), 0), lambda: F.softmax(rill.tensor([1, 2]), 0))
    assert_close(F.softmax(rill.tensor([1, 2]), 0, dtype=rill.float32),
                 TF.softmax(torch.tensor([1, 2]), 0, dtype=torch.float32))


def test_target_out_of_bounds_is_an_index_error_at_the_next_sync():
    (rx, tx) = pair(3, 5)
    for bad in ([1, 2, 7], [1, -2, 0]):
        with pytest.raises(IndexError):
            TF.nll_loss(tx, torch.tensor(bad)).item()
        with pytest.raises(IndexError, match="out of bounds"):
            F.nll_loss(rx, rill.tensor(bad)).item()
        with pytest.raises(IndexError, match="out of bounds"):
            F.cross_entropy(rx, rill.tensor(bad)).item()
    assert F.nll_loss(rx, rill.tensor([1, 2, 3])).item() == pytest.approx(TF.nll_loss(tx, torch.tensor([1, 2, 3])).item())


def test_embedding_index_out_of_range_is_an_index_error():
    w = rill.randn(3, 2)
    with pytest.raises(IndexError, match="index out of range"):
        F.embedding(rill.tensor([0, 3]), w).tolist()
    with pytest.raises(IndexError, match="index out of range"):
        F.embedding(rill.tensor([-1]), w).tolist()
    raises_like(lambda: TF.embedding(torch.tensor([1.0]), torch.randn(3, 2)),
                lambda: F.embedding(rill.tensor([1.0]), w))
    with pytest.raises(AssertionError):
        F.embedding(rill.tensor([0]), w, padding_idx=3)


def test_fused_ops_reject_bad_arguments_without_crashing():
    x = rill.randn(2, 3)
    bad = [None, "x", 1.5, (2,), rill.zeros(0), rill.ones(3, dtype=rill.int64), rill.ones(2, 3, dtype=rill.float64)]
    fns = [lambda a: rill._C._nn.softmax(x, a), lambda a: rill._C._nn.layer_norm(x, a),
           lambda a: rill._C._nn.linear(x, a), lambda a: rill._C._nn.linear(a, x),
           lambda a: rill._C._nn.embedding(a, x), lambda a: rill._C._nn.nll_loss(x, a),
           lambda a: rill._C._nn.dropout(a, 0.5, True), lambda a: rill._C._nn.layer_norm(x, (3,), a),
           lambda a: rill._C._nn.nll_loss(a, rill.tensor([0, 1]))]
    for fn in fns:
        for a in bad:
            try:
                out = fn(a)
                if isinstance(out, tuple):
                    out = out[0]
                out.tolist()
            except (TypeError, ValueError, IndexError, RuntimeError, NotImplementedError):
                pass


# --- dropout --------------------------------------------------------------------------------------------


def test_dropout_keeps_about_1_minus_p_and_scales():
    x = rill.ones(200_000)
    y = F.dropout(x, 0.3).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)


def test_dropout_gradient_is_the_mask_times_the_scale():
    x = rill.randn(1000, requires_grad=True)
    y = F.dropout(x, 0.4)
    y.sum().backward()
    g, out, xv = x.grad.numpy(), y.detach().numpy(), x.detach().numpy()
    kept = out != 0
    np.testing.assert_allclose(g[kept], 1 / 0.6, rtol=1e-6)
    assert (g[~kept] == 0).all()
    np.testing.assert_allclose(out[kept], xv[kept] / 0.6, rtol=1e-6)
    assert y.grad_fn.name() == "MulBackward0"  # PyTorch on CPU: input * (bernoulli mask / (1 - p))


def test_manual_seed_makes_dropout_reproducible():
    x = rill.ones(1000)
    rill.manual_seed(7)
    a = F.dropout(x, 0.5).numpy()
    b = F.dropout(x, 0.5).numpy()
    rill.manual_seed(7)
    c = F.dropout(x, 0.5).numpy()
    np.testing.assert_array_equal(a, c)
    assert (a != b).any()


def test_dropout_identity_cases_and_inplace():
    x = rill.randn(4, 5)
    assert F.dropout(x, 0.5, training=False)._is_same(x)
    assert F.dropout(x, 0.0)._is_same(x)
    z = rill.randn(3, 4)
    out = F.dropout(z, 0.5, inplace=True)
    assert out is z
    assert set(np.unique(z.numpy() == 0)) <= {True, False}


def test_dropout_half_and_threads():
    x = rill.ones(100_000, dtype=rill.float16)
    y = F.dropout(x, 0.5)
    assert y.dtype == rill.float16
    assert abs((y.float().numpy() != 0).mean() - 0.5) < 0.01


def test_sdpa_dropout_uses_the_mask():
    q = rill.randn(2, 4, 8)
    rill.manual_seed(3)
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5).numpy()
    rill.manual_seed(3)
    b = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, F.scaled_dot_product_attention(q, q, q).numpy())


# --- batch_norm running statistics ----------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5), (2, 3, 4, 4)])
def test_batch_norm_updates_running_stats_like_torch(shape):
    (rx, tx) = pair(*shape, seed=1, dtype="float64")
    rm, rv = rill.zeros(3, dtype=rill.float64), rill.ones(3, dtype=rill.float64)
    tm, tv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    for _ in range(3):
        ry = F.batch_norm(rx, rm, rv, training=True, momentum=0.2)
        ty = TF.batch_norm(tx, tm, tv, training=True, momentum=0.2)
    assert_close(ry, ty)
    assert_close(rm, tm)
    assert_close(rv, tv)
    assert_close(F.batch_norm(rx, rm, rv), TF.batch_norm(tx, tm, tv))


def test_batch_norm_running_stats_get_no_history():
    x = rill.randn(4, 3, requires_grad=True)
    rm, rv = rill.zeros(3), rill.ones(3)
    F.batch_norm(x, rm, rv, training=True).sum().backward()
    assert not rm.requires_grad and not rv.requires_grad
    assert x.grad is not None


# --- losses: corner cases -------------------------------------------------------------------------------


def test_nll_loss_all_ignored_mean_is_nan_like_torch():
    (rx, tx) = pair(3, 5)
    r = F.nll_loss(rx, rill.tensor([-100, -100, -100])).item()
    t = TF.nll_loss(tx, torch.tensor([-100, -100, -100])).item()
    assert math.isnan(r) and math.isnan(t)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_with_default_ignore_index_targets(reduction, smoothing):
    (rx, tx) = pair(6, 4, seed=2, dtype="float64", requires_grad=True)
    t = np.array([0, -100, 3, 2, -100, 1])
    rw, tw = rill.tensor([1.0, 2.0, 0.5, 1.5], dtype=rill.float64), torch.tensor([1.0, 2.0, 0.5, 1.5],
                                                                                dtype=torch.float64)
    r = F.cross_entropy(rx, rill.tensor(t), rw, reduction=reduction, label_smoothing=smoothing)
    e = TF.cross_entropy(tx, torch.tensor(t), tw, reduction=reduction, label_smoothing=smoothing)
    assert_close(r, e.detach())
    r.sum().backward()
    e.sum().backward()
    assert_close(rx.grad, tx.grad)


def test_legacy_size_average_and_reduce():
    (rx, tx), (rt, tt) = pair(4, 3), targets((4,), 3)
    for kw in ({"size_average": False}, {"reduce": False}, {"size_average": True, "reduce": True}):
        assert_close(F.nll_loss(rx, rt, **kw), TF.nll_loss(tx, tt, **kw))
        assert_close(F.mse_loss(rx, rx * 2, **kw), TF.mse_loss(tx, tx * 2, **kw))


def test_mse_loss_warns_on_broadcast_targets():
    (rx, tx) = pair(3, 4)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = F.mse_loss(rx, rx[:, :1])
    assert any("target size" in str(m.message) for m in w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(r, TF.mse_loss(tx, tx[:, :1]))


def test_sdpa_fully_masked_rows_are_zero_like_torch():
    (rq, tq) = pair(2, 3, 4)
    mask = np.ones((3, 3), dtype=bool)
    mask[1] = False
    r = F.scaled_dot_product_attention(rq, rq, rq, attn_mask=rill.tensor(mask))
    t = TF.scaled_dot_product_attention(tq, tq, tq, attn_mask=torch.tensor(mask))
    assert_close(r, t)


def test_softmax_without_dim_warns_and_picks_torchs_dim():
    (rx, tx) = pair(2, 3, 4)
    with pytest.warns(UserWarning):
        r = F.softmax(rx)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(r, TF.softmax(tx))


def test_softmax_infinities_and_nan_match_torch():
    a = np.array([[0.0, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf], [np.nan, 0.0, 1.0], [np.inf, 0.0, 1.0]],
                 dtype=np.float32)
    for fn, tfn in ((F.softmax, TF.softmax), (F.log_softmax, TF.log_softmax)):
        assert_close(fn(rill.tensor(a), -1), tfn(torch.tensor(a), -1))


# --- larger inputs: the vectorised and threaded paths ---------------------------------------------------


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape,dim", [((64, 1000), -1), ((300, 77), -1), ((8, 100, 30), 1), ((513,), 0)])
def test_softmax_large(threads, shape, dim):
    rill.set_num_threads(threads)
    try:
        (rx, tx) = pair(*shape, seed=3, scale=5.0, requires_grad=True)
        (rg, tg) = pair(*shape, seed=4)
        for fn, tfn in ((F.softmax, TF.softmax), (F.log_softmax, TF.log_softmax)):
            r, t = fn(rx, dim), tfn(tx, dim)
            assert_close(r, t.detach(), rtol=1e-5, atol=1e-6)
            (r_grad,) = rill.autograd.grad(r, [rx], rg)
            (t_grad,) = torch.autograd.grad(t, [tx], tg)
            assert_close(r_grad, t_grad, rtol=1e-4, atol=1e-5)
    finally:
        rill.set_num_threads(2)


@pytest.mark.parametrize("threads", [1, 2])
def test_layer_norm_linear_large(threads):
    rill.set_num_threads(threads)
    try:
        (rx, tx) = pair(64, 512, seed=5, requires_grad=True)
        (rw, tw) = pair(512, seed=6, requires_grad=True)
        (rb, tb) = pair(512, seed=7, requires_grad=True)
        (rl, tl) = pair(256, 512, seed=8, scale=0.05, requires_grad=True)
        (rlb, tlb) = pair(256, seed=9, requires_grad=True)
        r = F.linear(F.relu(F.layer_norm(rx, (512,), rw, rb)), rl, rlb)
        t = TF.linear(TF.relu(TF.layer_norm(tx, (512,), tw, tb)), tl, tlb)
        assert_close(r, t.detach(), rtol=1e-4, atol=1e-5)
        r.sum().backward()
        t.sum().backward()
        for a, b in ((rx, tx), (rw, tw), (rb, tb), (rl, tl), (rlb, tlb)):
            assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-4)
    finally:
        rill.set_num_threads(2)


def test_cross_entropy_large_batch():
    (rx, tx) = pair(512, 100, seed=10, requires_grad=True)
    (rt, tt) = targets((512,), 100, seed=11)
    r, t = F.cross_entropy(rx, rt, label_smoothing=0.1), TF.cross_entropy(tx, tt, label_smoothing=0.1)
    assert_close(r, t.detach(), rtol=1e-5, atol=1e-6)
    r.backward()
    t.backward()
    assert_close(rx.grad, tx.grad, rtol=1e-4, atol=1e-7)


def test_sdpa_bench_shape():
    (rq, tq) = pair(8, 4, 128, 64, seed=12, requires_grad=True)
    (rk, tk) = pair(8, 4, 128, 64, seed=13, requires_grad=True)
    (rv, tv) = pair(8, 4, 128, 64, seed=14, requires_grad=True)
    r = F.scaled_dot_product_attention(rq, rk, rv, is_causal=True)
    t = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    assert_close(r, t.detach(), rtol=1e-4, atol=1e-5)
    r.sum().backward()
    t.sum().backward()
    for a, b in ((rq, tq), (rk, tk), (rv, tv)):
        assert_close(a.grad, b.grad, rtol=1e-3, atol=1e-4)


def test_embedding_gradient_accumulates_repeated_indices():
    w = rill.randn(4, 3, requires_grad=True)
    idx = rill.tensor([[1, 1, 2], [1, 0, 2]])
    F.embedding(idx, w, padding_idx=0).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [[0, 0, 0], [3, 3, 3], [2, 2, 2], [0, 0, 0]])


def test_grad_fn_names():
    x = rill.randn(3, 4, requires_grad=True)
    assert F.softmax(x, 1).grad_fn.name() == "SoftmaxBackward0"
    assert F.log_softmax(x, 1).grad_fn.name() == "LogSoftmaxBackward0"
    assert F.layer_norm(x, (4,)).grad_fn.name() == "NativeLayerNormBackward0"
    assert F.nll_loss(x, rill.tensor([0, 1, 2])).grad_fn.name() == "NllLossBackward0"


def _forward_backward(r_fn, t_fn, *arrays):
    """r_fn and t_fn on the same arrays: outputs, then gradients of every input, compared with torch."""
    rs = [rill.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    yr, yt = r_fn(*rs), t_fn(*ts)
    g = np.random.default_rng(5).standard_normal(tuple(yt.shape)).astype(np.float32)
    yr.backward(rill.tensor(g))
    yt.backward(torch.tensor(g))
    _assert_close(yr.detach(), yt.detach(), rtol=1e-5, atol=1e-6)
    for r, t in zip(rs, ts):
        _assert_close(r.grad, t.grad, rtol=1e-5, atol=1e-6)
    return rs, ts


@pytest.mark.parametrize("kwargs", [dict(max_norm=1.0), dict(max_norm=2.0, norm_type=1.0),
                                    dict(scale_grad_by_freq=True),
                                    dict(scale_grad_by_freq=True, max_norm=1.5, padding_idx=0)])
def test_embedding_max_norm_and_scale_grad_by_freq(kwargs):
    w = np.random.default_rng(0).standard_normal((10, 4)).astype(np.float32) * 3
    idx = np.array([[1, 2, 1], [9, 1, 0]])
    rs, ts = _forward_backward(lambda w: F.embedding(rill.tensor(idx), w, **kwargs),
                               lambda w: TF.embedding(torch.tensor(idx), w, **kwargs), w)
    _assert_close(rs[0].detach(), ts[0].detach(), rtol=1e-5, atol=1e-6)  # max_norm renormalised rows in place


def test_embedding_sparse_says_why():
    with pytest.raises(NotImplementedError, match="sparse"):
        F.embedding(rill.tensor([1]), rill.ones(3, 2), sparse=True)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("shape,pad", [((3, 6, 7), (-2, 3)), ((3, 6, 7), (3, -2)), ((2, 3, 6, 7), (2, -3, -1, 4)),
                                       ((2, 3, 4, 5, 6), (1, 2, -1, 1, 2, 0)), ((3, 4, 5, 6), (1, 1, 1, 1, 1, 1))])
def test_pad_edges_negative_and_three_dims(mode, shape, pad):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    _forward_backward(lambda x: F.pad(x, pad, mode=mode), lambda x: TF.pad(x, pad, mode=mode), x)


@pytest.mark.parametrize("shape,pad", [((2, 3, 6, 7), (1, 1)), ((4, 5, 6), (1, 1, 1, 1, 1, 1)), ((6,), (1, 1))])
def test_pad_edges_rank_rule_like_torch(shape, pad):
    raises_like(lambda: TF.pad(torch.ones(shape), pad, mode="reflect"),
                lambda: F.pad(rill.ones(shape), pad, mode="reflect"))
