"""embedding_bag: sums, means or maxima of bags of embedding rows, composed from embedding (which renormalises
with max_norm and scales gradients by frequency) and index_add over each element's bag (max: one reduction
per bag). An empty bag, or one of padding_idx entries only, gives zeros."""
import numpy as np

import rill


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Bags of rows of weight: input (B, N) is B bags of N indices; 1-D input is cut into bags at offsets
    (include_last_offset: offsets holds B + 1 boundaries). mode 'sum' (optionally weighting each entry by
    per_sample_weights), 'mean' or 'max'."""
    op = "embedding_bag"
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"[{op}] mode has to be one of sum, mean or max, got {mode!r}")
    if sparse:
        raise NotImplementedError(f"[{op}] sparse=True returns a sparse gradient, and rill has no sparse tensors; "
                                  f"pass sparse=False")
    if input.dtype not in (rill.int32, rill.int64):
        raise TypeError(f"[{op}] expected an int32 or int64 input, got {input.dtype}; convert it with .long()")
    if weight.dim() != 2:
        raise ValueError(f"[{op}] weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(f"[{op}] embedding_bag: per_sample_weights was not None. per_sample_weights "
                                      f"is only supported for mode='sum' (got mode='{mode}'). Please open a feature "
                                      f"request on GitHub.")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(f"[{op}] embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)}) is "
                             f"not None, then it must have the same shape as the input ({list(input.shape)})")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(f"[{op}] if input is 2D, then offsets has to be None, as input is treated is a "
                             f"mini-batch of fixed length sequences.")
        bags, length = input.shape
        starts = [b * length for b in range(bags)]
        ends = [s + length for s in starts]
        flat = input.reshape(-1)
        psw = None if per_sample_weights is None else per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError(f"[{op}] offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError(f"[{op}] offsets has to be a 1D Tensor")
        bounds = [int(v) for v in offsets.tolist()]
        n = input.shape[0]
        if bounds and bounds[0] != 0:
            raise RuntimeError(f"[{op}] offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
                               f"start from position 0. However, got {bounds[0]}")
        if any(b > n for b in bounds) or any(a > b for a, b in zip(bounds, bounds[1:])):
            raise RuntimeError(f"[{op}] offsets must be non-decreasing and at most the input's length {n}, got "
                               f"{bounds}")
        starts = bounds[:-1] if include_last_offset else bounds
        ends = bounds[1:] if include_last_offset else bounds[1:] + [n]
        flat, psw = input, per_sample_weights
    else:
        raise ValueError(f"[{op}] input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    rows = rill.nn.functional.embedding(flat, weight, None, max_norm, norm_type, scale_grad_by_freq)
    idx = np.asarray(flat.tolist(), dtype=np.int64).reshape(-1)
    keep = np.ones(idx.shape[0], dtype=bool) if padding_idx is None else idx != (
        padding_idx if padding_idx >= 0 else padding_idx + weight.shape[0])
    num_bags, dim = len(starts), weight.shape[1]
    bag_of = np.full(idx.shape[0], -1, dtype=np.int64)
    for b, (s, e) in enumerate(zip(starts, ends)):
        bag_of[s:e] = b
    keep &= bag_of >= 0  # entries past the last boundary (include_last_offset) belong to no bag
    if mode == "max":
        out = []
        for b, (s, e) in enumerate(zip(starts, ends)):
            sel = np.nonzero(keep[s:e])[0] + s
            if sel.size == 0:
                out.append(rill.zeros(dim, dtype=weight.dtype))
            else:
                out.append(rows.index_select(0, rill.tensor(sel, dtype=rill.int64)).amax(0))
        return rill.stack(out) if out else rill.zeros((0, dim), dtype=weight.dtype)
    sel = np.nonzero(keep)[0]
    picked = rows.index_select(0, rill.tensor(sel, dtype=rill.int64))
    # PyTorch sums float16 rows (and their products with per_sample_weights) in float32, rounding once
    wide = mode == "sum" and weight.dtype == rill.float16
    picked = picked.float() if wide else picked
    if psw is not None:
        picked = picked * psw.index_select(0, rill.tensor(sel, dtype=rill.int64)).to(picked.dtype).unsqueeze(1)
    out = rill.zeros((num_bags, dim), dtype=picked.dtype).index_add(0, rill.tensor(bag_of[sel], dtype=rill.int64),
                                                                    picked).to(weight.dtype)
    if mode == "mean":
        counts = np.bincount(bag_of[sel], minlength=num_bags).astype(np.float64)
        out = out / rill.tensor(np.maximum(counts, 1.0)[:, None], dtype=out.dtype)
    return out
