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


def _check_create_graph(create_graph, api):
    if create_graph:
        raise NotImplementedError(f"[{api}] create_graph=True (gradients of gradients) is not supported: rill's "
                                  "backward records no graph of its own; call it with create_graph=False")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Accumulate the gradients of tensors into the .grad of the leaves (or of `inputs` only)."""
    _check_create_graph(create_graph, "backward")
    tensors = _as_list(tensors, "tensors")
    if grad_tensors is None:
        grad_tensors = grad_variables
    grads = _as_list(grad_tensors, "grad_tensors") or [None] * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"[backward] got {len(tensors)} tensors and {len(grads)} gradients")
    inputs = _as_list(inputs, "inputs")
    if retain_graph is None:
        retain_graph = create_graph
    _C._run_backward(tensors, grads, bool(retain_graph), inputs)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of outputs with respect to inputs, as a tuple (None for an unused input when
    allow_unused=True; zeros when materialize_grads=True)."""
    _check_create_graph(create_graph, "grad")
    if is_grads_batched:
        raise NotImplementedError("[grad] is_grads_batched=True is not supported; "
                                  "call grad once per grad_outputs entry")
    outputs = _as_list(outputs, "outputs")
    inputs = _as_list(inputs, "inputs")
    grads = _as_list(grad_outputs, "grad_outputs") or [None] * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"[grad] grad_outputs has {len(grads)} entries for {len(outputs)} outputs")
    if allow_unused is None:
        allow_unused = materialize_grads
    if retain_graph is None:
        retain_graph = create_graph
    got = _C._run_grad(outputs, inputs, grads, bool(retain_graph), bool(allow_unused))
    if materialize_grads:
        got = tuple(_C.zeros(*i.shape, dtype=i.dtype) if g is None else g for g, i in zip(got, inputs))
    return got


from rill.autograd.function import Function, FunctionCtx, InplaceFunction, once_differentiable  # noqa: E402,F401
from rill.autograd import function, functional  # noqa: E402,F401
