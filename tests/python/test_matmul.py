"""matmul against PyTorch: 1-D / 2-D / batched / broadcast shapes, the @ operator, mm, bmm,
every dtype, non-contiguous and empty operands, and the errors."""
import numpy as np
import pytest
import torch

import rill
from conftest import DTYPES, assert_close, assert_same_error, is_floating, make_array, pair, random_pair

# Products of up to ~100 terms: BLAS and torch sum in different orders; 16-bit results are
# rounded once from float32 in both, so they may differ by an ulp of the result.
TOL = {"float16": (2e-3, 1e-2), "bfloat16": (1.6e-2, 5e-2), "float32": (1e-5, 1e-4), "float64": (1e-12, 1e-12)}

# name: (shape a, view a, shape b, view b)
CASES = {
    "1d_1d": ((5,), None, (5,), None),
    "2d_1d": ((3, 5), None, (5,), None),
    "1d_2d": ((5,), None, (5, 4), None),
    "2d_2d": ((3, 5), None, (5, 4), None),
    "3d_3d": ((2, 3, 5), None, (2, 5, 4), None),
    "broadcast_batch": ((2, 1, 3, 5), None, (4, 5, 2), None),
    "3d_2d": ((2, 3, 5), None, (5, 4), None),
    "2d_3d": ((3, 5), None, (2, 5, 4), None),
    "3d_1d": ((2, 3, 5), None, (5,), None),
    "1d_3d": ((5,), None, (2, 5, 4), None),
    "k1": ((3, 1), None, (1, 4), None),
    "row_col": ((1, 6), None, (6, 1), None),
    "transposed": ((5, 3), lambda x: x.transpose(0, 1), (4, 5), lambda x: x.transpose(0, 1)),
    "strided": ((6, 10), lambda x: x[::2, ::2], (5, 12), lambda x: x[:, 1::3]),
    "batch_transposed": ((2, 5, 3), lambda x: x.transpose(1, 2), (5, 2, 4), lambda x: x.transpose(0, 1)),
    "expanded_batch": ((3, 5), lambda x: x.expand(2, 3, 5), (1, 5, 4), lambda x: x.expand(2, 5, 4)),
    "permuted_batch": ((3, 2, 5), lambda x: x.permute(1, 0, 2), (5, 4, 2), lambda x: x.permute(2, 0, 1)),
    "empty_m": ((0, 5), None, (5, 4), None),
    "empty_k": ((3, 0), None, (0, 4), None),
    "empty_n": ((3, 5), None, (5, 0), None),
    "empty_batch": ((0, 3, 5), None, (5, 4), None),
    "empty_k_1d": ((0,), None, (0,), None),
}


def operands(case, dtype, seed=0):
    sa, va, sb, vb = CASES[case]
    # small integers: no overflow in int8 sums of a few products
    kw = {} if is_floating(dtype) else {"low": -3 if dtype != "uint8" else 0, "high": 4}
    ra, ta = pair(make_array(sa, dtype, seed, **kw), dtype)
    rb, tb = pair(make_array(sb, dtype, seed + 1, **kw), dtype)
    if va:
        ra, ta = va(ra), va(ta)
    if vb:
        rb, tb = vb(rb), vb(tb)
    return (ra, rb), (ta, tb)


def check(fn, r_args, t_args, dtype):
    """fn(module, a, b) on both: same result, or the same error type."""
    try:
        expected = fn(torch, *t_args)
    except Exception as e:
        with pytest.raises(type(e)):
            fn(rill, *r_args)
        return
    rtol, atol = TOL.get(dtype, (None, None))
    assert_close(fn(rill, *r_args), expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul(dtype, case):
    """rill.matmul, Tensor.matmul and @ (bool raises NotImplementedError, as in torch)."""
    if dtype == "bool" and case.startswith("empty"):
        pytest.skip("torch multiplies empty bool matrices; rill rejects bool matmul whatever the shapes")
    r, t = operands(case, dtype)
    check(lambda m, a, b: m.matmul(a, b), r, t, dtype)
    check(lambda m, a, b: a.matmul(b), r, t, dtype)
    check(lambda m, a, b: a @ b, r, t, dtype)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64"])
def test_mm_bmm(dtype):
    (ra, rb), (ta, tb) = operands("2d_2d", dtype, seed=3)
    check(lambda m, a, b: m.mm(a, b), [ra, rb], [ta, tb], dtype)
    check(lambda m, a, b: a.mm(b), [ra, rb], [ta, tb], dtype)
    check(lambda m, a, b: m.mm(b.t(), a.t()), [ra, rb], [ta, tb], dtype)  # transposed operands
    (ra, rb), (ta, tb) = operands("3d_3d", dtype, seed=4)
    check(lambda m, a, b: m.bmm(a, b), [ra, rb], [ta, tb], dtype)
    check(lambda m, a, b: a.bmm(b), [ra, rb], [ta, tb], dtype)
    (ra, rb), (ta, tb) = operands("batch_transposed", dtype, seed=5)
    check(lambda m, a, b: m.bmm(a, b), [ra, rb], [ta, tb], dtype)


@pytest.mark.parametrize("dtype", ["int32", "float16", "bfloat16", "float32", "float64"])
def test_larger(dtype):
    """Sizes that take the parallel and blocked paths (several threads, row blocks of 16-bit)."""
    for sa, sb in [((150, 70), (70, 140)), ((4, 40, 30), (30, 200)), ((1, 300), (300, 90))]:
        kw = {} if is_floating(dtype) else {"low": -3, "high": 4}
        (ra, ta), (rb, tb) = pair(make_array(sa, dtype, 6, **kw), dtype), pair(make_array(sb, dtype, 7, **kw), dtype)
        rtol, atol = {"float16": (2e-3, 5e-2), "bfloat16": (1.6e-2, 0.3)}.get(dtype, TOL.get(dtype, (None, None)))
        assert_close(ra @ rb, ta @ tb, rtol=rtol, atol=atol)
        assert_close(rb.transpose(-1, -2) @ ra.transpose(-1, -2), tb.transpose(-1, -2) @ ta.transpose(-1, -2),
                     rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_integer_overflow_wraps(dtype):
    """Integer products wrap modulo 2**bits, as in torch."""
    info = np.iinfo(dtype)
    a = np.array([[info.max, info.max, 3], [info.min, 2, info.max]], dtype=dtype)
    b = np.array([[info.max, 1], [7, info.max], [info.min, 5]], dtype=dtype)
    (ra, ta), (rb, tb) = pair(a, dtype), pair(b, dtype)
    assert_close(ra @ rb, ta @ tb)


def test_result_is_new_dense_tensor():
    (ra, rb), (ta, tb) = operands("transposed", "float32", seed=8)
    out = ra @ rb
    assert out.is_contiguous()
    assert not out._shares_storage(ra) and not out._shares_storage(rb)


def test_nan_inf():
    a = np.array([[1.0, np.nan], [np.inf, 1.0], [0.0, 1.0]], dtype=np.float32)
    b = np.array([[1.0, 0.0], [2.0, 3.0]], dtype=np.float32)
    for dtype in ("float32", "float64", "float16"):
        (ra, ta), (rb, tb) = pair(a, dtype), pair(b, dtype)
        assert_close(ra @ rb, ta @ tb)


ERRORS = [
    ("inner_mismatch", lambda m, x: m.matmul(x["a34"], x["a52"])),
    ("inner_mismatch_1d", lambda m, x: m.matmul(x["v3"], x["v4"])),
    ("inner_mismatch_2d_1d", lambda m, x: x["a34"] @ x["v3"]),
    ("inner_mismatch_1d_2d", lambda m, x: x["v3"] @ x["a52"]),
    ("batch_mismatch", lambda m, x: m.matmul(x["b234"], x["b345"])),
    ("dtype_mismatch", lambda m, x: m.matmul(x["a34"], x["a45_f64"])),
    ("int_float_mismatch", lambda m, x: x["a34"] @ x["a45_i64"]),
    ("bool", lambda m, x: x["a34_bool"] @ x["a45_bool"]),
    ("zero_dim", lambda m, x: m.matmul(x["s"], x["a34"])),
    ("zero_dim_right", lambda m, x: x["v4"] @ x["s"]),
    ("mm_3d", lambda m, x: m.mm(x["b234"], x["a45"])),
    ("mm_1d", lambda m, x: m.mm(x["v3"], x["a34"])),
    ("mm_mismatch", lambda m, x: m.mm(x["a34"], x["a52"])),
    ("mm_dtype", lambda m, x: m.mm(x["a34"], x["a45_f64"])),
    ("bmm_2d", lambda m, x: m.bmm(x["a34"], x["a45"])),
    ("bmm_batch_broadcast", lambda m, x: m.bmm(x["b134"], x["b245"])),
    ("bmm_inner", lambda m, x: m.bmm(x["b234"], x["b234"])),
    ("bmm_dtype", lambda m, x: m.bmm(x["b234"], x["b245_f16"])),
]


@pytest.mark.parametrize("name,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, fn):
    shapes = {"a34": ((3, 4), "float32"), "a52": ((5, 2), "float32"), "a45": ((4, 5), "float32"),
              "a45_f64": ((4, 5), "float64"), "a45_i64": ((4, 5), "int64"), "a34_bool": ((3, 4), "bool"),
              "a45_bool": ((4, 5), "bool"), "v3": ((3,), "float32"), "v4": ((4,), "float32"), "s": ((), "float32"),
              "b234": ((2, 3, 4), "float32"), "b345": ((3, 4, 5), "float32"), "b134": ((1, 3, 4), "float32"),
              "b245": ((2, 4, 5), "float32"), "b245_f16": ((2, 4, 5), "float16")}
    r, t = {}, {}
    for k, (shape, dtype) in shapes.items():
        r[k], t[k] = random_pair(shape, dtype, seed=9)
    assert_same_error(lambda: fn(rill, r), lambda: fn(torch, t))


def test_operator_with_non_tensor():
    r, _ = random_pair((2, 2), "float32", seed=10)
    with pytest.raises(TypeError):
        r @ 2
    with pytest.raises(TypeError):
        [[1.0, 0.0], [0.0, 1.0]] @ r


def test_parallel_products_are_deterministic():
    # Note [Concurrent BLAS]: two intra-op threads inside Debian's serial OpenBLAS at once could share a
    # work buffer and corrupt each other's product (about 1 in 1,500 of these, before the fix).
    rng = np.random.default_rng(0)
    a = rill.tensor(rng.standard_normal((360, 128)).astype(np.float32))
    w = rill.tensor(rng.standard_normal((64, 128)).astype(np.float32))
    old = rill.get_num_threads()
    try:
        rill.set_num_threads(1)
        ref = (a @ w.t().contiguous()).numpy()
        rill.set_num_threads(2)
        bad = sum(not np.allclose((a @ w.t().contiguous()).numpy(), ref, rtol=1e-5, atol=1e-5) for _ in range(3000))
    finally:
        rill.set_num_threads(old)
    assert bad == 0
