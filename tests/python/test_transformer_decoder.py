"""TransformerDecoderLayer, TransformerDecoder and Transformer against PyTorch's (state dicts loaded across):
outputs and float64 gradients with masks, key padding masks, norm_first, batch_first and activations."""
import numpy as np
import pytest
import torch

import rill


def to_rill(t):
    return rill.tensor(t.detach().numpy()).requires_grad_(t.requires_grad)


def pair(build_torch, build_rill):
    torch.manual_seed(0)
    tm = build_torch(torch).double()
    rm = build_rill(rill).to(rill.float64)
    rm.load_state_dict({k: rill.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, rm


def check(tm, rm, tensors, kwargs=None, modules=None):
    """tm / rm called on the same inputs: outputs and gradients of the inputs and of the parameters of modules
    (tm and rm by default) agree."""
    kwargs = kwargs or {}
    t_mod, r_mod = modules or (tm, rm)
    ts = [t.clone().requires_grad_(t.is_floating_point()) for t in tensors]
    rs = [to_rill(t) for t in ts]
    tk = {k: v for k, v in kwargs.items()}
    rk = {k: to_rill(v) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    to, ro = tm(*ts, **tk), rm(*rs, **rk)
    np.testing.assert_allclose(ro.detach().numpy(), to.detach().numpy(), rtol=1e-7, atol=1e-9)
    to.sum().backward()
    ro.sum().backward()
    for t, r in zip(ts, rs):
        rg = np.zeros(tuple(t.shape)) if r.grad is None else r.grad.numpy()  # an unused input: no gradient
        tg = np.zeros(tuple(t.shape)) if t.grad is None else t.grad.numpy()
        np.testing.assert_allclose(rg, tg, rtol=1e-6, atol=1e-9)
    rparams = dict(r_mod.named_parameters())
    for n, p in t_mod.named_parameters():
        r, t = rparams[n].grad, p.grad
        if r is None and t is None:
            continue
        r = np.zeros(tuple(p.shape)) if r is None else r.numpy()
        t = np.zeros(tuple(p.shape)) if t is None else t.numpy()
        np.testing.assert_allclose(r, t, rtol=1e-6, atol=1e-9, err_msg=n)


def layer_kwargs(m, norm_first, batch_first, activation):
    act = {"relu": "relu", "gelu": "gelu", "callable": m.nn.functional.silu}[activation]
    return dict(dim_feedforward=12, dropout=0.0, activation=act, norm_first=norm_first, batch_first=batch_first)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu", "callable"])
def test_decoder_layer(norm_first, batch_first, activation):
    tm, rm = pair(lambda m: m.nn.TransformerDecoderLayer(8, 2, **layer_kwargs(m, norm_first, batch_first, activation)),
                  lambda m: m.nn.TransformerDecoderLayer(8, 2, **layer_kwargs(m, norm_first, batch_first, activation)))
    tgt, mem = torch.randn(5, 3, 8, dtype=torch.float64), torch.randn(4, 3, 8, dtype=torch.float64)
    if batch_first:
        tgt, mem = tgt.transpose(0, 1).contiguous(), mem.transpose(0, 1).contiguous()
    check(tm, rm, [tgt, mem])
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    kpm = torch.tensor([[False, False, False, True]] * 3)
    check(tm, rm, [tgt, mem], dict(tgt_mask=mask, memory_key_padding_mask=kpm, tgt_is_causal=True))


def test_decoder_layer_unbatched_and_bool_masks():
    tm, rm = pair(lambda m: m.nn.TransformerDecoderLayer(6, 3, dim_feedforward=10, dropout=0.0),
                  lambda m: m.nn.TransformerDecoderLayer(6, 3, dim_feedforward=10, dropout=0.0))
    tgt, mem = torch.randn(4, 6, dtype=torch.float64), torch.randn(3, 6, dtype=torch.float64)
    mem_mask = torch.tensor([[False, True, False]] * 4)
    check(tm, rm, [tgt, mem], dict(memory_mask=mem_mask))


def test_decoder_stack_with_norm_detects_causal_mask():
    build = (lambda m: m.nn.TransformerDecoder(m.nn.TransformerDecoderLayer(8, 4, 16, 0.0), 2, m.nn.LayerNorm(8)))
    tm, rm = pair(build, build)
    tgt, mem = torch.randn(5, 2, 8, dtype=torch.float64), torch.randn(3, 2, 8, dtype=torch.float64)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    check(tm, rm, [tgt, mem], dict(tgt_mask=mask))
    assert len(rm.layers) == 2 and rm.layers[0] is not rm.layers[1]


@pytest.mark.parametrize("batch_first,norm_first", [(False, False), (True, True)])
def test_transformer(batch_first, norm_first):
    def build(m):
        return m.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16,
                                dropout=0.0, batch_first=batch_first, norm_first=norm_first)
    tm, rm = pair(build, build)
    assert sorted(tm.state_dict()) == sorted(rm.state_dict())
    src, tgt = torch.randn(2, 6, 8, dtype=torch.float64), torch.randn(2, 4, 8, dtype=torch.float64)
    if not batch_first:
        src, tgt = src.transpose(0, 1).contiguous(), tgt.transpose(0, 1).contiguous()
    check(tm, rm, [src, tgt])
    mask = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    kpm = torch.tensor([[False] * 5 + [True], [False] * 6])
    check(tm, rm, [src, tgt], dict(tgt_mask=mask, src_key_padding_mask=kpm, memory_key_padding_mask=kpm))


def test_generate_square_subsequent_mask():
    assert rill.nn.Transformer.generate_square_subsequent_mask(4).tolist() == (
        torch.nn.Transformer.generate_square_subsequent_mask(4).tolist())
    assert rill.nn.Transformer.generate_square_subsequent_mask(3, dtype=rill.float64).dtype == rill.float64


def test_transformer_bad_inputs():
    rm = rill.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)
    with pytest.raises(RuntimeError, match="batch number"):
        rm(rill.randn(5, 2, 8), rill.randn(4, 3, 8))
    with pytest.raises(RuntimeError, match="feature number"):
        rm(rill.randn(5, 2, 8), rill.randn(4, 2, 6))
    with pytest.raises(RuntimeError, match="activation"):
        rill.nn.TransformerDecoderLayer(8, 2, activation="tanh")


@pytest.mark.parametrize("add_bias_kv,add_zero_attn", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("masks", [False, True])
def test_multihead_attention_bias_kv_zero_attn(add_bias_kv, add_zero_attn, masks):
    def build(m):
        return m.nn.MultiheadAttention(6, 2, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn)
    tm, rm = pair(build, build)
    assert sorted(tm.state_dict()) == sorted(rm.state_dict())
    q, kv = torch.randn(4, 2, 6, dtype=torch.float64), torch.randn(3, 2, 6, dtype=torch.float64)
    kwargs = {}
    if masks:
        kwargs = dict(attn_mask=torch.tensor([[False, True, False]] * 4),
                      key_padding_mask=torch.tensor([[False, False, True], [False, False, False]]))

    def first(m):
        return lambda *a, **k: m(*a, **k)[0]
    check(first(tm), first(rm), [q, kv, kv], kwargs, (tm, rm))
    tm.zero_grad()
    rm.zero_grad()
    check(lambda *a, **k: tm(*a, **k)[1], lambda *a, **k: rm(*a, **k)[1], [q, kv, kv], kwargs, (tm, rm))
