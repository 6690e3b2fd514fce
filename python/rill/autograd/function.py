"""rill.autograd.Function: an op written in Python, with its own backward.

    class Exp(rill.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    y = Exp.apply(x)

forward runs with grad mode off; when grad mode is on and an argument requires grad, the outputs get one
backward node (python/src/autograd.cpp, PyFunctionNode) whose edges lead to the Tensor arguments. The engine
calls backward(ctx, *output_grads) with the node's incoming gradients (zeros where none arrived, unless
ctx.set_materialize_grads(False)) and sends the returned gradient of each argument along its edge. Both
PyTorch styles work: forward(ctx, *args), or forward(*args) plus setup_context(ctx, inputs, output).
Backward itself is not recorded (rill has no double backward), as with once_differentiable.
"""
import functools

import rill
from rill import _C


class FunctionCtx:
    """What forward leaves for backward: saved tensors, flags, and any attribute set on it."""

    def __init__(self):
        self.needs_input_grad = ()
        self._saved = ()
        self._non_differentiable = set()
        self._dirty = set()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        """Keep these tensors (or None) for backward, as ctx.saved_tensors."""
        for t in tensors:
            if t is not None and not isinstance(t, _C.Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {len(self._saved)} is "
                                f"of type {type(t).__name__}")
        self._saved = tensors

    @property
    def saved_tensors(self):
        if self._saved is None:
            raise RuntimeError("Trying to backward through the graph a second time (or directly access saved "
                               "tensors after they have already been freed). Specify retain_graph=True if you "
                               "need to backward through the graph a second time.")
        return tuple(self._saved)

    saved_variables = saved_tensors

    def mark_dirty(self, *tensors):
        """These arguments were modified in place by forward (and are returned)."""
        self._dirty = {id(t) for t in tensors}

    def mark_non_differentiable(self, *tensors):
        """These outputs get no gradient (integer results, indices)."""
        self._non_differentiable = {id(t) for t in tensors}

    def set_materialize_grads(self, value):
        """False: backward receives None (not zeros) for outputs that got no gradient."""
        self.materialize_grads = bool(value)


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._backward_name = name + "Backward"


class Function(metaclass=_FunctionMeta):
    """Subclass with static forward and backward; call with Function.apply(*args)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @staticmethod
    def vjp(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("rill has no forward-mode AD: jvp of a custom autograd.Function is not supported")

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use new-"
                           "style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @classmethod
    def _uses_setup_context(cls):
        return "setup_context" in vars(cls) or any(
            "setup_context" in vars(b) for b in cls.__mro__[1:] if b is not Function and b is not object)

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, _C.Tensor) and a.requires_grad for a in args)
        with rill.no_grad():
            if cls._uses_setup_context():
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        if not (rill.is_grad_enabled() and any(ctx.needs_input_grad)):
            return output
        single = not isinstance(output, tuple)
        outputs = (output,) if single else output
        arg_ids = {id(a): a for a in args if isinstance(a, _C.Tensor)}
        attached, metas, result = [], [], []
        for o in outputs:
            if not isinstance(o, _C.Tensor) or id(o) in ctx._non_differentiable or not o.dtype.is_floating_point:
                result.append(o)
                continue
            if id(o) in arg_ids and id(o) not in ctx._dirty:
                o = o.detach()  # an argument returned as it is: an alias with this node as its history
            elif id(o) in ctx._dirty and o.is_leaf and o.requires_grad:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
            attached.append(o)
            metas.append((tuple(o.shape), o.dtype))
            result.append(o)
        if not attached:
            return output
        positions = [i for i, o in enumerate(result) if any(o is a for a in attached)]
        backward = functools.partial(_run_backward, cls, ctx, args, metas, positions, len(outputs))
        _C._function_apply(backward, cls._backward_name,
                           [a if isinstance(a, _C.Tensor) and a.requires_grad else None for a in args], attached)
        return result[0] if single else tuple(result)


def _backward_fn(cls):
    if "backward" in vars(cls) or any("backward" in vars(b) for b in cls.__mro__[1:] if b is not Function):
        return cls.backward
    return cls.vjp


def _run_backward(cls, ctx, args, metas, positions, num_outputs, *grads):
    """The node's apply: gradients of the attached outputs in, one gradient per forward argument out."""
    full = [None] * num_outputs
    for pos, g, (shape, dtype) in zip(positions, grads, metas):
        if g is None and ctx.materialize_grads:
            g = rill.zeros(*shape, dtype=dtype)
        full[pos] = g
    # grad mode is the engine's: on for create_graph, so the backward's own ops record (gradients of gradients)
    result = _backward_fn(cls)(ctx, *full)
    if not isinstance(result, tuple):
        result = (result,)
    if len(result) < len(args) or any(r is not None for r in result[len(args):]):
        raise RuntimeError(f"function {cls._backward_name} returned an incorrect number of gradients (expected "
                           f"{len(args)}, got {len(result)})")
    out = []
    for i, (a, g) in enumerate(zip(args, result)):
        if g is None:
            out.append(None)
            continue
        if not isinstance(a, _C.Tensor):
            raise RuntimeError(f"function {cls._backward_name} returned a gradient different than None at position "
                               f"{i + 1}, but the corresponding forward input was not a Variable")
        if not isinstance(g, _C.Tensor):
            raise TypeError(f"function {cls._backward_name} returned a {type(g).__name__} as the gradient at "
                            f"position {i + 1}; return a Tensor or None")
        if tuple(g.shape) != tuple(a.shape):
            try:
                g = g.sum_to_size(*a.shape)  # a gradient of a broadcast argument, summed down
            except RuntimeError:
                raise RuntimeError(f"Function {cls._backward_name} returned an invalid gradient at index {i} - got "
                                   f"{list(g.shape)} but expected shape compatible with {list(a.shape)}") from None
        if g.dtype != a.dtype:
            g = g.to(a.dtype)
        out.append(g)
    return out


def once_differentiable(fn):
    """Mark a backward as not differentiable itself: it runs with recording off, so create_graph records nothing
    through it."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with rill.no_grad():
            return fn(ctx, *args)
    return wrapper


class InplaceFunction(Function):
    """A Function with an inplace flag (torch.autograd.function.InplaceFunction)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


