"""The autograd engine against PyTorch: accumulation, graph shapes, retain_graph, hooks, retain_grad,
grad mode, detach, version counters, in-place rules, autograd.grad, node names and errors.
Per-op gradients are checked by test_op_parity.py."""
import numpy as np
import pytest
import torch

import rill
from conftest import assert_close, make_array


def leaves(*shapes, seed=0, dtype="float32"):
    """Pairs (rill leaf, torch leaf) with the same random values, both requiring grad."""
    out = []
    for i, shape in enumerate(shapes):
        a = make_array(shape, dtype, seed=seed + i)
        r = rill.tensor(a, requires_grad=True)
        t = torch.tensor(a, requires_grad=True)
        out.append((r, t))
    return out


def same_error(rill_fn, torch_fn, match=None):
    """Both raise the same exception type; match, when given, is a substring both messages contain."""
    with pytest.raises(Exception) as t_err:
        torch_fn()
    with pytest.raises(Exception) as r_err:
        rill_fn()
    assert type(r_err.value) is type(t_err.value), f"rill: {r_err.value!r}; torch: {t_err.value!r}"
    if match:
        assert match in str(t_err.value), str(t_err.value)
        assert match in str(r_err.value), str(r_err.value)


# --- accumulation and graph shapes -------------------------------------------------------------

def test_accumulates_across_two_backward_calls():
    (x, tx), = leaves((3,))
    for _ in range(2):
        (x * x).sum().backward()
        (tx * tx).sum().backward()
    assert_close(x.grad, tx.grad)


def test_grad_reference_sees_accumulation_in_place():
    x = rill.ones(3, requires_grad=True)
    x.sum().backward()
    g = x.grad
    x.sum().backward()
    assert g.tolist() == [2.0, 2.0, 2.0]


def test_diamond_graph_sums_both_paths():
    (x, tx), = leaves((4,))
    for m, v in ((rill, x), (torch, tx)):
        a = v * 2
        b = a.exp()
        c = a.sigmoid()
        (b * c + a).sum().backward()
    assert_close(x.grad, tx.grad)


def test_same_input_twice_and_shared_subexpression():
    (x, tx), (y, ty) = leaves((3,), (3,))
    for v, w in ((x, y), (tx, ty)):
        s = v * w
        (s * s + s * v + v).sum().backward()
    assert_close(x.grad, tx.grad)
    assert_close(y.grad, ty.grad)


def test_broadcasting_reduces_gradient_to_input_shape():
    (x, tx), (y, ty) = leaves((3, 1), (4,))
    for v, w in ((x, y), (tx, ty)):
        (v * w + v).pow(2).sum().backward()
    assert x.grad.shape == (3, 1) and y.grad.shape == (4,)
    assert_close(x.grad, tx.grad)
    assert_close(y.grad, ty.grad)


def test_type_promotion_casts_gradient_back():
    (x, tx), = leaves((3,))
    (y, ty), = leaves((3,), seed=5, dtype="float64")
    (x * y).sum().backward()
    (tx * ty).sum().backward()
    assert x.grad.dtype == rill.float32 and y.grad.dtype == rill.float64
    assert_close(x.grad, tx.grad)
    assert_close(y.grad, ty.grad)


def test_explicit_gradient_argument():
    (x, tx), = leaves((2, 3))
    g = make_array((2, 3), "float32", seed=9)
    (x * 3).backward(rill.tensor(g))
    (tx * 3).backward(torch.tensor(g))
    assert_close(x.grad, tx.grad)


def test_backward_on_leaf_itself():
    x = rill.ones(2, requires_grad=True)
    x.backward(rill.tensor([1.0, 2.0]))
    assert x.grad.tolist() == [1.0, 2.0]


def test_non_scalar_without_gradient_raises():
    (x, tx), = leaves((3,))
    same_error(lambda: (x * 2).backward(), lambda: (tx * 2).backward(), "grad can be implicitly created only for "
               "scalar outputs")


def test_gradient_shape_mismatch_raises():
    (x, tx), = leaves((3,))
    same_error(lambda: (x * 2).backward(rill.ones(2)), lambda: (tx * 2).backward(torch.ones(2)), "Mismatch in shape")


def test_backward_of_tensor_without_grad_raises():
    same_error(lambda: rill.ones(3).sum().backward(), lambda: torch.ones(3).sum().backward(),
               "does not require grad and does not have a grad_fn")


def test_integer_ops_do_not_record():
    x = rill.ones(3, requires_grad=True)
    assert not (x > 0).requires_grad
    assert (x > 0).grad_fn is None
    assert not x.argmax().requires_grad


# --- retain_graph ------------------------------------------------------------------------------

def test_second_backward_without_retain_graph_raises():
    (x, tx), = leaves((3,))
    y, ty = x.exp().sum(), tx.exp().sum()
    y.backward()
    ty.backward()
    same_error(y.backward, ty.backward, "Trying to backward through the graph a second time")


def test_retain_graph_allows_second_backward():
    (x, tx), = leaves((3,))
    y, ty = x.exp().sum(), tx.exp().sum()
    y.backward(retain_graph=True)
    y.backward()
    ty.backward(retain_graph=True)
    ty.backward()
    assert_close(x.grad, tx.grad)


def test_graph_without_saved_tensors_can_run_twice():
    (x, tx), = leaves((3,))
    y, ty = (x + 1).sum(), (tx + 1).sum()
    y.backward()
    y.backward()
    ty.backward()
    ty.backward()
    assert_close(x.grad, tx.grad)


# --- hooks and retain_grad ---------------------------------------------------------------------

def test_hook_on_leaf_sees_and_replaces_gradient():
    (x, tx), = leaves((3,))
    seen = {}
    for name, v in (("rill", x), ("torch", tx)):
        def hook(g, name=name):
            seen[name] = g.tolist()
            return g * 10
        v.register_hook(hook)
        (v * v).sum().backward()
    np.testing.assert_allclose(seen["rill"], seen["torch"], rtol=1e-6)
    assert_close(x.grad, tx.grad)


def test_hook_on_non_leaf_replaces_gradient_flowing_on():
    (x, tx), = leaves((3,))
    for v in (x, tx):
        h = v * 2
        h.register_hook(lambda g: g + 1)
        (h * h).sum().backward()
    assert_close(x.grad, tx.grad)


def test_hook_returning_none_keeps_gradient_and_remove_works():
    x = rill.ones(2, requires_grad=True)
    calls = []
    handle = x.register_hook(lambda g: calls.append(1))
    x.sum().backward()
    handle.remove()
    x.sum().backward()
    assert calls == [1]
    assert x.grad.tolist() == [2.0, 2.0]


def test_hooks_chain_in_registration_order():
    x = rill.ones(2, requires_grad=True)
    x.register_hook(lambda g: g * 2)
    x.register_hook(lambda g: g + 1)
    x.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_hook_on_tensor_without_grad_raises():
    same_error(lambda: rill.ones(2).register_hook(lambda g: g), lambda: torch.ones(2).register_hook(lambda g: g))


def test_retain_grad_keeps_non_leaf_gradient():
    (x, tx), = leaves((3,))
    grads = []
    for v in (x, tx):
        h = v.exp()
        h.retain_grad()
        assert h.retains_grad
        (h * 3).sum().backward()
        grads.append(h.grad)
    assert_close(grads[0], grads[1])
    assert (x.exp()).grad is None


def test_retain_grad_sees_hook_result():
    x = rill.ones(2, requires_grad=True)
    h = x * 1
    h.retain_grad()
    h.register_hook(lambda g: g * 5)
    h.sum().backward()
    th = torch.ones(2, requires_grad=True) * 1
    th.retain_grad()
    th.register_hook(lambda g: g * 5)
    th.sum().backward()
    assert h.grad.tolist() == th.grad.tolist()


# --- grad mode ---------------------------------------------------------------------------------

def test_no_grad_enable_grad_nesting():
    x = rill.ones(2, requires_grad=True)
    with rill.no_grad():
        assert not rill.is_grad_enabled()
        assert not (x * 2).requires_grad
        with rill.enable_grad():
            assert rill.is_grad_enabled()
            assert (x * 2).requires_grad
        assert not rill.is_grad_enabled()
    assert rill.is_grad_enabled()


def test_set_grad_enabled_function_and_context():
    x = rill.ones(2, requires_grad=True)
    with rill.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert rill.is_grad_enabled()
    rill.set_grad_enabled(False)
    try:
        assert not rill.is_grad_enabled()
    finally:
        rill.set_grad_enabled(True)
    assert rill.is_grad_enabled()


def test_grad_mode_decorators():
    x = rill.ones(2, requires_grad=True)

    @rill.no_grad()
    def f():
        return x * 2

    @rill.no_grad
    def g():
        return x * 2

    @rill.enable_grad()
    def h():
        return x * 2

    @rill.set_grad_enabled(False)
    def k():
        return x * 2

    assert rill.is_grad_enabled()
    assert not f().requires_grad and not g().requires_grad and not k().requires_grad
    with rill.no_grad():
        assert h().requires_grad
    assert rill.is_grad_enabled()


def test_grad_mode_restored_after_exception():
    with pytest.raises(ValueError):
        with rill.no_grad():
            raise ValueError
    assert rill.is_grad_enabled()


def test_inference_mode_is_no_grad():
    x = rill.ones(2, requires_grad=True)
    with rill.inference_mode():
        assert not (x * 2).requires_grad
    assert rill.is_grad_enabled()


# --- leaves, requires_grad, detach -------------------------------------------------------------

def test_requires_grad_on_integer_raises():
    same_error(lambda: rill.ones(3, dtype=rill.int64).requires_grad_(),
               lambda: torch.ones(3, dtype=torch.int64).requires_grad_(),
               "only Tensors of floating point")


def test_requires_grad_false_on_non_leaf_raises():
    (x, tx), = leaves((2,))
    same_error(lambda: (x * 2).requires_grad_(False), lambda: (tx * 2).requires_grad_(False),
               "you can only change requires_grad flags of leaf variables")


def test_is_leaf_and_grad_fn():
    x = rill.ones(2, requires_grad=True)
    y = x * rill.ones(2)
    assert x.is_leaf and x.grad_fn is None
    assert not y.is_leaf and y.grad_fn.name() == "MulBackward0"
    assert rill.ones(2).is_leaf
    acc, nr = y.grad_fn.next_functions[0]
    assert acc.name() == "AccumulateGrad" and nr == 0 and acc.variable._is_same(x)
    assert y.grad_fn.next_functions[1] == (None, 0)


def test_detach_shares_memory_and_version_without_history():
    x = rill.ones(3, requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d._shares_storage(y)
    v = y._version
    d.add_(1)
    assert y._version == v + 1
    assert y.tolist() == [3.0, 3.0, 3.0]


def test_detach_in_place():
    x = rill.ones(3, requires_grad=True)
    y = x * 2
    y.detach_()
    assert y.is_leaf and not y.requires_grad


def test_grad_setter_checks_shape_and_none():
    (x, tx), = leaves((3,))
    same_error(lambda: setattr(x, "grad", rill.ones(2)), lambda: setattr(tx, "grad", torch.ones(2)))
    x.grad = rill.ones(3)
    (x * 1).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    x.grad = None
    assert x.grad is None


def test_repr_shows_grad_fn():
    x = rill.tensor([1.0, 2.0], requires_grad=True)
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x * 2) == repr(tx * 2)
    assert repr((x * 2).sum()) == repr((tx * 2).sum())
    assert repr(x) == repr(tx)


# --- version counter and in-place rules --------------------------------------------------------

def test_version_counter_counts_in_place_writes_on_all_views():
    x = rill.zeros(4)
    v = x[1:]
    assert x._version == 0
    x.add_(1)
    v.mul_(2)
    x[0] = 3
    x.fill_(0)
    x.copy_(rill.ones(4))
    t = torch.zeros(4)
    tv = t[1:]
    t.add_(1)
    tv.mul_(2)
    t[0] = 3
    t.fill_(0)
    t.copy_(torch.ones(4))
    assert x._version == v._version == t._version == 5


def test_modified_saved_output_raises():
    (x, tx), = leaves((3,))
    y, ty = x.exp(), tx.exp()
    y.add_(1)
    ty.add_(1)
    same_error(lambda: y.sum().backward(), lambda: ty.sum().backward(),
               "one of the variables needed for gradient computation has been modified by an inplace operation")


def test_modified_saved_input_raises_with_versions():
    (x, tx), = leaves((3,))
    with pytest.raises(RuntimeError, match=r"is at version 1; expected version 0 instead"):
        a = x * 1
        b = a * a
        a.mul_(2)
        b.sum().backward()
    ta = tx * 1
    tb = ta * ta
    ta.mul_(2)
    with pytest.raises(RuntimeError, match=r"is at version 1; expected version 0 instead"):
        tb.sum().backward()


def test_unsaved_input_may_be_modified():
    (x, tx), = leaves((3,))
    for v in (x, tx):
        a = v * 1
        b = a + 1  # add saves nothing
        a.mul_(2)
        b.sum().backward()
    assert_close(x.grad, tx.grad)


def test_leaf_in_place_raises():
    (x, tx), = leaves((3,))
    same_error(lambda: x.add_(1), lambda: tx.add_(1), "a leaf Variable that requires grad is being used in an "
               "in-place operation.")
    same_error(lambda: x[0].mul_(2), lambda: tx[0].mul_(2), "a view of a leaf Variable that requires grad")
    same_error(lambda: x.__setitem__(0, 1.0), lambda: tx.__setitem__(0, 1.0), "a view of a leaf Variable")


def test_leaf_in_place_allowed_under_no_grad():
    x = rill.ones(3, requires_grad=True)
    with rill.no_grad():
        x.mul_(3)
    assert x.is_leaf and x.tolist() == [3.0, 3.0, 3.0]
    x.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_", "pow_", "copy_", "fill_", "exp_", "relu_"])
def test_in_place_on_non_leaf_rebases_history(op):
    (x, tx), (y, ty) = leaves((3,), (3,), seed=3)
    for m, v, w in ((rill, x, y), (torch, tx, ty)):
        h = v * 1.5
        if op in ("copy_",):
            getattr(h, op)(w)
        elif op == "fill_":
            h.fill_(2.0)
        elif op in ("exp_", "relu_"):
            getattr(h, op)()
        elif op == "pow_":
            h.abs_() if hasattr(h, "abs_") else None
            h.pow_(2)
        else:
            getattr(h, op)(w)
        (h * v).sum().backward()
    assert_close(x.grad, tx.grad)
    if y.grad is not None or ty.grad is not None:
        assert_close(y.grad, ty.grad)


def test_in_place_scalar_ops_and_operators():
    (x, tx), = leaves((3,))
    for v in (x, tx):
        h = v * 1
        h += 2
        h *= v
        h -= 1
        h /= 3
        h.sum().backward()
    assert_close(x.grad, tx.grad)


def test_in_place_through_view_of_non_leaf():
    (x, tx), (y, ty) = leaves((4, 3), (3,), seed=2)
    outs = []
    for v, w in ((x, y), (tx, ty)):
        h = v * 2
        h[1] = w * 3
        h[2:, 1:].mul_(w[1:])
        outs.append(h.grad_fn.name())
        (h * h).sum().backward()
    assert outs[0] == "CopySlices"
    assert_close(x.grad, tx.grad)
    assert_close(y.grad, ty.grad)


def test_setitem_into_tensor_without_grad_builds_graph():
    (y, ty), = leaves((3,))
    for m, w in ((rill, y), (torch, ty)):
        buf = m.zeros(2, 3)
        buf[0] = w * 2
        buf[1, 1:] = w[:2].exp()
        assert buf.requires_grad and not buf.is_leaf
        buf.pow(2).sum().backward()
    assert_close(y.grad, ty.grad)


def test_old_view_sees_in_place_write_through_base():
    (x, tx), = leaves((3, 2))
    for v in (x, tx):
        h = v * 1
        row = h[0]
        h.mul_(3)
        (row * 2).sum().backward()
    assert_close(x.grad, tx.grad)


def test_in_place_saves_old_value_of_self():
    (x, tx), (y, ty) = leaves((3,), (3,))
    for v, w in ((x, y), (tx, ty)):
        h = v + 1
        h.mul_(w)
        h.sum().backward()
    assert_close(x.grad, tx.grad)
    assert_close(y.grad, ty.grad)


# --- autograd.grad and backward(inputs=) -------------------------------------------------------

def test_autograd_grad_returns_without_accumulating():
    (x, tx), (y, ty) = leaves((3,), (3,))
    r = rill.autograd.grad((x * y).sum(), [x, y])
    t = torch.autograd.grad((tx * ty).sum(), [tx, ty])
    assert x.grad is None and y.grad is None
    assert_close(r[0], t[0])
    assert_close(r[1], t[1])


def test_autograd_grad_unused_input():
    (x, tx), (y, ty) = leaves((3,), (3,))
    same_error(lambda: rill.autograd.grad((x * 2).sum(), [x, y]),
               lambda: torch.autograd.grad((tx * 2).sum(), [tx, ty]), "appears to not have been used in the graph")
    r = rill.autograd.grad((x * 2).sum(), [x, y], allow_unused=True)
    assert r[1] is None and r[0].tolist() == [2.0, 2.0, 2.0]


def test_autograd_grad_of_non_leaf_and_grad_outputs():
    (x, tx), = leaves((3,))
    rh = x.exp()
    th = tx.exp()
    g = make_array((3,), "float32", seed=4)
    r = rill.autograd.grad(rh * rh, rh, grad_outputs=rill.tensor(g))
    t = torch.autograd.grad(th * th, th, grad_outputs=torch.tensor(g))
    assert_close(r[0], t[0])


def test_autograd_grad_input_without_grad_raises():
    (x, tx), = leaves((3,))
    same_error(lambda: rill.autograd.grad((x * 2).sum(), [rill.ones(3)]),
               lambda: torch.autograd.grad((tx * 2).sum(), [torch.ones(3)]), "does not require grad")


def test_backward_with_inputs_accumulates_only_those():
    (x, tx), (y, ty) = leaves((3,), (3,))
    (x * y).sum().backward(inputs=[x])
    (tx * ty).sum().backward(inputs=[tx])
    assert y.grad is None and ty.grad is None
    assert_close(x.grad, tx.grad)


def test_autograd_backward_several_roots():
    (x, tx), = leaves((3,))
    rill.autograd.backward([(x * 2).sum(), x.exp().sum()])
    torch.autograd.backward([(tx * 2).sum(), tx.exp().sum()])
    assert_close(x.grad, tx.grad)


def test_create_graph_records_the_gradient():
    # the rest of create_graph's tests: test_create_graph.py
    x = rill.ones(2, requires_grad=True)
    (x * x).sum().backward(create_graph=True)
    assert x.grad.requires_grad


# --- node names --------------------------------------------------------------------------------

NAMES = [
    lambda m, x, y, mat: x + 1, lambda m, x, y, mat: 1 + x, lambda m, x, y, mat: x - 1, lambda m, x, y, mat: 1 - x,
    lambda m, x, y, mat: x * 2, lambda m, x, y, mat: x / 2, lambda m, x, y, mat: 2 / x, lambda m, x, y, mat: x ** 2,
    lambda m, x, y, mat: 2 ** x, lambda m, x, y, mat: x ** y, lambda m, x, y, mat: m.maximum(x, y),
    lambda m, x, y, mat: m.minimum(x, y), lambda m, x, y, mat: x + y, lambda m, x, y, mat: x - y,
    lambda m, x, y, mat: x * y, lambda m, x, y, mat: x / y, lambda m, x, y, mat: -x, lambda m, x, y, mat: abs(x),
    lambda m, x, y, mat: x.relu(), lambda m, x, y, mat: x.exp(), lambda m, x, y, mat: x.log(),
    lambda m, x, y, mat: x.sqrt(), lambda m, x, y, mat: x.sigmoid(), lambda m, x, y, mat: x.tanh(),
    lambda m, x, y, mat: x.sum(), lambda m, x, y, mat: x.sum(0), lambda m, x, y, mat: x.mean(),
    lambda m, x, y, mat: x.mean(0), lambda m, x, y, mat: x.amax(), lambda m, x, y, mat: x.amin(0),
    lambda m, x, y, mat: x.max(), lambda m, x, y, mat: x.max(0)[0], lambda m, x, y, mat: x.min(0)[0],
    lambda m, x, y, mat: mat @ mat, lambda m, x, y, mat: x.to(m.float64), lambda m, x, y, mat: x.clone(),
    lambda m, x, y, mat: mat.t(), lambda m, x, y, mat: mat.T, lambda m, x, y, mat: mat.mT,
    lambda m, x, y, mat: mat.view(9), lambda m, x, y, mat: mat.reshape(9), lambda m, x, y, mat: mat[0],
    lambda m, x, y, mat: mat[:, 1:], lambda m, x, y, mat: mat.narrow(0, 0, 1),
    lambda m, x, y, mat: mat.unsqueeze(0), lambda m, x, y, mat: mat.unsqueeze(0).squeeze(),
    lambda m, x, y, mat: mat.unsqueeze(0).squeeze(0), lambda m, x, y, mat: mat.flatten(),
    lambda m, x, y, mat: mat.permute(1, 0), lambda m, x, y, mat: x.expand(2, 3),
    lambda m, x, y, mat: m.where(x > 0, x, y), lambda m, x, y, mat: mat.transpose(0, 1),
]


@pytest.mark.parametrize("i", range(len(NAMES)))
def test_grad_fn_names_match_pytorch(i):
    (x, tx), (y, ty), (mat, tmat) = leaves((3,), (3,), (3, 3))
    with torch.no_grad():
        tx.abs_().add_(0.5)
    with rill.no_grad():
        x.abs_().add_(0.5)
    r = NAMES[i](rill, x, y, mat)
    t = NAMES[i](torch, tx, ty, tmat)
    assert r.grad_fn.name() == t.grad_fn.name()
