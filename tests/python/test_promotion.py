"""Type promotion against PyTorch, exhaustively: for every pair of the 10 dtypes and every kind of
operand pair -- tensor-tensor, tensor-0-dim, 0-dim-tensor, 0-dim-0-dim -- and for a tensor (or 0-dim tensor)
with a Python bool, int or float on either side, the result dtype (and values) of add, sub, mul, div, eq,
where and maximum equal what torch returns, and where torch raises rill raises too.

Each test loops over the 100 dtype pairs itself and reports every mismatch at once, so a failing table
reads as a table."""
import numpy as np
import pytest
import torch

import rill
from conftest import DTYPES, assert_close, dtype_name, pair, rdt, tdt

# Small positive values: no overflow, no division by zero, the same in every dtype.
_VALUES = {
    (3,): np.array([1.0, 2.0, 3.0]),
    (): np.array(2.0),
}


def operand(dtype, shape):
    """(rill tensor, torch tensor) of dtype with _VALUES[shape] (bool: True/False pattern)."""
    data = _VALUES[shape]
    if dtype == "bool":
        return pair((data % 2 == 1), "bool")
    return pair(data.astype(np.float64), dtype)


# op name -> f(module, a, b) with a, b tensors or Python numbers (a number first goes through the reflected
# operator, as in user code).
OPS = {
    "add": lambda m, a, b: a + b,
    "sub": lambda m, a, b: a - b,
    "mul": lambda m, a, b: a * b,
    "div": lambda m, a, b: a / b,
    "eq": lambda m, a, b: a == b,
    "where": lambda m, a, b: m.where(_cond(m), a, b),
    "maximum": lambda m, a, b: m.maximum(a, b),
}
# torch.maximum takes no Python number (rill's accepts one, a harmless superset): tensor operands only.
TENSOR_ONLY = {"maximum"}

SHAPES = {"tensor-tensor": ((3,), (3,)), "tensor-0dim": ((3,), ()), "0dim-tensor": ((), (3,)),
          "0dim-0dim": ((), ())}


def _cond(m):
    return m.tensor([True, False, True])


def run(op, r_args, t_args):
    """None when rill matches torch (dtype, values, or both raising), else a description of the mismatch."""
    fn = OPS[op]
    try:
        want = fn(torch, *t_args)
    except Exception as e:
        try:
            got = fn(rill, *r_args)
        except Exception:
            return None
        return f"torch raised {type(e).__name__}, rill returned {dtype_name(got.dtype)}"
    try:
        got = fn(rill, *r_args)
    except Exception as e:
        return f"rill raised {type(e).__name__}: {e}; torch returned {dtype_name(want.dtype)}"
    if dtype_name(got.dtype) != dtype_name(want.dtype):
        return f"rill {dtype_name(got.dtype)} vs torch {dtype_name(want.dtype)}"
    try:
        assert_close(got, want)
    except AssertionError as e:
        return f"values: {e}"
    return None


def report(bad):
    assert not bad, f"{len(bad)} mismatches:\n" + "\n".join(bad)


@pytest.mark.parametrize("kind", list(SHAPES))
@pytest.mark.parametrize("op", list(OPS))
def test_tensor_pairs(op, kind):
    """All 100 dtype pairs, for one op and one kind of operand pair."""
    sa, sb = SHAPES[kind]
    bad = []
    for da in DTYPES:
        for db in DTYPES:
            (ra, ta), (rb, tb) = operand(da, sa), operand(db, sb)
            msg = run(op, [ra, rb], [ta, tb])
            if msg:
                bad.append(f"{op}({da}{list(sa)}, {db}{list(sb)}): {msg}")
    report(bad)


NUMBERS = [True, False, 2, -3, 2.5, 1e10]


@pytest.mark.parametrize("shape", [(3,), ()], ids=["tensor", "0dim"])
@pytest.mark.parametrize("op", [o for o in OPS if o not in TENSOR_ONLY])
def test_tensor_and_python_number(op, shape):
    """Every dtype with a Python bool, int and float, the number second and first."""
    bad = []
    for dtype in DTYPES:
        r, t = operand(dtype, shape)
        for s in NUMBERS:
            for first in (False, True):
                args = ([s, r], [s, t]) if first else ([r, s], [t, s])
                msg = run(op, *args)
                if msg:
                    where = f"{op}({s!r}, {dtype}{list(shape)})" if first else f"{op}({dtype}{list(shape)}, {s!r})"
                    bad.append(f"{where}: {msg}")
    report(bad)


def test_result_type_and_promote_types():
    """rill.result_type / rill.promote_types equal torch's for every pair of operands of every kind."""
    bad = []
    for da in DTYPES:
        for db in DTYPES:
            want = torch.promote_types(tdt(da), tdt(db))
            got = rill.promote_types(rdt(da), rdt(db))
            if dtype_name(got) != dtype_name(want):
                bad.append(f"promote_types({da}, {db}): rill {dtype_name(got)} vs torch {dtype_name(want)}")
            for kind, (sa, sb) in SHAPES.items():
                (ra, ta), (rb, tb) = operand(da, sa), operand(db, sb)
                want = torch.result_type(ta, tb)
                got = rill.result_type(ra, rb)
                if dtype_name(got) != dtype_name(want):
                    bad.append(f"result_type({da}{list(sa)}, {db}{list(sb)}): rill {dtype_name(got)} vs torch "
                               f"{dtype_name(want)}")
        for shape in [(3,), ()]:
            r, t = operand(da, shape)
            for s in NUMBERS:
                for args_r, args_t in (((r, s), (t, s)), ((s, r), (s, t))):
                    want, got = torch.result_type(*args_t), rill.result_type(*args_r)
                    if dtype_name(got) != dtype_name(want):
                        bad.append(f"result_type({args_r[0]!r:.20}, {args_r[1]!r:.20}) [{da}{list(shape)}]: rill "
                                   f"{dtype_name(got)} vs torch {dtype_name(want)}")
    report(bad)


def test_python_numbers_alone():
    """result_type of two Python numbers is the default dtype of the higher category, as in torch."""
    for a in NUMBERS:
        for b in NUMBERS:
            try:
                want = torch.result_type(torch.tensor(a), b)
            except Exception:
                continue
            assert dtype_name(rill.result_type(rill.tensor(a), b)) == dtype_name(want), (a, b)
