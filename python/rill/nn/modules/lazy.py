"""Lazy modules: LazyLinear, LazyConv1d/2d/3d, LazyConvTranspose1d/2d/3d and LazyBatchNorm1d/2d/3d, whose input
size (in_features, in_channels, num_features) is read from the first input, as PyTorch's LazyModuleMixin.

Note [Lazy parameters]
Until the first forward a lazy module's weight and bias are UninitializedParameters (and a lazy batch norm's
running statistics UninitializedBuffers): Parameters holding an empty tensor that only carries the dtype (module.to(dtype) converts it, and it stays uninitialized). The first
call runs a forward pre-hook that reads the input's size, replaces each uninitialized parameter with a real
Parameter of the right shape (a new object: an optimizer built before the first forward would hold the old
ones, which PyTorch also warns against), resets the parameters, and turns the module into its eager class
(cls_to_become: LazyLinear becomes Linear). Loading a state dict materializes the parameters from the
dict's shapes instead, so a lazy module loads a trained model's weights before any forward."""
import rill
from rill.nn.modules.conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from rill.nn.modules.linear import Linear, _factory
from rill.nn.modules.normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d
from rill.nn.parameter import Buffer, Parameter


class UninitializedParameter(Parameter):
    """A parameter whose shape is not known yet (Note [Lazy parameters]); it carries only a dtype."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None, data=None):
        if data is None:
            data = rill.empty(0, dtype=_factory(device, dtype))
        return super().__new__(cls, data, requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None, data=None):
        pass

    def __repr__(self):
        return "<UninitializedParameter>"

    def __deepcopy__(self, memo):
        return UninitializedParameter(self.requires_grad, data=rill.empty(0, dtype=self.dtype))

    def materialize(self, shape):
        """A Parameter of shape (uninitialized values) with this one's dtype and requires_grad."""
        return Parameter(rill.empty(*shape, dtype=self.dtype), self.requires_grad)


class UninitializedBuffer(Buffer):
    """A buffer whose shape is not known yet (Note [Lazy parameters]); it carries only a dtype."""

    def __new__(cls, requires_grad=False, device=None, dtype=None, data=None, persistent=True):
        if data is None:
            data = rill.empty(0, dtype=_factory(device, dtype))
        return super().__new__(cls, data, persistent=persistent)

    def __init__(self, requires_grad=False, device=None, dtype=None, data=None, persistent=True):
        pass

    def __repr__(self):
        return "<UninitializedBuffer>"

    def __deepcopy__(self, memo):
        return UninitializedBuffer(data=rill.empty(0, dtype=self.dtype))

    def materialize(self, shape):
        """A tensor of shape (uninitialized values) with this one's dtype."""
        return rill.empty(*shape, dtype=self.dtype)


class LazyModuleMixin:
    """Mixed in before a module class: parameters inferred from the first input (Note [Lazy parameters]).
    Subclasses define initialize_parameters(*args) and cls_to_become."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(LazyModuleMixin._infer_parameters)

    def has_uninitialized_params(self):
        """True while a parameter still waits for the first input."""
        return any(isinstance(p, UninitializedParameter) for p in self._parameters.values()) or any(
            isinstance(b, UninitializedBuffer) for b in self._buffers.values())

    def initialize_parameters(self, *args, **kwargs):
        """Materialize the parameters for these inputs."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def _materialize(self, name, shape):
        if name in self._parameters:
            self._parameters[name] = self._parameters[name].materialize(shape)
        else:
            self._buffers[name] = self._buffers[name].materialize(shape)

    @staticmethod
    def _infer_parameters(module, args):
        module.initialize_parameters(*args)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {type(module).__name__} has not been fully initialized")
        module._initialize_hook.remove()
        del module._initialize_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _apply(self, fn):
        lazy = {k: p.requires_grad for k, p in self._parameters.items() if isinstance(p, UninitializedParameter)}
        lazy_buffers = [k for k, b in self._buffers.items() if isinstance(b, UninitializedBuffer)]
        super()._apply(fn)
        for k, requires_grad in lazy.items():  # the converted empty tensor keeps the new dtype
            self._parameters[k] = UninitializedParameter(requires_grad, data=self._parameters[k].detach())
        for k in lazy_buffers:
            self._buffers[k] = UninitializedBuffer(data=self._buffers[k])
        return self

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        for name, value in list(self._parameters.items()) + list(self._buffers.items()):
            key = prefix + name
            if isinstance(value, (UninitializedParameter, UninitializedBuffer)) and key in state_dict:
                self._materialize(name, tuple(state_dict[key].shape))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)
        if not self.has_uninitialized_params():
            self._on_materialized_from_state()

    def _on_materialized_from_state(self):
        """Sizes that follow from the loaded parameters (in_features, in_channels)."""


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose in_features is the first input's last dim."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, bias, device, dtype)
        self.out_features = out_features
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_features = input.shape[-1]
            self._materialize("weight", (self.out_features, self.in_features))
            if self.bias is not None:
                self._materialize("bias", (self.out_features,))
            self.reset_parameters()

    def _on_materialized_from_state(self):
        self.in_features = self.weight.shape[1]


class _LazyConvXdMixin(LazyModuleMixin):
    _dims = 1

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _lazy_init(self, out_channels, bias, device, dtype):
        self.out_channels = out_channels
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def initialize_parameters(self, input, *args, **kwargs):
        if not self.has_uninitialized_params():
            return
        if input.dim() not in (self._dims + 1, self._dims + 2):
            raise RuntimeError(f"Expected {self._dims + 1}D (unbatched) or {self._dims + 2}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: {list(input.shape)}")
        self.in_channels = input.shape[0 if input.dim() == self._dims + 1 else 1]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self.transposed:
            shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
        else:
            shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        self._materialize("weight", shape)
        if self.bias is not None:
            self._materialize("bias", (self.out_channels,))
        self.reset_parameters()

    def _on_materialized_from_state(self):
        w = self.weight.shape
        self.in_channels = w[0] if self.transposed else w[1] * self.groups


def _lazy_conv(name, base, dims, transposed):
    if transposed:
        def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                     dilation=1, padding_mode="zeros", device=None, dtype=None):
            base.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
                          padding_mode, device, dtype)
            self._initialize_hook = self.register_forward_pre_hook(LazyModuleMixin._infer_parameters)
            self._lazy_init(out_channels, bias, device, dtype)
    else:
        def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                     padding_mode="zeros", device=None, dtype=None):
            base.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device,
                          dtype)
            self._initialize_hook = self.register_forward_pre_hook(LazyModuleMixin._infer_parameters)
            self._lazy_init(out_channels, bias, device, dtype)
    doc = f"A {base.__name__} whose in_channels is the first input's channel count."
    return type(name, (_LazyConvXdMixin, base), {"__init__": __init__, "cls_to_become": base, "_dims": dims,
                                                   "__doc__": doc, "__module__": __name__})


LazyConv1d = _lazy_conv("LazyConv1d", Conv1d, 1, False)
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d, 2, False)
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d, 3, False)
LazyConvTranspose1d = _lazy_conv("LazyConvTranspose1d", ConvTranspose1d, 1, True)
LazyConvTranspose2d = _lazy_conv("LazyConvTranspose2d", ConvTranspose2d, 2, True)
LazyConvTranspose3d = _lazy_conv("LazyConvTranspose3d", ConvTranspose3d, 3, True)


class _LazyNormBase(LazyModuleMixin):
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
        self.cls_to_become.__init__(self, 0, eps, momentum, False, False, device, dtype)
        self._initialize_hook = self.register_forward_pre_hook(LazyModuleMixin._infer_parameters)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = rill.tensor(0, dtype=rill.int64)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1] if input.dim() > 1 else input.shape[0]
        for name in ("weight", "bias", "running_mean", "running_var"):
            if isinstance(getattr(self, name), (UninitializedParameter, UninitializedBuffer)):
                self._materialize(name, (self.num_features,))
        self.reset_parameters()

    def _on_materialized_from_state(self):
        for name in ("weight", "running_mean"):
            if getattr(self, name) is not None:
                self.num_features = getattr(self, name).shape[0]


def _lazy_norm(name, base):
    return type(name, (_LazyNormBase, base), {"cls_to_become": base, "__module__": __name__,
                                              "__doc__": f"A {base.__name__} whose num_features is the first "
                                                         f"input's channel count."})


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", BatchNorm1d)
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", BatchNorm2d)
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", BatchNorm3d)
