"""PyTorch's native_* normalisations (the result with the statistics backward uses), and the small aten
functions their OpInfos name: _softmax_backward_data, native_dropout_backward, _unsafe_masked_index and its
accumulating put. Statistics are computed in float32 for 16-bit inputs and returned in the input's dtype, as
PyTorch's CPU kernels do."""
import rill


def _opmath(t):
    return t.float() if t.dtype in (rill.float16, rill.bfloat16) else t


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """(output, mean, rstd) of layer_norm over the last len(normalized_shape) dims; mean and rstd keep those dims
    as 1."""
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    if tuple(input.shape[input.dim() - len(normalized_shape):]) != tuple(normalized_shape):
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, normalized_shape))}], but got input of size{list(input.shape)}")
    x = _opmath(input)
    mean = x.mean(dims, keepdim=True) if dims else x
    var = ((x - mean) ** 2).mean(dims, keepdim=True) if dims else x * 0
    rstd = (var + eps).rsqrt()
    out = (x - mean) * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out.to(input.dtype), mean.detach().to(input.dtype), rstd.detach().to(input.dtype)


def _batch_stats(x):
    dims = (0,) + tuple(range(2, x.dim()))
    mean = x.mean(dims)
    var = ((x - _channel(mean, x)) ** 2).mean(dims)
    return mean, var, x.numel() // max(x.shape[1], 1)


def _channel(v, x):
    return v.reshape(1, -1, *([1] * (x.dim() - 2)))


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """(output, save_mean, save_invstd) of batch_norm; training updates running_mean/var in place (unbiased
    variance) and returns the batch statistics, evaluation returns empty ones."""
    x = _opmath(input)
    if training:
        mean, var, n = _batch_stats(x)
        invstd = (var + eps).rsqrt()
        if running_mean is not None:
            with rill.no_grad():
                running_mean.mul_(1 - momentum).add_(mean.detach().to(running_mean.dtype) * momentum)
        if running_var is not None:
            with rill.no_grad():
                unbiased = var.detach() * (n / max(n - 1, 1))
                running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype) * momentum)
        used_mean, used_invstd = mean, invstd
        saved = (mean.detach().to(input.dtype), invstd.detach().to(input.dtype))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        used_mean, used_invstd = _opmath(running_mean), (_opmath(running_var) + eps).rsqrt()
        saved = (rill.empty(0, dtype=input.dtype), rill.empty(0, dtype=input.dtype))
    out = (x - _channel(used_mean, x)) * _channel(used_invstd, x)
    if weight is not None:
        out = out * _channel(weight, x)
    if bias is not None:
        out = out + _channel(bias, x)
    return (out.to(input.dtype),) + saved


def _native_batch_norm_legit(input, weight, bias, running_mean, running_var, training=None, momentum=None,
                             eps=None):
    """native_batch_norm, also in the form without running statistics (input, weight, bias, training, momentum,
    eps)."""
    if isinstance(running_mean, bool):  # the overload without running statistics
        training, momentum, eps = running_mean, running_var, training
        running_mean = running_var = None
    return native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)


def _batch_norm_with_update(input, weight, bias, running_mean, running_var, momentum, eps):
    """Training batch_norm updating the running statistics: (output, save_mean, save_invstd, reserve)."""
    out = native_batch_norm(input, weight, bias, running_mean, running_var, True, momentum, eps)
    return out + (rill.empty(0, dtype=rill.uint8),)


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """(output, mean, rstd) of group_norm with group groups; mean and rstd are (N, group)."""
    x = _opmath(input).reshape(N, group, (C // group) * HxW)
    mean = x.mean(-1) if x.shape[-1] else rill.zeros(N, group, dtype=x.dtype)
    var = ((x - mean.unsqueeze(-1)) ** 2).mean(-1) if x.shape[-1] else rill.zeros(N, group, dtype=x.dtype)
    rstd = (var + eps).rsqrt()
    out = ((x - mean.unsqueeze(-1)) * rstd.unsqueeze(-1)).reshape(input.shape)
    shape = (1, C) + (1,) * (input.dim() - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out.to(input.dtype), mean.to(input.dtype), rstd.to(input.dtype)


def _softmax_backward_data(grad_output, output, dim, input_dtype):
    """The gradient of softmax's input from its output's gradient and its output."""
    g, y = _opmath(grad_output), _opmath(output)
    return (y * (g - (g * y).sum(dim, keepdim=True))).to(input_dtype)


def native_dropout_backward(grad_output, mask, scale):
    """The gradient of dropout's input: grad_output where the mask kept an element, times scale."""
    return grad_output * mask.to(grad_output.dtype) * scale


def _masked_indices(name, x, mask, indices):
    """indices (tensors or None, one per leading dim of x) clamped into x's dims, after checking their types:
    where the mask is off, _unsafe_masked_index* may hold indices out of range, which read or write nothing."""
    if mask.dtype != rill.bool:
        raise RuntimeError(f"{name}: mask must be a bool tensor, got {mask.dtype}")
    if len(indices) > x.dim():
        raise IndexError(f"{name}: too many indices for a tensor of dimension {x.dim()} (got {len(indices)})")
    clamped = []
    for d, index in enumerate(indices):
        if index is not None and index.dtype not in (rill.int64, rill.int32):
            raise RuntimeError(f"{name}: indices must be int64 or int32 tensors, but index {d} is {index.dtype}")
        clamped.append(None if index is None else index.clamp(-x.shape[d], x.shape[d] - 1))
    return clamped


def _indexed_shape(shape, indices):
    """The shape of x[indices] (None: a whole dim) for x of shape: the indices' broadcast shape in place of the
    dims they index when those are adjacent, else in front."""
    at = [d for d, i in enumerate(indices) if i is not None]
    if not at:
        return shape
    b = tuple(rill.broadcast_shapes(*[tuple(indices[d].shape) for d in at]))
    if at == list(range(at[0], at[-1] + 1)):
        return shape[:at[0]] + b + shape[at[-1] + 1:]
    return b + tuple(n for d, n in enumerate(shape) if d not in at)


def _unsafe_masked_index(x, mask, indices, fill):
    """x[indices] where mask (broadcast with the result) is set, fill elsewhere; an index under a cleared mask
    may be out of range."""
    indices = _masked_indices("_unsafe_masked_index", x, mask, indices)
    if x.numel() == 0:  # nothing to read: fill of x[indices]'s shape
        return rill.full(_indexed_shape(tuple(x.shape), indices), fill, dtype=x.dtype)
    picked = x[tuple(slice(None) if i is None else i for i in indices)]
    return picked.masked_fill(~mask, fill)


def _unsafe_masked_index_put_accumulate(x, mask, indices, values):
    """x with values (where mask is set; mask broadcast with values) added at indices, repeated indices
    accumulating; an index under a cleared mask may be out of range."""
    indices = _masked_indices("_unsafe_masked_index_put_accumulate", x, mask, indices)
    if x.numel() == 0:
        return x.clone()
    return rill.index_put(x, tuple(indices), values.masked_fill(~mask, 0), accumulate=True)


__all__ = ["native_layer_norm", "native_batch_norm", "native_group_norm", "_native_batch_norm_legit",
           "_batch_norm_with_update", "_softmax_backward_data", "native_dropout_backward", "_unsafe_masked_index",
           "_unsafe_masked_index_put_accumulate"]
