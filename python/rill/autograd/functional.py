"""rill.autograd.functional: Jacobians and vector-Jacobian products of Python functions, by reverse mode
(one backward pass per output element for jacobian). The second-order helpers (hessian, hvp, vhp) and the
forward-mode ones (jvp) need gradients of gradients, which rill's backward does not record: they raise."""
import rill
from rill import autograd


def _tuple(x, what):
    if isinstance(x, rill.Tensor):
        return (x,), True
    if isinstance(x, (tuple, list)) and all(isinstance(t, rill.Tensor) for t in x):
        return tuple(x), False
    raise TypeError(f"The {what} given to the function must be either a Tensor or a tuple of Tensors but got "
                    f"{type(x).__name__}.")


def _leaves(inputs):
    return tuple(t.detach().requires_grad_(True) for t in inputs)


def _no_create_graph(create_graph, name):
    if create_graph:
        raise NotImplementedError(f"[autograd.functional.{name}] create_graph=True (gradients of gradients) is not "
                                  "supported by rill's backward; call it with create_graph=False")


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the outputs and the vector-Jacobian product with v (v may be omitted for a single-
    element output)."""
    _no_create_graph(create_graph, "vjp")
    ins, single_in = _tuple(inputs, "inputs")
    ins = _leaves(ins)
    with rill.enable_grad():
        out = func(*ins)
    outs, single_out = _tuple(out, "outputs of the user-provided function")
    if v is None:
        if any(o.numel() != 1 for o in outs):
            raise RuntimeError("The vector v can only be None if the user-provided function returns a single "
                               "Tensor with a single element.")
        vs = tuple(rill.ones_like(o) for o in outs)
    else:
        vs, _ = _tuple(v, "v")
    grads = autograd.grad(outs, ins, vs, allow_unused=True)
    if strict and any(g is None for g in grads):
        raise RuntimeError("The output of the user-provided function is independent of an input. This is not "
                           "allowed in strict mode.")
    grads = tuple(rill.zeros_like(i) if g is None else g for g, i in zip(grads, ins))
    detached = tuple(o.detach() for o in outs)
    return (detached[0] if single_out else detached), (grads[0] if single_in else grads)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of func at inputs: for output i and input j, a tensor of shape out_i.shape + in_j.shape
    (a single Tensor, a tuple, or a tuple of tuples, as torch.autograd.functional.jacobian)."""
    _no_create_graph(create_graph, "jacobian")
    if strategy != "reverse-mode":
        raise NotImplementedError("rill has no forward-mode AD: use strategy='reverse-mode'")
    ins, single_in = _tuple(inputs, "inputs")
    ins = _leaves(ins)
    with rill.enable_grad():
        out = func(*ins)
    outs, single_out = _tuple(out, "outputs of the user-provided function")
    table = []
    for o in outs:
        flat = o.reshape(-1)
        rows = [[] for _ in ins]
        for k in range(flat.numel()):
            grads = autograd.grad([flat[k]], ins, retain_graph=True, allow_unused=True)
            for j, (g, i) in enumerate(zip(grads, ins)):
                if g is None and strict:
                    raise RuntimeError(f"Output {len(table)} of the user-provided function is independent of input "
                                       f"{j}. This is not allowed in strict mode.")
                rows[j].append(rill.zeros_like(i) if g is None else g)
        table.append(tuple(
            (rill.stack(r) if r else rill.zeros(0, *i.shape, dtype=i.dtype)).reshape(*o.shape, *i.shape)
            for r, i in zip(rows, ins)))
    if single_out:
        return table[0][0] if single_in else table[0]
    return tuple(t[0] for t in table) if single_in else tuple(table)


def _second_order(name):
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"[autograd.functional.{name}] needs gradients of gradients (create_graph), which "
                                  "rill's backward does not record; compute it with jacobian of an explicit "
                                  "gradient function instead")
    refuse.__name__ = name
    return refuse


hessian = _second_order("hessian")
hvp = _second_order("hvp")
vhp = _second_order("vhp")
jvp = _second_order("jvp")
