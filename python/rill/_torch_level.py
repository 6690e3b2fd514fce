"""The torch.* spellings programs use beside torch.nn.functional and the Tensor methods: the functional forms
torch also exports at top level with the same arguments (torch.conv2d, torch.max_pool2d, torch.layer_norm,
...), the in-place functions (torch.relu_(x) is x.relu_()), aliases (swapaxes, swapdims, adjoint, t),
predicates, window functions, and the global switches a CPU program sets (deterministic algorithms, matmul
precision, anomaly detection, printing). Installed only where rill has no such name."""
import builtins
import math

import rill

# torch.<name> with torch.nn.functional.<name>'s positional order (the ones whose order or reduction
# argument differs at top level, e.g. torch.batch_norm or torch.kl_div, are left out)
_FROM_FUNCTIONAL = (
    "adaptive_avg_pool1d", "adaptive_max_pool1d", "avg_pool1d", "bilinear", "celu",
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "cosine_similarity", "max_pool1d", "max_pool2d", "max_pool3d", "pairwise_distance", "pdist", "pixel_shuffle",
    "pixel_unshuffle", "prelu", "rms_norm", "selu", "threshold", "channel_shuffle", "native_channel_shuffle",
)


# the top-level forms whose argument names differ from torch.nn.functional's
def dropout(input, p, train):
    return rill.nn.functional.dropout(input, p, train)


def alpha_dropout(input, p, train):
    return rill.nn.functional.alpha_dropout(input, p, train)


def feature_alpha_dropout(input, p, train):
    return rill.nn.functional.feature_alpha_dropout(input, p, train)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return rill.nn.functional.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return rill.nn.functional.group_norm(input, num_groups, weight, bias, eps)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return rill.nn.functional.rrelu(input, lower, upper, training, _generator=generator)

# torch.<name>_(input, ...) = input.<name>_(...)
_INPLACE = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_",
    "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_",
    "deg2rad_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_", "floor_", "frac_", "gcd_", "i0_",
    "index_put_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_",
    "negative_", "rad2deg_", "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_",
    "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_", "detach_", "selu_", "celu_", "rrelu_",
    "threshold_", "dropout_", "alpha_dropout_", "feature_alpha_dropout_", "feature_dropout_", "conj_physical_",
)


def _inplace(name):
    def fn(input, *args, **kwargs):
        method = getattr(input, name, None)
        if method is None:
            fname = name[:-1]
            functional = getattr(rill.nn.functional, fname, None)
            if functional is None:
                raise AttributeError(f"rill.{name}: tensors have no {name} method")
            return input.copy_(functional(input, *args, **kwargs))
        return method(*args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = f"input.{name}(...): in place, returns input."
    return fn


def swapaxes(input, axis0, axis1):
    """transpose (numpy's name)."""
    return input.transpose(axis0, axis1)


def swapdims(input, dim0, dim1):
    """transpose."""
    return input.transpose(dim0, dim1)


def adjoint(input):
    """The conjugate transpose of the last two dims (the transpose: rill has no complex dtypes)."""
    return input.transpose(-2, -1)


def detach(input):
    return input.detach()


def is_complex(input):
    """False: rill has no complex dtypes."""
    return False


def is_signed(input):
    return input.dtype not in (rill.uint8, rill.bool)


def is_nonzero(input):
    """The truth of a one-element tensor (torch.is_nonzero)."""
    if input.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous" if input.numel() else
                           "Boolean value of Tensor with no values is ambiguous")
    return builtins.bool(input.item() != 0)


def is_same_size(input, other):
    return tuple(input.shape) == tuple(other.shape)


def is_inference(input):
    return False


def range(start=0, end=None, step=1, *, dtype=None, **kwargs):
    """Values from start to end inclusive (torch.range, deprecated in favour of arange), float by default."""
    if end is None:
        start, end = 0, start
    count = builtins.int(math.floor((end - start) / step)) + 1
    return rill.arange(count, dtype=rill.float64).mul(step).add(start).to(dtype or rill.get_default_dtype())


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-D x (torch.vander: decreasing powers unless increasing)."""
    out = rill.linalg.vander(x, N=N)
    return out if increasing else out.flip(-1)


def chain_matmul(*matrices, out=None):
    """The product of the matrices (torch.chain_matmul; linalg.multi_dot is its successor)."""
    return rill.linalg.multi_dot(list(matrices))


def frobenius_norm(input, dim=(-2, -1), keepdim=False, *, out=None):
    return rill.linalg.vector_norm(input, 2, dim, keepdim)


def nuclear_norm(input, dim=(-2, -1), keepdim=False, *, out=None):
    return rill.linalg.matrix_norm(input, "nuc", dim, keepdim)


def _window(name, values):
    def window(window_length, periodic=True, *, dtype=None, **kwargs):
        if window_length < 0:
            raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
        if window_length == 0:
            return rill.zeros(0, dtype=dtype or rill.get_default_dtype())
        if window_length == 1:
            return rill.ones(1, dtype=dtype or rill.get_default_dtype())
        n = window_length + 1 if periodic else window_length
        w = values(rill.arange(n, dtype=rill.float64), n)
        return (w[:window_length] if periodic else w).to(dtype or rill.get_default_dtype())
    window.__name__ = name
    window.__doc__ = f"torch.{name}: the window of window_length points (periodic: the first of length + 1)."
    return window


hann_window = _window("hann_window", lambda k, n: 0.5 - 0.5 * rill.cos(2 * math.pi * k / (n - 1)))
hamming_window = _window("hamming_window", lambda k, n: 0.54 - 0.46 * rill.cos(2 * math.pi * k / (n - 1)))
blackman_window = _window("blackman_window", lambda k, n: 0.42 - 0.5 * rill.cos(2 * math.pi * k / (n - 1))
                          + 0.08 * rill.cos(4 * math.pi * k / (n - 1)))
bartlett_window = _window("bartlett_window", lambda k, n: 1 - (2 * k / (n - 1) - 1).abs())


# --- global switches ----------------------------------------------------------------------------------------
_STATE = {"deterministic": False, "warn_only": False, "matmul_precision": "highest", "warn_always": False}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Accepted: rill's CPU kernels are deterministic for a given thread count already."""
    _STATE["deterministic"], _STATE["warn_only"] = builtins.bool(mode), builtins.bool(warn_only)


def are_deterministic_algorithms_enabled():
    return _STATE["deterministic"]


def is_deterministic_algorithms_warn_only_enabled():
    return _STATE["warn_only"]


def set_float32_matmul_precision(precision):
    """Accepted and remembered ('highest', 'high', 'medium'): rill's float32 matmuls are always full float32."""
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision {precision!r}: expected 'highest', 'high' or 'medium'")
    _STATE["matmul_precision"] = precision


def get_float32_matmul_precision():
    return _STATE["matmul_precision"]


def set_warn_always(b):
    _STATE["warn_always"] = builtins.bool(b)


def is_warn_always_enabled():
    return _STATE["warn_always"]


def get_default_device():
    return rill.device("cpu")


def set_default_device(device):
    """Only 'cpu' (or None) exists in this build."""
    if device is not None and str(rill.device(str(device)).type) != "cpu":
        raise RuntimeError(f"set_default_device({device!r}): rill has only the 'cpu' device in this build")


def get_num_interop_threads():
    return 1


def set_num_interop_threads(n):
    """Accepted: rill runs inter-op work on its VM threads, whose number is fixed."""
    if n < 1:
        raise RuntimeError(f"Number of inter-op threads must be positive, got {n}")


def set_flush_denormal(mode):
    """Returns False: rill does not switch the CPU's denormal mode."""
    return False


def typename(obj):
    """torch.typename: 'torch.FloatTensor'-style names for tensors, the qualified type name otherwise."""
    if isinstance(obj, rill.Tensor):
        return {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor", "float16": "torch.HalfTensor",
                "bfloat16": "torch.BFloat16Tensor", "int64": "torch.LongTensor", "int32": "torch.IntTensor",
                "int16": "torch.ShortTensor", "int8": "torch.CharTensor", "uint8": "torch.ByteTensor",
                "bool": "torch.BoolTensor"}[obj.dtype.name]
    module = type(obj).__module__
    return type(obj).__qualname__ if module in ("builtins", None) else f"{module}.{type(obj).__qualname__}"


def _safe_softmax(input, dim, dtype=None):
    """softmax along dim, with 0 (not NaN) along the rows that are -inf throughout (fully masked attention)."""
    masked = (input == -math.inf).all(dim, keepdim=True)
    zero = rill.zeros((), dtype=input.dtype)
    out = rill.nn.functional.softmax(rill.where(masked, zero, input), dim, dtype=dtype)
    return rill.where(masked, rill.zeros((), dtype=out.dtype), out)


def max_pool2d_with_indices_backward(grad_output, input, kernel_size, stride, padding, dilation, ceil_mode, indices):
    """aten's max_pool2d backward: each grad_output element added at the input position its index (flat
    within the H * W plane, as max_pool2d(return_indices=True) gives) names; the pooling arguments are
    checked against grad_output's shape."""
    if input.dim() not in (3, 4) or grad_output.dim() != input.dim():
        raise ValueError("max_pool2d_with_indices_backward: input must be (C, H, W) or (N, C, H, W) and "
                         f"grad_output of as many dimensions, got {input.dim()} and {grad_output.dim()}")
    if tuple(indices.shape) != tuple(grad_output.shape):
        raise ValueError(f"max_pool2d_with_indices_backward: indices {tuple(indices.shape)} must have "
                         f"grad_output's shape {tuple(grad_output.shape)}")
    pooled = rill.nn.functional.max_pool2d(input.detach(), kernel_size, stride or None, padding, dilation,
                                           ceil_mode)
    if tuple(pooled.shape) != tuple(grad_output.shape):
        raise ValueError(f"max_pool2d_with_indices_backward: grad_output {tuple(grad_output.shape)} does not "
                         f"match the pooling's output shape {tuple(pooled.shape)}")
    lead = tuple(input.shape[:-2])
    grad = rill.zeros((*lead, input.shape[-2] * input.shape[-1]), dtype=grad_output.dtype)
    grad = grad.scatter_add(-1, indices.flatten(-2), grad_output.flatten(-2)).reshape(tuple(input.shape))
    # differentiable in input with derivative zero, as in PyTorch (the indices fix where grad_output goes)
    return rill.where(rill.zeros((), dtype=rill.bool), input, grad)


from rill.nn import _grid_sample  # noqa: E402

grid_sampler_2d, grid_sampler_3d = _grid_sample.grid_sampler_2d, _grid_sample.grid_sampler_3d
_upsample_bilinear2d_aa = rill.nn._interpolate._upsample_bilinear2d_aa

_NAMES = ("dropout", "alpha_dropout", "feature_alpha_dropout", "layer_norm", "group_norm", "rrelu", "swapaxes",
          "swapdims", "adjoint", "detach", "is_complex", "is_signed", "is_nonzero",
          "is_same_size", "is_inference", "range", "vander", "chain_matmul", "frobenius_norm", "nuclear_norm",
          "hann_window", "hamming_window", "blackman_window", "bartlett_window", "use_deterministic_algorithms",
          "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
          "set_float32_matmul_precision", "get_float32_matmul_precision", "set_warn_always",
          "is_warn_always_enabled", "get_default_device", "set_default_device", "get_num_interop_threads",
          "set_num_interop_threads", "set_flush_denormal", "typename", "_safe_softmax",
          "max_pool2d_with_indices_backward", "grid_sampler_2d", "grid_sampler_3d",
          "_upsample_bilinear2d_aa")


# --- torch.nn.functional forms ------------------------------------------------------------------------------
def _functional_inplace(name):
    def fn(input, *args, **kwargs):
        return input.copy_(getattr(rill.nn.functional, name)(input, *args, **kwargs))
    fn.__name__ = name + "_"
    fn.__doc__ = f"torch.nn.functional.{name}_: {name} written into input."
    return fn


def _with_indices(name):
    def fn(*args, **kwargs):
        kwargs["return_indices"] = True
        return getattr(rill.nn.functional, name)(*args, **kwargs)
    fn.__name__ = name + "_with_indices"
    fn.__doc__ = f"{name}(..., return_indices=True): the output and the indices of the chosen elements."
    return fn


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """Samples of the Gumbel-softmax distribution over dim; hard: one-hot, with the soft sample's gradient."""
    gumbels = -rill.empty(*logits.shape, dtype=logits.dtype).exponential_().log()
    y = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y
    index = y.argmax(dim, keepdim=True)
    y_hard = rill.zeros_like(logits).scatter(dim, index, 1.0)
    return y_hard - y.detach() + y


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """interpolate (the deprecated name)."""
    return rill.nn.functional.interpolate(input, size, scale_factor, mode, align_corners)


_F_INPLACE = ("elu", "hardtanh", "leaky_relu", "relu", "rrelu")
_F_WITH_INDICES = ("max_pool1d", "max_pool2d", "max_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
                   "adaptive_max_pool3d", "fractional_max_pool2d", "fractional_max_pool3d")


# --- Tensor methods: aliases and the legacy forms -----------------------------------------------------------
_TENSOR_ALIASES = {"absolute": "abs", "absolute_": "abs_", "arctan2": "atan2", "arctan2_": "atan2_", "fix": "trunc",
                   "fix_": "trunc_", "greater": "gt", "greater_": "gt_", "greater_equal": "ge", "greater_equal_": "ge_",
                   "less": "lt", "less_": "lt_", "less_equal": "le", "less_equal_": "le_", "not_equal": "ne",
                   "not_equal_": "ne_", "multiply": "mul", "multiply_": "mul_", "subtract": "sub", "subtract_": "sub_",
                   "negative": "neg", "negative_": "neg_", "ndimension": "dim",
                   "unsafe_split_with_sizes": "split_with_sizes"}


def _alias(target):
    def fn(self, *args, **kwargs):
        return getattr(self, target)(*args, **kwargs)
    fn.__name__ = target
    return fn


def _get_device(self):
    """-1: the tensor is on the CPU."""
    return -1


def _type(self, dtype=None, non_blocking=False, **kwargs):
    """Tensor.type(): the legacy type name ('torch.FloatTensor'); type(dtype or name): converted to it."""
    if dtype is None:
        return typename(self)
    if isinstance(dtype, str):
        names = {"torch.FloatTensor": rill.float32, "torch.DoubleTensor": rill.float64,
                 "torch.HalfTensor": rill.float16, "torch.BFloat16Tensor": rill.bfloat16,
                 "torch.LongTensor": rill.int64, "torch.IntTensor": rill.int32, "torch.ShortTensor": rill.int16,
                 "torch.CharTensor": rill.int8, "torch.ByteTensor": rill.uint8, "torch.BoolTensor": rill.bool}
        if dtype not in names:
            raise ValueError(f"invalid type: {dtype!r}")
        dtype = names[dtype]
    elif isinstance(dtype, type) and hasattr(dtype, "dtype"):
        dtype = dtype.dtype  # rill.FloatTensor and the other legacy classes
    return self.to(dtype)


def _dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory (by stride, ties in dim order; ambiguity_check is
    accepted: ties are resolved by dim order)."""
    strides = self.stride()
    return tuple(sorted(builtins.range(self.dim()), key=lambda d: -strides[d]))


def _fill_diagonal_(self, fill_value, wrap=False):
    """Write fill_value on the main diagonal (all dims equal; a tall 2-D matrix wraps every n + 1 rows when wrap)."""
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.dim() > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    n = min(self.shape)
    if self.dim() == 2:
        rows = rill.arange(self.shape[0])
        keep = (rows % (self.shape[1] + 1) < self.shape[1]) if wrap else rows < n
        rows = rows[keep] if wrap else rill.arange(n)
        cols = (rows % (self.shape[1] + 1)) if wrap else rows
        self[rows, cols] = fill_value
        return self
    idx = rill.arange(n)
    self[(idx,) * self.dim()] = fill_value
    return self


def _apply_(self, callable):
    """Each element replaced by callable(element), in Python (as torch's: slow, CPU only)."""
    import numpy as np
    values = np.vectorize(callable, otypes=[self.numpy().dtype])(self.numpy()) if self.numel() else self.numpy()
    return self.copy_(rill.tensor(values, dtype=self.dtype))


def _map_(self, tensor, callable):
    """Each element replaced by callable(element, tensor's element), tensor broadcast to self."""
    import numpy as np
    other = tensor.expand(*self.shape).numpy()
    values = np.vectorize(callable, otypes=[self.numpy().dtype])(self.numpy(), other) if self.numel() else \
        self.numpy()
    return self.copy_(rill.tensor(values, dtype=self.dtype))


def _map2_(self, x, y, callable):
    """Each element replaced by callable(element, x's element, y's element), x and y broadcast to self."""
    import numpy as np
    a, b = x.expand(*self.shape).numpy(), y.expand(*self.shape).numpy()
    values = np.vectorize(callable, otypes=[self.numpy().dtype])(self.numpy(), a, b) if self.numel() else \
        self.numpy()
    return self.copy_(rill.tensor(values, dtype=self.dtype))


def _new(self, *args, **kwargs):
    """The legacy constructor in self's dtype: new() empty, new(sizes...) or new(size) uninitialised, new(data)
    a sequence's values, new(tensor) an alias of a tensor of self's dtype."""
    if kwargs.get("dtype") is None:
        kwargs["dtype"] = self.dtype
    if not args:
        return rill.empty(0, **kwargs)
    if len(args) == 1 and isinstance(args[0], rill.Tensor):
        if args[0].dtype != kwargs["dtype"]:
            raise TypeError(f"new(tensor): expected a tensor of dtype {kwargs['dtype']}, got {args[0].dtype}")
        return args[0].detach()  # an alias of its memory, as PyTorch's legacy constructor
    if len(args) == 1 and isinstance(args[0], (list, tuple)) and not isinstance(args[0], rill.Size):
        return rill.tensor(args[0], **kwargs)
    return rill.empty(*args, **kwargs)


def _is_set_to(self, tensor):
    """True when both view the same memory with the same offset, sizes and strides."""
    return (self.data_ptr() == tensor.data_ptr() and tuple(self.shape) == tuple(tensor.shape)
            and tuple(self.stride()) == tuple(tensor.stride()))


def _module_load(self, other, assign=False):
    """What nn.Module.load_state_dict stores for this parameter or buffer: other (PyTorch's default)."""
    return other


def _prelu(self, weight):
    return rill.nn.functional.prelu(self, weight)


_TENSOR_METHODS = {"get_device": _get_device, "type": _type, "dim_order": _dim_order,
                   "fill_diagonal_": _fill_diagonal_, "apply_": _apply_, "map_": _map_, "prelu": _prelu,
                   "is_shared": lambda self: False, "share_memory_": lambda self: self,
                   "is_distributed": lambda self: False, "map2_": _map2_, "new": _new, "is_set_to": _is_set_to,
                   "module_load": _module_load, "const_data_ptr": lambda self: self.data_ptr()}


def install():
    F = rill.nn.functional
    for name in _F_INPLACE:
        if not hasattr(F, name + "_"):
            setattr(F, name + "_", _functional_inplace(name))
    for name in _F_WITH_INDICES:
        if not hasattr(F, name + "_with_indices"):
            setattr(F, name + "_with_indices", _with_indices(name))
    for name, fn in (("gumbel_softmax", gumbel_softmax), ("upsample", upsample)):
        if not hasattr(F, name):
            setattr(F, name, fn)
    if not hasattr(F, "native_channel_shuffle") and hasattr(F, "channel_shuffle"):
        F.native_channel_shuffle = F.channel_shuffle
    for name, target in _TENSOR_ALIASES.items():
        if not hasattr(rill.Tensor, name):
            setattr(rill.Tensor, name, _alias(target))
    for name, fn in _TENSOR_METHODS.items():
        if not hasattr(rill.Tensor, name):
            setattr(rill.Tensor, name, fn)
    for name in _FROM_FUNCTIONAL:
        fn = getattr(rill.nn.functional, name, None)
        if fn is not None and not hasattr(rill, name):
            setattr(rill, name, fn)
    for name in _INPLACE:
        if not hasattr(rill, name):
            setattr(rill, name, _inplace(name))
    for name in _NAMES:
        if not hasattr(rill, name):
            setattr(rill, name, globals()[name])
    for name in ("swapdims", "adjoint", "is_complex", "is_signed", "is_nonzero", "is_same_size", "is_inference"):
        if not hasattr(rill.Tensor, name):
            setattr(rill.Tensor, name, globals()[name])
