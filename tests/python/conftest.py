"""Shared helpers for checking rill against PyTorch: dtypes, data, tensor pairs, comparison.

Every op test builds a rill tensor and a torch tensor from the same numpy array,
runs the op on both, and compares them with assert_close (dtype, shape, values).
"""
import numpy as np
import pytest
import torch

import rill

# The reference needs no threads: torch's intra-op pool spinning on a shared 2-core CI machine
# makes some small ops (max with a dim) take milliseconds.
torch.set_num_threads(1)

# Every dtype rill supports, by name (the same name in rill and torch).
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
INT_DTYPES = ["uint8", "int8", "int16", "int32", "int64"]
FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64"]
NUMERIC_DTYPES = INT_DTYPES + FLOAT_DTYPES

# (rtol, atol) per floating dtype. 16-bit results are computed in float32 and
# rounded once (as torch does), so they differ by at most an ulp or so.
TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1e-2, 1e-5),
    "float32": (1e-5, 1e-6),
    "float64": (1e-12, 1e-12),
}

# numpy dtype used to carry data of each dtype (numpy has no bfloat16: float32, then .to()).
_NP_CARRIER = {
    "bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "int16": np.int16, "int32": np.int32,
    "int64": np.int64, "float16": np.float16, "bfloat16": np.float32, "float32": np.float32,
    "float64": np.float64,
}


def rdt(name):
    """The rill dtype called name."""
    return getattr(rill, name)


def tdt(name):
    """The torch dtype called name."""
    return getattr(torch, name)


def dtype_name(dtype):
    """'float32' for rill.float32 or torch.float32."""
    return str(dtype).split(".")[-1]


def is_floating(name):
    return name in FLOAT_DTYPES


def rng(seed):
    return np.random.default_rng(seed)


def make_array(shape, dtype, seed=0, low=None, high=None, positive=False):
    """Random numpy data for dtype: small integers (no overflow in sums or products of a
    few terms), floats from a normal distribution, or in [low, high) when given."""
    g = rng(seed)
    shape = tuple(shape)
    if dtype == "bool":
        return g.integers(0, 2, size=shape).astype(np.bool_)
    if dtype in INT_DTYPES:
        lo = 0 if (dtype == "uint8" or positive) else -10
        lo = lo if low is None else int(low)
        hi = 10 if high is None else int(high)
        if positive:
            lo = max(lo, 1)
        return g.integers(lo, hi, size=shape).astype(_NP_CARRIER[dtype])
    if low is not None or high is not None:
        a = g.uniform(-3.0 if low is None else low, 3.0 if high is None else high, size=shape)
    else:
        a = g.standard_normal(size=shape) * 2.0
    if positive:
        a = np.abs(a) + 0.1
    return np.asarray(a).astype(_NP_CARRIER[dtype])


def rill_from_numpy(arr, dtype):
    """A rill tensor holding a copy of arr, converted to dtype (a name)."""
    return rill.tensor(arr).to(rdt(dtype))


def torch_from_numpy(arr, dtype):
    """A torch tensor holding a copy of arr, converted to dtype (a name)."""
    return torch.tensor(np.array(arr)).to(tdt(dtype))


def pair(arr, dtype):
    """(rill tensor, torch tensor) with the same values, both of dtype."""
    return rill_from_numpy(arr, dtype), torch_from_numpy(arr, dtype)


def random_pair(shape, dtype, seed=0, **kwargs):
    """(rill tensor, torch tensor) of random data (see make_array)."""
    return pair(make_array(shape, dtype, seed, **kwargs), dtype)


def to_rill(t):
    """A rill copy of torch tensor t."""
    return rill.tensor(t.detach().numpy().copy())


def same(actual, expected, **tols):
    """rill actual equals torch expected in dtype, shape and values (within tols)."""
    assert str(actual.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert tuple(actual.shape) == tuple(expected.shape)
    np.testing.assert_allclose(actual.detach().numpy(), expected.detach().numpy(), **tols)


def to_numpy(t):
    """A numpy copy of a rill or torch tensor (bfloat16 values as float32)."""
    if dtype_name(t.dtype) == "bfloat16":
        t = t.float()
    return np.array(t.numpy())


def to_torch(t):
    """A torch copy of rill tensor t (same dtype, shape and values)."""
    arr = torch.from_numpy(to_numpy(t))
    return arr.to(torch.bfloat16) if dtype_name(t.dtype) == "bfloat16" else arr


def assert_close(actual, expected, rtol=None, atol=None, check_dtype=True):
    """rill tensor actual equals torch tensor expected: dtype name, shape, and values
    (exact for bool and integers, |a - e| <= atol + rtol * |e| for floats, with
    TOLERANCES by default; NaN equals NaN, infinities must match)."""
    assert isinstance(actual, rill.Tensor), f"expected a rill.Tensor, got {type(actual).__name__}"
    assert isinstance(expected, torch.Tensor), f"expected a torch.Tensor, got {type(expected).__name__}"
    name = dtype_name(expected.dtype)
    if check_dtype:
        assert dtype_name(actual.dtype) == name, f"dtype: rill.{dtype_name(actual.dtype)} vs torch.{name}"
    assert tuple(actual.shape) == tuple(expected.shape), f"shape: {tuple(actual.shape)} vs {tuple(expected.shape)}"
    got, want = to_numpy(actual), to_numpy(expected)
    if name not in TOLERANCES:
        if not np.array_equal(got, want):
            bad = np.argwhere(got != want)
            i = tuple(int(k) for k in bad[0])
            raise AssertionError(f"values differ at {bad.shape[0]} of {want.size} elements, first at {i}: "
                                 f"rill {got[i]!r} vs torch {want[i]!r}\n"
                                 f"rill:  {got}\ntorch: {want}")
        return
    default_rtol, default_atol = TOLERANCES[name]
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore"):
        ok = (np.isnan(g) & np.isnan(w)) | (g == w) | (np.abs(g - w) <= atol + rtol * np.abs(w))
    if not ok.all():
        bad = np.argwhere(~ok)
        i = tuple(int(k) for k in bad[0])
        raise AssertionError(f"values differ at {bad.shape[0]} of {w.size} elements (rtol={rtol}, atol={atol}), "
                             f"first at {i}: rill {g[i]!r} vs torch {w[i]!r}\nrill:  {got}\ntorch: {want}")


def assert_same_error(rill_fn, torch_fn):
    """Both calls raise, and the exceptions are of the same type."""
    with pytest.raises(Exception) as t_err:
        torch_fn()
    with pytest.raises(Exception) as r_err:
        rill_fn()
    assert type(r_err.value) is type(t_err.value), (
        f"rill raised {type(r_err.value).__name__}: {r_err.value}; torch raised {type(t_err.value).__name__}: "
        f"{t_err.value}")


def raises_like(torch_fn, rill_fn):
    """assert_same_error with torch's call first."""
    assert_same_error(rill_fn, torch_fn)


# Layouts of an input, by name: (shape of the base array, view applied to both tensors).
# The views work on rill and torch tensors alike.
LAYOUTS = {
    "0d": ((), lambda x: x),
    "vec": ((7,), lambda x: x),
    "mat": ((3, 5), lambda x: x),
    "empty": ((0, 3), lambda x: x),
    "transposed": ((5, 3), lambda x: x.transpose(0, 1)),
    "strided": ((6, 8), lambda x: x[::2, 1::3]),
    "expanded": ((3, 1), lambda x: x.expand(3, 4)),
    "permuted": ((2, 3, 4), lambda x: x.permute(2, 0, 1)),
}


def layout_pair(layout, dtype, seed=0, **kwargs):
    """(rill tensor, torch tensor) of random data viewed as LAYOUTS[layout]."""
    shape, view = LAYOUTS[layout]
    r, t = random_pair(shape, dtype, seed, **kwargs)
    return view(r), view(t)
