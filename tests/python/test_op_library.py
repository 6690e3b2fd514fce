"""The op library beyond the parity table (op_cases.py): errors of PyTorch's types, integer
division by zero, result dtypes, in-place forms and operators, edge values (ties, NaN, signs), and large
tensors that take the vectorised and multi-threaded kernel paths."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import rill
import rill.nn.functional as RF
from conftest import assert_close, assert_same_error, make_array, pair, random_pair


# --- integer division by zero ---------------------------------------------------------------------

@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_integer_division_by_zero_raises(op, dtype):
    a = np.array([5, 7, 9]).astype(dtype)
    b = np.array([1, 0, 2]).astype(dtype)
    ra, ta = pair(a, dtype)
    rb, tb = pair(b, dtype)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        getattr(torch, op)(ta, tb)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        getattr(rill, op)(ra, rb).tolist()  # the kernel's error surfaces at the sync point
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        getattr(rill, op)(ra, 0)  # a zero number is caught at the call
    rill.synchronize()


def test_integer_division_by_zero_operators():
    r = rill.tensor([3, 4])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        r // 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        (5 % rill.tensor([1, 0])).tolist()
    r2 = rill.tensor([3, 4])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        r2 //= 0


def test_float_division_by_zero_follows_ieee():
    a = np.array([1.5, -2.0, 0.0, 3.0], dtype=np.float32)
    b = np.array([0.0, 0.0, 0.0, -0.0], dtype=np.float32)
    ra, ta = pair(a, "float32")
    rb, tb = pair(b, "float32")
    for op in ["floor_divide", "remainder", "fmod"]:
        assert_close(getattr(rill, op)(ra, rb), getattr(torch, op)(ta, tb))


# --- sign conventions and special values ----------------------------------------------------------

def test_remainder_fmod_floor_divide_signs():
    for dtype in ["int64", "int8", "float32", "float64"]:
        a = np.array([-7, 7, -7, 7, -6, 6, 0], dtype=np.float64)
        b = np.array([2, 2, -2, -2, 3, -3, 5], dtype=np.float64)
        ra, ta = pair(a, dtype)
        rb, tb = pair(b, dtype)
        assert_close(ra // rb, ta // tb)
        assert_close(ra % rb, ta % tb)
        assert_close(rill.fmod(ra, rb), torch.fmod(ta, tb))
        assert_close(ra % -3, ta % -3)
        assert_close(-13 % ra[:-1], -13 % ta[:-1]) if dtype.startswith("float") else None


def test_int_min_divided_by_minus_one_wraps():
    ra, ta = pair(np.array([-128, 5], dtype=np.int8), "int8")
    rb, tb = pair(np.array([-1, -1], dtype=np.int8), "int8")
    assert_close(ra // rb, ta // tb)
    assert_close(ra % rb, ta % tb)


def test_round_half_to_even_and_decimals():
    ra, ta = pair(np.array([0.5, 1.5, 2.5, -0.5, -1.5, 1.25, 1.35, 123.456]), "float64")
    assert_close(rill.round(ra), torch.round(ta))
    assert_close(ra.round(decimals=1), ta.round(decimals=1))
    assert_close(rill.round(ra, decimals=-1), torch.round(ta, decimals=-1))


def test_nan_and_signed_zero():
    x = np.array([np.nan, -0.0, 0.0, -3.0, np.inf, -np.inf], dtype=np.float32)
    r, t = pair(x, "float32")
    assert_close(rill.sign(r), torch.sign(t))
    assert_close(r.clamp(0, 1), t.clamp(0, 1))
    assert_close(RF.hardtanh(r), F.hardtanh(t))
    assert_close(RF.leaky_relu(r), F.leaky_relu(t))
    assert_close(RF.softplus(r), F.softplus(t))
    assert_close(RF.gelu(r[:4]), F.gelu(t[:4]))  # gelu(inf): inf in rill, NaN in PyTorch's vector kernel
    assert_close(RF.elu(r), F.elu(t))
    assert_close(rill.logsumexp(r[3:], 0), torch.logsumexp(t[3:], 0))
    assert_close(rill.logsumexp(rill.tensor([-math.inf, -math.inf]), 0),
                 torch.logsumexp(torch.tensor([-math.inf, -math.inf]), 0))


# --- result dtypes -------------------------------------------------------------------------------

@pytest.mark.parametrize("expr", [
    "m.any(m.tensor([0, 3], dtype=m.uint8))", "m.all(m.tensor([1.5, 0.0]))", "m.tensor([True, False]).cumsum(0)",
    "m.tensor([True, True]).prod()", "m.clamp(m.tensor([1, 5]), min=1.5)", "m.clamp(m.tensor([1, 5]), max=2)",
    "m.square(m.tensor([True, False]))", "m.sin(m.tensor([1, 2]))", "m.tensor([3], dtype=m.int8).prod()",
    "m.tensor([3, 4], dtype=m.int16).cumprod(0)", "m.cumsum(m.tensor([1, 2]), 0, dtype=m.int32)",
    "m.tensor([1, 2], dtype=m.int8) & 3", "m.tensor([True]) | True", "m.tensor([True]) & 1",
    "m.logical_and(m.tensor([1.5, 0.0]), m.tensor([2, 0]))", "m.atan2(m.tensor([1, 2]), m.tensor([True, False]))",
    "m.addcmul(m.tensor([1, 2]), m.tensor([1, 2]), m.tensor([3, 4]), value=2)",
    "m.floor_divide(m.tensor([7, -7]), 2.5)", "m.remainder(5, m.tensor([3, -3]))",
    "m.prod(m.tensor([1.5, 2.0]), 0, dtype=m.float64)", "m.norm(m.tensor([3.0, 4.0]), dtype=m.float64)",
])
def test_result_dtype_and_values(expr):
    got = eval(expr, {"m": rill})
    want = eval(expr, {"m": torch})
    assert_close(got, want)


# --- errors of PyTorch's types ---------------------------------------------------------------------

@pytest.mark.parametrize("expr", [
    "m.floor(m.tensor([True]))", "m.round(m.tensor([1, 2]), decimals=1)", "m.trunc(m.tensor([True]))",
    "g(m).gelu(m.tensor([1, 2]))", "g(m).silu(m.tensor([1]))", "g(m).softplus(m.tensor([1]))",
    "g(m).elu(m.tensor([1]))", "g(m).leaky_relu(m.tensor([1]))", "g(m).gelu(m.tensor([1.0]), approximate='bad')",
    "m.clamp(m.tensor([1.0]))", "m.var(m.tensor([1, 2]))", "m.std(m.tensor([1, 2]), 0)",
    "m.norm(m.tensor([1, 2]))",
    "~m.tensor([1.5])", "m.bitwise_and(m.tensor([1.5]), m.tensor([2.0]))", "m.tensor([1.5]) | 1",
    "m.remainder(m.tensor([True]), m.tensor([True]))", "m.floor_divide(m.tensor([True]), m.tensor([True]))",
    "m.lerp(m.tensor([1.0]), m.tensor([2.0], dtype=m.float64), 0.5)", "m.lerp(m.tensor([1, 2]), m.tensor([1, 2]), 0.5)",
    "m.addcdiv(m.tensor([1.0]), m.tensor([1]), m.tensor([2]))", "m.cumsum(m.ones(2, 3), 2)",
    "m.cumprod(m.ones(2, 3), -3)", "m.prod(m.ones(2, 3), (0, 1))", "m.logsumexp(m.ones(2, 3), 5)",
    "m.var(m.ones(2, 3), 0, unbiased=True, correction=1)", "m.any(m.ones(2), 1)", "m.atan2(m.ones(2), m.ones(3))",
    "m.addcmul(m.ones(2), m.ones(3), m.ones(2))", "m.clamp(m.ones(2), m.ones(3))", "m.fmod(m.ones(2), m.ones(3))",
])
def test_errors_match_pytorch(expr):
    def g(m):
        return RF if m is rill else F
    assert_same_error(lambda: eval(expr, {"m": rill, "g": g}), lambda: eval(expr, {"m": torch, "g": g}))


# --- clamp: PyTorch's clamp(Tensor self, Scalar? min, Scalar? max) and clamp.Tensor, from their signatures -----

CLAMP_X = np.array([[-2.0, -0.5, 0.25], [0.75, 1.5, 3.0]], dtype=np.float32)


@pytest.mark.parametrize("expr", [
    "m.clamp(x, -0.5, 1.0)", "m.clamp(x, min=0.5)", "m.clamp(x, max=1)", "m.clamp(x, None, 0.5)",
    "m.clamp(x, lo, hi)", "m.clamp(x, lo)", "m.clamp(x, max=hi)", "m.clamp(x, None, hi)", "m.clamp(x, lo, None)",
    "m.clamp(x, min=None, max=hi)", "x.clamp(None, hi)", "x.clamp(min=lo)", "m.clip(x, -1, 1)", "x.clip(None, hi)",
    "m.clamp(x, 0.5, out=m.empty(2, 3))", "m.clamp(x, None, hi, out=m.empty(2, 3))", "m.clip(x, lo, out=m.empty(2, 3))",
    "m.clamp_min(x, 0.5)", "m.clamp_min(x, lo)", "x.clamp_min(min=0.5)", "m.clamp_max(x, hi)", "x.clamp_max(1)",
    "m.clamp_max(x, 0.5, out=m.empty(2, 3))", "m.clamp(m.tensor([1, 5]), 2)", "m.clamp(m.tensor([1, 5]), 1.5, 2.5)",
    "m.clamp(m.tensor([True, False]), 0)", "m.clamp(x, True)", "m.clamp(m.tensor([1, 5]), m.tensor(2.5))",
])
def test_clamp_forms_match_pytorch(expr):
    def run(m):
        x = m.tensor(CLAMP_X)
        lo, hi = m.tensor([-1.0, 0.0, 0.5]), m.tensor([[0.0], [2.0]])
        return eval(expr, {"m": m, "x": x, "lo": lo, "hi": hi})
    assert_close(run(rill), run(torch))


@pytest.mark.parametrize("call", [
    lambda x, lo, hi: x.clamp_(None, hi), lambda x, lo, hi: x.clamp_(lo, hi), lambda x, lo, hi: x.clamp_(0.5),
    lambda x, lo, hi: x.clip_(max=hi), lambda x, lo, hi: x.clamp_min_(lo), lambda x, lo, hi: x.clamp_max_(0.5),
])
def test_clamp_inplace_forms_write_into_self(call):
    outs = []
    for m in (rill, torch):
        x = m.tensor(CLAMP_X)
        assert call(x, m.tensor([-1.0, 0.0, 0.5]), m.tensor([[0.0], [2.0]])) is x
        outs.append(x)
    assert_close(*outs)


@pytest.mark.parametrize("expr", [
    "m.clamp(x)", "m.clamp(x, None, None)", "x.clamp_()", "m.clamp(x, 0.0, m.ones(3))", "m.clamp(x, m.zeros(3), 1.0)",
    "m.clamp(x, min=0.5, max=m.ones(3))", "m.clamp(x, 'a')", "m.clamp_max(x, min=0.5)", "m.clip(x, 0.0, m.ones(3))",
    "m.clamp(m.tensor([1, 5]), 1, m.tensor([1.5, 2.0]))",
])
def test_clamp_errors_match_pytorch(expr):
    assert_same_error(lambda: eval(expr, {"m": rill, "x": rill.tensor(CLAMP_X)}),
                      lambda: eval(expr, {"m": torch, "x": torch.tensor(CLAMP_X)}))
    with pytest.raises((TypeError, RuntimeError), match=r"At least one of 'min' or 'max' must not be None|"
                                                         r"invalid combination of arguments"):
        eval(expr, {"m": rill, "x": rill.tensor(CLAMP_X)})


def test_clamp_gradients_with_a_none_bound():
    grads = []
    for m in (rill, torch):
        x = m.tensor(CLAMP_X, requires_grad=True)
        hi = m.tensor([[0.0], [2.0]], requires_grad=True)
        (m.clamp(x, None, hi) * 2 + m.clamp(x, min=-0.5) + x.clamp(max=1.0)).sum().backward()
        grads.append((x.grad, hi.grad))
    assert_close(grads[0][0], grads[1][0])
    assert_close(grads[0][1], grads[1][1])


def test_nuclear_norm_is_the_sum_of_singular_values():
    x = [[3.0, 0.0], [4.0, 5.0]]
    assert abs(rill.norm(rill.tensor(x), p="nuc").item() - torch.norm(torch.tensor(x), p="nuc").item()) < 1e-5


def test_floor_divide_backward_raises_like_pytorch():
    for m in (rill, torch):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        y = m.floor_divide(x, 2)
        assert y.requires_grad
        with pytest.raises(RuntimeError):
            y.sum().backward()


def test_rounding_gradients_are_zero():
    x = rill.tensor([0.4, 1.6, -2.5], requires_grad=True)
    (x.floor() + x.ceil() + x.round() + x.trunc() + x.sign() + x.round(decimals=1)).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


# --- in-place forms and operators -------------------------------------------------------------------

def test_inplace_forms_return_self_and_match():
    base = make_array((3, 4), "float32", seed=3)
    for name, args in [("floor_", ()), ("ceil_", ()), ("trunc_", ()), ("round_", ()), ("sign_", ()), ("sin_", ()),
                       ("cos_", ()), ("erf_", ()), ("expm1_", ()), ("square_", ()), ("clamp_", (-0.5, 0.5)),
                       ("clip_", (None, 0.2)), ("fmod_", (1.5,)), ("remainder_", (0.7,)), ("floor_divide_", (0.3,)),
                       ("lerp_", (torch.ones(4), 0.3)), ("addcmul_", (torch.ones(4), torch.full((3, 4), 2.0))),
                       ("atan2_", (torch.ones(4),)), ("cumsum_", (1,)), ("cumprod_", (0,))]:
        r, t = pair(base, "float32")
        rargs = [rill.tensor(a.numpy()) if isinstance(a, torch.Tensor) else a for a in args]
        out = getattr(r, name)(*rargs)
        getattr(t, name)(*args)
        assert out is r, name
        assert_close(r, t)


def test_integer_operators_inplace():
    a = make_array((3, 4), "int64", seed=5)
    b = make_array((4,), "int64", seed=6, low=1)
    ra, ta = pair(a, "int64")
    rb, tb = pair(b, "int64")
    for op in ["__iand__", "__ior__", "__ixor__", "__ifloordiv__", "__imod__"]:
        got = getattr(ra, op)(rb)
        getattr(ta, op)(tb)
        assert got is ra
        assert_close(ra, ta)
    ra = ra.bitwise_not_()
    ta = ta.bitwise_not_()
    assert_close(ra, ta)
    rl, tl = pair(a, "int64")
    assert_close(rl.logical_not_(), tl.logical_not_())


def test_functional_inplace_activations():
    for name, args in [("leaky_relu", (0.1,)), ("elu", (1.0,)), ("hardtanh", (-0.5, 0.5)), ("silu", ())]:
        r, t = random_pair((3, 4), "float32", seed=7)
        out = getattr(RF, name)(r, *args, inplace=True)
        getattr(F, name)(t, *args, inplace=True)
        assert out is r or out.data_ptr() == r.data_ptr()
        assert_close(r, t)


# --- var and std: PyTorch's var.correction, var.dim and var (unbiased) overloads, from their signatures ---------

VAR_FORMS = [
    "m.{f}(x)", "x.{f}()", "m.{f}(x, 0)", "x.{f}(1)", "m.{f}(x, (0, 1))", "x.{f}([0, -1])", "m.{f}(x, dim=None)",
    "m.{f}(x, dim=[])", "m.{f}(input=x, dim=1)", "m.{f}(x, 0, keepdim=True)", "x.{f}(dim=1, keepdim=True)",
    "m.{f}(x, correction=0)", "m.{f}(x, correction=2)", "x.{f}(0, correction=0.5)", "m.{f}(x, correction=None)",
    "m.{f}(x, 1, correction=3, keepdim=True)", "m.{f}(x, True)", "m.{f}(x, False)", "x.{f}(False)",
    "m.{f}(x, unbiased=False)", "x.{f}(unbiased=True)", "m.{f}(x, 0, True)", "m.{f}(x, 0, False)",
    "x.{f}(1, False, True)", "m.{f}(x, (0, 1), False, True)", "m.{f}(x, None, False)", "m.{f}(x, None, True, True)",
    "m.{f}(x, dim=0, unbiased=False)", "x.{f}(dim=1, unbiased=False, keepdim=True)", "m.{f}(x, 0, out=m.empty(4))",
    "m.{f}(x, 1, False, True, out=m.empty(3, 1))", "x.{f}(np.int64(1))", "m.{f}_mean(x, 0, True)",
    "m.{f}_mean(x, False)", "m.{f}_mean(x, 1, correction=0, keepdim=True)", "m.{f}_mean(x, dim=0, unbiased=False)",
]


def _same_error_on_3x4(expr, seed):
    """expr (m: the framework, x: a 3x4 float32 tensor) raises the same error type in rill and PyTorch."""
    x = make_array((3, 4), "float32", seed=seed)
    assert_same_error(lambda: eval(expr, {"m": rill, "x": rill.tensor(x)}),
                      lambda: eval(expr, {"m": torch, "x": torch.tensor(x)}))


@pytest.mark.parametrize("fn", ["var", "std"])
@pytest.mark.parametrize("form", VAR_FORMS)
def test_var_std_forms_match_pytorch(fn, form):
    expr = form.format(f=fn)
    x = make_array((3, 4), "float32", seed=13)
    got = eval(expr, {"m": rill, "x": rill.tensor(x), "np": np})
    want = eval(expr, {"m": torch, "x": torch.tensor(x), "np": np})
    for g, w in zip(*(v if isinstance(v, tuple) else (v,) for v in (got, want)), strict=True):  # {f}_mean: two
        assert_close(g, w)


@pytest.mark.parametrize("fn", ["var", "std"])
@pytest.mark.parametrize("form", [
    "m.{f}(x, 0, unbiased=True, correction=1)", "m.{f}(x, unbiased=False, correction=0)",
    "x.{f}(0, True, False, correction=1)", "m.{f}(x, True, correction=1)", "m.{f}(x, 0.5)", "m.{f}(x, 0, 1)",
    "m.{f}(x, unbiased=1)", "m.{f}(x, unbiased=None)", "x.{f}(0, unbiased=None)", "m.{f}(x, correction='1')",
    "m.{f}(x, 0, True, False, True)", "m.{f}(x, True, out=m.empty(()))", "m.{f}(x, 2)", "m.{f}(x, (0, 0))",
    "m.{f}(m.tensor([1, 2]), 0, False)", "m.{f}(m.tensor([1, 2]), False)", "m.{f}_mean(x, 0, True, correction=1)",
])
def test_var_std_errors_match_pytorch(fn, form):
    _same_error_on_3x4(form.format(f=fn), seed=13)


def test_var_std_unbiased_and_correction_is_a_type_error_naming_the_forms():
    x = rill.ones(2, 3)
    with pytest.raises(TypeError, match=r"(?s)\[var\] received an invalid combination.*correction.*unbiased"):
        rill.var(x, 0, unbiased=True, correction=1)
    with pytest.raises(TypeError, match=r"(?s)float\? correction.*bool unbiased"):
        x.std(unbiased=False, correction=0)


def test_var_std_overloads_share_one_gradient():
    x = make_array((3, 4), "float64", seed=14)
    for fn in ["var", "std"]:
        for args, kwargs in [((), {}), ((0,), {"correction": 2}), ((1, False, True), {}), ((False,), {}),
                             ((), {"dim": (0, 1), "unbiased": True})]:
            r, t = rill.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
            out_r, out_t = getattr(rill, fn)(r, *args, **kwargs), getattr(torch, fn)(t, *args, **kwargs)
            assert out_r.grad_fn.name() == out_t.grad_fn.name()
            out_r.sum().backward()
            out_t.sum().backward()
            assert_close(r.grad, t.grad)


def test_var_std_signatures():
    r, t = random_pair((4, 5), "float64", seed=8)
    assert_close(r.var(True), t.var(True))
    assert_close(r.var(False), t.var(False))
    assert_close(rill.std(r, 1, True, True), torch.std(t, 1, True, True))
    assert_close(r.std(dim=[0, 1], correction=0, keepdim=True), t.std(dim=[0, 1], correction=0, keepdim=True))
    assert_close(rill.var(r, correction=0.5), torch.var(t, correction=0.5))



# --- cumsum, cumprod and logsumexp: PyTorch's signatures, from their op signatures --------------------------------

SCAN_FORMS = [
    "m.{f}(x, 0)", "m.{f}(x, -1)", "x.{f}(1)", "m.{f}(input=x, dim=1)", "x.{f}(dim=0)", "m.{f}(x, 1, dtype=m.float64)",
    "x.{f}(0, dtype=m.int32)", "m.{f}(x, np.int64(1))", "m.{f}(x.t(), 0)", "x.t().{f}(1)", "x[:, ::2].{f}(1)",
    "x.expand(2, 3, 4).{f}(0)", "m.{f}(x, 0, out=m.empty(3, 4))", "m.{f}(x, 1, dtype=m.float64, out=m.empty(3, 4, "
    "dtype=m.float64))", "m.{f}(m.tensor([1, 2, 3], dtype=m.int32), 0)", "m.{f}(m.tensor([True, False, True]), 0)",
    "m.{f}(m.tensor([[1, 2], [3, 4]]), 0, out=m.empty(2, 2, dtype=m.int64))", "m.{f}(m.tensor(2.5), 0)",
    "m.{f}(m.tensor(2.5), -1)", "m.{f}(m.ones(0, 3), 0)",
]


@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
@pytest.mark.parametrize("form", SCAN_FORMS)
def test_scan_forms_match_pytorch(fn, form):
    expr = form.format(f=fn)
    x = make_array((3, 4), "float32", seed=15)
    got = eval(expr, {"m": rill, "x": rill.tensor(x), "np": np})
    want = eval(expr, {"m": torch, "x": torch.tensor(x), "np": np})
    assert got.dtype == getattr(rill, str(want.dtype).split(".")[1])
    assert_close(got, want)


@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
@pytest.mark.parametrize("form", [
    "x.{f}_(1)", "x.{f}_(dim=0)", "x.{f}_(-1, dtype=m.float32)", "x.t().{f}_(0)", "x[:, 1:].{f}_(1)",
    "i.{f}_(1)", "i.{f}_(0, dtype=m.int32)",
])
def test_scan_inplace_forms_match_pytorch(fn, form):
    expr = form.format(f=fn)
    x = make_array((3, 4), "float32", seed=16)
    i = make_array((3, 4), "int32", seed=17, low=-3, high=3)
    rx, ri = rill.tensor(x), rill.tensor(i)
    tx, ti = torch.tensor(x), torch.tensor(i)
    got = eval(expr, {"m": rill, "x": rx, "i": ri})
    want = eval(expr, {"m": torch, "x": tx, "i": ti})
    assert_close(got, want)
    assert_close(rx, tx)  # views write through into their base
    assert_close(ri, ti)
    assert got.dtype == getattr(rill, str(want.dtype).split(".")[1])


def test_scan_inplace_returns_self():
    x = rill.ones(2, 3)
    assert x.cumsum_(1) is x
    assert x.cumprod_(0) is x


@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
@pytest.mark.parametrize("form", [
    "m.{f}(x, True)", "m.{f}(x, [1])", "m.{f}(x, (0,))", "m.{f}(x, 1.0)", "m.{f}(x)", "x.{f}()", "m.{f}(x, 2)",
    "x.{f}(-3)", "m.{f}(x, 0, m.float64)", "m.{f}(x, 0, dtype='float64')", "m.{f}(x, 0, keepdim=True)",
    "x.{f}_(True)", "x.{f}(0, out=m.empty(3, 4))", "m.{f}(x, None)",
])
def test_scan_errors_match_pytorch(fn, form):
    _same_error_on_3x4(form.format(f=fn), seed=15)


def test_scan_inplace_of_bool_raises():
    with pytest.raises(RuntimeError, match=r"\[cumsum\] result type int64 can't be cast to the desired output type"):
        rill.tensor([True, False]).cumsum_(0)  # PyTorch: NotImplementedError, no bool kernel


def test_scan_bool_dim_is_a_type_error():
    with pytest.raises(TypeError, match=r"\[cumsum\] argument 'dim' must be an int, got bool"):
        rill.cumsum(rill.ones(3), True)
    with pytest.raises(TypeError, match=r"\[cumprod_\] argument 'dim' must be an int, got bool"):
        rill.ones(3).cumprod_(False)


@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
def test_scan_gradients_match_pytorch(fn):
    x = make_array((3, 4), "float64", seed=18)
    for args, kwargs, view in [((1,), {}, False), ((0,), {}, True), ((-1,), {"dtype": torch.float32}, False)]:
        tol = {"rtol": 1e-5, "atol": 1e-5} if kwargs else {}  # PyTorch's gradient runs in float32 there
        r, t = rill.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        rin, tin = (r.t(), t.t()) if view else (r, t)
        rkw = {k: getattr(rill, str(v).split(".")[1]) for k, v in kwargs.items()}
        out_r, out_t = getattr(rill, fn)(rin, *args, **rkw), getattr(torch, fn)(tin, *args, **kwargs)
        assert out_r.grad_fn.name() == out_t.grad_fn.name()
        (out_r * out_r).sum().backward()
        (out_t * out_t).sum().backward()
        assert r.grad.dtype == rill.float64
        assert_close(r.grad, t.grad, **tol)


def test_cumsum_gradient_of_gradient():
    x = make_array((3, 4), "float64", seed=19)
    r, t = rill.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (gr,) = rill.autograd.grad((r.cumsum(1) ** 2).sum(), r, create_graph=True)
    (gt,) = torch.autograd.grad((t.cumsum(1) ** 2).sum(), t, create_graph=True)
    assert_close(gr.detach(), gt.detach())
    gr.sum().backward()
    gt.sum().backward()
    assert_close(r.grad, t.grad)


LOGSUMEXP_FORMS = [
    "m.logsumexp(x, 1)", "x.logsumexp(0)", "m.logsumexp(x, (0, 1))", "x.logsumexp([0, -1], True)",
    "m.logsumexp(input=x, dim=1, keepdim=True)", "x.logsumexp(dim=0, keepdim=False)", "m.logsumexp(x, np.int64(1))",
    "m.logsumexp(x.t(), 0)", "m.logsumexp(x, 1, out=m.empty(3))", "m.logsumexp(x, 0, True, out=m.empty(1, 4))",
    "m.logsumexp(m.tensor([[1, 2], [3, 4]]), 1)",
    "m.logsumexp(m.tensor([[1, 2], [3, 4]]), 0, out=m.empty(2))",
]


@pytest.mark.parametrize("form", LOGSUMEXP_FORMS)
def test_logsumexp_forms_match_pytorch(form):
    x = make_array((3, 4), "float32", seed=20)
    got = eval(form, {"m": rill, "x": rill.tensor(x), "np": np})
    want = eval(form, {"m": torch, "x": torch.tensor(x), "np": np})
    assert got.dtype == getattr(rill, str(want.dtype).split(".")[1])
    assert_close(got, want)


def test_logsumexp_out_is_written_and_returned():
    x = rill.tensor(make_array((3, 4), "float32", seed=21))
    out = rill.empty(3)
    assert rill.logsumexp(x, 1, out=out) is out
    assert_close(out, torch.logsumexp(torch.tensor(x.numpy()), 1))
    wide = rill.empty(3, dtype=rill.float64)  # computed in float32, written converted (PyTorch: in float64)
    assert rill.logsumexp(x, 1, out=wide) is wide
    assert_close(wide, torch.logsumexp(torch.tensor(x.numpy()).double(), 1), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("form", [
    "m.logsumexp(x)", "x.logsumexp()", "m.logsumexp(x, 2)", "m.logsumexp(x, 1.5)", "m.logsumexp(x, 'a')",
    "m.logsumexp(x, 0, keepdim=1)", "m.logsumexp(x, 0, dtype=m.float64)", "x.logsumexp(0, out=m.empty(4))",
    "m.logsumexp(x, 1, out=m.empty(3, dtype=m.int64))",
    "m.logsumexp(x, 0, False, True)",
])
def test_logsumexp_errors_match_pytorch(form):
    x = make_array((3, 4), "float32", seed=20)
    assert_same_error(lambda: eval(form, {"m": rill, "x": rill.tensor(x)}),
                      lambda: eval(form, {"m": torch, "x": torch.tensor(x)}))


def test_logsumexp_bool_dim_is_a_type_error():
    with pytest.raises(TypeError):
        rill.logsumexp(rill.ones(2, 3), True)


def test_logsumexp_gradient_and_node():
    x = make_array((3, 4), "float64", seed=22)
    r, t = rill.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out_r, out_t = r.logsumexp((0, 1), keepdim=True), t.logsumexp((0, 1), keepdim=True)
    assert out_r.grad_fn.name() == out_t.grad_fn.name()
    out_r.sum().backward()
    out_t.sum().backward()
    assert_close(r.grad, t.grad)
    with pytest.raises(RuntimeError, match="out="):
        rill.logsumexp(r, 1, out=rill.empty(3))


def test_scan_and_logsumexp_signatures():
    assert rill.cumsum.__text_signature__ == "(input, dim, *, dtype=..., out=None)"
    assert rill.Tensor.cumprod.__text_signature__ == "(self, dim, *, dtype=...)"
    assert rill.Tensor.cumsum_.__text_signature__ == "(self, dim, *, dtype=...)"
    assert rill.logsumexp.__text_signature__ == "(input, dim, keepdim=..., *, out=None)"
    assert rill.Tensor.logsumexp.__text_signature__ == "(self, dim, keepdim=...)"



# --- argsort, topk and kthvalue: PyTorch's signatures, from their op signatures -------------------------------

SORT_PART_FORMS = [
    "m.topk(x, 2)", "x.topk(2, 0)", "m.topk(x, k=3, dim=1, largest=False)", "x.topk(1, -1, True, True)",
    "m.topk(input=x, k=2, dim=0)", "m.topk(x.t(), 2)", "x.topk(np.int64(2))", "m.topk(x, 0)", "x.kthvalue(2)",
    "m.kthvalue(x, 1, 0)", "m.kthvalue(x, k=3, dim=1, keepdim=True)", "x.kthvalue(2, -1, True)",
    "m.kthvalue(input=x, k=1, dim=0)", "m.argsort(x)", "x.argsort(0)", "m.argsort(x, 1, True)",
    "x.argsort(dim=0, descending=True, stable=True)", "m.argsort(x, stable=True)", "m.argsort(input=x, dim=0)",
    "m.argsort(m.tensor([[1, 3], [3, 1]]), dim=0, stable=True)", "m.argsort(x, stable=False, descending=True)",
    "m.argsort(x, stable=True, out=m.empty(3, 4, dtype=m.int64))",
]


@pytest.mark.parametrize("form", SORT_PART_FORMS)
def test_sort_parts_match_pytorch(form):
    x = make_array((3, 4), "float32", seed=23)
    got = eval(form, {"m": rill, "x": rill.tensor(x), "np": np})
    want = eval(form, {"m": torch, "x": torch.tensor(x), "np": np})
    if isinstance(want, tuple):
        assert type(got).__name__ == type(want).__name__ and type(got)._fields == ("values", "indices")
        assert_close(got.values, want.values)
        assert_close(got.indices, want.indices)
    else:
        assert_close(got, want)


@pytest.mark.parametrize("form", [
    "m.argsort(x, 0, True, True)", "x.argsort(True)", "m.argsort(x, 2)", "m.topk(x)", "m.topk(x, 5)",
    "m.topk(x, -1)", "m.topk(x, True)", "m.topk(x, 2.0)", "x.topk(2, 0, out=None)", "m.kthvalue(x, 0)",
    "m.kthvalue(x, 5, 0)", "m.kthvalue(x, 1, 2)", "x.kthvalue(1, keepdim=1)", "m.argsort(x, stable=None)",
    "m.argsort(x, 0, stable=True)", "m.argsort(x, out=m.empty(3, 4, dtype=m.int64))",
])
def test_sort_part_errors_match_pytorch(form):
    x = make_array((3, 4), "float32", seed=23)
    assert_same_error(lambda: eval(form, {"m": rill, "x": rill.tensor(x)}),
                      lambda: eval(form, {"m": torch, "x": torch.tensor(x)}))


def test_sort_part_gradients_match_pytorch():
    x = make_array((3, 4), "float64", seed=24)
    for fn in [lambda m, v: v.topk(2, 1).values, lambda m, v: m.kthvalue(v, 2, 0, keepdim=True)[0],
               lambda m, v: m.topk(v, 3, largest=False).values * 2]:
        r, t = rill.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        (fn(rill, r) ** 2).sum().backward()
        (fn(torch, t) ** 2).sum().backward()
        assert_close(r.grad, t.grad)
    assert not rill.argsort(rill.tensor(x, requires_grad=True)).requires_grad


def test_sort_part_signatures():
    assert rill.topk.__text_signature__ == "(input, k, dim=..., largest=..., sorted=...)"
    assert rill.Tensor.kthvalue.__text_signature__ == "(self, k, dim=..., keepdim=...)"
    assert rill.argsort.__rill_overloads__ == ("(input, dim=..., descending=...)",
                                              "(input, *, stable, dim=..., descending=..., out=None)")
    assert rill.topk(rill.ones(3), 1).__class__ is rill.return_types.topk


def test_norm_signatures():
    r, t = random_pair((3, 4), "float32", seed=9)
    assert_close(rill.norm(r, 2, 1, True), torch.norm(t, 2, 1, True))
    assert_close(r.norm(p="fro"), t.norm(p="fro"))
    assert_close(rill.linalg.vector_norm(r, ord=3.5, dim=-1), torch.linalg.vector_norm(t, ord=3.5, dim=-1))
    assert_close(rill.linalg.vector_norm(r, dtype=rill.float64), torch.linalg.vector_norm(t, dtype=torch.float64))


# --- large tensors: vector math and the intra-op pool ------------------------------------------------

@pytest.mark.parametrize("threads", [1, 2])
def test_large_tensors(threads):
    old = rill.get_num_threads()
    rill.set_num_threads(threads)
    try:
        r, t = random_pair((300001,), "float32", seed=10)
        for name in ["sin", "cos", "expm1", "erf", "sign", "floor"]:
            assert_close(getattr(rill, name)(r), getattr(torch, name)(t), rtol=1e-5, atol=1e-6)
        assert_close(rill.log1p(r.abs()), torch.log1p(t.abs()))
        for name, kw in [("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("softplus", {}),
                         ("elu", {}), ("leaky_relu", {}), ("hardtanh", {})]:
            # atol: in the far tails 1 + erf(x) and 1 + tanh(x) cancel, and both libraries err by ~1e-6 there
            assert_close(getattr(RF, name)(r, **kw), getattr(F, name)(t, **kw), rtol=1e-5, atol=1e-5)
        r2, t2 = random_pair((1 << 20,), "float32", seed=11)
        assert_close(r2.var(), t2.var(), rtol=1e-5)
        assert_close(r2.std(correction=0), t2.std(correction=0), rtol=1e-5)
        m_r, m_t = random_pair((700, 300), "float32", seed=12)
        assert_close(m_r.var(0), m_t.var(0), rtol=1e-5)
        assert_close(m_r.t().var(1), m_t.t().var(1), rtol=1e-5)
        assert_close(m_r.cumsum(0), m_t.cumsum(0), rtol=1e-5, atol=1e-4)
        assert_close(m_r.cumsum(1), m_t.cumsum(1), rtol=1e-5, atol=1e-4)
        assert_close(m_r.prod(1), m_t.prod(1), rtol=1e-4)
        assert_close(rill.logsumexp(m_r, 1), torch.logsumexp(m_t, 1))
        assert_close(m_r.norm(dim=0), m_t.norm(dim=0), rtol=1e-5)
        assert_close((m_r > 3).any(1), (m_t > 3).any(1))
    finally:
        rill.set_num_threads(old)


def test_large_activation_gradients():
    for name, kw in [("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("softplus", {"beta": 2.0}),
                     ("elu", {})]:
        a = make_array((100003,), "float32", seed=13)
        r = rill.tensor(a).requires_grad_()
        t = torch.tensor(a).requires_grad_()
        g = make_array((100003,), "float32", seed=14)
        (getattr(RF, name)(r, **kw) * rill.tensor(g)).sum().backward()
        (getattr(F, name)(t, **kw) * torch.tensor(g)).sum().backward()
        assert_close(r.grad, t.grad, rtol=1e-4, atol=1e-5)
