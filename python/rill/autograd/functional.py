"""rill.autograd.functional: Jacobians, Hessians and their products with vectors for Python functions, as
torch.autograd.functional computes them: reverse mode, with gradients of gradients (create_graph) for the
second-order ones and for jvp (the double-vjp trick: the vjp is linear in its vector, so its own vjp is the jvp).
"""
import rill
from rill import autograd


def _tuple(x, what):
    if isinstance(x, rill.Tensor):
        return (x,), True
    if isinstance(x, (tuple, list)) and all(isinstance(t, rill.Tensor) for t in x):
        return tuple(x), False
    raise TypeError(f"The {what} given to the function must be either a Tensor or a tuple of Tensors but got "
                    f"{type(x).__name__}.")


def _prepare(inputs, create_graph):
    """Inputs to differentiate at: with create_graph, one that requires grad stays on its graph (a view), so the
    result can be differentiated with respect to it too; otherwise fresh leaves."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(True)
                 for t in inputs)


def _grad(outputs, inputs, grad_outputs, create_graph, retain_graph=None):
    """autograd.grad over the outputs that require grad (the others contribute nothing): None for an input no
    gradient reaches."""
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return autograd.grad([o for o, _ in pairs], inputs, [g for _, g in pairs], retain_graph=retain_graph,
                         create_graph=create_graph, allow_unused=True)


def _fill(grads, like, strict, what):
    if strict and any(g is None for g in grads):
        raise RuntimeError(f"The output of the user-provided function is independent of {what}. This is not "
                           "allowed in strict mode.")
    return tuple(rill.zeros_like(t) if g is None else g for g, t in zip(grads, like))


def _finish(values, create_graph, single):
    values = tuple(v if create_graph else v.detach() for v in values)
    return values[0] if single else values


def _vector(v, like, what):
    if v is None:
        if any(t.numel() != 1 for t in like):
            raise RuntimeError(f"The vector v can only be None if the {what} is a single Tensor with a single "
                               "element.")
        return tuple(rill.ones_like(t) for t in like)
    vs, _ = _tuple(v, "v")
    if len(vs) != len(like) or any(a.shape != b.shape for a, b in zip(vs, like)):
        raise RuntimeError(f"v has to be of the same size as the {what}: got shapes "
                           f"{[tuple(a.shape) for a in vs]} for {[tuple(b.shape) for b in like]}")
    return vs


def _call(func, ins):
    with rill.enable_grad():
        out = func(*ins)
    return _tuple(out, "outputs of the user-provided function")


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the outputs and the vector-Jacobian product with v (v may be omitted for a single-
    element output)."""
    ins, single_in = _tuple(inputs, "inputs")
    ins = _prepare(ins, create_graph)
    outs, single_out = _call(func, ins)
    vs = _vector(v, outs, "output of the user-provided function")
    grads = _fill(_grad(outs, ins, vs, create_graph), ins, strict, "its input")
    return _finish(outs, create_graph, single_out), _finish(grads, create_graph, single_in)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the outputs and the Jacobian-vector product with v (v may be omitted for a single-
    element input), by the double-vjp trick."""
    ins, single_in = _tuple(inputs, "inputs")
    ins = _prepare(ins, create_graph)
    vs = _vector(v, ins, "input")
    outs, single_out = _call(func, ins)
    # u -> u^T J is linear in u, so its vjp with v is J v
    us = tuple(rill.zeros_like(o).requires_grad_(True) for o in outs)
    back = _grad(outs, ins, us, create_graph=True)
    jv = _grad(back, us, vs, create_graph)
    jv = _fill(jv, outs, strict, "its input")
    return _finish(outs, create_graph, single_out), _finish(jv, create_graph, single_out)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of func at inputs: for output i and input j, a tensor of shape out_i.shape + in_j.shape
    (a single Tensor, a tuple, or a tuple of tuples, as torch.autograd.functional.jacobian). vectorize only
    batches PyTorch's backward passes, so rill computes the same values with one pass per output element."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function '
                         'has more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, '
                         'prefer to use "reverse-mode".')
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError("torch.autograd.functional.jacobian: `strategy=\"forward-mode\"` is only "
                                  "implemented with `vectorize=True`")
    ins, single_in = _tuple(inputs, "inputs")
    ins = _prepare(ins, create_graph)
    outs, single_out = _call(func, ins)
    table = []
    for i, o in enumerate(outs):
        flat = o.reshape(-1)
        rows = [[] for _ in ins]
        for k in range(flat.numel()):
            grads = _grad([flat[k]], ins, [None], create_graph, retain_graph=True)
            for j, (g, t) in enumerate(zip(grads, ins)):
                if g is None and strict:
                    raise RuntimeError(f"Output {i} of the user-provided function is independent of input {j}. "
                                       "This is not allowed in strict mode.")
                rows[j].append(rill.zeros_like(t) if g is None else g)
        table.append(tuple(
            _finish(((rill.stack(r) if r else rill.zeros(0, *t.shape, dtype=t.dtype)).reshape(*o.shape, *t.shape),),
                    create_graph, True)
            for r, t in zip(rows, ins)))
    if single_out:
        return table[0][0] if single_in else table[0]
    return tuple(t[0] for t in table) if single_in else tuple(table)


def _scalar_output(func, what):
    def checked(*ins):
        outs, _ = _call(func, ins)
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError(f"The Tensor returned by the function given to {what} should contain a single "
                               "element")
        return outs[0].reshape(())
    return checked


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar func at inputs: the Jacobian of its gradient (for inputs i and j, a tensor of
    shape in_i.shape + in_j.shape; a single Tensor, or a tuple of tuples, as torch's)."""
    ins, single_in = _tuple(inputs, "inputs")
    scalar = _scalar_output(func, "hessian")

    def gradient(*xs):
        grads = _fill(_grad((scalar(*xs),), xs, (None,), create_graph=True), xs, strict, "its input")
        return grads[0] if single_in else grads

    h = jacobian(gradient, ins[0] if single_in else ins, create_graph=create_graph, strict=strict,
                 vectorize=vectorize, strategy=outer_jacobian_strategy)
    return h


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a scalar func."""
    ins, single_in = _tuple(inputs, "inputs")
    ins = _prepare(ins, create_graph)
    vs = _vector(v, ins, "input")
    out = _scalar_output(func, "vhp")(*ins)
    g = _grad((out,), ins, (None,), create_graph=True)
    res = _grad(g, ins, vs, create_graph)
    res = _fill(res, ins, strict, "its input")
    return _finish((out,), create_graph, True), _finish(res, create_graph, single_in)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a scalar func, by the double-vjp trick as PyTorch's (equal to vhp where H is
    symmetric)."""
    ins, single_in = _tuple(inputs, "inputs")
    ins = _prepare(ins, create_graph)
    vs = _vector(v, ins, "input")
    out = _scalar_output(func, "hvp")(*ins)
    g = _fill(_grad((out,), ins, (None,), create_graph=True), ins, False, "its input")
    us = tuple(rill.zeros_like(t).requires_grad_(True) for t in ins)
    back = _grad(g, ins, us, create_graph=True)
    res = _grad(back, us, vs, create_graph)
    res = _fill(res, ins, strict, "its input")
    return _finish((out,), create_graph, True), _finish(res, create_graph, single_in)
