"""rill.autograd: reverse-mode differentiation (the engine lives in C++, src/rill/autograd/)."""
from rill import _C
from rill._C import Node  # noqa: F401
from rill.autograd.grad_mode import (  # noqa: F401
    enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled,
)


def _as_list(x, what):
    if x is None:
        return []
    if isinstance(x, _C.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return list(x)
    raise TypeError(f"[autograd] {what} must be a Tensor or a sequence of Tensors, got {type(x).__name__}")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Accumulate the gradients of tensors into the .grad of the leaves (or of `inputs` only)."""
    tensors = _as_list(tensors, "tensors")
    if grad_tensors is None:
        grad_tensors = grad_variables
    grads = _as_list(grad_tensors, "grad_tensors") or [None] * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"[backward] got {len(tensors)} tensors and {len(grads)} gradients")
    inputs = _as_list(inputs, "inputs")
    if retain_graph is None:
        retain_graph = create_graph
    _C._run_backward(tensors, grads, bool(retain_graph), inputs, bool(create_graph))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of outputs with respect to inputs, as a tuple (None for an unused input when
    allow_unused=True; zeros when materialize_grads=True)."""
    outputs = _as_list(outputs, "outputs")
    inputs = _as_list(inputs, "inputs")
    grads = _as_list(grad_outputs, "grad_outputs") or [None] * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"[grad] grad_outputs has {len(grads)} entries for {len(outputs)} outputs")
    if allow_unused is None:
        allow_unused = materialize_grads
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        # each entry of grad_outputs holds a batch along dim 0: one backward per batch element, the results
        # stacked (PyTorch vmaps this; the values are the same)
        batch = {g.shape[0] for g in grads if g is not None}
        if len(batch) != 1:
            raise RuntimeError("[grad] is_grads_batched=True needs every grad_outputs entry to be a Tensor with the "
                               "same size along dim 0 (the batch)")
        (n,) = batch
        per = [grad(outputs, inputs, [None if g is None else g[k] for g in grads], retain_graph=retain_graph or k < n - 1,
                    create_graph=create_graph, allow_unused=allow_unused, materialize_grads=materialize_grads)
               for k in range(n)]
        return tuple(None if per[0][j] is None else _C.stack([p[j] for p in per]) for j in range(len(inputs)))
    got = _C._run_grad(outputs, inputs, grads, bool(retain_graph), bool(allow_unused), bool(create_graph))
    if materialize_grads:
        got = tuple(_C.zeros(*i.shape, dtype=i.dtype) if g is None else g for g, i in zip(got, inputs))
    return got


from rill.autograd.function import Function, FunctionCtx, InplaceFunction, once_differentiable  # noqa: E402,F401
from rill.autograd import function, functional  # noqa: E402,F401
from rill.autograd.anomaly_mode import detect_anomaly, set_detect_anomaly  # noqa: E402,F401
