"""rill.autograd.Function (python/rill/autograd/function.py, PyFunctionNode in python/src/autograd.cpp) and
rill.autograd.functional, against torch."""
import numpy as np
import pytest
import torch

import rill


def functions(m):
    class Exp(m.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            y = x.exp() * k
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y, None

    class Scale(m.autograd.Function):  # setup_context style, a non-differentiable output
        @staticmethod
        def forward(x, w):
            return x * w, (x * w).argmax()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)
            ctx.mark_non_differentiable(output[1])

        @staticmethod
        def backward(ctx, g, gi):
            x, w = ctx.saved_tensors
            return g * w, (g * x).sum(0)

    return Exp, Scale


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_custom_functions_give_torchs_gradients(dtype):
    results = []
    for m in (rill, torch):
        Exp, Scale = functions(m)
        x = m.tensor(np.arange(6.0).reshape(2, 3) / 5, dtype=getattr(m, dtype), requires_grad=True)
        w = m.tensor(np.full(3, 2.0), dtype=getattr(m, dtype), requires_grad=True)
        y = Exp.apply(x, 3.0)
        z, idx = Scale.apply(y.tanh(), w)
        assert not idx.requires_grad and z.requires_grad
        (z * z).sum().backward()
        results.append((x.grad.numpy(), w.grad.numpy(), z.detach().numpy()))
    for r, t in zip(*results):
        np.testing.assert_allclose(r, t, rtol=1e-5, atol=1e-5)


def test_node_name_grad_mode_and_materialized_grads():
    Exp, _ = functions(rill)
    x = rill.ones(3, requires_grad=True)
    y = Exp.apply(x, 2.0)
    assert y.grad_fn.name() == "ExpBackward"
    with rill.no_grad():
        assert not Exp.apply(x, 2.0).requires_grad
    assert not Exp.apply(rill.ones(3), 2.0).requires_grad

    seen = []

    class Two(rill.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            seen.append(gb)
            return ga * 2 + gb * 3

    a, _ = Two.apply(x)
    a.sum().backward()
    assert seen[0].tolist() == [0.0, 0.0, 0.0] and x.grad.tolist() == [2.0, 2.0, 2.0]


def test_returned_input_and_broadcast_gradient():
    class Ident(rill.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g.expand(4, 2) * 3  # summed down to the argument's shape

    a = rill.ones(2, requires_grad=True)
    out = Ident.apply(a)
    assert out is not a and out.requires_grad
    out.sum().backward()
    assert a.grad.tolist() == [12.0, 12.0]


def test_bad_backwards_raise():
    class WrongShape(rill.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g[:1]

    class TooFew(rill.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    x = rill.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="invalid gradient at index 0"):
        WrongShape.apply(x).sum().backward()
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        TooFew.apply(x, x).sum().backward()
    Exp, _ = functions(rill)
    loss = Exp.apply(x, 1.0).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()


def test_functional_jacobian_and_vjp_equal_torch():
    def f(m):
        return lambda a, b: (a * b.sum()).sin()
    for single in (False, True):
        ins_t = (torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0, 5.0]))
        ins_r = tuple(rill.tensor(t.numpy()) for t in ins_t)
        if single:
            jt = torch.autograd.functional.jacobian(lambda a: a.exp() * 2, ins_t[0])
            jr = rill.autograd.functional.jacobian(lambda a: a.exp() * 2, ins_r[0])
            np.testing.assert_allclose(jr.numpy(), jt.numpy(), rtol=1e-6)
            continue
        jt = torch.autograd.functional.jacobian(f(torch), ins_t)
        jr = rill.autograd.functional.jacobian(f(rill), ins_r)
        for r, t in zip(jr, jt):
            np.testing.assert_allclose(r.numpy(), t.numpy(), rtol=1e-6)
    out, g = rill.autograd.functional.vjp(lambda a: (a * a).sum(), rill.tensor([1.0, 3.0]))
    assert out.item() == 10.0 and g.tolist() == [2.0, 6.0]
    assert rill.autograd.functional.hessian(lambda a: (a * a).sum(), rill.tensor([1.0])).tolist() == [[2.0]]
