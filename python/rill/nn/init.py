"""rill.nn.init: in-place initialisers with PyTorch's fan and gain rules."""
import math

import rill
from rill._generator import _samples
from rill._tensor_extras import _fill_, _normal_, _sample_dtype, _uniform_


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity, as torch.nn.init.calculate_gain."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    num_input_fmaps = tensor.size(1)
    num_output_fmaps = tensor.size(0)
    receptive_field_size = 1
    for s in tuple(tensor.shape)[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ["fan_in", "fan_out"]:
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill tensor with values drawn from U(a, b)."""
    return _uniform_(tensor, a, b, generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill tensor with values drawn from N(mean, std^2)."""
    return _normal_(tensor, mean, std, generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill tensor with N(mean, std^2) values redrawn until they lie in [a, b]."""
    dt = _sample_dtype(tensor)
    out = _samples("normal", tensor.shape, dt, generator) * std + mean
    for _ in range(1000):
        bad = (out < a).to(dt) + (out > b).to(dt)
        if bad.sum().item() == 0:
            break
        fresh = _samples("normal", tensor.shape, dt, generator) * std + mean
        out = rill.where(bad > 0, fresh, out)
    else:  # pragma: no cover - a window with almost no mass
        out = rill.where(out < a, rill.full_like(out, a), rill.where(out > b, rill.full_like(out, b), out))
    return _fill_(tensor, out)


def constant_(tensor, val):
    with rill.no_grad():
        tensor.fill_(val)
    return tensor


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    with rill.no_grad():
        tensor.zero_()
    return tensor


def eye_(tensor):
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    n, m = tensor.shape
    eye = (rill.arange(n).unsqueeze(1) == rill.arange(m).unsqueeze(0))
    return _fill_(tensor, eye)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    return normal_(tensor, 0, std, generator)


# Old names, as torch.nn.init keeps them.
uniform = uniform_
normal = normal_
constant = constant_
xavier_uniform = xavier_uniform_
xavier_normal = xavier_normal_
kaiming_uniform = kaiming_uniform_
kaiming_normal = kaiming_normal_
