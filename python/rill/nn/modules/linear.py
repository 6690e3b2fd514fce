"""Identity, Linear and Flatten/Unflatten."""
import math

import rill
from rill.nn import init
from rill.nn import functional as F
from rill.nn.modules.module import Module
from rill.nn.parameter import Parameter


def _factory(device, dtype):
    if device is not None:
        d = rill.device(str(device)) if not isinstance(device, rill.device) else device
        if str(d.type) != "cpu":
            raise RuntimeError(f"rill has no device '{d}' in this build; use 'cpu'")
    return dtype or rill.get_default_dtype()


class Identity(Module):
    """Returns its input; takes and ignores any arguments."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x W^T + b, with weight (out_features, in_features) initialised as PyTorch's."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        dtype = _factory(device, dtype)
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(rill.empty(out_features, in_features, dtype=dtype))
        if bias:
            self.bias = Parameter(rill.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Flatten(Module):
    """Flattens dims start_dim..end_dim (1..-1 by default) into one."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dim into unflattened_size."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size)

    def forward(self, input):
        shape = list(input.shape)
        d = self.dim % len(shape)
        return input.reshape(*(shape[:d] + list(self.unflattened_size) + shape[d + 1:]))

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Bilinear(Module):
    """y = x1^T A x2 + b, with weight (out_features, in1_features, in2_features) initialised as PyTorch's."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        dtype = _factory(device, dtype)
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(rill.empty(out_features, in1_features, in2_features, dtype=dtype))
        if bias:
            self.bias = Parameter(rill.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


def __getattr__(name):
    """torch.nn.modules.linear also holds LazyLinear (rill defines it in lazy.py), so a pickle naming torch's path
    finds it here."""
    if name == "LazyLinear":
        from rill.nn.modules.lazy import LazyLinear
        return LazyLinear
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
