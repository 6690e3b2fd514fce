"""F.ctc_loss, the connectionist temporal classification loss (Graves et al. 2006), composed of rill's ops:
the forward (alpha) recursion over the targets extended with blanks, in log space, one step per time step,
batched over the samples. Its gradient comes from autograd through the recursion."""
import math

import rill
from rill.amp.autocast_mode import _float32_policy

_REDUCTIONS = ("none", "mean", "sum")


def _lengths(lengths, n, name):
    """input_lengths / target_lengths (a tensor, list or tuple of n integers) as a list of ints."""
    if isinstance(lengths, rill.Tensor):
        if lengths.is_floating_point():
            raise TypeError(f"ctc_loss: {name} must hold integers, got {lengths.dtype}")
        lengths = lengths.reshape(-1).tolist()
    elif isinstance(lengths, int):
        lengths = [lengths]
    lengths = [int(v) for v in lengths]
    if len(lengths) != n:
        raise ValueError(f"ctc_loss: {name} must have one entry per batch element ({n}), got {len(lengths)}")
    if any(v < 0 for v in lengths):
        raise ValueError(f"ctc_loss: {name} must be non-negative, got {lengths}")
    return lengths


def _padded_targets(targets, target_lengths, n):
    """targets as an (N, S) integer tensor: given so, or cut from the concatenated 1-D form."""
    if targets.dim() == 2:
        if targets.shape[0] != n or max(target_lengths, default=0) > targets.shape[1]:
            raise ValueError(f"ctc_loss: targets {tuple(targets.shape)} must be (N, S) with S at least the "
                             f"longest target length ({max(target_lengths, default=0)})")
        return targets
    if targets.dim() != 1 or sum(target_lengths) > targets.shape[0]:
        raise ValueError("ctc_loss: 1-D targets must concatenate the targets, sum(target_lengths) = "
                         f"{sum(target_lengths)} elements, got shape {tuple(targets.shape)}")
    width = max(max(target_lengths, default=0), 1)
    rows, start = [], 0
    for length in target_lengths:
        row = targets[start:start + length]
        rows.append(rill.cat([row, rill.zeros(width - length, dtype=targets.dtype)]))
        start += length
    return rill.stack(rows)


def _logsumexp(x, dim):
    """logsumexp that is -inf with a zero gradient (not NaN) where every term is -inf."""
    m = x.amax(dim, keepdim=True)
    m = rill.where(rill.isinf(m), rill.zeros((), dtype=x.dtype), m)
    s = rill.exp(x - m).sum(dim)
    positive = s > 0
    out = m.squeeze(dim) + rill.log(rill.where(positive, s, rill.ones((), dtype=s.dtype)))
    return rill.where(positive, out, rill.full((), -math.inf, dtype=x.dtype))


@_float32_policy
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """The negative log-likelihood of each target under log_probs (T, N, C) or (T, C), summed over every
    alignment; reduction "mean" divides each by its target length before averaging. zero_infinity sets
    impossible alignments' losses (and gradients) to 0."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"ctc_loss: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    if not isinstance(log_probs, rill.Tensor) or not log_probs.is_floating_point() or log_probs.dim() not in (2, 3):
        raise ValueError("ctc_loss: log_probs must be a floating (T, N, C) or (T, C) tensor")
    batched = log_probs.dim() == 3
    if not batched:
        log_probs, targets = log_probs.unsqueeze(1), targets.unsqueeze(0)
    T, n, C = log_probs.shape
    if not 0 <= blank < C:
        raise ValueError(f"ctc_loss: blank must be a class index in [0, {C}), got {blank}")
    if targets.is_floating_point():
        raise TypeError(f"ctc_loss: targets must hold class indices (an integer tensor), got {targets.dtype}")
    in_lens = _lengths(input_lengths, n, "input_lengths")
    tgt_lens = _lengths(target_lengths, n, "target_lengths")
    if any(v > T for v in in_lens):
        raise ValueError(f"ctc_loss: input_lengths must be at most the time dimension {T}, got {in_lens}")
    targets = _padded_targets(targets, tgt_lens, n).to(rill.int64)
    S = targets.shape[1]
    L = 2 * S + 1
    dtype = log_probs.dtype

    # the extended target: blank, l1, blank, l2, ..., blank
    blanks = rill.full((n, S), blank, dtype=rill.int64)
    ext = rill.cat([rill.stack([blanks, targets], -1).reshape(n, 2 * S), rill.full((n, 1), blank, dtype=rill.int64)],
                   1)
    emit = log_probs.gather(2, ext.unsqueeze(0).expand(T, n, L))  # (T, N, L)
    # a step may skip the blank between two different labels
    prev2 = rill.cat([rill.full((n, 2), blank, dtype=rill.int64), ext[:, :-2]], 1)
    skip = (ext != blank) & (ext != prev2)
    neg_inf = rill.full((), -math.inf, dtype=dtype)
    pad1, pad2 = rill.full((n, 1), -math.inf, dtype=dtype), rill.full((n, 2), -math.inf, dtype=dtype)

    start = rill.arange(L) < 2
    alpha = rill.where(start.unsqueeze(0), emit[0], neg_inf)
    in_len = rill.tensor(in_lens, dtype=rill.int64).unsqueeze(1)
    for t in range(1, T):
        stay, step = alpha, rill.cat([pad1, alpha[:, :-1]], 1)
        jump = rill.where(skip, rill.cat([pad2, alpha[:, :-2]], 1), neg_inf)
        new = _logsumexp(rill.stack([stay, step, jump], -1), -1) + emit[t]
        alpha = rill.where(in_len > t, new, alpha)  # a sample's alpha stops at its input length
    # the alignment ends on the last label or the blank after it
    last = rill.tensor([2 * v for v in tgt_lens], dtype=rill.int64).unsqueeze(1)
    ends = rill.cat([alpha.gather(1, last), rill.where(last > 0, alpha.gather(1, (last - 1).clamp_min(0)), neg_inf)],
                    1)
    loss = -_logsumexp(ends, 1)
    if any(v == 0 for v in in_lens):  # no time step: only an empty target is possible, with probability 1
        empty = rill.tensor([v == 0 for v in in_lens])
        loss = rill.where(empty, rill.where(last.squeeze(1) == 0, rill.zeros((), dtype=dtype),
                                            rill.full((), math.inf, dtype=dtype)), loss)

    # PyTorch's gradient takes log_probs as log_softmax's output: it adds exp(log_probs) over the time steps
    # each sample uses (which log_softmax's backward cancels). The zero-valued term below adds the same.
    used = (rill.arange(T).unsqueeze(1) < in_len.squeeze(1)).unsqueeze(2)
    mass = rill.where(used, rill.exp(log_probs), rill.zeros((), dtype=dtype)).sum((0, 2))
    loss = loss + (mass - mass.detach())
    if zero_infinity:
        loss = rill.where(rill.isinf(loss), rill.zeros((), dtype=dtype), loss)
    if reduction == "mean":
        divisor = rill.tensor([max(v, 1) for v in tgt_lens], dtype=dtype)
        return (loss / divisor).mean()
    if reduction == "sum":
        return loss.sum()
    return loss if batched else loss.squeeze(0)
