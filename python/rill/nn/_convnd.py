"""conv3d, conv_transpose1d and conv_transpose3d, composed from the 2-D ops (conv2d, conv_transpose2d), whose
gradients they inherit; and the dtype rule every convolution shares: 16-bit inputs are computed in float32 and
integer inputs in float64 (exact for the integers a product of int64 tensors can hold in 53 bits), the result
cast back, as PyTorch's CPU kernels accept them.

A 3-D convolution is a sum over the kernel's depth: output depth o takes input depth o * stride - pad + i *
dilation for kernel depth i, so each i is one conv2d over the (batch * output depth) planes that depth picks,
with the weight's depth slice i. A 3-D transposed convolution is the adjoint: each input depth plane, run
through conv_transpose2d with depth slice i, lands at output depth d * stride + i * dilation (before the
padding is cropped)."""
import functools

import rill
from rill import _C
from rill.amp.autocast_mode import _lower_precision_policy

_FLOAT16 = (rill.float16, rill.bfloat16)


def _tuple(v, n, name, op):
    """An int or n values as an n-tuple; RuntimeError otherwise (PyTorch's message)."""
    if isinstance(v, int):
        return (v,) * n
    v = tuple(int(x) for x in v)
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise RuntimeError(f"[{op}] expected {name} to be a single integer value or a list of {n} values to match "
                           f"the convolution dimensions, but got {name}={list(v)}")
    return v


def _compute_dtype(*tensors):
    """(the dtype to compute in, the result's dtype) for the inputs of a convolution."""
    dtype = tensors[0].dtype
    if dtype in _FLOAT16:
        return rill.float32, dtype
    if dtype in (rill.float32, rill.float64):
        return dtype, dtype
    if dtype == rill.bool:
        raise TypeError(f"[convolution] supports floating-point and integer tensors, got input of dtype {dtype}")
    return rill.float64, dtype


def with_float_compute(fn):
    """fn(input, weight, bias, ...) run on float32 for 16-bit inputs and float64 for integer inputs, the result
    cast back to the input's dtype (integers rounded, which is exact)."""
    @functools.wraps(fn)
    def run(input, weight, bias=None, *args, **kwargs):
        if not isinstance(input, rill.Tensor) or not isinstance(weight, rill.Tensor):
            raise TypeError(f"{fn.__name__}(): argument 'input' and 'weight' must be Tensors, got "
                            f"{type(input).__name__} and {type(weight).__name__}")
        compute, result = _compute_dtype(input)
        if compute == result:
            return fn(input, weight, bias, *args, **kwargs)
        if weight.dtype != input.dtype or (bias is not None and bias.dtype != input.dtype):
            raise RuntimeError(f"[{fn.__name__}] expected input, weight and bias of the same dtype, got "
                               f"{input.dtype}, {weight.dtype} and {None if bias is None else bias.dtype}")
        out = fn(input.to(compute), weight.to(compute), None if bias is None else bias.to(compute), *args, **kwargs)
        if result.is_floating_point:
            return out.to(result)
        return out.round().to(result)
    return run


def _check_3d(op, input, weight, what_weight):
    if input.dim() not in (4, 5):
        raise RuntimeError(f"[{op}] Expected 4D (unbatched) or 5D (batched) input to {op}, but got input of size: "
                           f"{list(input.shape)}")
    if weight.dim() != 5:
        raise RuntimeError(f"[{op}] expected a 5-D weight {what_weight}, got weight of size {list(weight.shape)}")


def _bias_3d(out, bias):
    return out if bias is None else out + bias.reshape(1, -1, 1, 1, 1)

@_lower_precision_policy
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution: input (N, C, D, H, W) or (C, D, H, W), weight (O, C / groups, kD, kH, kW); padding is
    an int, 3 values, 'valid' or 'same' (stride 1 only)."""
    op = "conv3d"
    _check_3d(op, input, weight, "(out_channels, in_channels / groups, kD, kH, kW)")
    unbatched = input.dim() == 4
    x = input.unsqueeze(0) if unbatched else input
    s = _tuple(stride, 3, "stride", op)
    d = _tuple(dilation, 3, "dilation", op)
    k = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            pads = [(0, 0)] * 3
        elif padding == "same":
            if any(v != 1 for v in s):
                raise RuntimeError(f"[{op}] padding='same' is not supported for strided convolutions; pass "
                                   f"explicit padding instead")
            pads = [(d[j] * (k[j] - 1) // 2, d[j] * (k[j] - 1) - d[j] * (k[j] - 1) // 2) for j in range(3)]
        else:
            raise ValueError(f"[{op}] Invalid padding string '{padding}', should be one of 'valid' or 'same'")
    else:
        pads = [(p, p) for p in _tuple(padding, 3, "padding", op)]
    if any(v <= 0 for v in s):
        raise RuntimeError(f"[{op}] non-positive stride is not supported (got stride={list(s)})")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"[{op}] dilation should be greater than zero (got dilation={list(d)})")
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        raise RuntimeError(f"[{op}] negative padding is not supported")
    if groups <= 0:
        raise RuntimeError(f"[{op}] non-positive groups is not supported (got groups={groups})")
    if weight.shape[0] % groups != 0:
        raise RuntimeError(f"[{op}] Given groups={groups}, expected weight to be divisible by {groups} at "
                           f"dimension 0, but got weight of size {list(weight.shape)} instead")
    if x.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(f"[{op}] Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {weight.shape[1] * groups} channels, but got {x.shape[1]} "
                           f"channels instead")
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != weight.shape[0]):
        raise RuntimeError(f"[{op}] Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional "
                           f"with {weight.shape[0]} elements, but got bias of size {list(bias.shape)} instead")
    n, c = x.shape[0], x.shape[1]
    padded = [x.shape[2 + j] + pads[j][0] + pads[j][1] for j in range(3)]
    eff = [d[j] * (k[j] - 1) + 1 for j in range(3)]
    if any(padded[j] < eff[j] for j in range(3)) or min(k) <= 0:
        raise RuntimeError(f"[{op}] Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                           f"Kernel size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than actual "
                           f"input size; pad the input or use a smaller kernel")
    od = (padded[0] - eff[0]) // s[0] + 1
    if pads[0] != (0, 0):
        x = rill.nn.functional.pad(x.movedim(2, -1), pads[0]).movedim(-1, 2)
    plane_pad = (pads[1][0], pads[1][1], pads[2][0], pads[2][1])
    out = None
    for i in range(k[0]):
        start = i * d[0]
        xs = x[:, :, start:start + (od - 1) * s[0] + 1:s[0]]  # (N, C, od, H, W)
        xs = xs.transpose(1, 2).reshape(n * od, c, *x.shape[3:])
        y = _C._conv2d(xs, weight[:, :, i], None, s[1:], plane_pad, d[1:], groups)
        out = y if out is None else out + y
    out = out.reshape(n, od, *out.shape[1:]).transpose(1, 2)
    out = _bias_3d(out, bias)
    return out.squeeze(0) if unbatched else out

@_lower_precision_policy
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """1-D transposed convolution: input (N, C_in, L) or (C_in, L), weight (C_in, C_out / groups, kW)."""
    op = "conv_transpose1d"
    if input.dim() not in (2, 3):
        raise RuntimeError(f"[{op}] Expected 2D (unbatched) or 3D (batched) input to {op}, but got input of size: "
                           f"{list(input.shape)}")
    if weight.dim() != 3:
        raise RuntimeError(f"[{op}] expected a 3-D weight (in_channels, out_channels / groups, kW), got weight of "
                           f"size {list(weight.shape)}")
    one = (lambda v, name: (1, _tuple(v, 1, name, op)[0]))
    pad = _tuple(padding, 1, "padding", op)[0]
    out = _C._conv_transpose2d(input.unsqueeze(-2), weight.unsqueeze(2), bias, one(stride, "stride"), (0, pad),
                               (0, _tuple(output_padding, 1, "output_padding", op)[0]), groups,
                               one(dilation, "dilation"))
    return out.squeeze(-2)

@_lower_precision_policy
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """3-D transposed convolution: input (N, C_in, D, H, W) or (C_in, D, H, W), weight
    (C_in, C_out / groups, kD, kH, kW)."""
    op = "conv_transpose3d"
    _check_3d(op, input, weight, "(in_channels, out_channels / groups, kD, kH, kW)")
    unbatched = input.dim() == 4
    x = input.unsqueeze(0) if unbatched else input
    s = _tuple(stride, 3, "stride", op)
    p = _tuple(padding, 3, "padding", op)
    op_ = _tuple(output_padding, 3, "output_padding", op)
    d = _tuple(dilation, 3, "dilation", op)
    if any(v <= 0 for v in s):
        raise RuntimeError(f"[{op}] non-positive stride is not supported (got stride={list(s)})")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"[{op}] dilation should be greater than zero (got dilation={list(d)})")
    if any(v < 0 for v in p):
        raise RuntimeError(f"[{op}] negative padding is not supported (got padding={list(p)})")
    if groups <= 0:
        raise RuntimeError(f"[{op}] non-positive groups is not supported (got groups={groups})")
    for j in range(3):
        if not (0 <= op_[j] and (op_[j] < s[j] or op_[j] < d[j])):
            raise RuntimeError(f"[{op}] output padding must be smaller than either stride or dilation, but got "
                               f"output_padding={list(op_)}, stride={list(s)}, dilation={list(d)}")
    if weight.shape[0] % groups != 0:
        raise RuntimeError(f"[{op}] Given groups={groups}, expected weight to be divisible by {groups} at "
                           f"dimension 0, but got weight of size {list(weight.shape)} instead")
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError(f"[{op}] Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {weight.shape[0]} channels, but got {x.shape[1]} channels "
                           f"instead")
    cout = weight.shape[1] * groups
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != cout):
        raise RuntimeError(f"[{op}] Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional "
                           f"with {cout} elements, but got bias of size {list(bias.shape)} instead")
    n, cin, depth = x.shape[0], x.shape[1], x.shape[2]
    kd = weight.shape[2]
    if min(weight.shape[1:]) <= 0:
        raise RuntimeError(f"[{op}] expected a weight with non-zero out_channels and kernel size, got weight of "
                           f"size {list(weight.shape)}")
    full = (depth - 1) * s[0] + d[0] * (kd - 1) + 1 + op_[0]  # output depth before cropping the padding
    out_depth = full - 2 * p[0]
    if out_depth <= 0:
        raise RuntimeError(f"[{op}] Given input size per channel: {list(x.shape[2:])}. Calculated output depth "
                           f"{out_depth} is too small; reduce the padding")
    planes = x.transpose(1, 2).reshape(n * depth, cin, *x.shape[3:])
    span = (depth - 1) * s[0] + 1  # the input planes spread stride apart
    pieces = None
    for i in range(kd):
        y = _C._conv_transpose2d(planes, weight[:, :, i], None, s[1:], p[1:], op_[1:], groups, d[1:])
        y = y.reshape(n, depth, *y.shape[1:])  # (N, D, C_out, OH, OW)
        if s[0] > 1:
            zeros = rill.zeros(tuple(y.shape), dtype=y.dtype)
            y = rill.stack([y] + [zeros] * (s[0] - 1), 2).reshape(n, depth * s[0], *y.shape[2:])
            y = y.narrow(1, 0, span)
        before, after = i * d[0], full - i * d[0] - span
        y = rill.nn.functional.pad(y.movedim(1, -1), (before - p[0], after - p[0])).movedim(-1, 1)
        pieces = y if pieces is None else pieces + y
    out = _bias_3d(pieces.transpose(1, 2), bias)
    return out.squeeze(0) if unbatched else out


conv3d = with_float_compute(conv3d)
conv_transpose1d = with_float_compute(conv_transpose1d)
conv_transpose3d = with_float_compute(conv_transpose3d)
