"""clip_grad_norm_ and clip_grad_value_, with PyTorch's formulas."""
import math

import rill
from rill._C import Tensor


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients in place so that their joint norm is at most max_norm; returns the total norm
    (a 0-dim tensor) before clipping."""
    grads = _grads(parameters)
    max_norm = float(max_norm)
    norm_type = float(norm_type)
    if len(grads) == 0:
        return rill.tensor(0.0)
    with rill.no_grad():
        if norm_type == math.inf:
            norms = [g.detach().abs().amax() for g in grads]
            total_norm = norms[0]
            for n in norms[1:]:
                total_norm = rill.maximum(total_norm, n)
        else:
            # the norm of the per-tensor norms, as torch's _get_total_norm computes it
            total = None
            for g in grads:
                gn = (g.detach().abs() ** norm_type).sum() ** (1.0 / norm_type)
                term = gn ** norm_type
                total = term if total is None else total + term
            total_norm = total ** (1.0 / norm_type)
        if error_if_nonfinite:
            v = total_norm.item()
            if math.isnan(v) or math.isinf(v):
                raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is "
                                   "non-finite, so it cannot be clipped. To disable this error and scale the "
                                   "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
        clip_coef = max_norm / (total_norm + 1e-6)
        clip_coef_clamped = rill.minimum(clip_coef, rill.ones_like(clip_coef))
        for g in grads:
            g.mul_(clip_coef_clamped.to(g.dtype))
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated name of clip_grad_norm_."""
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element to [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    with rill.no_grad():
        for g in _grads(parameters):
            clipped = rill.minimum(rill.maximum(g, rill.full_like(g, -clip_value)), rill.full_like(g, clip_value))
            g.copy_(clipped)
