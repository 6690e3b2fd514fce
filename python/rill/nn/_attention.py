"""Attention: F.scaled_dot_product_attention (one fused kernel where it applies, 16-bit inputs in float32 as
PyTorch computes them, else composed) and F.multi_head_attention_forward, the computation behind
nn.MultiheadAttention: project query, key and value, split them into num_heads heads, attend (one fused
scaled_dot_product_attention when no weights are returned and no dropout is drawn, else softmax and matmul) and
project the heads back. Inputs are (L, N, E), or (L, E) unbatched."""
import math

import rill
from rill import _C
from rill.amp.autocast_mode import _lower_precision_policy
from rill.nn import functional as F

_nn = _C._nn


def _fused_attention_applies(query, key, value, attn_mask, dropout_p):
    """True where the one-kernel op rill._sdpa computes the call: no dropout, float32 or float64 operands of
    one dtype with the same leading dims and no empty dim, and a bool mask or one of their dtype that
    broadcasts to the scores (..., L, S)."""
    if dropout_p > 0.0 or query.dtype not in (rill.float32, rill.float64):
        return False
    if key.dtype != query.dtype or value.dtype != query.dtype or key.shape[-1] != query.shape[-1]:
        return False
    lead = query.shape[:-2]
    if key.shape[:-2] != lead or value.shape[:-2] != lead or value.shape[-2] != key.shape[-2]:
        return False
    if 0 in query.shape or 0 in key.shape or 0 in value.shape:
        return False
    if attn_mask is None:
        return True
    if attn_mask.dtype != rill.bool and attn_mask.dtype != query.dtype:
        return False
    scores = (*lead, query.shape[-2], key.shape[-2])
    mask = attn_mask.shape
    return len(mask) <= len(scores) and all(m in (1, s) for m, s in zip(reversed(mask), reversed(scores)))


def _sdpa_16_bit(query, key, value, attn_mask, dropout_p, is_causal, scale):
    """float16/bfloat16 attention in float32, as PyTorch's CPU kernels: for 4-D inputs without dropout its
    flash kernel, whose unnormalised probabilities exp(s - max) are rounded to the 16-bit dtype before they
    meet value (the row sums are not); otherwise its math path, all in float32. The result is rounded once."""
    dtype = query.dtype
    q, k, v = query.float(), key.float(), value.float()
    mask = attn_mask.float() if attn_mask is not None and attn_mask.is_floating_point() else attn_mask
    if dropout_p > 0.0 or not query.ndim == key.ndim == value.ndim == 4:
        return scaled_dot_product_attention(q, k, v, mask, dropout_p, is_causal, scale).to(dtype)
    scores = (q @ k.transpose(-2, -1)) * scale
    if is_causal:
        mask = rill.arange(q.shape[-2]).unsqueeze(1) >= rill.arange(k.shape[-2]).unsqueeze(0)
    if mask is not None:
        scores = rill.where(mask, scores, -math.inf) if mask.dtype == rill.bool else scores + mask
    top = scores.amax(-1, keepdim=True)
    seen = top > -math.inf  # a row with every position masked gives zeros, as PyTorch's attention does
    weights = rill.exp(scores - rill.where(seen, top, 0.0))
    out = (weights.to(dtype).float() @ v) / weights.sum(-1, keepdim=True)
    return rill.where(seen, out, 0.0).to(dtype)


@_lower_precision_policy
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value, scale = 1/sqrt(E) by default; a bool attn_mask keeps the
    True positions, a float one is added; is_causal masks the upper triangle. One fused kernel forward and
    backward (rill._sdpa, Note [Fused attention] in src/rill/kernels/cpu/attention.cpp) where it applies;
    otherwise (dropout, broadcast leading dims) composed from matmul, the softmax kernel and dropout. float16
    and bfloat16 are computed in float32 as PyTorch computes them (_sdpa_16_bit)."""
    if enable_gqa:
        raise NotImplementedError("[scaled_dot_product_attention] enable_gqa is not supported")
    if is_causal and attn_mask is not None:
        raise RuntimeError("[scaled_dot_product_attention] Explicit attn_mask should not be set when "
                           "is_causal=True")
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise RuntimeError("[scaled_dot_product_attention] expected query, key and value of at least 2 dims")
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1]) if query.shape[-1] else 1.0
    if query.dtype in (rill.float16, rill.bfloat16):
        return _sdpa_16_bit(query, key, value, attn_mask, dropout_p, is_causal, scale)
    if _fused_attention_applies(query, key, value, attn_mask, dropout_p):
        return _C._sdpa(query, key, value, attn_mask, float(scale), bool(is_causal))[0]
    scores = (query * scale) @ key.transpose(-2, -1)
    if is_causal:
        length, source = query.shape[-2], key.shape[-2]
        attn_mask = rill.arange(length).unsqueeze(1) >= rill.arange(source).unsqueeze(0)
    if attn_mask is not None:
        if attn_mask.dtype == rill.bool:
            scores = rill.where(attn_mask, scores, -math.inf)
        else:
            scores = scores + attn_mask
    attn = _nn.softmax(scores, -1, None)
    if attn_mask is not None:
        # A row with every position masked gives zeros, as PyTorch's attention does, not softmax's NaNs.
        attn = rill.where(scores.amax(-1, keepdim=True) > -math.inf, attn, 0.0)
    if dropout_p > 0.0:
        attn = _nn.dropout(attn, dropout_p, True)
    return attn @ value


def _float_mask(mask, dtype, name):
    """A boolean mask (True = masked out) as an additive float mask; a float mask as it is."""
    if mask is None:
        return None
    if mask.dtype == rill.bool:
        return rill.where(mask, rill.full(tuple(mask.shape), float("-inf"), dtype=dtype),
                          rill.zeros(*mask.shape, dtype=dtype))
    if not mask.is_floating_point():
        raise TypeError(f"only bool and floating types of {name} are supported")
    return mask


def _causal_mask(tgt_len, src_len):
    return rill.arange(src_len).unsqueeze(0) > rill.arange(tgt_len).unsqueeze(1)


def _heads(x, bsz, h, hd, static, name):
    """(S, N, E) -> (N*H, S, hd), or the given static (N*H, S, hd) tensor instead."""
    if static is None:
        return x.reshape(x.shape[0], bsz * h, hd).transpose(0, 1)
    if static.dim() != 3 or static.shape[0] != bsz * h or static.shape[2] != hd:
        raise ValueError(f"multi_head_attention_forward: {name} must have shape (N*num_heads, S, head_dim) = "
                         f"({bsz * h}, S, {hd}), got {tuple(static.shape)}")
    return static


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """(attention output (L, N, E), attention weights (N, L, S) averaged over heads, or (N, H, L, S), or None
    unless need_weights). bias_k/bias_v append one key and value, add_zero_attn a zero one; static_k/static_v
    (N*H, S, E/H) replace the projected keys and values."""
    is_batched = query.dim() == 3
    if query.dim() not in (2, 3) or key.dim() != query.dim() or value.dim() != query.dim():
        raise ValueError("multi_head_attention_forward: query, key and value must all be (L, N, E) or all "
                         f"(L, E), got {query.dim()}, {key.dim()} and {value.dim()} dimensions")
    if not is_batched:
        query, key, value = (x.unsqueeze(1) for x in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    h = num_heads
    hd = embed_dim // h
    if hd * h != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {h}")
    e = embed_dim
    if use_separate_proj_weight:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise ValueError("multi_head_attention_forward: use_separate_proj_weight needs q_proj_weight, "
                             "k_proj_weight and v_proj_weight")
        ws = (q_proj_weight, k_proj_weight, v_proj_weight)
    else:
        if in_proj_weight is None:
            raise ValueError("multi_head_attention_forward: in_proj_weight is None; pass it, or "
                             "use_separate_proj_weight=True with q/k/v_proj_weight")
        ws = (in_proj_weight[0:e], in_proj_weight[e:2 * e], in_proj_weight[2 * e:3 * e])
    bs = (None,) * 3 if in_proj_bias is None else (in_proj_bias[0:e], in_proj_bias[e:2 * e], in_proj_bias[2 * e:])
    q = F.linear(query, ws[0], bs[0])
    k = F.linear(key, ws[1], bs[1])
    v = F.linear(value, ws[2], bs[2])
    src_len = key.shape[0]

    # bias_k / bias_v append one more key and value, add_zero_attn a zero one per head; the masks get a
    # column (not masked) for each.
    extra = 0
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise ValueError("multi_head_attention_forward: bias_k/bias_v cannot be added to static_k/static_v")
        k = rill.cat([k, bias_k.reshape(1, 1, e).expand(1, bsz, e)])
        v = rill.cat([v, bias_v.reshape(1, 1, e).expand(1, bsz, e)])
        extra += 1
    elif (bias_k is None) != (bias_v is None):
        raise ValueError("multi_head_attention_forward: give both bias_k and bias_v, or neither")
    q = q.reshape(tgt_len, bsz * h, hd).transpose(0, 1)
    k = _heads(k, bsz, h, hd, static_k, "static_k")
    v = _heads(v, bsz, h, hd, static_v, "static_v")
    if add_zero_attn:
        k = rill.cat([k, rill.zeros((bsz * h, 1, hd), dtype=k.dtype)], dim=1)
        v = rill.cat([v, rill.zeros((bsz * h, 1, hd), dtype=v.dtype)], dim=1)
        extra += 1
    if static_k is not None:
        src_len = static_k.shape[1]
    if extra and is_causal and attn_mask is None:
        attn_mask = _causal_mask(tgt_len, src_len)
    if extra:
        attn_mask = None if attn_mask is None else F.pad(_float_mask(attn_mask, q.dtype, "attn_mask"), (0, extra))
        key_padding_mask = None if key_padding_mask is None else F.pad(
            _float_mask(key_padding_mask, q.dtype, "key_padding_mask"), (0, extra))
    src_len = k.shape[1]

    dropout = dropout_p if training else 0.0
    # Without weights to return or dropout to draw, attention is one fused op (F.scaled_dot_product_attention).
    fused = not need_weights and dropout == 0.0
    causal = fused and is_causal and attn_mask is None and key_padding_mask is None
    if is_causal and attn_mask is None and not causal:
        attn_mask = _causal_mask(tgt_len, src_len)
    mask = _float_mask(attn_mask, q.dtype, "attn_mask")
    if mask is not None and mask.dim() == 3:
        if tuple(mask.shape) != (bsz * h, tgt_len, src_len) and tuple(mask.shape) != (1, tgt_len, src_len):
            raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(mask.shape)}, but should be "
                               f"{(bsz * h, tgt_len, src_len)}.")
    elif mask is not None and tuple(mask.shape) != (tgt_len, src_len):
        raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(mask.shape)}, but should be "
                           f"{(tgt_len, src_len)}.")
    if key_padding_mask is not None:
        kpm = _float_mask(key_padding_mask, q.dtype, "key_padding_mask")
        kpm = kpm.reshape(bsz, 1, 1, src_len).expand(bsz, h, 1, src_len).reshape(bsz * h, 1, src_len)
        mask = kpm if mask is None else mask + kpm

    scale = math.sqrt(1.0 / float(hd))
    if fused:
        out = F.scaled_dot_product_attention(q, k, v, mask, is_causal=causal, scale=scale)
    else:
        scores = (q * scale).matmul(k.transpose(-2, -1))
        if mask is not None:
            scores = scores + mask
        attn = F.softmax(scores, dim=-1)
        if dropout > 0.0:
            attn = F.dropout(attn, p=dropout)
        out = attn.matmul(v)  # (N*H, L, hd)
    out = out.transpose(0, 1).contiguous().reshape(tgt_len * bsz, embed_dim)
    out = F.linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if not is_batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = attn.reshape(bsz, h, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(1)
    if not is_batched:
        weights = weights.squeeze(0)
    return out, weights
