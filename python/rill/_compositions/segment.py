"""torch._segment_reduce: data reduced ('sum', 'mean', 'max', 'min' or 'prod') over consecutive segments along
an axis, the segments given by their lengths or by their offsets, with PyTorch's gradients (its
_segment_reduce_backward: max and min share among the elements equal to the result, prod divides the result by
each element or, for a zero or NaN element, takes the product of the others).

Each segment is reduced through a (segments, elements) membership mask and where(), never a product with a 0/1
matrix, so a NaN or inf stays in its own segment."""
import math

import rill
from rill._compositions._common import _opmath

_REDUCTIONS = ("sum", "mean", "max", "min", "prod")


def _offsets_of(data, axis, lengths, offsets, unsafe):
    """(L, S + 1) int64 segment bounds over the L rows of data's dims before axis."""
    bounds = lengths if lengths is not None else offsets
    what = "lengths" if lengths is not None else "offsets"
    if bounds.dtype not in (rill.int64, rill.int32):
        raise RuntimeError(f"segment_reduce(): Expected {what} to be an int64 or int32 tensor, got {bounds.dtype}")
    if bounds.dim() != axis + 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of {what} but got axis {axis} "
                           f"for {what} of {bounds.dim()} dims")
    if tuple(bounds.shape[:-1]) != tuple(data.shape[:axis]):
        raise RuntimeError(f"segment_reduce(): Expected {what} of shape {tuple(data.shape[:axis])} + (segments,) "
                           f"to match data's dims before axis {axis}, got {tuple(bounds.shape)}")
    bounds = bounds.to(rill.int64).reshape(-1, bounds.shape[-1])
    n = data.shape[axis]
    if lengths is not None:
        if bool((bounds < 0).any()):
            raise RuntimeError("segment_reduce(): lengths contains negative value!")
        ends = bounds.cumsum(-1)
        if bounds.shape[-1] and not unsafe and not bool((ends[:, -1] == n).all()):
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                               f"data.size(lengths.dim()-1) = {n} when !unsafe.")
        bounds = rill.cat([rill.zeros(bounds.shape[0], 1, dtype=rill.int64), ends], -1)
    elif bounds.shape[-1] == 0:
        raise RuntimeError("segment_reduce(): Expected offsets to hold at least one value (segments + 1)")
    if bool((bounds[:, 1:] < bounds[:, :-1]).any()) or bool((bounds < 0).any()) or bool((bounds > n).any()):
        raise RuntimeError(f"segment_reduce(): Expected segments within data's axis of size {n} with "
                           "non-decreasing offsets")
    return bounds


class _SegmentReduce(rill.autograd.Function):
    """data (L, N, R) reduced over the segments of each row's N elements -> (L, S, R)."""

    @staticmethod
    def forward(ctx, data, bounds, reduce, initial):
        positions = rill.arange(data.shape[1], dtype=rill.int64)
        member = (positions >= bounds[:, :-1, None]) & (positions < bounds[:, 1:, None])  # (L, S, N)
        x, inside = data.unsqueeze(1), member.unsqueeze(-1)  # (L, 1, N, R), (L, S, N, 1)
        counts = member.sum(-1).unsqueeze(-1).to(data.dtype)  # (L, S, 1)
        if reduce in ("sum", "mean"):
            out = rill.where(inside, x, 0).sum(2)
            if initial is not None:
                out = out + initial
            if reduce == "mean":
                empty = math.nan if initial is None else initial
                out = rill.where(counts > 0, out / counts.clamp_min(1), empty)
        elif reduce == "prod":
            out = rill.where(inside, x, 1).prod(2)
            if initial is not None:
                out = out * initial
        else:
            big = math.inf if reduce == "min" else -math.inf
            out = rill.where(inside, x, big)
            out = out.amax(2) if reduce == "max" else out.amin(2)
            if initial is not None:
                out = (rill.maximum if reduce == "max" else rill.minimum)(out, rill.tensor(initial, dtype=out.dtype))
        ctx.save_for_backward(data, member, out, counts)
        ctx.reduce, ctx.initial = reduce, initial
        return out

    @staticmethod
    def backward(ctx, grad):
        data, member, out, counts = ctx.saved_tensors
        inside = member.unsqueeze(-1)  # (L, S, N, 1)

        def spread(v):
            """v (L, S, R) at each element of its segment -> (L, N, R) (0 outside every segment)."""
            return rill.where(inside, v.unsqueeze(2), 0).sum(1)

        if ctx.reduce == "sum":
            return spread(grad), None, None, None
        if ctx.reduce == "mean":
            return spread(rill.where(counts > 0, grad / counts.clamp_min(1), 0)), None, None, None
        result, g = spread(out), spread(grad)
        in_segment = member.any(1).unsqueeze(-1)  # (L, N, 1)
        if ctx.reduce in ("max", "min"):
            # every element equal to the result (or NaN) takes the gradient, shared where there are several (PyTorch
            # divides only positive gradients)
            hit = in_segment & (rill.isnan(data) | (data == result))
            ties = spread(rill.where(inside, hit.unsqueeze(1), False).sum(2).to(data.dtype))
            share = rill.where((ties > 1) & (g > 0), g / ties.clamp_min(1), g)
            return rill.where(hit, share, 0), None, None, None
        special = rill.isnan(data) | (data == 0)
        plain = rill.where(special, 0, g * result / rill.where(special, 1, data))
        if bool((special & in_segment).any()):
            # the product of the segment's other elements (and initial), for a zero or NaN element
            n = data.shape[1]
            same = (member.unsqueeze(-1) & member.unsqueeze(-2)).any(1) & ~rill.eye(n, dtype=rill.bool)  # (L, N, N)
            others = rill.where(same.unsqueeze(-1), data.unsqueeze(1), 1).prod(2)  # (L, N, R)
            if ctx.initial is not None:
                others = others * ctx.initial
            plain = rill.where(special & in_segment, g * others, plain)
        return rill.where(in_segment, plain, 0), None, None, None


def _segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """data reduced by reduce ('sum', 'mean', 'max', 'min' or 'prod') over the segments of its dim axis: lengths
    (or offsets, one more) per row of the dims before axis; initial starts every segment (an empty one is
    initial, or 0, 1, nan, -inf, inf for sum, prod, mean, max, min). unsafe skips the check that lengths cover
    the axis."""
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet; give lengths or offsets")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if not data.dtype.is_floating_point:
        raise RuntimeError(f"segment_reduce(): Expected a floating data tensor, got {data.dtype}")
    axis = axis + data.dim() if axis < 0 else axis
    if not 0 <= axis < data.dim():
        raise IndexError(f"segment_reduce(): axis {axis} is out of range for data of {data.dim()} dims")
    bounds = _offsets_of(data, axis, lengths, offsets, unsafe)
    lead, n, rest = tuple(data.shape[:axis]), data.shape[axis], tuple(data.shape[axis + 1:])
    out = _reduce_rows(data.reshape(bounds.shape[0], n, math.prod(rest)), bounds, reduce,
                       None if initial is None else float(initial))
    return out.reshape(lead + (bounds.shape[1] - 1,) + rest)


@_opmath
def _reduce_rows(x, bounds, reduce, initial):
    return _SegmentReduce.apply(x, bounds, reduce, initial)


__all__ = ["_segment_reduce"]
