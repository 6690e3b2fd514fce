"""How modules reach rill.nn.functional.

`from rill.nn.modules import _functional as F` then `F.conv2d(...)`: the name resolves (once, then cached) to
rill.nn.functional's function when that module has it, else to a composite written below from the ops rill
already has (matmul, exp, log, where, reductions, rand, slicing). The composites are a bridge for functions that the
op library (issue 5) has not landed yet; once rill.nn.functional defines a name, its version is used and the
composite here is dead code to delete. A name with neither raises NotImplementedError naming the function.
"""
import math

import rill

def _from_functional(name):
    try:
        from rill.nn import functional
    except ImportError:
        return None
    return getattr(functional, name, None)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    fn = _from_functional(name)
    if fn is None:
        fn = _COMPOSITES.get(name)
    if fn is None:
        def missing(*args, **kwargs):
            raise NotImplementedError(f"rill.nn.functional.{name} is not implemented in this build of rill "
                                      "(it comes with the op library, issue 5)")
        return missing  # not cached: a later import of rill.nn.functional may provide it
    globals()[name] = fn
    return fn


def has(name):
    """True when rill.nn.functional.name (or a composite of it) is available."""
    return _from_functional(name) is not None or name in _COMPOSITES


# --- composites (used only while rill.nn.functional lacks the name) ---

def _linear(input, weight, bias=None):
    out = input.matmul(weight.t())
    return out if bias is None else out + bias


def _leaky_relu(input, negative_slope=0.01, inplace=False):
    return rill.where(input > 0, input, input * negative_slope)


def _silu(input, inplace=False):
    return input * rill.sigmoid(input)


def _softmax(input, dim=None, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    e = (input - input.amax(dim, keepdim=True).detach()).exp()
    return e / e.sum(dim, keepdim=True)


def _log_softmax(input, dim=None, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    shifted = input - input.amax(dim, keepdim=True).detach()
    return shifted - shifted.exp().sum(dim, keepdim=True).log()


def _reduce(loss, reduction, what):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    return _reduce((input - target) ** 2, reduction, "mse_loss")


def _l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _reduce((input - target).abs(), reduction, "l1_loss")


def _smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    d = (input - target).abs()
    if beta == 0:
        return _reduce(d, reduction, "smooth_l1_loss")
    return _reduce(rill.where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction, "smooth_l1_loss")


def _binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                      reduction="mean", pos_weight=None):
    # (1 - y) x + (1 + (pw - 1) y) (log(1 + exp(-|x|)) + max(-x, 0)), PyTorch's stable form
    log_sig_neg = (1 + (-input.abs()).exp()).log() + rill.maximum(-input, rill.zeros_like(input))
    if pos_weight is not None:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * log_sig_neg
    else:
        loss = (1 - target) * input + log_sig_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def _one_hot_mask(target, num_classes):
    classes = rill.arange(num_classes).reshape(*([1, num_classes] + [1] * (target.ndim - 1)))
    return (target.unsqueeze(1) == classes)


def _nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    if input.ndim == 1:
        return _nll_loss(input.unsqueeze(0), target.reshape(1), weight, None, ignore_index, None, reduction)
    c = input.shape[1]
    mask = _one_hot_mask(target, c).to(input.dtype)
    w = mask if weight is None else mask * weight.reshape(*([1, c] + [1] * (input.ndim - 2)))
    valid = (target != ignore_index).to(input.dtype)
    picked = -(input * w).sum(1) * valid
    if reduction == "none":
        return picked
    if reduction == "sum":
        return picked.sum()
    if reduction != "mean":
        raise ValueError(f"{reduction} is not a valid value for reduction")
    denom = (w.sum(1) * valid).sum()
    return picked.sum() / denom


def _cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                   reduction="mean", label_smoothing=0.0):
    if target.is_floating_point():
        raise NotImplementedError("[cross_entropy] class-probability targets need rill.nn.functional.cross_entropy "
                                  "(issue 5)")
    logp = _log_softmax(input, 1 if input.ndim > 1 else 0)
    if label_smoothing == 0.0:
        return _nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    raise NotImplementedError("[cross_entropy] label_smoothing needs rill.nn.functional.cross_entropy (issue 5)")


def _dropout(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    keep = (rill.rand(*input.shape) >= p).to(input.dtype)
    return input * keep * (1.0 / (1.0 - p))


def _layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    dims = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    mean = input.mean(dims, keepdim=True)
    xc = input - mean
    var = (xc * xc).mean(dims, keepdim=True)
    out = xc / (var + eps).sqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def _batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    dims = (0,) + tuple(range(2, input.ndim))
    shape = [1, input.shape[1]] + [1] * (input.ndim - 2)
    if training:
        n = input.numel() // input.shape[1]
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{tuple(input.shape)}")
        mean = input.mean(dims, keepdim=True)
        xc = input - mean
        var = (xc * xc).mean(dims, keepdim=True)
        if running_mean is not None:
            with rill.no_grad():
                running_mean.mul_(1 - momentum).add_(mean.reshape(-1).detach() * momentum)
                running_var.mul_(1 - momentum).add_(var.reshape(-1).detach() * (momentum * n / (n - 1)))
        out = xc / (var + eps).sqrt()
    else:
        out = (input - running_mean.reshape(*shape)) / (running_var.reshape(*shape) + eps).sqrt()
    if weight is not None:
        out = out * weight.reshape(*shape)
    if bias is not None:
        out = out + bias.reshape(*shape)
    return out


def _group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    n, c = input.shape[0], input.shape[1]
    x = input.reshape(n, num_groups, -1)
    mean = x.mean(2, keepdim=True)
    xc = x - mean
    var = (xc * xc).mean(2, keepdim=True)
    out = (xc / (var + eps).sqrt()).reshape(*input.shape)
    shape = [1, c] + [1] * (input.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(*shape)
    if bias is not None:
        out = out + bias.reshape(*shape)
    return out


def _gelu(input, approximate="none"):
    if approximate == "tanh":
        return 0.5 * input * (1 + rill.tanh(math.sqrt(2 / math.pi) * (input + 0.044715 * input ** 3)))
    raise NotImplementedError("[gelu] the exact (erf) form needs rill.nn.functional.gelu (issue 5); "
                              "approximate='tanh' works")


def _embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
               sparse=False):
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("[embedding] max_norm, scale_grad_by_freq and sparse need "
                                  "rill.nn.functional.embedding (issue 5)")
    num = weight.shape[0]
    onehot = (input.unsqueeze(-1) == rill.arange(num)).to(weight.dtype)
    if padding_idx is not None:
        keep = (rill.arange(num) != (padding_idx % num)).to(weight.dtype)
        return onehot.matmul(weight * keep.unsqueeze(1)) + onehot.matmul(weight.detach() * (1 - keep).unsqueeze(1))
    return onehot.matmul(weight)


# conv / pool: sums of strided slices times weight slices, zero padding by 0/1 matrices (all differentiable)

def _pair(v, n=2):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n


def _pad_matrix(n, before, after, dtype):
    """An (n, before + n + after) 0/1 matrix: x @ P pads x's last dim with zeros."""
    rows = rill.arange(n).unsqueeze(1) + before
    return (rows == rill.arange(n + before + after).unsqueeze(0)).to(dtype)


def _zero_pad2d(x, top, bottom, left, right):
    if left or right:
        x = x.matmul(_pad_matrix(x.shape[-1], left, right, x.dtype))
    if top or bottom:
        x = _pad_matrix(x.shape[-2], top, bottom, x.dtype).t().matmul(x)
    return x


def _windows(x, kernel, stride, dilation):
    """(i, j, slice of x) for every kernel offset: x[..., i*dh :: sh, j*dw :: sw] cut to the output size."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    h, w = x.shape[-2], x.shape[-1]
    ho = (h - dh * (kh - 1) - 1) // sh + 1
    wo = (w - dw * (kw - 1) - 1) // sw + 1
    if ho <= 0 or wo <= 0:
        raise RuntimeError(f"Calculated output size ({ho}x{wo}) is too small for input of size ({h}x{w})")
    for i in range(kh):
        for j in range(kw):
            yield i, j, x[:, :, i * dh: i * dh + sh * (ho - 1) + 1: sh, j * dw: j * dw + sw * (wo - 1) + 1: sw]


def _grouped_weight(weight, groups, in_channels):
    """The (O, C, kh, kw) block-diagonal weight equivalent to weight (O, C/groups, kh, kw) with groups."""
    o, cg = weight.shape[0], weight.shape[1]
    og = o // groups
    w = weight.permute(0, 2, 3, 1)  # (O, kh, kw, C/g)
    full = None
    for g in range(groups):
        place = (rill.arange(cg).unsqueeze(1) + g * cg == rill.arange(in_channels).unsqueeze(0)).to(weight.dtype)
        rows = ((rill.arange(o) >= g * og) * (rill.arange(o) < (g + 1) * og)).to(weight.dtype).reshape(o, 1, 1, 1)
        term = w.matmul(place) * rows
        full = term if full is None else full + term
    return full.permute(0, 3, 1, 2)


def _conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if groups != 1:
        weight = _grouped_weight(weight, groups, input.shape[-3])
    if input.ndim == 3:
        return _conv2d(input.unsqueeze(0), weight, bias, stride, padding, dilation).squeeze(0)
    kernel = (weight.shape[2], weight.shape[3])
    stride, dilation = _pair(stride), _pair(dilation)
    if padding == "valid":
        pads = (0, 0, 0, 0)
    elif padding == "same":
        th, tw = dilation[0] * (kernel[0] - 1), dilation[1] * (kernel[1] - 1)
        pads = (th // 2, th - th // 2, tw // 2, tw - tw // 2)
    else:
        ph, pw = _pair(padding)
        pads = (ph, ph, pw, pw)
    x = _zero_pad2d(input, *pads)
    out = None
    for i, j, patch in _windows(x, kernel, stride, dilation):
        term = patch.permute(0, 2, 3, 1).matmul(weight[:, :, i, j].t())
        out = term if out is None else out + term
    out = out.permute(0, 3, 1, 2)
    return out if bias is None else out + bias.reshape(1, -1, 1, 1)


def _conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if isinstance(padding, str):
        pad2 = padding
    else:
        pad2 = (0, _pair(padding, 1)[0])
    out = _conv2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, (1, _pair(stride, 1)[0]), pad2,
                  (1, _pair(dilation, 1)[0]), groups)
    return out.squeeze(-2)


def _max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    if ceil_mode or return_indices:
        raise NotImplementedError("[max_pool2d] ceil_mode and return_indices need rill.nn.functional.max_pool2d "
                                  "(issue 5)")
    kernel = _pair(kernel_size)
    stride = kernel if stride is None or stride == [] else _pair(stride)
    ph, pw = _pair(padding)
    x = input
    if ph or pw:  # pad with -inf: zeros, then where() on a padded mask
        mask = _zero_pad2d(rill.ones_like(input), ph, ph, pw, pw) > 0.5
        x = rill.where(mask, _zero_pad2d(input, ph, ph, pw, pw), float("-inf"))
    out = None
    for _, _, patch in _windows(x, kernel, stride, _pair(dilation)):
        out = patch if out is None else rill.maximum(out, patch)
    return out


def _avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                divisor_override=None):
    ph, pw = _pair(padding)
    if ceil_mode or ((ph or pw) and not count_include_pad):
        raise NotImplementedError("[avg_pool2d] ceil_mode and count_include_pad=False need "
                                  "rill.nn.functional.avg_pool2d (issue 5)")
    kernel = _pair(kernel_size)
    stride = kernel if stride is None or stride == [] else _pair(stride)
    x = _zero_pad2d(input, ph, ph, pw, pw)
    out = None
    for _, _, patch in _windows(x, kernel, stride, (1, 1)):
        out = patch if out is None else out + patch
    return out * (1.0 / (divisor_override or kernel[0] * kernel[1]))


def _adaptive_matrix(n_in, n_out, dtype):
    """(n_out, n_in): row i averages PyTorch's adaptive bin [floor(i*n/o), ceil((i+1)*n/o))."""
    import numpy as np
    m = np.zeros((n_out, n_in), dtype=np.float64)
    for i in range(n_out):
        start, end = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
        m[i, start:end] = 1.0 / (end - start)
    return rill.tensor(m).to(dtype)


def _adaptive_avg_pool2d(input, output_size):
    oh, ow = _pair(output_size)
    oh = input.shape[-2] if oh is None else oh
    ow = input.shape[-1] if ow is None else ow
    x = input.matmul(_adaptive_matrix(input.shape[-1], ow, input.dtype).t())
    return _adaptive_matrix(input.shape[-2], oh, input.dtype).matmul(x)


_COMPOSITES = {
    "linear": _linear,
    "relu": lambda input, inplace=False: rill.relu(input),
    "sigmoid": rill.sigmoid,
    "tanh": rill.tanh,
    "leaky_relu": _leaky_relu,
    "silu": _silu,
    "gelu": _gelu,
    "softmax": _softmax,
    "log_softmax": _log_softmax,
    "mse_loss": _mse_loss,
    "l1_loss": _l1_loss,
    "smooth_l1_loss": _smooth_l1_loss,
    "binary_cross_entropy_with_logits": _binary_cross_entropy_with_logits,
    "nll_loss": _nll_loss,
    "cross_entropy": _cross_entropy,
    "dropout": _dropout,
    "layer_norm": _layer_norm,
    "batch_norm": _batch_norm,
    "group_norm": _group_norm,
    "embedding": _embedding,
    "conv1d": _conv1d,
    "conv2d": _conv2d,
    "max_pool2d": _max_pool2d,
    "avg_pool2d": _avg_pool2d,
    "adaptive_avg_pool2d": _adaptive_avg_pool2d,
}
