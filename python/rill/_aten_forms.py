"""The torch.* top-level forms whose arguments follow aten's signature rather than torch.nn.functional's:
norms and losses with their tensors first and an integer reduction (0 none, 1 mean, 2 sum), convolution and
grid_sampler with flags and integer modes, embedding with the weight first, and the small switches and
predicates programs call (set_printoptions, deterministic debug mode, init_num_threads, ...). Installed only
where rill has no such name."""
import builtins
import math

import rill

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(reduction):
    """aten's integer reduction (or a name) as torch.nn.functional's name."""
    if isinstance(reduction, str):
        return reduction
    if reduction not in (0, 1, 2):
        raise ValueError(f"reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction!r}")
    return _REDUCTIONS[reduction]


def _F():
    return rill.nn.functional


# --- norms ------------------------------------------------------------------------------------------------------
def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled=True):
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                  cudnn_enabled=True):
    return _F().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def norm_except_dim(v, pow=2, dim=0):
    """The p-norm of v over every dim but dim, shaped to broadcast against v (weight_norm's g); dim -1: over all."""
    if dim == -1:
        return rill.linalg.vector_norm(v, pow)
    dims = [d for d in builtins.range(v.dim()) if d != dim % builtins.max(v.dim(), 1)]
    return rill.linalg.vector_norm(v, pow, dims, keepdim=True)


# --- losses -----------------------------------------------------------------------------------------------------
def kl_div(input, target, reduction=1, *, log_target=False):
    return _F().kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    return _F().binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                                 pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    return _F().cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    return _F().hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    return _F().margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return _F().poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction=1):
    return _F().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                    reduction=_reduction(reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False):
    return _F().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction),
                         zero_infinity)


# --- convolution, sampling, embedding, dropout --------------------------------------------------------------------
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """aten's convolution: conv{1,2,3}d, or conv_transpose{1,2,3}d when transposed, by the input's spatial dims."""
    spatial = weight.dim() - 2
    if spatial not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a weight of 3 to 5 dims, got {weight.dim()}")
    if transposed:
        return getattr(_F(), f"conv_transpose{spatial}d")(input, weight, bias, stride, padding, output_padding,
                                                          groups, dilation)
    return getattr(_F(), f"conv{spatial}d")(input, weight, bias, stride, padding, dilation, groups)


_GRID_MODES = ("bilinear", "nearest", "bicubic")
_GRID_PADDINGS = ("zeros", "border", "reflection")


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """grid_sample with aten's integer modes (0 bilinear, 1 nearest, 2 bicubic; 0 zeros, 1 border,
    2 reflection)."""
    return _F().grid_sample(input, grid, _GRID_MODES[interpolation_mode], _GRID_PADDINGS[padding_mode],
                            align_corners)


def affine_grid_generator(theta, size, align_corners):
    return _F().affine_grid(theta, list(size), align_corners)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return _F().embedding(indices, weight, None if padding_idx < 0 else padding_idx,
                          scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def embedding_renorm_(input, indices, max_norm, norm_type):
    """The rows of input (an embedding weight) that indices name, scaled in place to a norm_type-norm of at most max_norm (by
    max_norm / (norm + 1e-7), as PyTorch)."""
    with rill.no_grad():
        rows = rill.unique(indices.reshape(-1))
        norms = rill.linalg.vector_norm(input[rows], norm_type, dim=-1, keepdim=True)
        scale = rill.where(norms > max_norm, max_norm / (norms + 1e-7), rill.ones_like(norms))
        input[rows] = input[rows] * scale
    return input


def native_dropout(input, p, train):
    """(output, keep mask): dropout with probability p when train (None: True), else the input and all True."""
    if train is None or train:
        if p >= 1.0:
            return rill.zeros_like(input), rill.zeros(*input.shape, dtype=rill.bool)
        keep = rill.rand(*input.shape) >= p if p > 0 else rill.ones(*input.shape, dtype=rill.bool)
        return input * keep.to(input.dtype) * (1.0 / (1.0 - p)), keep
    return input.clone(), rill.ones(*input.shape, dtype=rill.bool)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F().max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode, return_indices=True)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, **kwargs):
    """The Kaiser window I0(beta sqrt(1 - (2k / (N - 1) - 1)^2)) / I0(beta), k < N (periodic: N = length + 1,
    the last point dropped)."""
    dtype = dtype or rill.get_default_dtype()
    if window_length < 0:
        raise RuntimeError(f"kaiser_window requires non-negative window_length, got window_length={window_length}")
    if window_length <= 1:
        return rill.ones(window_length, dtype=dtype)
    n = window_length + 1 if periodic else window_length
    k = rill.arange(n, dtype=rill.float64)
    ratio = 2 * k / (n - 1) - 1
    w = rill.i0(beta * rill.sqrt((1 - ratio * ratio).clamp_min(0))) / rill.i0(rill.tensor(float(beta),
                                                                                          dtype=rill.float64))
    return w[:window_length].to(dtype)


def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    return rill._segment_reduce(data, reduce, lengths=lengths, indices=indices, offsets=offsets, axis=axis,
                                unsafe=unsafe, initial=initial)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return rill.split_with_sizes(input, split_sizes, dim)


def resize_as_(input, the_template, *, memory_format=None):
    return input.resize_as_(the_template)


def as_strided_(input, size, stride, storage_offset=None):
    return input.as_strided_(size, stride, storage_offset)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """A tensor of obj: obj itself when it is a tensor of dtype and copy is not True (a copy when copy=True),
    else one made from its data (a copy; copy=False where one is needed raises, as in PyTorch)."""
    if isinstance(obj, rill.Tensor):
        out = obj if dtype is None or obj.dtype == dtype else obj.to(dtype)
        if out is obj and copy:
            out = obj.clone()
        elif out is not obj and copy is False:
            raise ValueError(f"asarray: copy=False but converting {obj.dtype} to {dtype} needs a copy")
    else:
        if copy is False:
            raise ValueError("asarray: copy=False can't share the memory of a non-tensor object in rill; "
                             "pass copy=None or True")
        out = rill.tensor(obj, dtype=dtype)
    if device is not None:
        out = out.to(device)
    return out.requires_grad_(True) if requires_grad else out


# --- switches and predicates --------------------------------------------------------------------------------------
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}
_STATE = {"deterministic_debug_mode": 0}


def set_deterministic_debug_mode(debug_mode):
    """Remembered (0 default, 1 warn, 2 error, or their names): rill's CPU kernels are deterministic, so no
    operation warns or raises under it."""
    mode = _DEBUG_MODES.get(debug_mode, debug_mode) if isinstance(debug_mode, str) else debug_mode
    if mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected one of 'default', 'warn', 'error', 0, 1, 2; "
                           f"got {debug_mode!r}")
    _STATE["deterministic_debug_mode"] = mode
    rill.use_deterministic_algorithms(mode != 0, warn_only=mode == 1)


def get_deterministic_debug_mode():
    return _STATE["deterministic_debug_mode"] if rill.are_deterministic_algorithms_enabled() else 0


def is_inference_mode_enabled():
    """rill's inference_mode is no_grad (rill.autograd.grad_mode.inference_mode): enabled while it is on."""
    return rill.autograd.grad_mode._inference_depth() > 0


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """How tensors print, as torch.set_printoptions (profile 'default', 'short' or 'full' first, then the
    others)."""
    from rill import _tensor_str as s
    if profile is not None:
        if profile not in ("default", "short", "full"):
            raise ValueError(f"Unknown profile {profile!r}: expected 'default', 'short' or 'full'")
        s.PRECISION, s.THRESHOLD, s.EDGEITEMS, s.LINEWIDTH = {
            "default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}[profile]
    if precision is not None:
        s.PRECISION = precision
    if threshold is not None:
        s.THRESHOLD = threshold
    if edgeitems is not None:
        s.EDGEITEMS = edgeitems
    if linewidth is not None:
        s.LINEWIDTH = linewidth
    s.SCI_MODE = sci_mode


def is_anomaly_enabled():
    return rill.autograd.anomaly_mode.is_anomaly_enabled()


def is_anomaly_check_nan_enabled():
    return rill.autograd.anomaly_mode.is_anomaly_check_nan_enabled()


def set_anomaly_enabled(enabled, check_nan=True):
    rill.autograd.anomaly_mode.set_anomaly_enabled(enabled, check_nan)


def init_num_threads():
    """Nothing to do: rill's intra-op pool starts with the VM."""


def is_distributed(input):
    return input.is_distributed()


def is_storage(obj):
    """False: rill exposes no storage objects."""
    return False


def get_device(input):
    return input.get_device()


_NAMES = ("batch_norm", "instance_norm", "norm_except_dim", "kl_div", "binary_cross_entropy_with_logits",
          "cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss", "poisson_nll_loss",
          "triplet_margin_loss", "ctc_loss", "convolution", "grid_sampler", "affine_grid_generator", "embedding",
          "embedding_renorm_", "native_dropout", "max_pool1d_with_indices", "kaiser_window", "segment_reduce",
          "unsafe_split_with_sizes", "resize_as_", "as_strided_", "asarray", "set_deterministic_debug_mode",
          "get_deterministic_debug_mode", "is_inference_mode_enabled", "set_printoptions", "init_num_threads",
          "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled",
          "is_distributed", "is_storage", "get_device")


def install():
    for name in _NAMES:
        if not hasattr(rill, name):
            setattr(rill, name, globals()[name])
