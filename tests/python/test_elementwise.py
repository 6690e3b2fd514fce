"""Elementwise ops against PyTorch: unary, binary (tensor-tensor and with Python
numbers), comparisons, in-place forms, type promotion, where, and casts."""
import operator

import numpy as np
import pytest
import torch

import rill
from conftest import (DTYPES, FLOAT_DTYPES, INT_DTYPES, LAYOUTS, assert_close, assert_same_error, dtype_name,
                      is_floating, layout_pair, make_array, pair, rdt, random_pair, tdt)


def check(fn, r_args, t_args, rill_error=None, **close):
    """fn(module, *args) on rill and torch: same result, or both raise the same error type.

    rill_error: the exception type (or a tuple of types) rill raises where it deliberately differs
    from torch's.
    """
    try:
        expected = fn(torch, *t_args)
    except Exception as e:  # torch rejects this case: rill must too
        with pytest.raises(Exception) as r_err:
            fn(rill, *r_args)
        want = rill_error or type(e)
        want = want if isinstance(want, tuple) else (want,)
        assert type(r_err.value) in want, (f"rill raised {type(r_err.value).__name__}: {r_err.value}; "
                                           f"expected {want} (torch: {type(e).__name__}: {e})")
        return None
    got = fn(rill, *r_args)
    assert_close(got, expected, **close)
    return got


# --- unary ------------------------------------------------------------------------------------

UNARY = ["neg", "abs", "relu", "exp", "log", "sqrt", "sigmoid", "tanh"]
# log and sqrt get positive inputs (NaN from negatives is tested separately).
POSITIVE_DOMAIN = {"log", "sqrt"}


def unary_bool_skip(op, dtype):
    # rill accepts abs and relu on bool tensors (both are the identity there); torch raises
    # NotImplementedError / RuntimeError. A harmless superset, deliberately kept.
    return dtype == "bool" and op in ("abs", "relu")


def unary_rill_error(op, dtype):
    # rill reports an unsupported dtype as TypeError (bool negation, +bool); torch raises RuntimeError.
    return TypeError if (dtype == "bool" and op == "neg") else None


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", UNARY)
def test_unary(op, dtype, layout):
    if unary_bool_skip(op, dtype):
        pytest.skip("rill deliberately accepts abs/relu on bool")
    r, t = layout_pair(layout, dtype, seed=1, positive=op in POSITIVE_DOMAIN)
    err = unary_rill_error(op, dtype)
    check(lambda m, x: getattr(m, op)(x), [r], [t], rill_error=err)
    check(lambda m, x: getattr(x, op)(), [r], [t], rill_error=err)


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_operators(dtype):
    r, t = random_pair((2, 3), dtype, seed=2)
    check(lambda m, x: -x, [r], [t], rill_error=unary_rill_error("neg", dtype))
    if dtype != "bool":
        check(lambda m, x: abs(x), [r], [t])
    check(lambda m, x: +x, [r], [t], rill_error=unary_rill_error("neg", dtype))
    if dtype != "bool":
        assert (+r) is r  # as in torch, unary plus returns the tensor itself


@pytest.mark.parametrize("layout", ["mat", "0d", "strided", "transposed"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", UNARY)
def test_unary_inplace(op, dtype, layout):
    """x.op_() writes into x (a view writes through to its base), or raises when the
    result dtype can't be stored in x (exp_ of an int tensor)."""
    if not hasattr(rill.Tensor, op + "_"):
        pytest.skip(f"rill has no Tensor.{op}_")
    if unary_bool_skip(op, dtype):
        pytest.skip("rill deliberately accepts abs/relu on bool")
    shape, view = LAYOUTS[layout]
    rb, tb = random_pair(shape, dtype, seed=3, positive=op in POSITIVE_DOMAIN)
    r, t = view(rb), view(tb)

    def fn(m, x):
        out = getattr(x, op + "_")()
        assert out is x
        return x

    check(fn, [r], [t], rill_error=unary_rill_error(op, dtype))
    assert_close(rb, tb)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_unary_special_values(dtype):
    arr = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-3, 80.0, -80.0], dtype=np.float32)
    r, t = pair(arr, dtype)
    for op in UNARY:
        check(lambda m, x: getattr(m, op)(x), [r], [t])


# --- binary -----------------------------------------------------------------------------------

ARITH = ["add", "sub", "mul", "div", "pow", "maximum", "minimum"]
COMPARE = ["eq", "ne", "lt", "le", "gt", "ge"]

# Pairs of operand layouts: (shape a, view a, shape b, view b).
BINARY_CASES = {
    "same": ((3, 4), None, (3, 4), None),
    "bcast_col_row": ((3, 1), None, (4,), None),
    "0d_and_mat": ((), None, (2, 3), None),
    "mat_and_0d": ((2, 3), None, (), None),
    "0d_and_0d": ((), None, (), None),
    "empty": ((0, 3), None, (3,), None),
    "transposed_strided": ((4, 3), lambda x: x.transpose(0, 1), (6, 8), lambda x: x[::2, 1::2]),
    "expanded": ((3, 1), lambda x: x.expand(3, 4), (1, 4), lambda x: x.expand(3, 4)),
}


def binary_operands(op, dtype, case, seed=0):
    """(rill a, rill b), (torch a, torch b) with values in op's safe domain."""
    sa, va, sb, vb = BINARY_CASES[case]
    if op == "pow":
        # small bases, small non-negative exponents: no integer overflow, no int ** negative
        a = make_array(sa, dtype, seed, low=0.5 if is_floating(dtype) else -3, high=2 if is_floating(dtype) else 4)
        b = make_array(sb, dtype, seed + 1, low=-2 if is_floating(dtype) else 0, high=2 if is_floating(dtype) else 4)
    elif op == "div":
        a = make_array(sa, dtype, seed)
        b = make_array(sb, dtype, seed + 1, positive=True)  # no division by zero
    else:
        a = make_array(sa, dtype, seed)
        b = make_array(sb, dtype, seed + 1)
    if op in COMPARE and dtype != "bool":
        b = np.where(make_array(sb, "bool", seed + 2), b, np.broadcast_to(a.flat[0] if a.size else b, b.shape))
    ra, ta = pair(a, dtype)
    rb, tb = pair(b, dtype)
    if va:
        ra, ta = va(ra), va(ta)
    if vb:
        rb, tb = vb(rb), vb(tb)
    return (ra, rb), (ta, tb)


def binary_rill_error(op, dtype):
    # rill reports bool subtraction as TypeError; torch raises RuntimeError.
    return TypeError if (op == "sub" and dtype == "bool") else None


@pytest.mark.parametrize("case", list(BINARY_CASES))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ARITH + COMPARE)
def test_binary(op, dtype, case):
    if op == "pow" and dtype == "bool":
        pytest.skip("rill deliberately implements bool ** bool (a or not b); torch raises NotImplementedError")
    r, t = binary_operands(op, dtype, case)
    check(lambda m, a, b: getattr(m, op)(a, b), r, t, rill_error=binary_rill_error(op, dtype))
    check(lambda m, a, b: getattr(a, op)(b), r, t, rill_error=binary_rill_error(op, dtype))


OPERATORS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv, "pow": operator.pow,
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", list(OPERATORS))
def test_binary_operators(op, dtype):
    if op == "pow" and dtype == "bool":
        pytest.skip("rill deliberately implements bool ** bool; torch raises NotImplementedError")
    r, t = binary_operands(op, dtype, "bcast_col_row", seed=4)
    check(lambda m, a, b: OPERATORS[op](a, b), r, t, rill_error=binary_rill_error(op, dtype))


SCALARS = [2, -3, 2.5, 0.1, True, False]


def scalar_domain(op, dtype, scalar, reverse):
    """Operand data for tensor-scalar op, or None when the case is outside the domain we test."""
    floating = is_floating(dtype)
    if op == "div" and not reverse and scalar in (0, False):
        return None  # x / 0: covered by the float special values test
    if op == "pow":
        if reverse:
            if isinstance(scalar, float) and scalar < 0:
                return None  # negative base to fractional powers is NaN; not interesting
            # scalar ** x: non-negative small exponents (ints can't take negative powers)
            return dict(low=0, high=4) if not floating else dict(low=-2, high=2)
        if not floating and not isinstance(scalar, float) and scalar < 0:
            return None  # int ** negative int raises; tested in test_pow_errors
        return dict(low=0.5, high=2) if floating else dict(low=0, high=4)
    if op == "div":
        return dict(positive=True)
    return {}


@pytest.mark.parametrize("scalar", SCALARS, ids=[repr(s) for s in SCALARS])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow"] + COMPARE)
def test_binary_scalar(op, dtype, scalar):
    """x op 2 and 2 op x, with int, float and bool Python numbers (operators and functions)."""
    f = OPERATORS[op]
    # rill reports subtraction with a bool operand as TypeError; torch raises RuntimeError.
    err = TypeError if (op == "sub" and (dtype == "bool" or isinstance(scalar, bool))) else None
    for reverse in (False, True):
        if op == "pow" and dtype == "bool" and not isinstance(scalar, float):
            continue  # rill deliberately implements bool ** bool; torch raises NotImplementedError
        kwargs = scalar_domain(op, dtype, scalar, reverse)
        if kwargs is None:
            continue
        r, t = random_pair((2, 3), dtype, seed=5, **kwargs)
        if reverse:
            check(lambda m, x: f(scalar, x), [r], [t], rill_error=err)
        else:
            check(lambda m, x: f(x, scalar), [r], [t], rill_error=err)
            check(lambda m, x: getattr(m, op)(x, scalar), [r], [t], rill_error=err)
            check(lambda m, x: getattr(x, op)(scalar), [r], [t], rill_error=err)


@pytest.mark.parametrize("layout", ["0d", "strided", "empty"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["add", "mul", "div", "maximum", "lt"])
def test_binary_scalar_layouts(op, dtype, layout):
    r, t = layout_pair(layout, dtype, seed=6, positive=True)
    for s in (3, 1.5):
        if op in OPERATORS:
            check(lambda m, x: OPERATORS[op](x, s), [r], [t])
        else:  # torch.maximum takes no Python number: give it a 0-dim tensor of the promoted dtype
            check(lambda m, x: getattr(m, op)(x, torch.tensor(s, dtype=torch.result_type(x, s))
                                              if m is torch else s), [r], [t])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_scalar_precision_16bit(dtype):
    """16-bit tensors with a float scalar: torch computes in float32 with the scalar kept in
    float32 for some ops; rill must give the same bits, not just close values."""
    arr = np.array([0.1, 0.3, 1.0 / 3.0, 1000.0, -7.1, 3.14159], dtype=np.float32)
    r, t = pair(arr, dtype)
    for s in (0.1, 1.0 / 3.0, 2.7, 1e-3):
        for f in (operator.add, operator.sub, operator.mul, operator.truediv):
            check(lambda m, x: f(x, s), [r], [t], rtol=0, atol=0)
            if f is not operator.truediv:
                check(lambda m, x: f(s, x), [r], [t], rtol=0, atol=0)
        # torch computes s / x as x.reciprocal() * s (two roundings); rill divides once, so
        # the two may differ by an ulp: not worth matching.
        check(lambda m, x: s / x, [r], [t])
        for f in (operator.eq, operator.lt, operator.ge):
            check(lambda m, x: f(x, s), [r], [t])


@pytest.mark.parametrize("dtype", INT_DTYPES[1:])
def test_pow_negative_integer_exponents(dtype):
    """int tensor ** negative Python int raises, whatever the base (1 and -1 included); a negative exponent
    tensor gives torch's values."""
    r, t = pair(np.array([1, -1, 2, 0, 3], dtype=np.int64), dtype)
    for e in (-1, -2):
        check(lambda m, x: x ** e, [r], [t])
        check(lambda m, x: m.pow(x, e), [r], [t])
        check(lambda m, x: x.pow(e), [r], [t])
    # A negative exponent *tensor* works for bases 1 and -1 in both; a negative number doesn't.
    r1, t1 = pair(np.array([1, -1, 1, -1], dtype=np.int64), dtype)
    check(lambda m, x: x ** -1, [r1], [t1])
    re, te = pair(np.array([-1, -3, -2, -2], dtype=np.int64), dtype)
    check(lambda m, x, y: x ** y, [r1, re], [t1, te])
    check(lambda m, y: (-1) ** y, [re], [te])
    check(lambda m, y: m.pow(1, y), [re], [te])
    # Other bases: 1 / a**-b truncated (0 for |a| > 1, 0 ** -1 too), as torch
    r2, t2 = pair(np.array([2, 3, 0, -2], dtype=np.int64), dtype)
    rn, tn = pair(np.array([-1, -2, -1, -3], dtype=np.int64), dtype)
    check(lambda m, x, y: x ** y, [r2, rn], [t2, tn])
    check(lambda m, y: 2 ** y, [rn], [tn])


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64"])
def test_integer_wraparound(dtype):
    """Integer arithmetic wraps modulo 2**bits, as in torch."""
    info = np.iinfo(dtype)
    arr = np.array([info.max, info.min, info.max - 1, 1], dtype=dtype)
    r, t = pair(arr, dtype)
    check(lambda m, x: x + 1, [r], [t])
    check(lambda m, x: x - 2, [r], [t])
    check(lambda m, x: x * 3, [r], [t])
    check(lambda m, x: x + x, [r], [t])
    if dtype != "uint8":
        check(lambda m, x: -x, [r], [t])
        check(lambda m, x: m.abs(x), [r], [t])


def test_float_division_by_zero():
    for dtype in ["float32", "float16", "int32", "bool"]:
        r, t = pair(np.array([1, -1, 0, 2], dtype=np.float32), dtype)
        z, zt = pair(np.zeros(4, dtype=np.float32), dtype)
        check(lambda m, a, b: a / b, [r, z], [t, zt])
        check(lambda m, a: a / 0, [r], [t])
        check(lambda m, a: 0.0 / a, [r], [t])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_nan_propagation(dtype):
    a = np.array([np.nan, 1.0, np.nan, -np.inf, 2.0], dtype=np.float32)
    b = np.array([1.0, np.nan, np.nan, np.inf, -0.0], dtype=np.float32)
    (ra, ta), (rb, tb) = pair(a, dtype), pair(b, dtype)
    for op in ARITH + COMPARE:
        check(lambda m, x, y: getattr(m, op)(x, y), [ra, rb], [ta, tb])


# --- alpha ------------------------------------------------------------------------------------

ALPHA_CASES = [("float32", "float32", 2), ("float32", "float32", 0.5), ("int64", "int64", 3), ("int8", "int8", -2),
               ("float16", "float16", 1.5), ("bfloat16", "bfloat16", 3), ("float32", "int8", 100),
               ("int32", "float64", 2), ("int32", "int32", 2.5), ("bool", "bool", 2), ("bool", "bool", True),
               ("int64", "int64", True), ("float16", "int16", 300), ("uint8", "int8", 2)]


@pytest.mark.parametrize("da,db,alpha", ALPHA_CASES)
@pytest.mark.parametrize("op", ["add", "sub"])
def test_alpha(op, da, db, alpha):
    """add(a, b, alpha=k) is a + k * b computed in the result dtype (b converted first)."""
    (ra, ta), (rb, tb) = random_pair((2, 3), da, seed=8), random_pair((3,), db, seed=9)
    # sub with bool operands: rill raises TypeError (torch: RuntimeError), or RuntimeError from
    # the alpha check when it comes first.
    err = (TypeError, RuntimeError) if (op == "sub" and "bool" in (da, db)) else None
    check(lambda m, a, b: getattr(m, op)(a, b, alpha=alpha), [ra, rb], [ta, tb], rill_error=err)
    check(lambda m, a, b: getattr(a, op)(b, alpha=alpha), [ra, rb], [ta, tb], rill_error=err)
    check(lambda m, a: getattr(m, op)(a, 2, alpha=alpha), [ra], [ta], rill_error=err)

    def inplace(m, a, b):
        a = a.clone()
        assert getattr(a, op + "_")(b, alpha=alpha) is a
        return a

    check(inplace, [ra, rb], [ta, tb], rill_error=err)


# --- in-place ---------------------------------------------------------------------------------

IOPS = {"add": operator.iadd, "sub": operator.isub, "mul": operator.imul, "div": operator.itruediv}


@pytest.mark.parametrize("other", ["same", "int64", "float32", "bool", "0d_float64", "py_int", "py_float", "py_bool"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", list(IOPS))
def test_inplace(op, dtype, other):
    """x op= y: computed in the promoted dtype, stored in x's dtype, or RuntimeError when the
    result can't be cast to x's dtype (int /= 2, int += 2.5, bool += 1)."""
    r, t = random_pair((3, 4), dtype, seed=10)
    if other.startswith("py_"):
        v = {"py_int": 2, "py_float": 2.5, "py_bool": True}[other]
        ro, to = v, v
    elif other == "0d_float64":
        ro, to = random_pair((), "float64", seed=11, positive=True)
    else:
        odt = dtype if other == "same" else other
        ro, to = random_pair((4,), odt, seed=11, positive=op == "div")

    def fn(m, x, y):
        x = x.clone()
        before = x
        x = IOPS[op](x, y)
        assert x is before
        return x

    def method(m, x, y):
        x = x.clone()
        assert getattr(x, op + "_")(y) is x
        return x

    err = TypeError if (op == "sub" and (dtype == "bool" or other in ("bool", "py_bool"))) else None
    check(fn, [r, ro], [t, to], rill_error=err)
    check(method, [r, ro], [t, to], rill_error=err)


def test_inplace_into_views():
    """In-place ops on a non-contiguous view write through to the base."""
    for dtype in ["float32", "int32", "float16"]:
        rb, tb = random_pair((6, 8), dtype, seed=12)
        for m, b in ((rill, rb), (torch, tb)):
            v = b[::2, 1::3]
            v += 1
            v *= 2
            w = b.transpose(0, 1)[2]
            w -= 3
        assert_close(rb, tb)


def test_inplace_errors():
    r, t = random_pair((3, 1), "float32", seed=13)
    o, ot = random_pair((3, 4), "float32", seed=14)
    assert_same_error(lambda: r.add_(o), lambda: t.add_(ot))  # broadcast output shape
    ri, ti = random_pair((3,), "int32", seed=15)
    assert_same_error(lambda: ri.__itruediv__(2), lambda: ti.__itruediv__(2))
    assert_same_error(lambda: ri.div_(ri), lambda: ti.div_(ti))
    assert_same_error(lambda: ri.mul_(1.5), lambda: ti.mul_(1.5))
    rb, tbool = random_pair((3,), "bool", seed=16)
    assert_same_error(lambda: rb.add_(1), lambda: tbool.add_(1))
    assert_same_error(lambda: rb.add_(ri), lambda: tbool.add_(ti))
    rf, tf = random_pair((3,), "float32", seed=17)
    assert_same_error(lambda: ri.add_(rf), lambda: ti.add_(tf))
    # writing an expanded view (elements sharing memory) in place
    re_, te_ = random_pair((3, 1), "float32", seed=18)
    assert_same_error(lambda: re_.expand(3, 4).add_(1), lambda: te_.expand(3, 4).add_(1))
    assert_same_error(lambda: re_.expand(3, 4).__imul__(re_), lambda: te_.expand(3, 4).__imul__(te_))
    assert_same_error(lambda: re_.expand(2, 3, 1).exp_(), lambda: te_.expand(2, 3, 1).exp_())
    assert_close(re_, te_)
    # an input that partly overlaps the written-to tensor (the result would depend on the write order)
    rs, ts = random_pair((3, 3), "float32", seed=19)
    assert_same_error(lambda: rs.add_(rs.t()), lambda: ts.add_(ts.t()))
    assert_same_error(lambda: rs[1:].__imul__(rs[:-1]), lambda: ts[1:].__imul__(ts[:-1]))
    assert_same_error(lambda: rs.view(9)[1:].sub_(rs.view(9)[:-1], alpha=2),
                      lambda: ts.view(9)[1:].sub_(ts.view(9)[:-1], alpha=2))
    # full overlap (x op= x, or the same view) and disjoint views of one storage are fine
    for m, x in ((rill, rs), (torch, ts)):
        x += x
        x[0] *= x[0]
        x[0] -= x[2]
        x.view(9)[:4].div_(x.view(9)[5:])
    assert_close(rs, ts)
    # the tensor is left untouched by a rejected in-place op
    before = ri.numpy().copy()
    with pytest.raises(RuntimeError):
        ri /= 2
    np.testing.assert_array_equal(ri.numpy(), before)


# --- type promotion ---------------------------------------------------------------------------

@pytest.mark.parametrize("db", DTYPES)
@pytest.mark.parametrize("da", DTYPES)
def test_promotion_add(da, db):
    """Every pair of dtypes: result dtype and values of a + b equal torch's, for dim/dim,
    dim/0-dim and 0-dim/dim operands."""
    (ra, ta), (rb, tb) = random_pair((2, 3), da, seed=20), random_pair((3,), db, seed=21)
    check(lambda m, a, b: a + b, [ra, rb], [ta, tb])
    (rz, tz) = random_pair((), db, seed=22)
    check(lambda m, a, b: a + b, [ra, rz], [ta, tz])
    check(lambda m, a, b: b * a, [ra, rz], [ta, tz])
    (rz2, tz2) = random_pair((), da, seed=23)
    check(lambda m, a, b: a + b, [rz2, rz], [tz2, tz])  # two 0-dim tensors promote like dim tensors
    assert dtype_name(rill.promote_types(rdt(da), rdt(db))) == dtype_name(torch.promote_types(tdt(da), tdt(db)))
    assert dtype_name(rill.result_type(ra, rb)) == dtype_name(torch.result_type(ta, tb))
    assert dtype_name(rill.result_type(ra, rz)) == dtype_name(torch.result_type(ta, tz))
    assert dtype_name(rill.result_type(rz, ra)) == dtype_name(torch.result_type(tz, ta))


@pytest.mark.parametrize("dtype", DTYPES)
def test_promotion_scalars(dtype):
    """A Python number only widens a tensor of a lower category (bool < int < float)."""
    r, t = random_pair((4,), dtype, seed=24, positive=True)
    rz, tz = random_pair((), dtype, seed=25, positive=True)
    for s in (True, 3, -2, 2.5, 1e10):
        assert dtype_name(rill.result_type(r, s)) == dtype_name(torch.result_type(t, s)), s
        assert dtype_name(rill.result_type(s, r)) == dtype_name(torch.result_type(s, t)), s
        assert dtype_name(rill.result_type(rz, s)) == dtype_name(torch.result_type(tz, s)), s
        for f in (operator.mul, operator.truediv, operator.eq):
            check(lambda m, x: f(x, s), [r], [t])
            check(lambda m, x: f(x, s), [rz], [tz])


def test_promotion_tiers():
    """dim tensors > 0-dim tensors > Python numbers, within a category."""
    cases = [("int8", (), "int64", (3,)), ("int64", (), "int8", (3,)), ("float64", (), "float16", (3,)),
             ("float64", (), "int8", (3,)), ("int64", (), "bool", (3,)), ("float16", (), "bfloat16", ()),
             ("uint8", (), "int8", ()), ("bool", (), "bool", (3,))]
    for da, sa, db, sb in cases:
        (ra, ta), (rb, tb) = random_pair(sa, da, seed=26), random_pair(sb, db, seed=27)
        check(lambda m, a, b: a * b, [ra, rb], [ta, tb])
        check(lambda m, a, b: m.maximum(a, b), [ra, rb], [ta, tb])
        check(lambda m, a, b: a < b, [ra, rb], [ta, tb])
        check(lambda m, a, b: m.where(b > 0 if db != "bool" else b, a, b), [ra, rb], [ta, tb])


# --- where ------------------------------------------------------------------------------------

WHERE_CASES = {
    "same": ((3, 4), (3, 4), (3, 4)),
    "broadcast": ((3, 1), (4,), (1, 4)),
    "0d_values": ((2, 3), (), ()),
    "0d_cond": ((), (2, 3), (3,)),
    "empty": ((0, 2), (2,), (0, 1)),
}


@pytest.mark.parametrize("case", list(WHERE_CASES))
@pytest.mark.parametrize("db", ["bool", "int8", "int64", "float16", "float32"])
@pytest.mark.parametrize("da", DTYPES)
def test_where(da, db, case):
    sc, sa, sb = WHERE_CASES[case]
    rc, tc = random_pair(sc, "bool", seed=30)
    (ra, ta), (rb, tb) = random_pair(sa, da, seed=31), random_pair(sb, db, seed=32)
    check(lambda m, c, a, b: m.where(c, a, b), [rc, ra, rb], [tc, ta, tb])
    check(lambda m, c, a, b: a.where(c, b), [rc, ra, rb], [tc, ta, tb])


@pytest.mark.parametrize("scalar", [0, 2, -1.5, True], ids=repr)
@pytest.mark.parametrize("dtype", DTYPES)
def test_where_scalar(dtype, scalar):
    rc, tc = random_pair((3, 4), "bool", seed=33)
    r, t = random_pair((4,), dtype, seed=34)
    check(lambda m, c, x: m.where(c, x, scalar), [rc, r], [tc, t])
    check(lambda m, c, x: m.where(c, scalar, x), [rc, r], [tc, t])
    rz, tz = random_pair((), dtype, seed=35)
    check(lambda m, c, x: m.where(c, x, scalar), [rc, rz], [tc, tz])


def test_where_two_scalars():
    rc, tc = random_pair((2, 3), "bool", seed=36)
    for a, b in [(1, 2), (1, 2.5), (True, 2), (True, False), (0.5, -0.5)]:
        check(lambda m, c: m.where(c, a, b), [rc], [tc])


def test_where_noncontiguous():
    rc, tc = random_pair((4, 3), "bool", seed=37)
    ra, ta = random_pair((6, 8), "float32", seed=38)
    rb, tb = random_pair((3, 1), "float64", seed=39)
    check(lambda m, c, a, b: m.where(c.transpose(0, 1), a[::2, 1::2], b.expand(3, 4)), [rc, ra, rb], [tc, ta, tb])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "float16"])
def test_where_long_rows(dtype):
    """Rows long enough for the vector select rows (and a tail), each value dense or one value spread over the
    row, and a row of the mask strided."""
    rc, tc = random_pair((3, 1037), "bool", seed=42)
    (ra, ta), (rb, tb) = random_pair((3, 1037), dtype, seed=43), random_pair((3, 1037), dtype, seed=44)
    rz, tz = random_pair((), dtype, seed=45)
    for (r1, t1), (r2, t2) in [((ra, ta), (rb, tb)), ((rz, tz), (rb, tb)), ((ra, ta), (rz, tz)), ((rz, tz), (rz, tz))]:
        check(lambda m, c, a, b: m.where(c, a, b), [rc, r1, r2], [tc, t1, t2])
    check(lambda m, c, a: m.where(c[:, ::2], a[:, ::2], 0), [rc, ra], [tc, ta])


def test_where_errors():
    rc, tc = random_pair((3,), "int32", seed=40)
    r, t = random_pair((3,), "float32", seed=41)
    with pytest.raises((TypeError, RuntimeError)):
        torch.where(tc, t, t)
    # rill reports a non-bool condition as TypeError (torch: RuntimeError): a wrong dtype, deliberately typed.
    with pytest.raises(TypeError):
        rill.where(rc, r, r)
    rc2, tc2 = random_pair((4,), "bool", seed=42)
    assert_same_error(lambda: rill.where(rc2, r, r), lambda: torch.where(tc2, t, t))


# --- casts ------------------------------------------------------------------------------------

def cast_source(src, dst, seed):
    """Data of dtype src whose values are representable in dst (float -> int out of range is
    undefined behaviour in C++ and in torch, so it is not tested)."""
    if src == "bool":
        return make_array((3, 5), src, seed)
    if dst in INT_DTYPES and is_floating(src):
        lo, hi = (0, 250) if dst == "uint8" else (-120, 120)
        return make_array((3, 5), src, seed, low=lo, high=hi)
    if src in INT_DTYPES:
        return make_array((3, 5), src, seed, low=0 if src == "uint8" else -120, high=120)
    return make_array((3, 5), src, seed, low=-300, high=300)


@pytest.mark.parametrize("dst", DTYPES)
@pytest.mark.parametrize("src", DTYPES)
def test_cast(src, dst):
    arr = cast_source(src, dst, seed=50)
    r, t = pair(arr, src)
    check(lambda m, x: x.to(tdt(dst) if m is torch else rdt(dst)), [r], [t], rtol=0, atol=0)
    # non-contiguous input
    check(lambda m, x: x.transpose(0, 1)[::2].to(tdt(dst) if m is torch else rdt(dst)), [r], [t], rtol=0, atol=0)
    # copy_ converts into an existing (strided) tensor
    rd, td = pair(np.zeros((5, 3), np.float32), dst)

    def copy(m, x, d):
        d.copy_(x.transpose(0, 1))
        return d

    check(copy, [r, rd], [t, td], rtol=0, atol=0)


def test_cast_wraps_integers():
    """int -> narrower int keeps the low bits, as in C and torch."""
    arr = np.array([300, -1, -129, 65535, 2**31 + 5, -(2**40)], dtype=np.int64)
    r, t = pair(arr, "int64")
    for dst in INT_DTYPES + ["bool"]:
        check(lambda m, x: x.to(tdt(dst) if m is torch else rdt(dst)), [r], [t])


@pytest.mark.parametrize("dst", FLOAT_DTYPES + ["bool"])
@pytest.mark.parametrize("src", FLOAT_DTYPES)
def test_cast_special_values(src, dst):
    arr = np.array([np.nan, np.inf, -np.inf, -0.0, 1e-8, 65504.0, 70000.0, 1.00390625, 3.0e38, 1e-40],
                   dtype=np.float32 if src != "float64" else np.float64)
    r, t = pair(arr, src)
    check(lambda m, x: x.to(tdt(dst) if m is torch else rdt(dst)), [r], [t], rtol=0, atol=0)


def test_cast_rounding():
    """float32 -> 16-bit rounds to nearest even (ties included); int64 -> float32 rounds too."""
    f = np.array([1.0009765625, 1.00048828125, 1.00146484375, 1.001953125, 1.0078125, 1.00390625, 1.01171875,
                  -2.0048828125, 65519.0, 65520.0], dtype=np.float32)
    r, t = pair(f, "float32")
    for dst in ("float16", "bfloat16"):
        check(lambda m, x: x.to(tdt(dst) if m is torch else rdt(dst)), [r], [t], rtol=0, atol=0)
    big = np.array([2**24 + 1, 2**53 + 1, -(2**62) - 1, 2**63 - 1], dtype=np.int64)
    r, t = pair(big, "int64")
    for dst in FLOAT_DTYPES:
        check(lambda m, x: x.to(tdt(dst) if m is torch else rdt(dst)), [r], [t], rtol=0, atol=0)
