"""rill.nn.functional: PyTorch-signature convolution and pooling functions (differentiable).

Each op's gradient is its own op in ``rill._C`` (``_conv2d_backward_input``,
``_conv2d_backward_weight``, ``_max_pool2d_backward``, ...), which the autograd
layer (src/rill/autograd/conv.cpp) calls in backward. Inputs are (N, C, H, W) or unbatched
(C, H, W) (``conv1d``: (N, C, L) or (C, L)); float32 and float64.
"""
from rill import _C

__all__ = ["conv1d", "conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
           "gelu", "silu", "softplus", "leaky_relu", "elu", "hardtanh", "relu", "sigmoid", "tanh"]


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution; padding is an int, a 1-tuple, 'valid' or 'same'."""
    return _C._conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution; padding is an int, a pair, 'valid' or 'same' (stride 1 only)."""
    return _C._conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-D transposed convolution; weight is (in_channels, out_channels / groups, kH, kW)."""
    return _C._conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """2-D max pooling; stride defaults to kernel_size. With return_indices, also the flat
    index of each maximum within its (H * W) input plane."""
    if stride is not None and not isinstance(stride, int) and len(stride) == 0:
        stride = None  # torch accepts stride=[] for "same as kernel_size"
    values, indices = _C._max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (values, indices) if return_indices else values


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """2-D average pooling; stride defaults to kernel_size."""
    if stride is not None and not isinstance(stride, int) and len(stride) == 0:
        stride = None
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


# --- activations (elementwise ops in rill._C, with their own backward ops) -------------------------------

def gelu(input, approximate="none"):
    """GELU: x * Phi(x); approximate='tanh' uses the tanh formula."""
    return _C.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    """SiLU (swish): x * sigmoid(x)."""
    return _C.silu(input, inplace=inplace)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, linear above threshold."""
    return _C.softplus(input, beta=beta, threshold=threshold)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """max(0, x) + negative_slope * min(0, x)."""
    return _C.leaky_relu(input, negative_slope=negative_slope, inplace=inplace)


def elu(input, alpha=1.0, inplace=False):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    return _C.elu(input, alpha=alpha, inplace=inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clamped to [min_val, max_val]."""
    return _C.hardtanh(input, min_val=min_val, max_val=max_val, inplace=inplace)


def relu(input, inplace=False):
    """max(0, x)."""
    return input.relu_() if inplace else _C.relu(input)


def sigmoid(input):
    """1 / (1 + exp(-x))."""
    return _C.sigmoid(input)


def tanh(input):
    """tanh(x)."""
    return _C.tanh(input)
