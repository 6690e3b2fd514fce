"""masked.logaddexp/median, _safe_softmax, svd_lowrank/pca_lowrank, linear_cross_entropy and
multi_head_attention_forward against PyTorch."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import rill
import rill.nn.functional as RF
from conftest import assert_close


def pair(shape, seed, dtype="float64"):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return rill.tensor(a), torch.tensor(a)


def test_masked_logaddexp():
    (x, tx), (y, ty) = pair((3, 4), 0), pair((3, 4), 1)
    m = np.random.default_rng(2).random((3, 4)) > 0.4
    got = rill.masked.logaddexp(x, y, input_mask=rill.tensor(m), other_mask=rill.tensor(~m))
    want = torch.masked.logaddexp(tx, ty, input_mask=torch.tensor(m), other_mask=torch.tensor(~m))
    assert_close(got, want)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_masked_median(dim):
    x, tx = pair((4, 5), 3)
    m = np.random.default_rng(4).random((4, 5)) > 0.5
    m[0] = False  # a fully masked row: NaN
    got = rill.masked.median(x, dim, mask=rill.tensor(m))
    assert_close(got, torch.masked.median(tx, dim, mask=torch.tensor(m)))


def test_masked_median_integer_needs_unmasked():
    x = rill.tensor([[1, 2], [3, 4]])
    with pytest.raises(ValueError):
        rill.masked.median(x, 1, mask=rill.tensor([[False, False], [True, True]]))


def test_safe_softmax_fully_masked_row_is_zero():
    x = torch.tensor([[-float("inf")] * 3, [1.0, 2.0, 3.0], [-float("inf"), 0.0, 1.0]], dtype=torch.float64,
                     requires_grad=True)
    r = rill.tensor(x.detach().numpy(), requires_grad=True)
    got, want = rill._safe_softmax(r, 1), torch._safe_softmax(x, 1)
    assert_close(got.detach(), want.detach())
    w = torch.arange(9.0, dtype=torch.float64).reshape(3, 3)
    (got * rill.tensor(w.numpy())).sum().backward()
    (want * w).sum().backward()
    assert_close(r.grad, x.grad)


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (2, 5, 3)])
def test_svd_lowrank_exact_for_low_rank(shape):
    *batch, m, n = shape
    a, ta = pair((*batch, m, 2), 5)
    b, tb = pair((*batch, n, 2), 6)
    A = a @ b.mT
    U, S, V = rill.svd_lowrank(A, q=2)
    assert_close(U @ rill.diag_embed(S) @ V.mT, ta @ tb.mT)
    assert_close(S, torch.linalg.svdvals(ta @ tb.mT)[..., :2])


def test_pca_lowrank_centers():
    a, ta = pair((8, 2), 7)
    b, tb = pair((5, 2), 8)
    A, tA = a @ b.mT + 3.0, ta @ tb.mT + 3.0
    U, S, V = rill.pca_lowrank(A, q=2)
    tU, tS, tV = torch.pca_lowrank(tA, q=2)
    assert_close(U @ rill.diag_embed(S) @ V.mT, tU @ torch.diag_embed(tS) @ tV.mT)
    with pytest.raises(ValueError):
        rill.pca_lowrank(A, q=9)


@pytest.mark.parametrize("kwargs", [{}, {"reduction": "sum"}, {"reduction": "none", "ignore_index": 1},
                                    {"label_smoothing": 0.1}])
def test_linear_cross_entropy(kwargs):
    (x, tx), (w, tw), (b, tb) = pair((6, 4), 9), pair((5, 4), 10), pair((5,), 11)
    t = np.random.default_rng(12).integers(0, 5, 6)
    for r, tr in ((x, tx), (w, tw), (b, tb)):
        r.requires_grad_(True)
        tr.requires_grad_(True)
    got = RF.linear_cross_entropy(x, w, rill.tensor(t), linear_bias=b, **kwargs)
    want = TF.linear_cross_entropy(tx, tw, torch.tensor(t), linear_bias=tb, **kwargs)
    assert_close(got.detach(), want.detach())
    got.sum().backward()
    want.sum().backward()
    for r, tr in ((x, tx), (w, tw), (b, tb)):
        assert_close(r.grad, tr.grad)


def test_linear_cross_entropy_module_k_dimensional():
    torch.manual_seed(0)
    tm = torch.nn.LinearCrossEntropyLoss(4, 3, out_features=(2,), bias=True, dtype=torch.float64)
    m = rill.nn.LinearCrossEntropyLoss(4, 3, out_features=(2,), bias=True, dtype=rill.float64)
    m.load_state_dict({k: rill.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x, tx = pair((5, 4), 13)
    t = np.random.default_rng(14).integers(0, 3, (5, 2))
    assert_close(m(x, rill.tensor(t)).detach(), tm(tx, torch.tensor(t)).detach())
    with pytest.raises(RuntimeError):
        RF.linear_cross_entropy(x, rill.zeros(3, 5, dtype=rill.float64), rill.tensor(t))


@pytest.mark.parametrize("static", [False, True])
def test_multi_head_attention_forward(static):
    E, H, L, S, N = 4, 2, 3, 5, 2
    (q, tq), (k, tk), (v, tv) = pair((L, N, E), 20), pair((S, N, E), 21), pair((S, N, E), 22)
    (wi, twi), (bi, tbi), (wo, two), (bo, tbo) = pair((3 * E, E), 23), pair((3 * E,), 24), pair((E, E), 25), \
        pair((E,), 26)
    (sk, tsk), (sv, tsv) = pair((N * H, S, E // H), 27), pair((N * H, S, E // H), 28)
    extra = dict(static_k=sk, static_v=sv) if static else {}
    textra = dict(static_k=tsk, static_v=tsv) if static else {}
    mask = np.random.default_rng(29).random((L, S)) > 0.7
    got = RF.multi_head_attention_forward(q, k, v, E, H, wi, bi, None, None, True, 0.0, wo, bo, training=False,
                                          attn_mask=rill.tensor(mask), average_attn_weights=False, **extra)
    want = TF.multi_head_attention_forward(tq, tk, tv, E, H, twi, tbi, None, None, True, 0.0, two, tbo,
                                           training=False, attn_mask=torch.tensor(mask), average_attn_weights=False,
                                           **textra)
    assert_close(got[0], want[0])
    assert_close(got[1], want[1])


def test_multi_head_attention_forward_bad_static_k():
    q = rill.zeros(3, 2, 4)
    w, b = rill.zeros(12, 4), rill.zeros(12)
    with pytest.raises(ValueError):
        RF.multi_head_attention_forward(q, q, q, 4, 2, w, b, None, None, False, 0.0, rill.zeros(4, 4), None,
                                        static_k=rill.zeros(3, 3, 2))


@pytest.mark.parametrize("padding,dilation,ceil_mode", [(0, 1, False), (1, 1, True), (0, (1, 2), True)])
def test_max_pool2d_with_indices_backward(padding, dilation, ceil_mode):
    x, tx = pair((2, 3, 6, 7), 30)
    (g, tg) = pair(tuple(TF.max_pool2d(tx, 3, 2, padding, dilation, ceil_mode).shape), 31)
    _, idx = RF.max_pool2d(x, 3, 2, padding, dilation, ceil_mode, return_indices=True)
    _, tidx = TF.max_pool2d(tx, 3, 2, padding, dilation, ceil_mode, return_indices=True)
    got = rill.max_pool2d_with_indices_backward(g, x, [3, 3], [2, 2], [padding] * 2, dilation, ceil_mode, idx)
    want = torch.ops.aten.max_pool2d_with_indices_backward(tg, tx, [3, 3], [2, 2], [padding] * 2,
                                                           [dilation] * 2 if isinstance(dilation, int)
                                                           else list(dilation), ceil_mode, tidx)
    assert_close(got, want)
    with pytest.raises(ValueError):
        rill.max_pool2d_with_indices_backward(g[:, :, :1], x, [3, 3], [2, 2], [padding] * 2, dilation, ceil_mode,
                                              idx[:, :, :1])


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("concatenated", [False, True])
def test_ctc_loss(reduction, concatenated):
    T, N, C, S = 12, 3, 5, 4
    raw = torch.tensor(np.random.default_rng(40).standard_normal((T, N, C)))
    lp = raw.log_softmax(2).detach().requires_grad_(True)
    r = rill.tensor(lp.detach().numpy(), requires_grad=True)
    targets = np.random.default_rng(41).integers(1, C, (N, S))
    targets[0, 1] = targets[0, 0]  # a repeated label needs a blank between
    in_lens, tgt_lens = [12, 9, 3], [4, 0, 3]  # an empty target; a target too long for its input: inf
    if concatenated:
        flat = np.concatenate([targets[i, :tgt_lens[i]] for i in range(N)])
        tt, rt = torch.tensor(flat), rill.tensor(flat)
    else:
        tt, rt = torch.tensor(targets), rill.tensor(targets)
    for zero_infinity in (False, True):
        want = TF.ctc_loss(lp, tt, torch.tensor(in_lens), torch.tensor(tgt_lens), reduction=reduction, zero_infinity=zero_infinity)
        got = RF.ctc_loss(r, rt, rill.tensor(in_lens), tgt_lens, reduction=reduction, zero_infinity=zero_infinity)
        assert_close(got.detach(), want.detach())
        if zero_infinity:
            got.sum().backward()
            want.sum().backward()
            assert_close(r.grad, lp.grad)


def test_ctc_loss_module_and_bad_input():
    lp = rill.randn(6, 2, 4, dtype=rill.float64).log_softmax(2)
    loss = rill.nn.CTCLoss(blank=3)(lp, rill.tensor([[0, 1], [2, 2]]), [6, 6], [2, 2])
    want = torch.nn.CTCLoss(blank=3)(torch.tensor(lp.numpy()), torch.tensor([[0, 1], [2, 2]]), [6, 6], [2, 2])
    assert_close(loss, want)
    with pytest.raises(ValueError):
        RF.ctc_loss(lp, rill.tensor([[0, 1], [2, 2]]), [6, 7], [2, 2])
    with pytest.raises(ValueError):
        RF.ctc_loss(lp, rill.tensor([[0, 1], [2, 2]]), [6, 6], [2, 2], blank=4)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_2d(mode, padding_mode, align_corners):
    x, tx = pair((2, 3, 5, 6), 50)
    g, tg = pair((2, 4, 7, 2), 51)
    g, tg = g * 1.3, tg * 1.3  # some points outside [-1, 1]
    x.requires_grad_(True)
    tx.requires_grad_(True)
    got = RF.grid_sample(x, g, mode, padding_mode, align_corners)
    want = TF.grid_sample(tx, tg, mode, padding_mode, align_corners)
    assert_close(got.detach(), want.detach())
    got.sum().backward()
    want.sum().backward()
    assert_close(x.grad, tx.grad)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_3d_and_affine_grid(padding_mode):
    x, tx = pair((1, 2, 3, 4, 5), 52)
    theta, ttheta = pair((1, 3, 4), 53)
    grid = RF.affine_grid(theta, (1, 2, 3, 4, 2), align_corners=False)
    tgrid = TF.affine_grid(ttheta, (1, 2, 3, 4, 2), align_corners=False)
    assert_close(grid, tgrid)
    assert_close(RF.grid_sample(x, grid, padding_mode=padding_mode, align_corners=False),
                 TF.grid_sample(tx, tgrid, padding_mode=padding_mode, align_corners=False))
    with pytest.raises(ValueError):
        RF.grid_sample(x, grid, mode="bicubic")
    with pytest.raises(ValueError):
        RF.grid_sample(x, grid[..., :2])


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("kwargs", [{"size": (3, 5)}, {"size": (13, 31)}, {"scale_factor": (1.7, 0.45)},
                                    {"size": (4, 6), "align_corners": True}])
def test_interpolate_antialias(mode, kwargs):
    x, tx = pair((2, 3, 10, 20), 60)
    assert_close(RF.interpolate(x, mode=mode, antialias=True, **kwargs),
                 TF.interpolate(tx, mode=mode, antialias=True, **kwargs))


def test_upsample_bilinear2d_aa_scales():
    x, tx = pair((1, 2, 10, 20), 61)
    assert_close(rill._upsample_bilinear2d_aa(x, [4, 9], False, scales_h=0.45, scales_w=0.5),
                 torch.ops.aten._upsample_bilinear2d_aa(tx, [4, 9], False, 0.45, 0.5))
    with pytest.raises(ValueError):
        RF.interpolate(x, size=(3, 3), mode="nearest", antialias=True)
