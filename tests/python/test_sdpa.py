"""The fused attention op (rill._sdpa, src/rill/kernels/cpu/attention.cpp) against
torch.nn.functional.scaled_dot_product_attention: values and gradients of query, key, value and a float mask,
over several key blocks, causal attention, bool and float masks, L != S, 3-D inputs, strided layouts and
fully masked rows; the fallbacks it leaves to the composed path; and MultiheadAttention and
TransformerEncoderLayer, which call it, against PyTorch's."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import rill
import rill.nn.functional as RF
from conftest import assert_close

FUSED = "ScaledDotProductFlashAttentionForCpuBackward0"
TOL = {"float32": dict(rtol=1e-4, atol=2e-5), "float64": dict(rtol=1e-10, atol=1e-12)}


def arr(shape, seed, dtype="float64"):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def leaves(shapes, dtype, seed=0):
    arrays = [arr(s, seed + i, dtype) for i, s in enumerate(shapes)]
    return ([rill.tensor(a, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


def check(shapes, dtype="float64", mask=None, mask_grad=False, fused=True, **kw):
    """Run both frameworks on the same q, k, v (and mask), compare outputs and every gradient."""
    (rq, rk, rv), (tq, tk, tv) = leaves(shapes, dtype)
    rm = tm = None
    if mask is not None:
        if mask.dtype != bool:
            mask = mask.astype(dtype)
        rm, tm = rill.tensor(mask, requires_grad=mask_grad), torch.tensor(mask, requires_grad=mask_grad)
    ro = RF.scaled_dot_product_attention(rq, rk, rv, attn_mask=rm, **kw)
    to = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm, **kw)
    assert (ro.grad_fn.name() == FUSED) == fused
    tol = TOL[dtype]
    assert_close(ro.detach(), to.detach(), **tol)
    g = arr(tuple(to.shape), 99, dtype)
    (ro * rill.tensor(g)).sum().backward()
    (to * torch.tensor(g)).sum().backward()
    pairs = [(rq, tq), (rk, tk), (rv, tv)] + ([(rm, tm)] if mask_grad else [])
    for r, t in pairs:
        assert_close(r.grad, t.grad, **tol)
    return ro


SHAPES = [(2, 4, 64, 32), (1, 2, 200, 16)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES)
def test_plain_and_causal(shape, dtype):
    check([shape] * 3, dtype)
    check([shape] * 3, dtype, is_causal=True)
    check([shape] * 3, dtype, scale=0.3)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES)
def test_bool_and_float_masks(shape, dtype):
    rng = np.random.default_rng(3)
    length = shape[-2]
    check([shape] * 3, dtype, mask=rng.random((length, length)) > 0.3)
    check([shape] * 3, dtype, mask=rng.random((shape[0], 1, length, length)) > 0.5)
    check([shape] * 3, dtype, mask=rng.standard_normal((length, length)), mask_grad=True)
    check([shape] * 3, dtype, mask=rng.standard_normal((shape[1], 1, length)), mask_grad=True)


@pytest.mark.parametrize("causal", [False, True])
def test_more_keys_or_more_queries_than_one_block(causal):
    # L != S both ways, key blocks of 128 and query blocks of 64 cut mid-way, Ev != E.
    check([(2, 3, 70, 8), (2, 3, 300, 8), (2, 3, 300, 5)], is_causal=causal)
    check([(1, 2, 300, 16), (1, 2, 130, 16), (1, 2, 130, 24)], is_causal=causal)
    check([(2, 3, 70, 8), (2, 3, 150, 8), (2, 3, 150, 8)], mask=np.random.default_rng(4).random((70, 150)) > 0.4)


def test_3d_and_2d_inputs():
    check([(4, 33, 8), (4, 47, 8), (4, 47, 6)])
    check([(4, 33, 8), (4, 47, 8), (4, 47, 6)], mask=arr((33, 47), 5), mask_grad=True)
    check([(33, 8), (47, 8), (47, 6)], is_causal=True)


def test_strided_layouts():
    # MultiheadAttention's (L, N*H, E) projections seen as (N*H, L, E), and a query with a strided last dim.
    (rq, rk, rv), (tq, tk, tv) = leaves([(40, 6, 8), (50, 6, 8), (50, 6, 8)], "float64")
    ro = RF.scaled_dot_product_attention(rq.transpose(0, 1), rk.transpose(0, 1), rv.transpose(0, 1).transpose(1, 2)
                                         .transpose(1, 2))
    to = TF.scaled_dot_product_attention(tq.transpose(0, 1), tk.transpose(0, 1), tv.transpose(0, 1))
    assert ro.grad_fn.name() == FUSED
    assert_close(ro.detach(), to.detach(), **TOL["float64"])
    ro.sum().backward()
    to.sum().backward()
    for r, t in ((rq, tq), (rk, tk), (rv, tv)):
        assert_close(r.grad, t.grad, **TOL["float64"])
    (rq,), (tq,) = leaves([(3, 8, 20)], "float64")
    (rk, rv), (tk, tv) = leaves([(3, 9, 8), (3, 9, 4)], "float64", seed=7)
    ro = RF.scaled_dot_product_attention(rq.transpose(1, 2), rk, rv, is_causal=True)
    to = TF.scaled_dot_product_attention(tq.transpose(1, 2), tk, tv, is_causal=True)
    assert_close(ro.detach(), to.detach(), **TOL["float64"])
    ro.sum().backward()
    to.sum().backward()
    assert_close(rq.grad, tq.grad, **TOL["float64"])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fully_masked_rows_are_zero_with_zero_gradients(dtype):
    keep = np.random.default_rng(6).random((2, 3, 70, 150)) > 0.5
    keep[0, :, 5] = False
    keep[1, 2, 69] = False
    out = check([(2, 3, 70, 8), (2, 3, 150, 8), (2, 3, 150, 8)], dtype, mask=keep)
    assert np.all(out.detach().numpy()[0, :, 5] == 0)
    additive = np.where(keep, 0.0, -np.inf)
    check([(2, 3, 70, 8), (2, 3, 150, 8), (2, 3, 150, 8)], dtype, mask=additive)


def test_lse_and_its_gradient():
    (rq, rk, rv), (tq, tk, tv) = leaves([(2, 70, 8), (2, 150, 8), (2, 150, 8)], "float64")
    out, lse, _ = rill._sdpa(rq, rk, rv, None, 0.5, True)
    scores = (tq @ tk.transpose(-2, -1)) * 0.5
    scores = scores.masked_fill(torch.ones(70, 150, dtype=torch.bool).triu(1), -torch.inf)
    want = torch.logsumexp(scores, -1)
    assert_close(lse.detach(), want.detach(), **TOL["float64"])
    (out.sum() + (lse * lse).sum()).backward()
    (torch.softmax(scores, -1) @ tv).sum().add((want * want).sum()).backward()
    for r, t in ((rq, tq), (rk, tk), (rv, tv)):
        assert_close(r.grad, t.grad, **TOL["float64"])


def test_fallbacks_to_the_composed_path():
    q = rill.randn(2, 3, 5, 4)
    assert RF.scaled_dot_product_attention(q.requires_grad_(), q, q).grad_fn.name() == FUSED
    assert RF.scaled_dot_product_attention(q, q, q, dropout_p=0.5).grad_fn.name() != FUSED
    h = q.detach().to(rill.float16).requires_grad_()
    assert RF.scaled_dot_product_attention(h, h, h).grad_fn.name() != FUSED
    # leading dims that broadcast: composed, and equal to torch
    check([(2, 3, 5, 4), (1, 3, 6, 4), (3, 6, 4)], fused=False)


def test_direct_calls_raise_clear_errors():
    q = rill.randn(2, 5, 4)
    with pytest.raises(RuntimeError, match="leading dims"):
        rill._sdpa(q, rill.randn(3, 5, 4), q, None, 1.0, False)
    with pytest.raises(RuntimeError, match="features"):
        rill._sdpa(q, rill.randn(2, 5, 3), q, None, 1.0, False)
    with pytest.raises(RuntimeError, match="broadcast"):
        rill._sdpa(q, q, q, rill.ones(4, 5, dtype=rill.bool), 1.0, False)
    with pytest.raises(RuntimeError, match="bool attn_mask"):
        rill._sdpa(q, q, q, rill.ones(5, 5, dtype=rill.int64), 1.0, False)
    with pytest.raises(RuntimeError, match="is_causal"):
        rill._sdpa(q, q, q, rill.ones(5, 5, dtype=rill.bool), 1.0, True)
    with pytest.raises(NotImplementedError, match="float32 or float64"):
        rill._sdpa(q.half(), q.half(), q.half(), None, 1.0, False)


def _copy(rmod, tmod):
    rmod.load_state_dict(tmod.state_dict())
    return rmod


def _compare_module(rmod, tmod, inputs, **kw):
    pairs = [(rill.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)) for a in inputs]
    ro = rmod(*[p[0] for p in pairs], **{k: rill.tensor(v) for k, v in kw.items()})
    to = tmod(*[p[1] for p in pairs], **{k: torch.tensor(v) for k, v in kw.items()})
    if isinstance(ro, tuple):
        ro, to = ro[0], to[0]
    tol = dict(rtol=1e-4, atol=1e-5)
    assert_close(ro.detach(), to.detach(), **tol)
    g = arr(tuple(to.shape), 98, "float32")
    (ro * rill.tensor(g)).sum().backward()
    (to * torch.tensor(g)).sum().backward()
    for r, t in pairs:
        assert_close(r.grad, t.grad, **tol)
    tparams = dict(tmod.named_parameters())
    for name, p in rmod.named_parameters():
        assert_close(p.grad, tparams[name].grad, **tol)


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_without_weights_matches_torch(batch_first):
    torch.manual_seed(0)
    t = torch.nn.MultiheadAttention(16, 4, batch_first=batch_first)
    r = _copy(rill.nn.MultiheadAttention(16, 4, batch_first=batch_first), t)
    shape = (3, 20, 16) if batch_first else (20, 3, 16)
    x = arr(shape, 1, "float32")
    _compare_module(r, t, [x, x, x], need_weights=False)
    t.zero_grad()
    r.zero_grad()
    pad = np.zeros((3, 20), dtype=bool)
    pad[1, 15:] = True
    causal = np.triu(np.ones((20, 20), dtype=bool), 1)
    _compare_module(r, t, [x, arr(shape, 2, "float32"), arr(shape, 3, "float32")], need_weights=False,
                    key_padding_mask=pad, attn_mask=causal)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_matches_torch(norm_first):
    torch.manual_seed(0)
    kw = dict(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True, norm_first=norm_first)
    t = torch.nn.TransformerEncoderLayer(**kw)
    r = _copy(rill.nn.TransformerEncoderLayer(**kw), t)
    x = arr((2, 24, 32), 4, "float32")
    _compare_module(r, t, [x])
    t.zero_grad()
    r.zero_grad()
    _compare_module(r, t, [x], src_mask=np.triu(np.full((24, 24), -np.inf, dtype=np.float32), 1))
