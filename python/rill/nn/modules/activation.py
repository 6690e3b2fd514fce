"""Activations: ReLU, GELU, SiLU, Tanh, Sigmoid, LeakyReLU, Softmax, LogSoftmax."""
from rill.nn import functional as F
from rill.nn.modules.module import Module


class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={repr(self.approximate)}"


class SiLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    def forward(self, input):
        return F.tanh(input)


class Sigmoid(Module):
    def forward(self, input):
        return F.sigmoid(input)


class LeakyReLU(Module):
    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"negative_slope={self.negative_slope}{inplace_str}"


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.log_softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class _Elementwise(Module):
    """An activation with no parameters: forward is F.<_fn>(input, **the constructor's arguments)."""
    _fn = None
    _args = ()

    def __init__(self, *args, **kwargs):
        super().__init__()
        names = [n for n, _ in self._args]
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}() takes at most {len(names)} arguments")
        values = dict(self._args)
        values.update(zip(names, args))
        for k, v in kwargs.items():
            if k not in values:
                raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument '{k}'")
            values[k] = v
        for k in names:
            setattr(self, k, values[k])

    def forward(self, input):
        return getattr(F, self._fn)(input, **{n: getattr(self, n) for n, _ in self._args})

    def extra_repr(self):
        return ", ".join(f"{n}={getattr(self, n)!r}" for n, _ in self._args)


def _elementwise(name, fn, args=()):
    return type(name, (_Elementwise,), {"_fn": fn, "_args": tuple(args), "__doc__": f"F.{fn} as a module.",
                                        "__module__": __name__})


ReLU6 = _elementwise("ReLU6", "relu6", [("inplace", False)])
Hardsigmoid = _elementwise("Hardsigmoid", "hardsigmoid", [("inplace", False)])
Hardswish = _elementwise("Hardswish", "hardswish", [("inplace", False)])
Mish = _elementwise("Mish", "mish", [("inplace", False)])
SELU = _elementwise("SELU", "selu", [("inplace", False)])
CELU = _elementwise("CELU", "celu", [("alpha", 1.0), ("inplace", False)])
ELU = _elementwise("ELU", "elu", [("alpha", 1.0), ("inplace", False)])
GLU = _elementwise("GLU", "glu", [("dim", -1)])
Softmin = _elementwise("Softmin", "softmin", [("dim", None)])
Softsign = _elementwise("Softsign", "softsign")
Tanhshrink = _elementwise("Tanhshrink", "tanhshrink")
LogSigmoid = _elementwise("LogSigmoid", "logsigmoid")
Threshold = _elementwise("Threshold", "threshold", [("threshold", None), ("value", None), ("inplace", False)])
Softshrink = _elementwise("Softshrink", "softshrink", [("lambd", 0.5)])
Hardshrink = _elementwise("Hardshrink", "hardshrink", [("lambd", 0.5)])
Hardtanh = _elementwise("Hardtanh", "hardtanh", [("min_val", -1.0), ("max_val", 1.0), ("inplace", False)])
Softplus = _elementwise("Softplus", "softplus", [("beta", 1.0), ("threshold", 20.0)])


class Softmax2d(Module):
    """softmax over the channels of (N, C, H, W) or (C, H, W) input."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3)


class PReLU(Module):
    """x where x > 0, a * x elsewhere, with a learnt (one value, or one per channel)."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        import rill
        from rill.nn.modules.linear import _factory
        from rill.nn.parameter import Parameter
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(rill.full((num_parameters,), float(init), dtype=_factory(device, dtype)))

    def reset_parameters(self):
        from rill.nn import init
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """leaky_relu with a random slope from U(lower, upper) in training, their mean in eval."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


def __getattr__(name):
    """torch.nn.modules.activation also holds MultiheadAttention (rill defines it with the transformer layers), so a
    pickle naming torch's path finds it here."""
    if name == "MultiheadAttention":
        from rill.nn.modules.transformer import MultiheadAttention
        return MultiheadAttention
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
