"""The loss functions of rill.nn.functional (where they are used from): nll_loss and cross_entropy on
dedicated kernels, the others composed of rill's ops, so their gradients come from the ops they are made of.
PyTorch's legacy size_average/reduce arguments map onto reduction as in PyTorch."""
import builtins
import math
import warnings

import rill
from rill.amp.autocast_mode import _float32_policy
from rill.nn.functional import _channel_view, _nn, _opmath, logsigmoid, pairwise_distance


_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _reduction(size_average, reduce, reduction):
    # The deprecated size_average/reduce arguments override reduction, as in PyTorch.
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if (size_average and reduce) else "sum" if reduce else "none"
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _check_same_size(name, input, target):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to broadcasting. Please "
                      "ensure they have the same size.", stacklevel=3)


@_float32_policy
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """-input[n, target[n]] (times weight[target[n]]), reduced; targets equal to ignore_index count for
    nothing (mean divides by the summed weights of the other targets)."""
    reduction = _reduction(size_average, reduce, reduction)
    return _nn.nll_loss(input, target, weight, _REDUCTIONS[reduction], ignore_index)[0]


@_float32_policy
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """nll_loss(log_softmax(input, class dim), target) for class-index targets; for probability targets
    (a floating target of input's shape) -sum(target * log_softmax(input)) over the class dim. label_smoothing
    mixes the target with the uniform distribution, with PyTorch's formulas."""
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"[cross_entropy] label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 1 if input.ndim >= 2 else 0
    classes = input.shape[class_dim] if input.ndim >= 1 else 1
    logp = _nn.log_softmax(input, class_dim, None)
    w = None if weight is None else (weight if input.ndim < 2 else _channel_view(weight, input.ndim))
    if target.is_floating_point():
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError(f"[cross_entropy] Expected target of probabilities to have the input's shape "
                               f"{list(input.shape)}, got {list(target.shape)}")
        if label_smoothing > 0.0:
            target = target * (1 - label_smoothing) + label_smoothing / classes
        terms = logp * target if w is None else logp * target * w
        if reduction == "none":
            return -terms.sum(class_dim)
        if reduction == "sum":
            return -terms.sum()
        batch = input.numel() // classes if classes else 0
        return -terms.sum() / batch if batch else -terms.sum() * math.nan
    loss, total_weight = _nn.nll_loss(logp, target, weight, _REDUCTIONS[reduction], ignore_index)
    if label_smoothing <= 0.0:
        return loss
    smooth = -(logp if w is None else logp * w).sum(class_dim)
    smooth = rill.where(target == ignore_index, 0.0, smooth)
    if reduction == "mean":
        smooth = smooth.sum() / total_weight
    elif reduction == "sum":
        smooth = smooth.sum()
    return loss * (1 - label_smoothing) + smooth * (label_smoothing / classes)


def _weighted(loss, weight):
    return loss if weight is None else loss * weight


@_float32_policy
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """(input - target)^2, reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_same_size("mse_loss", input, target)
    d = input - target
    return _reduce(_weighted(d * d, weight), reduction)


@_float32_policy
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """|input - target|, reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_same_size("l1_loss", input, target)
    return _reduce(_weighted((input - target).abs(), weight), reduction)


@_float32_policy
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 * d^2 / beta where |d| < beta, else |d| - 0.5 * beta (d = input - target), reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("[smooth_l1_loss] smooth_l1_loss does not support negative values for beta.")
    _check_same_size("smooth_l1_loss", input, target)
    d = (input - target).abs()
    if beta == 0.0:
        return _reduce(d, reduction)
    return _reduce(rill.where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction)


@_float32_policy
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(target * log(input) + (1 - target) * log(1 - input)), each log clamped at -100 as in PyTorch."""
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    log_p = rill.maximum(input.log(), -100.0)
    log_q = rill.maximum((1 - input).log(), -100.0)
    loss = -(target * log_p + (1 - target) * log_q)
    return _reduce(_weighted(loss, weight), reduction)


@_float32_policy
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """binary_cross_entropy(sigmoid(input), target) computed stably from the logits:
    (1 - target) * input + (1 + (pos_weight - 1) * target) * softplus(-input)."""
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    softplus_neg = (1 + (-input.abs()).exp()).log() + rill.maximum(-input, 0.0)  # log(1 + exp(-input))
    if pos_weight is not None:
        softplus_neg = softplus_neg * (1 + (pos_weight - 1) * target)
    loss = (1 - target) * input + softplus_neg
    return _reduce(_weighted(loss, weight), reduction)


def _loss(loss, size_average, reduce, reduction):
    return _reduce(loss, _reduction(size_average, reduce, reduction))


@_opmath
@_float32_policy
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, delta (|d| - delta / 2) elsewhere, d = input - target."""
    d = (input - target).abs()
    loss = rill.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    return _loss(loss if weight is None else loss * weight, None, None, reduction)


@_float32_policy
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target * (log target - input) (input holds log-probabilities); 'batchmean' divides the sum by the batch."""
    loss = rill.exp(target) * (target - input) if log_target else rill.xlogy(target, target) - target * input
    if reduction == "batchmean" and size_average is None and reduce is None:
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _loss(loss, size_average, reduce, reduction)


@_float32_policy
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target * (input1 - input2) + margin)."""
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {list(input1.shape)}, input2: {list(input2.shape)}, target: {list(target.shape)}")
    return _loss((-target * (input1 - input2) + margin).clamp_min(0), size_average, reduce, reduction)


@_float32_policy
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """input where target is 1, max(0, margin - input) where target is -1."""
    zero = rill.zeros((), dtype=input.dtype)
    loss = rill.where(target != 1, (margin - input).clamp_min(0), zero) + rill.where(target != -1, input, zero)
    return _loss(loss, size_average, reduce, reduction)


@_float32_policy
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input))."""
    return _loss(rill.log1p(rill.exp(-target * input)), size_average, reduce, reduction)


@_opmath
@_float32_policy
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where target is -1."""
    if input1.dim() not in (1, 2) or input1.shape != input2.shape:
        raise RuntimeError(f"cosine_embedding_loss expects 1D or 2D inputs of the same shape, got "
                           f"{list(input1.shape)} and {list(input2.shape)}")
    d = input1.dim() - 1
    eps = 1e-12
    cos = (input1 * input2).sum(d) / rill.sqrt(((input1 * input1).sum(d) + eps) * ((input2 * input2).sum(d) + eps))
    zero = rill.zeros((), dtype=cos.dtype)
    loss = rill.where(target == 1, 1 - cos, zero) + rill.where(target == -1, (cos - margin).clamp_min(0), zero)
    return _loss(loss, size_average, reduce, reduction)


@_opmath
@_float32_policy
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)), d the pairwise p-distance."""
    dims = {anchor.dim(), positive.dim(), negative.dim()}
    if len(dims) != 1 or dims - {1, 2}:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions (1 or 2), but got: {anchor.dim()}, {positive.dim()}, {negative.dim()}")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = rill.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _loss((margin + d_pos - d_neg).clamp_min(0), size_average, reduce, reduction)


@_float32_policy
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(input) - target * input (log_input), or input - target * log(input + eps); full adds Stirling's term."""
    loss = rill.exp(input) - target * input if log_input else input - target * rill.log(input + eps)
    if full:
        t = target
        stirling = t * rill.log(t) - t + 0.5 * rill.log(2 * math.pi * t)
        loss = loss + rill.where(t > 1, stirling, rill.zeros((), dtype=loss.dtype))
    return _loss(loss, size_average, reduce, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log var + (input - target)^2 / var) (+ 0.5 log 2 pi with full); var is clamped to eps without
    changing its gradient."""
    if isinstance(var, (int, float)):
        var = rill.full(tuple(input.shape), float(var), dtype=input.dtype)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.dim() == var.dim()
                  and builtins.sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1):
            # var may differ from input in one dim where it is 1 ((4, 3, 32, 32) and (4, 1, 32, 32))
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if (var < 0).any().item():
        raise ValueError("var has negative entry/entries")
    var = var + (var.clamp_min(eps) - var).detach()
    loss = 0.5 * (rill.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """The mean over classes of the binary logistic loss of each label."""
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.mean(input.dim() - 1) if input.dim() else loss
    return _loss(loss, size_average, reduce, reduction)


def pdist(input, p=2):
    """The p-norm distances between each pair of rows of a 2-D input (the upper triangle of cdist, row-major)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    rows, cols = rill.triu_indices(input.shape[0], input.shape[0], 1)
    return rill._compositions._pnorm(input.index_select(0, rows) - input.index_select(0, cols), p, -1)


@_float32_policy
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """The mean over classes j != target of max(0, margin - x[target] + x[j]) ** p (times weight[target])."""
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x = input if input.dim() > 1 else input.reshape(1, -1)
    t = target.reshape(-1, 1).to(rill.int64)
    margins = (margin - x.gather(1, t) + x).clamp_min(0)
    if p == 2:
        margins = margins * margins
    if weight is not None:
        margins = margins * weight.index_select(0, t.reshape(-1)).reshape(-1, 1)
    others = rill.arange(x.shape[1]).reshape(1, -1) != t
    loss = rill.where(others, margins, rill.zeros((), dtype=margins.dtype)).sum(1) / x.shape[1]
    return _loss(loss if input.dim() > 1 else loss.reshape(()), size_average, reduce, reduction)


@_float32_policy
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Sum over the target classes j (target's entries up to the first -1) and the other classes i of
    max(0, 1 - (x[j] - x[i])), divided by the number of classes."""
    x = input if input.dim() > 1 else input.reshape(1, -1)
    t = target.reshape(x.shape).to(rill.int64)
    valid = rill.cumprod((t >= 0).to(rill.int64), 1).to(rill.bool)
    safe = rill.where(valid, t, 0)
    is_target = rill.zeros(tuple(x.shape), dtype=rill.bool).scatter(1, safe, valid) if x.shape[1] else valid
    picked = x.gather(1, safe)
    hinge = (1 - (picked.unsqueeze(2) - x.unsqueeze(1))).clamp_min(0)
    keep = valid.unsqueeze(2) & rill.logical_not(is_target).unsqueeze(1)
    loss = rill.where(keep, hinge, rill.zeros((), dtype=hinge.dtype)).sum((1, 2)) / builtins.max(x.shape[1], 1)
    return _loss(loss if input.dim() > 1 else loss.reshape(()), size_average, reduce, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) for a distance function d (pairwise_distance
    by default)."""
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin to be greater than 0, got {margin}")
    d = pairwise_distance if distance_function is None else distance_function
    d_pos, d_neg = d(anchor, positive), d(anchor, negative)
    if swap:
        d_neg = rill.minimum(d_neg, d(positive, negative))
    return _loss((margin + d_pos - d_neg).clamp_min(0), None, None, reduction)

def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target): linear_weight is (C, in_features) or
    (C, d_1, ..., d_K, in_features) for a K-dimensional loss. options (torch's LinearCrossEntropyOptions)
    chooses how PyTorch chunks the batch to save memory; rill computes the same values in one pass, with
    float16/bfloat16 logits accumulated in float32 as PyTorch's chunked path does."""
    if input.dim() not in (1, 2):
        raise RuntimeError(f"linear_cross_entropy: expected input with 1 or 2 dimensions, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError("linear_cross_entropy: expected linear_weight with at least 2 dimensions, got "
                           f"{linear_weight.dim()}")
    in_features = input.shape[-1]
    if linear_weight.shape[-1] != in_features:
        raise RuntimeError("linear_cross_entropy: input and linear_weight must share their last dimension "
                           f"(in_features), got {in_features} and {linear_weight.shape[-1]}")
    classes = tuple(linear_weight.shape[:-1])  # (C, d_1, ..., d_K)
    if linear_bias is not None and tuple(linear_bias.shape) != classes:
        raise RuntimeError(f"linear_cross_entropy: expected linear_bias of shape {classes}, got "
                           f"{tuple(linear_bias.shape)}")
    if len(classes) > 1 and input.dim() == 1:
        raise RuntimeError("linear_cross_entropy: a K-dimensional loss needs a batched input (N, in_features), "
                           f"got shape {tuple(input.shape)}")
    low = input.dtype in (rill.float16, rill.bfloat16)
    if options is not None and low and len(classes) == 1 and label_smoothing == 0.0 and target.dtype == rill.int64:
        out = linear_cross_entropy(input.float(), linear_weight.float(), target, reduction=reduction,
                                   linear_bias=None if linear_bias is None else linear_bias.float(),
                                   weight=None if weight is None else weight.float(), ignore_index=ignore_index)
        return out.to(input.dtype)
    # one linear, the bias added before the logits are rounded (16-bit logits round once, as PyTorch's addmm)
    flat_bias = None if linear_bias is None else linear_bias.reshape(-1)
    logits = rill.nn.functional.linear(input, linear_weight.reshape(-1, in_features), flat_bias)
    logits = logits.reshape(*input.shape[:-1], *classes)
    probabilities = tuple(target.shape) == tuple(logits.shape)
    if probabilities and ignore_index is not None:
        raise RuntimeError("linear_cross_entropy: ignore_index cannot be given when target holds probabilities")
    return cross_entropy(logits, target, weight, ignore_index=-100 if ignore_index is None else ignore_index,
                         reduction=reduction, label_smoothing=label_smoothing)


__all__ = ["nll_loss", "cross_entropy", "mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "huber_loss", "kl_div", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "cosine_embedding_loss", "triplet_margin_loss", "poisson_nll_loss", "gaussian_nll_loss", "multilabel_soft_margin_loss", "pdist", "multi_margin_loss", "multilabel_margin_loss", "triplet_margin_with_distance_loss", "linear_cross_entropy"]
