"""rill.nn.functional: torch.nn.functional's names, signatures and defaults.

softmax, log_softmax, layer_norm, linear, embedding, dropout and nll_loss run ops with dedicated kernels
(rill._C._nn); convolution and pooling run oneDNN-backed ops whose gradients are ops of their own
(src/rill/autograd/conv.cpp); the activations are elementwise ops with backward ops; the rest are
composed here from those and the Tensor ops, so their gradients come from the ops they are made of.
"""
import builtins
import math
import warnings

import numpy as np

import rill
from rill import _C
from rill._C import Tensor
from rill.amp.autocast_mode import _lower_precision_policy

_nn = _C._nn

# The ops whose signature makes them rill.nn.functional functions too (OpFlags::nn_functional): the
# activations relu, sigmoid, tanh, gelu, silu, softplus, leaky_relu, elu, hardtanh, hardshrink, ...
globals().update(_C._schema_nn_functional)

# ---------------------------------------------------------------------------------------------------------
# softmax
# ---------------------------------------------------------------------------------------------------------


def _softmax_dim(name, ndim):
    # PyTorch's legacy choice when dim is omitted, with its warning.
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(input) / sum(exp(input)) along dim (computed in dtype when given)."""
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim)
    return _nn.softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log(softmax(input)) along dim, computed without forming softmax (numerically stable)."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim)
    return _nn.log_softmax(input, dim, dtype)


# ---------------------------------------------------------------------------------------------------------
# linear, embedding, one_hot
# ---------------------------------------------------------------------------------------------------------


def linear(input, weight, bias=None):
    """input @ weight.T + bias."""
    return _nn.linear(input, weight, bias)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of weight picked by the integer tensor input; row padding_idx gets no gradient. max_norm renormalises
    (in place, as PyTorch does) the looked-up rows whose norm_type-norm exceeds it; scale_grad_by_freq divides
    each row's gradient by how often its index occurs in input."""
    if sparse:
        raise NotImplementedError("[embedding] sparse=True returns a sparse gradient, and rill has no sparse "
                                  "tensors (no issue plans them); use sparse=False for a dense gradient")
    rows = weight.shape[0] if weight.ndim >= 1 else 0
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < rows, "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -rows, "Padding_idx must be within num_embeddings"
            padding_idx = rows + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        with rill.no_grad():
            looked_up = input.flatten().unique()
            picked = weight[looked_up]
            norms = picked.norm(p=norm_type, dim=1, keepdim=True)
            weight[looked_up] = picked * rill.where(norms > max_norm, max_norm / (norms + 1e-7),
                                                    rill.ones_like(norms))
    out = _nn.embedding(input, weight, padding_idx)
    if scale_grad_by_freq and out.requires_grad:
        with rill.no_grad():
            counts = rill.zeros(rows, dtype=out.dtype).index_add_(0, input.flatten(),
                                                                   rill.ones(input.numel(), dtype=out.dtype))
            per_position = (1.0 / counts[input]).unsqueeze(-1)
        out.register_hook(lambda g: g * per_position)
    return out


def one_hot(input, num_classes=-1):
    """int64 tensor of shape input.shape + (num_classes,) with a 1 at each value's position. num_classes=-1
    infers it from the largest value (a sync point)."""
    if not isinstance(input, Tensor) or input.dtype != rill.int64:
        raise RuntimeError("[one_hot] one_hot is only applicable to index tensor of type LongTensor.")
    if input.numel() > 0:
        if input.min().item() < 0:
            raise RuntimeError("[one_hot] Class values must be non-negative.")
        top = input.max().item()
        if num_classes == -1:
            num_classes = top + 1
        elif top >= num_classes:
            raise RuntimeError("[one_hot] Class values must be smaller than num_classes.")
    elif num_classes == -1:
        raise RuntimeError("[one_hot] Can not infer total number of classes from empty tensor.")
    return (input.unsqueeze(-1) == rill.arange(num_classes)).long()


# ---------------------------------------------------------------------------------------------------------
# normalization
# ---------------------------------------------------------------------------------------------------------


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing dims normalized_shape (biased variance), then scale and shift."""
    return _nn.layer_norm(input, normalized_shape, weight, bias, eps)


def _channel_view(t, ndim):
    # A per-channel (C,) tensor shaped to broadcast against (N, C, *).
    return t.reshape([1, -1] + [1] * (ndim - 2))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise each group of channels of each sample (the layer_norm kernel on (N, G, rest)), then scale
    and shift per channel."""
    if input.dtype in (rill.float16, rill.bfloat16):  # computed in float32, as PyTorch's CPU kernel
        up = (lambda t: t.float() if t is not None and t.dtype in (rill.float16, rill.bfloat16) else t)
        return group_norm(input.float(), num_groups, up(weight), up(bias), eps).to(input.dtype)
    if input.ndim < 2:
        raise RuntimeError(f"[group_norm] Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    n, c = input.shape[0], input.shape[1]
    if num_groups <= 0 or c % num_groups != 0:
        raise RuntimeError(f"[group_norm] Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {list(input.shape)} and num_groups={num_groups}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != (c,):
            raise RuntimeError(f"[group_norm] Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(p.shape)} and input of shape "
                               f"{list(input.shape)}")
    grouped = input.reshape(n, num_groups, (input.numel() // n) // num_groups if n else c // num_groups)
    y = _nn.layer_norm(grouped, (grouped.shape[-1],), None, None, eps).reshape(tuple(input.shape))
    if weight is not None:
        y = y * _channel_view(weight, input.ndim)
    if bias is not None:
        y = y + _channel_view(bias, input.ndim)
    return y


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-5):
    """Normalise each channel (dim 1) over the batch and spatial dims. Training uses the batch statistics
    and updates running_mean/running_var in place (unbiased variance, with momentum); eval uses them."""
    if input.dtype in (rill.float16, rill.bfloat16):  # computed in float32, as PyTorch's CPU kernel
        up = (lambda t: t.float() if t is not None and t.dtype in (rill.float16, rill.bfloat16) else t)
        return batch_norm(input.float(), running_mean, running_var, up(weight), up(bias), training, momentum,
                          eps).to(input.dtype)
    if input.ndim < 2 and not (input.ndim == 1 and input.numel() == 0):
        raise ValueError(f"[batch_norm] expected 2D or more input (got {input.ndim}D input)")
    c = input.shape[1] if input.ndim > 1 else 0  # an empty 1-D input has no channels, as in PyTorch
    if c == 0 and input.ndim == 1:
        for name, p in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                        ("bias", bias)):
            if p is not None and p.numel() != 0:
                raise RuntimeError(f"[batch_norm] {name} should contain 0 elements not {p.numel()}")
        return input.clone()
    dims = [0] + list(range(2, input.ndim))
    count = input.numel() // c if c else 0
    for name, p in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if p is not None and p.numel() != c:
            raise RuntimeError(f"[batch_norm] {name} should contain {c} elements not {p.numel()}")
    if training and count == 0 and input.numel() == 0 and c > 0:
        # an empty batch, as PyTorch: an empty result, the running statistics untouched, zero gradients
        y = input
        if weight is not None:
            y = y * _channel_view(weight, input.ndim)
        return y if bias is None else y + _channel_view(bias, input.ndim)
    if training:
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{list(input.shape)}")
        mean = input.mean(dims, keepdim=True)
        centered = input - mean
        var = (centered * centered).mean(dims, keepdim=True)
        with rill.no_grad():
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(mean.reshape(-1).to(running_mean.dtype) * momentum)
            if running_var is not None:
                unbiased = var.reshape(-1) * (count / (count - 1))
                running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype) * momentum)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("[batch_norm] running_mean and running_var must be defined in evaluation mode")
        centered = input - _channel_view(running_mean, input.ndim)
        var = _channel_view(running_var, input.ndim)
    y = centered / (var + eps).sqrt()
    if weight is not None:
        y = y * _channel_view(weight, input.ndim)
    if bias is not None:
        y = y + _channel_view(bias, input.ndim)
    return y


# ---------------------------------------------------------------------------------------------------------
# dropout
# ---------------------------------------------------------------------------------------------------------


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1/(1-p) (training only). As PyTorch on CPU:
    input * (empty_like(input).bernoulli_(1 - p) / (1 - p)), the mask from rill's MT19937 generator, so
    rill.manual_seed gives PyTorch's mask."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    from rill._generator import tracing_graph
    if training and 0.0 < p < 1.0 and input.dtype.is_floating_point and not tracing_graph():
        from rill._random import _bernoulli_
        noise = _bernoulli_(rill.empty(*input.shape, dtype=input.dtype), 1.0 - p)
        out = input * (noise / (1.0 - p))
    else:
        out = _nn.dropout(input, p, training)
    if inplace and out is not input:
        return input.copy_(out)
    return out


# ---------------------------------------------------------------------------------------------------------
# pad, interpolate
# ---------------------------------------------------------------------------------------------------------


def _pad_constant(input, pad, value):
    shape = list(input.shape)
    crop = [builtins.slice(None)] * input.ndim
    place = [builtins.slice(None)] * input.ndim
    for i in range(len(pad) // 2):
        d = input.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        size = shape[d] + left + right
        if size < 0:
            raise RuntimeError(f"[pad] The input size {shape[d]}, plus negative padding {left} and {right} "
                               f"resulted in a negative output size, which is invalid. Check dimension {d} of "
                               "your input.")
        # Negative pads crop the input; positive ones place it inside the output.
        crop[d] = builtins.slice(max(-left, 0), shape[d] - max(-right, 0))
        place[d] = builtins.slice(max(left, 0), max(left, 0) + max(shape[d] - max(-left, 0) - max(-right, 0), 0))
        shape[d] = size
    out = rill.full(shape, 0.0 if value is None else value, dtype=input.dtype)
    body = input[tuple(crop)]
    if body.numel() > 0:
        out[tuple(place)] = body
    elif input.requires_grad and rill.is_grad_enabled():
        out = out + body.sum() * 0  # nothing to copy: still an output of the input, whose gradient is zeros
    return out


def _pad_edges(input, pad, mode):
    # reflect / replicate on the last len(pad) // 2 dims (1 to 3), one dim at a time. A negative pad crops
    # that side after padding, so the other side still mirrors or copies the input's own edge (as in PyTorch).
    out = input
    for i in range(len(pad) // 2):
        d = input.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        n = out.shape[d]
        if mode == "reflect" and (left >= n or right >= n):
            raise RuntimeError(f"[pad] Argument #4: Padding size should be less than the corresponding input "
                               f"dimension, but got: padding ({left}, {right}) at dimension {d} of input "
                               f"{list(input.shape)}")
        if n + left + right <= 0:
            raise RuntimeError(f"[pad] padding ({left}, {right}) at dimension {d} of input {list(input.shape)} "
                               f"leaves no elements")
        crop_left, crop_right = max(-left, 0), max(-right, 0)
        left, right = max(left, 0), max(right, 0)
        shape = list(out.shape)
        shape[d] = n + left + right
        res = rill.zeros(shape, dtype=input.dtype)
        idx = [builtins.slice(None)] * input.ndim

        def put(dst, src):
            idx_dst, idx_src = list(idx), list(idx)
            idx_dst[d], idx_src[d] = dst, src
            res[tuple(idx_dst)] = out[tuple(idx_src)]

        put(builtins.slice(left, left + n), builtins.slice(None))
        for k in range(left):  # output position left - 1 - k mirrors input k + 1 (reflect) or copies input 0
            put(left - 1 - k, k + 1 if mode == "reflect" else 0)
        for k in range(right):
            put(left + n + k, n - 2 - k if mode == "reflect" else n - 1)
        out = res.narrow(d, crop_left, res.shape[d] - crop_left - crop_right)
    return out


def pad(input, pad, mode="constant", value=None):
    """Pad the last len(pad) // 2 dims: pad = (last_left, last_right, second_last_left, ...). mode 'constant'
    takes any number of dims, 'reflect' and 'replicate' the last one to three; negative pads crop."""
    pad = list(pad)
    if len(pad) % 2 != 0:
        raise RuntimeError("[pad] Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError("[pad] Padding length should be less than or equal to two times the input dimension "
                           f"but got padding length {len(pad)} and input of dimension {input.ndim}")
    if mode == "constant":
        return _pad_constant(input, pad, value)
    if mode in ("reflect", "replicate"):
        if value is not None and value != 0:
            raise RuntimeError(f"[pad] Padding mode \"{mode}\" doesn't take in value argument.")
        dims = len(pad) // 2
        if dims > 3 or not dims + 1 <= input.ndim <= dims + 2:
            # PyTorch's rule (and exception type): 1, 2 or 3 padded dims, with one or two dims before them.
            raise NotImplementedError(f"[pad] padding size {len(pad)} is not supported for a {input.ndim}-D input "
                                      f"in mode='{mode}': pad the last 1, 2 or 3 dims of an input with 1 or 2 "
                                      f"more dims (2 values for 2-D/3-D, 4 for 3-D/4-D, 6 for 4-D/5-D input)")
        return _pad_edges(input, pad, mode)
    if mode == "circular":
        if value is not None and value != 0:
            raise RuntimeError("[pad] Padding mode \"circular\" doesn't take in value argument.")
        return _pad_circular(input, pad)
    raise NotImplementedError(f"[pad] mode '{mode}' is not supported; use 'constant', 'reflect', 'replicate' or "
                              f"'circular'")


def _pad_circular(input, pad):
    """mode='circular', as PyTorch: negative pads crop first, then positive ones wrap around what is kept
    (output position j reads kept position (j - left) mod kept); index_select carries the gradient back."""
    dims = len(pad) // 2
    if dims > 3 or not dims + 1 <= input.ndim <= dims + 2:
        raise NotImplementedError(f"[pad] padding size {len(pad)} is not supported for a {input.ndim}-D input in "
                                  f"mode='circular': pad the last 1, 2 or 3 dims of an input with 1 or 2 more dims")
    out = input
    for i in range(dims):
        d = input.ndim - 1 - i
        left, right, n = pad[2 * i], pad[2 * i + 1], input.shape[d]
        if left > n or right > n:
            raise RuntimeError(f"[pad] Padding value causes wrapping around more than once: padding ({left}, "
                               f"{right}) of a dim of size {n}; use pads no larger than the dim")
        size = n + left + right
        if size < 0 or (size > 0 and n == 0):
            raise RuntimeError(f"[pad] Negative padding value is resulting in an empty dimension: padding "
                               f"({left}, {right}) of a dim of size {n}")
        if left == 0 and right == 0:
            continue
        lo, kept = builtins.max(-left, 0), n - builtins.max(-left, 0) - builtins.max(-right, 0)
        idx = rill.tensor([lo + (j - builtins.max(left, 0)) % kept for j in range(size)], dtype=rill.int64)
        out = out.index_select(d, idx)
    return out


from rill.nn._interpolate import interpolate  # noqa: E402,F401  (resizing, in its own module)


# ---------------------------------------------------------------------------------------------------------
# attention: scaled_dot_product_attention and multi_head_attention_forward (nn/_attention.py)
# ---------------------------------------------------------------------------------------------------------
from rill.nn._attention import multi_head_attention_forward, scaled_dot_product_attention  # noqa: E402,F401


# ---------------------------------------------------------------------------------------------------------
# convolution and pooling (inputs (N, C, H, W) or unbatched (C, H, W); conv1d: (N, C, L) or (C, L)); 16-bit and
# integer inputs computed in float32 / float64 (rill.nn._convnd.with_float_compute)
# ---------------------------------------------------------------------------------------------------------
from rill.nn._convnd import conv3d, conv_transpose1d, conv_transpose3d, with_float_compute  # noqa: E402,F401


@_lower_precision_policy
@with_float_compute
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution; padding is an int, a 1-tuple, 'valid' or 'same'."""
    return _C._conv1d(input, weight, bias, stride, padding, dilation, groups)


@_lower_precision_policy
@with_float_compute
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution; padding is an int, a pair, 'valid' or 'same' (stride 1 only)."""
    return _C._conv2d(input, weight, bias, stride, padding, dilation, groups)


@_lower_precision_policy
@with_float_compute
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-D transposed convolution; weight is (in_channels, out_channels / groups, kH, kW)."""
    return _C._conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """2-D max pooling; stride defaults to kernel_size. With return_indices, also the flat
    index of each maximum within its (H * W) input plane."""
    if stride is not None and not isinstance(stride, int) and len(stride) == 0:
        stride = None  # torch accepts stride=[] for "same as kernel_size"
    if isinstance(input, Tensor) and not input.dtype.is_floating_point and input.dtype != rill.bool:
        return _poolnd.max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode,
                                return_indices)
    return _C._max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, bool(return_indices))


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """2-D average pooling; stride defaults to kernel_size."""
    if stride is not None and not isinstance(stride, int) and len(stride) == 0:
        stride = None
    if isinstance(input, Tensor) and not input.dtype.is_floating_point and input.dtype != rill.bool:
        return _poolnd.avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                divisor_override)
    return _C._avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool2d(input, output_size):
    """2-D average pooling to output_size (an int or a pair; None keeps the input's size)."""
    if isinstance(output_size, int):
        output_size = (output_size, output_size)
    output_size = tuple(output_size)
    if len(output_size) != 2:
        raise RuntimeError(f"[adaptive_avg_pool2d] output_size must be an int or 2 values, got {output_size}")
    if None in output_size:
        if input.ndim not in (3, 4):
            raise RuntimeError(f"[adaptive_avg_pool2d] Expected 3D or 4D tensor, but got {tuple(input.shape)}")
        output_size = tuple(input.shape[-2 + i] if s is None else s for i, s in enumerate(output_size))
    return _C._adaptive_avg_pool2d(input, output_size)


# ---------------------------------------------------------------------------------------------------------
# compositions: activations, distances, shuffles, losses and norms made of the ops above
# ---------------------------------------------------------------------------------------------------------

from rill._compositions import _opmath  # noqa: E402  (float32 arithmetic for 16-bit inputs, as PyTorch's)

_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _maybe_inplace(input, result, inplace):
    return input.copy_(result) if inplace else result


def relu6(input, inplace=False):
    """min(max(0, x), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


@_opmath
def _hard_gate(x):
    """relu6(x + 3) / 6, with gradient 1/6 strictly inside (-3, 3)."""
    return rill.where((x > -3) & (x < 3), x / 6 + 0.5, (x >= 3).to(x.dtype))


@_opmath
def _mish(x):
    return x * rill.tanh(softplus(x))


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6."""
    return _maybe_inplace(input, _hard_gate(input), inplace)


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6."""
    return _maybe_inplace(input, _opmath(lambda x: x * _hard_gate(x))(input), inplace)


def mish(input, inplace=False):
    """x * tanh(softplus(x))."""
    return _maybe_inplace(input, _mish(input), inplace)


@_opmath
def logsigmoid(input):
    """log(sigmoid(x)), computed as -softplus(-x)."""
    return -softplus(-input)


@_opmath
def softsign(input):
    """x / (1 + |x|)."""
    return input / (input.abs() + 1)


@_opmath
def tanhshrink(input):
    """x - tanh(x)."""
    return input - rill.tanh(input)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, value elsewhere."""
    return _maybe_inplace(input, rill.where(input > threshold, input, value), inplace)


def selu(input, inplace=False):
    """scale * elu(x, alpha) with SELU's fixed constants."""
    return _maybe_inplace(input, elu(input, _SELU_ALPHA) * _SELU_SCALE, inplace)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _maybe_inplace(input, elu(input / alpha) * alpha if alpha != 1 else elu(input), inplace)


def celu_(input, alpha=1.0):
    """celu, in place."""
    return celu(input, alpha, inplace=True)


def selu_(input):
    """selu, in place."""
    return selu(input, inplace=True)


def threshold_(input, threshold, value):
    """threshold, in place."""
    return globals()["threshold"](input, threshold, value, inplace=True)


def glu(input, dim=-1):
    """a * sigmoid(b), with a and b the halves of input along dim."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.dim()} is size "
                           f"{input.shape[dim]}")
    a, b = input.chunk(2, dim)
    return a * rill.sigmoid(b)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-input) along dim."""
    if dim is None:
        dim = _softmax_dim("softmin", input.dim())
    return softmax(-input, dim, dtype=dtype)


def softshrink(input, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return rill.where(input > lambd, input - lambd, rill.where(input < -lambd, input + lambd, 0.0))


@_lower_precision_policy
def prelu(input, weight):
    """x where x > 0, weight * x elsewhere; weight has one value or one per channel (dim 1)."""
    if weight.numel() == 1:
        weight = weight.reshape(())
    else:
        if input.dim() == 0 or weight.numel() != input.shape[1 if input.dim() > 1 else 0]:
            raise RuntimeError("Mismatch of parameter numbers and input channel size.")
        weight = weight.reshape([-1 if i == (1 if input.dim() > 1 else 0) else 1 for i in range(input.dim())])
    return rill.where(input > 0, input, weight * input)


def _norm_along(x, p, dim, keepdim=False):
    return rill.linalg.vector_norm(x, p, dim, keepdim=keepdim)


@_opmath
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input divided by its p-norm along dim (at least eps)."""
    return input / _norm_along(input, p, dim, True).clamp_min(eps).expand_as(input)


@_opmath
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """The cosine of the angle between x1 and x2 along dim (each norm at least eps)."""
    x1, x2 = rill.broadcast_tensors(x1, x2)
    n1 = _norm_along(x1, 2, dim, True).clamp_min(eps)
    n2 = _norm_along(x2, 2, dim, True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


@_opmath
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps along the last dimension."""
    d = x1 - x2 + eps
    if d.dim() == 0:
        return d.abs() if p != 0 else (d != 0).to(d.dtype)
    return _norm_along(d, p, -1, keepdim)


def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    r = upscale_factor
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                           f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    r = downscale_factor
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by downscale_factor, got "
                           f"{h} and {w} for factor {r}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input, groups):
    """The channels (dim 1) regrouped: (N, g, C / g, *) transposed to (N, C / g, g, *)."""
    n, c, *rest = input.shape
    if groups <= 0 or c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


@_opmath
def bilinear(input1, input2, weight, bias=None):
    """y = x1^T A x2 + b for each output feature (weight A is (out, in1, in2))."""
    o, i1, i2 = weight.shape
    t = rill.matmul(input1, weight.permute(1, 0, 2).reshape(i1, o * i2)).to(rill.promote_types(input1.dtype,
                                                                                                weight.dtype))
    out = (t.reshape(*t.shape[:-1], o, i2) * input2.unsqueeze(-2)).sum(-1).to(t.dtype)
    return out if bias is None else out + bias


def _eps_of(dtype):
    return {rill.float64: 2.220446049250313e-16, rill.float16: 0.0009765625, rill.bfloat16: 0.0078125}.get(
        dtype, 1.1920928955078125e-07)


@_opmath
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """input / sqrt(mean(input^2 over normalized_shape) + eps), times weight."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.dim() - len(shape):]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape [*, "
                           f"{', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    dims = list(range(input.dim() - len(shape), input.dim()))
    eps = _eps_of(input.dtype) if eps is None else eps
    out = input * rill.rsqrt((input * input).mean(dims, keepdim=True) + eps) if dims else input * rill.rsqrt(
        input * input + eps)
    return out if weight is None else out * weight


@_opmath
def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """input / (k + alpha * mean of squares over the size neighbouring channels) ** beta."""
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    sq = (input * input).movedim(1, -1)
    sq = pad(sq, (size // 2, (size - 1) // 2))
    c = input.shape[1]
    window = sq.narrow(-1, 0, c)
    for j in range(1, size):
        window = window + sq.narrow(-1, j, c)
    window = window.movedim(-1, 1)
    if input.dtype.is_floating_point:
        div = (window * (alpha / size) + k) ** beta
    else:
        # PyTorch averages the squares with an integer avg_pool, which truncates the mean before alpha scales it
        div = (rill.div(window, size, rounding_mode="trunc") * alpha + k) ** beta
    return input / div


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """1-D max pooling (as 2-D pooling over a height of 1)."""
    one = (lambda v: (1, v if isinstance(v, int) else v[0]))
    if stride is not None and not isinstance(stride, int) and len(stride) == 0:
        stride = None
    out = max_pool2d(input.unsqueeze(-2), one(kernel_size), None if stride is None else one(stride),
                     (0, padding if isinstance(padding, int) else padding[0]), one(dilation), ceil_mode, return_indices)
    return (out[0].squeeze(-2), out[1].squeeze(-2)) if return_indices else out.squeeze(-2)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """1-D average pooling (as 2-D pooling over a height of 1)."""
    one = (lambda v: (1, v if isinstance(v, int) else v[0]))
    if stride is not None and not isinstance(stride, int) and len(stride) == 0:
        stride = None
    return avg_pool2d(input.unsqueeze(-2), one(kernel_size), None if stride is None else one(stride),
                      (0, padding if isinstance(padding, int) else padding[0]), ceil_mode,
                      count_include_pad).squeeze(-2)


def adaptive_avg_pool1d(input, output_size):
    """1-D average pooling to output_size (as 2-D pooling over a height of 1)."""
    size = output_size if isinstance(output_size, int) else output_size[0]
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, size)).squeeze(-2)


def _feature_dropout(name, input, p, training, inplace, batched_ndim):
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    batched = input.dim() == batched_ndim
    lead = 2 if batched else 1
    shape = tuple(input.shape[:lead]) + (1,) * (input.dim() - lead)
    mask = (rill.rand(*shape) >= p).to(input.dtype) / (1 - p) if p < 1 else rill.zeros(shape, dtype=input.dtype)
    return _maybe_inplace(input, input * mask, inplace)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Whole channels zeroed with probability p ((N, C, L) or (C, L) input), the rest scaled by 1 / (1 - p)."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input.")
    return _feature_dropout("dropout1d", input, p, training, inplace, 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Whole channels zeroed with probability p ((N, C, H, W) or (C, H, W) input), the rest scaled by 1 / (1 - p)."""
    return _feature_dropout("dropout2d", input, p, training, inplace, 4)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Whole channels zeroed with probability p ((N, C, D, H, W) or (C, D, H, W) input)."""
    return _feature_dropout("dropout3d", input, p, training, inplace, 5)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's mean and variance: dropped values set to SELU's negative limit, then an
    affine correction."""
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    if p == 1:
        return _maybe_inplace(input, input * 0, inplace)
    neg = -_SELU_ALPHA * _SELU_SCALE
    keep = (rill.rand(*input.shape) >= p).to(input.dtype)
    a = ((1 - p) * (1 + p * neg * neg)) ** -0.5
    return _maybe_inplace(input, (input * keep + neg * (1 - keep)) * a - a * neg * p, inplace)


def upsample_nearest(input, size=None, scale_factor=None):
    """interpolate(mode='nearest')."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """interpolate(mode='bilinear', align_corners=True)."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Each (sample, channel) normalised over its spatial dims; running statistics, when given, updated with
    the batch average (use_input_stats) or used instead (not use_input_stats)."""
    if input.dtype in (rill.float16, rill.bfloat16):  # float32 arithmetic, as PyTorch's; stats updated in place
        return instance_norm(input.float(), running_mean, running_var, weight, bias, use_input_stats, momentum,
                             eps).to(input.dtype)
    if input.dim() < 3:
        raise ValueError(f"instance_norm expects an input with a batch, channel and spatial dims, got "
                         f"{list(input.shape)}")
    dims = list(range(2, input.dim()))
    if use_input_stats:
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, unbiased=False, keepdim=True)
        if running_mean is not None or running_var is not None:
            count = math.prod(input.shape[2:])
            with rill.no_grad():
                if running_mean is not None:
                    running_mean.copy_(running_mean * (1 - momentum) + mean.detach().mean(0).reshape(-1) * momentum)
                if running_var is not None:
                    unbiased = var.detach() * (count / builtins.max(count - 1, 1))
                    running_var.copy_(running_var * (1 - momentum) + unbiased.mean(0).reshape(-1) * momentum)
    else:
        shape = [1, -1] + [1] * len(dims)
        mean, var = running_mean.reshape(shape), running_var.reshape(shape)
    out = (input - mean) * rill.rsqrt(var + eps)
    shape = [1, -1] + [1] * len(dims)
    if weight is not None:
        out = out * weight.reshape(shape)
    return out if bias is None else out + bias.reshape(shape)


def _max_unpool(name, input, indices, kernel_size, stride, padding, output_size, n):
    as_tuple = (lambda v: (v,) * n if isinstance(v, int) else tuple(v))
    k = as_tuple(kernel_size)
    s = k if stride is None else as_tuple(stride)
    pd = as_tuple(padding)
    spatial = tuple(input.shape[-n:])
    if output_size is None:
        out = tuple((spatial[i] - 1) * s[i] - 2 * pd[i] + k[i] for i in range(n))
    else:
        out = tuple(output_size)[-n:]
    lead = tuple(input.shape[:-n])
    flat = rill.zeros(lead + (math.prod(out),), dtype=input.dtype)
    idx = indices.reshape(lead + (-1,)).to(rill.int64)
    if idx.numel() and (idx.max().item() >= math.prod(out) or idx.min().item() < 0):
        raise RuntimeError(f"{name}: found an invalid max index (the output size {list(out)} is too small)")
    return flat.scatter(-1, idx, input.reshape(lead + (-1,))).reshape(lead + out)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: each value put back at its index, zeros elsewhere."""
    return _max_unpool("max_unpool1d", input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: each value put back at its index, zeros elsewhere."""
    return _max_unpool("max_unpool2d", input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d: each value put back at its index, zeros elsewhere."""
    return _max_unpool("max_unpool3d", input, indices, kernel_size, stride, padding, output_size, 3)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False, *, _generator=None):
    """leaky_relu with a slope drawn from U(lower, upper) per element in training, (lower + upper) / 2 in eval.
    (_generator: torch.rrelu's generator=, which rill.nn.functional.rrelu, like PyTorch's, does not take.)"""
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    from rill._generator import _resolve, _uniform_range
    # as PyTorch: one float64 U(lower, upper) draw per element <= 0, in order, none for the others, with lower
    # and upper first rounded to the input's compute type (float32 but for float64)
    negative = input <= 0
    flat = negative.reshape(-1)
    if input.dtype != rill.float64:
        lower, upper = float(np.float32(lower)), float(np.float32(upper))
    draws = _uniform_range(_resolve(_generator), int(flat.sum()), lower, upper, True)
    slope = rill.ones(flat.shape[0], dtype=rill.float64)
    slope[flat] = rill.tensor(draws, dtype=rill.float64)
    compute = rill.float64 if input.dtype == rill.float64 else rill.float32
    scaled = (input.to(compute) * slope.reshape(input.shape).to(compute)).to(input.dtype)
    return _maybe_inplace(input, rill.where(negative, scaled, input), inplace)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout that drops whole channels."""
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    if p == 1:
        return _maybe_inplace(input, input * 0, inplace)
    neg = -_SELU_ALPHA * _SELU_SCALE
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    keep = (rill.rand(*shape) >= p).to(input.dtype)
    a = ((1 - p) * (1 + p * neg * neg)) ** -0.5
    return _maybe_inplace(input, (input * keep + neg * (1 - keep)) * a - a * neg * p, inplace)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum of x ** p over each window) ** (1 / p)."""
    k = kernel_size if isinstance(kernel_size, int) else kernel_size[0]
    out = avg_pool1d(input.pow(norm_type), k, stride, 0, ceil_mode)
    return (rill.sign(out) * relu(out.abs())).mul(k).pow(1.0 / norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum of x ** p over each 2-D window) ** (1 / p)."""
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
    out = avg_pool2d(input.pow(norm_type), (kh, kw), stride, 0, ceil_mode)
    return (rill.sign(out) * relu(out.abs())).mul(kh * kw).pow(1.0 / norm_type)


from rill.nn._embedding_bag import embedding_bag  # noqa: E402,F401
from rill.nn import _poolnd  # noqa: E402
from rill.nn._poolnd import (  # noqa: E402,F401  (3-D and adaptive max pooling: compositions)
    adaptive_avg_pool3d, adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d, avg_pool3d, fold,
    fractional_max_pool2d, fractional_max_pool3d, lp_pool3d, max_pool3d, unfold,
)
from rill.nn._losses import *  # noqa: E402,F401,F403  (the losses: their own module, using the functions above)
from rill.nn._ctc import ctc_loss  # noqa: E402,F401
from rill.nn._grid_sample import affine_grid, grid_sample  # noqa: E402,F401
