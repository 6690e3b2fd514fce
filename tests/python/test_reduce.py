"""Reductions against PyTorch: sum, mean, amax, amin, max, min, argmax, argmin over
dim=None / int / negative / tuple, keepdim, dtype=, layouts, and the errors."""
import pickle

import numpy as np
import pytest
import torch

import rill
from conftest import (DTYPES, FLOAT_DTYPES, INT_DTYPES, assert_close, assert_same_error, is_floating, make_array,
                      pair, rdt, random_pair, tdt)

# Sums of a few dozen values in a different order than torch's: a little more room than one op.
SUM_TOL = {"float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2), "float32": (1e-5, 1e-5),
           "float64": (1e-12, 1e-12)}

# Input layouts: (shape of the base array, view applied to both tensors). Each view is 3-D
# unless noted, so the dim cases below apply to all of them.
LAYOUTS = {
    "contiguous": ((2, 3, 4), lambda x: x),
    "permuted": ((4, 2, 3), lambda x: x.permute(1, 2, 0)),
    "strided": ((4, 3, 9), lambda x: x[::2, :, 1::2]),
    "expanded": ((2, 1, 4), lambda x: x.expand(2, 3, 4)),
    "empty_middle": ((2, 0, 4), lambda x: x),
}

# (dim, keepdim) cases: all dims, one (positive / negative), several (in any order), every dim.
DIMS = [(None, False), (None, True), (0, False), (-1, True), (1, False), ((0, 2), False), ((-1, 0), True),
        ((0, 1, 2), False)]


def layout_pair(layout, dtype, seed):
    shape, view = LAYOUTS[layout]
    # small integers with many ties, so "first index of the max" is exercised
    arr = make_array(shape, dtype, seed, low=-3 if dtype != "uint8" else 0, high=4) if not is_floating(dtype) \
        else make_array(shape, dtype, seed)
    r, t = pair(arr, dtype)
    return view(r), view(t)


def dim_kwargs(dim, keepdim):
    """dim= and keepdim= arguments (torch.sum takes keepdim only with dim, None included)."""
    if keepdim:
        return {"dim": dim, "keepdim": True}
    return {} if dim is None else {"dim": dim}


def run(fn, r, t, rill_error=None, **close):
    """fn(module, x) on both; same values, or both raise (the same error type unless rill_error)."""
    try:
        expected = fn(torch, t)
    except Exception as e:
        with pytest.raises(Exception) as r_err:
            fn(rill, r)
        want = rill_error or type(e)
        assert type(r_err.value) is want, (f"rill raised {type(r_err.value).__name__}: {r_err.value}; "
                                           f"expected {want.__name__} (torch: {type(e).__name__}: {e})")
        return
    got = fn(rill, r)
    if isinstance(expected, tuple):  # torch.return_types.max / min: a (values, indices) namedtuple
        assert isinstance(got, tuple) and type(got).__name__ == type(expected).__name__, type(got)
        assert_close(got.values, expected.values, **close)
        assert_close(got.indices, expected.indices)
        values, indices = got
        assert values is got[0] and indices is got[1]
    else:
        assert_close(got, expected, **close)


@pytest.mark.parametrize("dim,keepdim", DIMS, ids=str)
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_sum(dtype, layout, dim, keepdim):
    """sum of bool and ints is int64; floats keep their dtype (16-bit accumulate in float)."""
    r, t = layout_pair(layout, dtype, seed=1)
    tol = dict(zip(("rtol", "atol"), SUM_TOL[dtype])) if dtype in SUM_TOL else {}
    kw = dim_kwargs(dim, keepdim)
    run(lambda m, x: m.sum(x, **kw), r, t, **tol)
    run(lambda m, x: x.sum(**kw), r, t, **tol)


@pytest.mark.parametrize("dim,keepdim", DIMS, ids=str)
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_mean(dtype, layout, dim, keepdim):
    """mean of 16-bit floats: sum in float32, divide, round once (empty: NaN)."""
    r, t = layout_pair(layout, dtype, seed=2)
    tol = dict(zip(("rtol", "atol"), SUM_TOL[dtype]))
    kw = dim_kwargs(dim, keepdim)
    run(lambda m, x: m.mean(x, **kw), r, t, **tol)
    run(lambda m, x: x.mean(**kw), r, t, **tol)


@pytest.mark.parametrize("out", ["int32", "int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int32", "bfloat16", "float32"])
def test_sum_mean_dtype(dtype, out):
    """dtype= converts the input first, then reduces (sum(1.7 + 2.7, dtype=int32) == 3)."""
    arr = make_array((3, 5), dtype, seed=3) if not is_floating(dtype) else \
        make_array((3, 5), dtype, seed=3, low=-4, high=4)
    r, t = pair(arr, dtype)
    tol = dict(zip(("rtol", "atol"), SUM_TOL[out])) if out in SUM_TOL else {}
    for kw in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}):
        run(lambda m, x: m.sum(x, dtype=tdt(out) if m is torch else rdt(out), **kw), r, t, **tol)
        # rill reports a non-floating dtype= for mean as TypeError (torch: RuntimeError), like the
        # mean-of-int error below: a dtype problem, deliberately typed.
        run(lambda m, x: x.mean(dtype=tdt(out) if m is torch else rdt(out), **kw), r, t,
            rill_error=TypeError if not is_floating(out) else None, **tol)


@pytest.mark.parametrize("dim,keepdim", DIMS, ids=str)
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_amax_amin(dtype, layout, dim, keepdim):
    r, t = layout_pair(layout, dtype, seed=4)
    kw = dim_kwargs(dim, keepdim)
    for op in ("amax", "amin"):
        run(lambda m, x: getattr(m, op)(x, **kw), r, t)
        run(lambda m, x: getattr(x, op)(**kw), r, t)


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_max_min(op, dtype, layout):
    """max(x) reduces everything; max(x, dim) gives a (values, indices) namedtuple, indices of
    the first occurrence; max(x, other) is maximum."""
    r, t = layout_pair(layout, dtype, seed=5)
    run(lambda m, x: getattr(m, op)(x), r, t)
    run(lambda m, x: getattr(x, op)(), r, t)
    for dim, keepdim in ((0, False), (1, True), (-1, False), (2, True)):
        run(lambda m, x: getattr(m, op)(x, dim, keepdim), r, t)
        run(lambda m, x: getattr(x, op)(dim=dim, keepdim=keepdim), r, t)
    o_r, o_t = layout_pair("contiguous", dtype, seed=6)
    if layout != "empty_middle":
        run(lambda m, x: getattr(m, op)(x, o_r if m is rill else o_t), r, t)


def test_max_min_overloads():
    """max(x), max(x, dim, keepdim) and max(x, other) are overloads of one name: a Tensor second argument is
    maximum's other (though a Tensor has __index__, it is not a dim), out= goes with that form, and a keepdim
    without a dim or a dim that is not one int raises TypeError, as in PyTorch."""
    r, t = random_pair((2, 3), "float32", seed=13)
    o_r, o_t = random_pair((2, 3), "float32", seed=14)
    run(lambda m, x: x.max(o_r if m is rill else o_t), r, t)
    run(lambda m, x: m.min(x, other=o_r if m is rill else o_t), r, t)
    run(lambda m, x: m.max(x, rill.tensor(1) if m is rill else torch.tensor(1)), r, t)
    for kw in ({"keepdim": True}, {"dim": (0, 1)}, {"dim": [0]}, {"dim": 1.0}):
        assert_same_error(lambda: r.max(**kw), lambda: t.max(**kw))
        assert_same_error(lambda: rill.min(r, **kw), lambda: torch.min(t, **kw))
    out = rill.empty(2, 3)
    assert rill.max(r, o_r, out=out) is out
    assert_close(out, torch.max(t, o_t))


def test_max_min_results_are_return_types():
    """max(x, dim) is a rill.return_types.max, a named tuple (what default_collate tells by _fields) that
    pickles by name."""
    r = rill.tensor([[1.0, 5.0], [4.0, 2.0]])
    res = rill.max(r, 1)
    assert type(res) is rill.return_types.max and res._fields == ("values", "indices")
    assert type(r.min(0)) is rill.return_types.min
    back = pickle.loads(pickle.dumps(res))
    assert type(back) is rill.return_types.max
    assert back.values.tolist() == [5.0, 4.0] and back.indices.tolist() == [1, 0]


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_argmax_argmin(op, dtype, layout):
    """Index of the first occurrence, into the flattened (logical order) input when dim=None."""
    r, t = layout_pair(layout, dtype, seed=7)
    for dim, keepdim in ((None, False), (None, True), (0, False), (1, True), (-1, False)):
        kw = dim_kwargs(dim, keepdim)
        run(lambda m, x: getattr(m, op)(x, **kw), r, t)
        run(lambda m, x: getattr(x, op)(**kw), r, t)


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_dim(dtype):
    """A 0-dim tensor reduces over dim 0 / -1 / None to itself."""
    r, t = random_pair((), dtype, seed=8)
    for op in ("sum", "amax", "amin", "argmax", "argmin"):
        for kw in ({}, {"dim": 0}, {"dim": -1, "keepdim": True}):
            run(lambda m, x: getattr(m, op)(x, **kw), r, t)
    run(lambda m, x: m.max(x, 0), r, t)
    run(lambda m, x: x.min(-1, True), r, t)
    if is_floating(dtype):
        run(lambda m, x: x.mean(0), r, t)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_nan(dtype):
    """NaN wins max/min/amax/amin and their indices; sum and mean propagate it."""
    arr = np.array([[1.0, np.nan, 3.0, -np.inf], [np.inf, 2.0, np.nan, 0.0], [5.0, 4.0, -1.0, 2.0]], np.float32)
    r, t = pair(arr, dtype)
    for op in ("amax", "amin", "argmax", "argmin", "sum", "mean"):
        for kw in ({}, {"dim": 0}, {"dim": 1}):
            run(lambda m, x: getattr(m, op)(x, **kw), r, t)
            run(lambda m, x: getattr(m, op)(x.transpose(0, 1), **kw), r, t)
    for op in ("max", "min"):
        run(lambda m, x: getattr(m, op)(x), r, t)
        run(lambda m, x: getattr(m, op)(x, 0), r, t)
        run(lambda m, x: getattr(m, op)(x, 1), r, t)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_long_sums(dtype):
    """Longer rows and columns (several blocks of the cascade), rows and columns."""
    arr = make_array((3, 20000), dtype, seed=9, low=0, high=1)
    r, t = pair(arr, dtype)
    tol = {"float16": (1e-3, 1e-3), "bfloat16": (1e-2, 1e-2), "float32": (1e-5, 1e-4)}[dtype]
    for kw in ({}, {"dim": 1}, {"dim": 0}):
        run(lambda m, x: m.sum(x, **kw), r, t, rtol=tol[0], atol=tol[1])
        run(lambda m, x: m.mean(x, **kw), r, t, rtol=tol[0], atol=tol[1])
        run(lambda m, x: m.sum(x.transpose(0, 1), **kw), r, t, rtol=tol[0], atol=tol[1])
    for op in ("amax", "argmin"):
        run(lambda m, x: getattr(m, op)(x), r, t)
        run(lambda m, x: getattr(m, op)(x, 0), r, t)


def test_int_sum_promotes_to_int64():
    """Integer sums don't wrap in the input dtype: they accumulate in int64."""
    for dtype in INT_DTYPES + ["bool"]:
        arr = np.full((1000,), 1 if dtype == "bool" else 100, dtype=np.int64)
        r, t = pair(arr, dtype)
        run(lambda m, x: x.sum(), r, t)
        # dtype= of an integer type narrower than the sum wraps like torch
        run(lambda m, x: x.sum(dtype=torch.int8 if m is torch else rill.int8), r, t)


def test_errors():
    r, t = random_pair((2, 3), "float32", seed=10)
    assert_same_error(lambda: r.sum(dim=(0, 0)), lambda: t.sum(dim=(0, 0)))  # repeated dim
    assert_same_error(lambda: r.sum(dim=-3), lambda: t.sum(dim=-3))  # out of range
    assert_same_error(lambda: r.amax(dim=2), lambda: t.amax(dim=2))
    assert_same_error(lambda: r.argmax(dim=5), lambda: t.argmax(dim=5))
    assert_same_error(lambda: r.max(dim=7), lambda: t.max(dim=7))
    assert_same_error(lambda: r.argmax(dim=(0,)), lambda: t.argmax(dim=(0,)))  # argmax takes one int
    re, te = random_pair((0, 3), "float32", seed=11)
    for op in ("max", "min", "amax", "amin", "argmax", "argmin"):
        assert_same_error(lambda: getattr(re, op)(), lambda: getattr(te, op)())  # empty, no dim
        assert_same_error(lambda: getattr(re, op)(dim=0), lambda: getattr(te, op)(dim=0))  # empty dim
    assert_same_error(lambda: rill.max(re), lambda: torch.max(te))
    rb, tb = random_pair((3,), "bool", seed=12)
    assert_same_error(lambda: rb.argmax(), lambda: tb.argmax())
    assert_same_error(lambda: rb.argmin(dim=0), lambda: tb.argmin(dim=0))


@pytest.mark.parametrize("dtype", ["bool"] + INT_DTYPES)
def test_mean_of_integers_raises(dtype):
    r, t = random_pair((2, 3), dtype, seed=13)
    with pytest.raises(RuntimeError):
        t.mean()
    # rill raises TypeError (torch: RuntimeError): a dtype problem, reported as TypeError by design
    # (tests/cpp/reduce_test.cpp pins it), with the fix in the message.
    with pytest.raises(TypeError, match=r"\[mean\] could not infer output dtype"):
        r.mean()
    with pytest.raises(TypeError):
        rill.mean(r, dim=0)


def test_prod_takes_one_int_dim_or_none_as_pytorch():
    x = make_array((3, 4), "float32", seed=5)
    for expr in ["m.prod(x)", "x.prod(1)", "m.prod(x, 0, True)", "m.prod(x, dim=-1, keepdim=True, dtype=m.float64)",
                 "m.prod(x, dtype=m.float64)", "m.prod(x, 1, out=m.empty(3))", "x.prod(np.int64(0))"]:
        got = eval(expr, {"m": rill, "x": rill.tensor(x), "np": np})
        want = eval(expr, {"m": torch, "x": torch.tensor(x), "np": np})
        assert_close(got, want)
    for expr in ["m.prod(x, [0])", "m.prod(x, (0,))", "m.prod(x, dim=None)", "m.prod(x, keepdim=True)",
                 "m.prod(x, out=m.empty(()))", "m.prod(x, True)", "m.prod(x, 1.0)", "m.prod(x, 2)"]:
        assert_same_error(lambda: eval(expr, {"m": rill, "x": rill.tensor(x)}),
                          lambda: eval(expr, {"m": torch, "x": torch.tensor(x)}))
    a = rill.tensor(x, requires_grad=True)
    assert type(a.prod()).__name__ == "Tensor"
    assert a.prod().grad_fn.name() == "ProdBackward0" and a.prod(0).grad_fn.name() == "ProdBackward1"
