"""Tensor creation: rill.tensor, factories, random functions and *_like, checked against PyTorch."""
import numpy as np
import pytest
import torch

import rill
from conftest import raises_like

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
NUMPY_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


def rd(name):
    return getattr(rill, name)


def td(name):
    return getattr(torch, name)


def assert_same(r, t):
    """r (rill) has t's (torch) shape, dtype and values."""
    assert isinstance(r, rill.Tensor)
    assert tuple(r.shape) == tuple(t.shape)
    assert str(r.dtype).replace("rill.", "") == str(t.dtype).replace("torch.", "")
    assert r.tolist() == t.tolist()




# --- rill.tensor ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("data", [
    0, 7, -3, 2.5, True, False,
    [], [1, 2, 3], [1.5, -2.0], [True, False], [[1, 2], [3, 4]], [[1, 2.5], [3, 4]], [1, True], [1.0, True],
    [[[1], [2]], [[3], [4]]], [[]], [[], []], (1, 2, 3), [(1, 2), (3, 4)],
])
def test_tensor_from_python_data(data):
    assert_same(rill.tensor(data), torch.tensor(data))


def test_tensor_dtype_inference_rules():
    assert rill.tensor([True, False]).dtype == rill.bool
    assert rill.tensor([1, 2]).dtype == rill.int64
    assert rill.tensor([1, 2.0]).dtype == rill.float32
    assert rill.tensor(3).ndim == 0 and rill.tensor(3).dtype == rill.int64
    assert rill.tensor(3.0).dtype == rill.float32


@pytest.mark.parametrize("name", NUMPY_DTYPES)
def test_tensor_from_numpy_preserves_dtype_and_copies(name):
    a = np.arange(6).reshape(2, 3).astype(name)
    r = rill.tensor(a)
    assert_same(r, torch.tensor(a))
    before = r.tolist()
    a[...] = 0 if name != "bool" else True
    assert r.tolist() == before, "rill.tensor must copy numpy data"


def test_tensor_from_non_contiguous_numpy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    assert_same(rill.tensor(a), torch.tensor(a))
    b = np.arange(6, dtype=np.int32)[::-1]
    assert_same(rill.tensor(b), torch.tensor(b.copy()))


def test_tensor_from_numpy_scalar():
    assert_same(rill.tensor(np.float64(1.5)), torch.tensor(np.float64(1.5)))
    assert_same(rill.tensor(np.int32(4)), torch.tensor(np.int32(4)))


@pytest.mark.parametrize("name", DTYPES)
def test_tensor_from_tensor_copies(name):
    src = rill.ones(2, 2, dtype=rd(name))
    r = rill.tensor(src)
    assert r.dtype == src.dtype
    assert not r._shares_storage(src)
    src.zero_()
    assert r.tolist() == torch.ones(2, 2, dtype=td(name)).tolist()


@pytest.mark.parametrize("name", DTYPES)
def test_tensor_dtype_argument(name):
    data = [[0, 1], [2, 3]]
    assert_same(rill.tensor(data, dtype=rd(name)), torch.tensor(data, dtype=td(name)))
    assert_same(rill.tensor(rill.tensor(data), dtype=rd(name)), torch.tensor(data, dtype=td(name)))


def test_tensor_requires_grad():
    r = rill.tensor([1.0, 2.0], requires_grad=True)
    assert r.requires_grad
    assert not rill.tensor([1.0]).requires_grad
    raises_like(lambda: torch.tensor([1, 2], requires_grad=True), lambda: rill.tensor([1, 2], requires_grad=True))


@pytest.mark.parametrize("data", [[[1, 2], [3]], [1, [2]], [[1], 2], [[[1, 2]], [[3]]]])
def test_tensor_ragged_raises_value_error(data):
    with pytest.raises(ValueError):
        rill.tensor(data)


@pytest.mark.parametrize("data", ["abc", b"ab", [object()], object(), None, [1, None], {1: 2}, [2 ** 63], 2 ** 70,
                                  [1, -2 ** 80]])
def test_tensor_unsupported_data_error_types(data):
    raises_like(lambda: torch.tensor(data), lambda: rill.tensor(data))


def test_tensor_int64_limits():
    assert_same(rill.tensor([-2 ** 63, 2 ** 63 - 1]), torch.tensor([-2 ** 63, 2 ** 63 - 1]))


@pytest.mark.parametrize("dtype", [np.uint64, np.complex64, object, "U1"])
def test_tensor_unsupported_numpy_dtype_raises_type_error(dtype):
    # torch supports uint64 and complex; rill has neither, and says so with a TypeError as torch does for object
    with pytest.raises(TypeError):
        rill.tensor(np.zeros(2, dtype=dtype))


def test_tensor_from_non_native_byte_order():
    # torch refuses these (ValueError); rill converts them, which is strictly more useful
    assert_same(rill.tensor(np.array([1, 258], dtype=">i4")), torch.tensor([1, 258], dtype=torch.int32))
    assert_same(rill.tensor(np.array([1.5], dtype=">f8")), torch.tensor([1.5], dtype=torch.float64))


def test_tensor_from_list_of_tensors():
    assert_same(rill.tensor([rill.tensor(1.5), rill.tensor(2.0)]), torch.tensor([torch.tensor(1.5), 2.0]))


def test_as_tensor():
    x = rill.arange(3)
    assert rill.as_tensor(x) is x
    assert_same(rill.as_tensor(x, dtype=rill.float32), torch.as_tensor(torch.arange(3), dtype=torch.float32))
    assert_same(rill.as_tensor([1, 2.5]), torch.as_tensor([1, 2.5]))
    # a numpy array of the same dtype is shared, as in torch
    a = np.arange(3.0)
    r, t = rill.as_tensor(a), torch.as_tensor(a)
    a[0] = 5
    assert_same(r, t)
    # a dtype change or negative strides need a copy
    c = rill.as_tensor(a, dtype=rill.float32)
    a[1] = 7
    assert c.tolist() == [5.0, 1.0, 2.0]
    # torch refuses negative strides here (ValueError); rill copies, as rill.tensor and torch.tensor do
    assert rill.as_tensor(a[::-1]).tolist() == a[::-1].tolist()
    with pytest.raises(RuntimeError):
        rill.as_tensor(a, device="cuda")


@pytest.mark.parametrize("dtype", ["int32", "float32", "bool"])
def test_new_methods(dtype):
    r, t = rill.zeros(2, dtype=getattr(rill, dtype)), torch.zeros(2, dtype=getattr(torch, dtype))
    assert_same(r.new_zeros(3), t.new_zeros(3))
    assert_same(r.new_zeros((3, 2)), t.new_zeros((3, 2)))
    assert_same(r.new_ones(2, 1), t.new_ones(2, 1))
    assert_same(r.new_full((2,), 1.5), t.new_full((2,), 1.5))
    assert_same(r.new_tensor([1.5, 0]), t.new_tensor([1.5, 0]))
    assert_same(r.new_ones(2, dtype=rill.float64), t.new_ones(2, dtype=torch.float64))
    e = r.new_empty(2, 3)
    assert e.shape == (2, 3) and e.dtype == r.dtype


# --- factories -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", ["zeros", "ones", "empty", "rand", "randn"])
@pytest.mark.parametrize("size_args", [((2, 3), {}), ([(2, 3)], {}), ([[2, 3]], {}), ([], {"size": (2, 3)}),
                                       ([], {"size": [4]}), ([0], {}), ([()], {}), ([], {"size": ()}),
                                       ([1, 0, 2], {})])
def test_zeros_ones_size_forms(fn, size_args):
    args, kwargs = size_args
    r, t = getattr(rill, fn)(*args, **kwargs), getattr(torch, fn)(*args, **kwargs)
    if fn in ("zeros", "ones"):
        assert_same(r, t)
    assert r.shape == t.shape and r.dtype == rill.float32


def test_sizes_given_twice_or_badly():
    raises_like(lambda: torch.zeros(2, size=(3,)), lambda: rill.zeros(2, size=(3,)))
    raises_like(lambda: torch.zeros(2.5), lambda: rill.zeros(2.5))
    raises_like(lambda: torch.zeros((2, "a")), lambda: rill.zeros((2, "a")))
    raises_like(lambda: torch.zeros(2, bogus=1), lambda: rill.zeros(2, bogus=1))


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty", "rand", "randn"])
@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16"])
def test_factory_float_dtypes(fn, name):
    r = getattr(rill, fn)(3, 2, dtype=rd(name))
    t = getattr(torch, fn)(3, 2, dtype=td(name))
    assert r.shape == t.shape and r.dtype == rd(name)
    if fn in ("zeros", "ones"):
        assert_same(r, t)


@pytest.mark.parametrize("name", DTYPES)
def test_zeros_ones_every_dtype(name):
    assert_same(rill.zeros(2, 3, dtype=rd(name)), torch.zeros(2, 3, dtype=td(name)))
    assert_same(rill.ones(4, dtype=rd(name)), torch.ones(4, dtype=td(name)))


def test_factory_default_dtype_and_requires_grad():
    for fn in ("zeros", "ones", "empty", "rand", "randn"):
        r = getattr(rill, fn)(2, requires_grad=True)
        assert r.dtype == rill.float32 and r.requires_grad and r.device == "cpu"
    raises_like(lambda: torch.zeros(2, dtype=torch.int64, requires_grad=True),
                lambda: rill.zeros(2, dtype=rill.int64, requires_grad=True))


@pytest.mark.parametrize("value,kwargs", [(3, {}), (2.5, {}), (True, {}), (-1, {}), (7, {"dtype": "float64"}),
                                          (2.5, {"dtype": "int32"}), (1, {"dtype": "bool"}),
                                          (0.5, {"dtype": "float16"})])
@pytest.mark.parametrize("size", [(2,), (2, 3), ()])
def test_full(value, kwargs, size):
    rk = {k: rd(v) for k, v in kwargs.items()}
    tk = {k: td(v) for k, v in kwargs.items()}
    assert_same(rill.full(size, value, **rk), torch.full(size, value, **tk))


def test_full_dtype_inference():
    assert rill.full((2,), 3).dtype == rill.int64
    assert rill.full((2,), 2.5).dtype == rill.float32
    assert rill.full((2,), True).dtype == rill.bool
    assert rill.full([2], 1, requires_grad=False).dtype == rill.int64


def test_empty_shape_and_dtype():
    r = rill.empty(3, 4, dtype=rill.int16)
    assert r.shape == (3, 4) and r.dtype == rill.int16 and r.is_contiguous()
    assert rill.empty(size=(2,)).shape == (2,)
    assert rill.empty(0).numel() == 0


@pytest.mark.parametrize("args,kwargs", [
    ((5,), {}), ((0,), {}), ((2, 7), {}), ((1, 10, 3), {}), ((10, 0, -3), {}), ((5, 1, -1), {}), ((3, 3), {}),
    ((0.5,), {}), ((1.0, 2.0, 0.25), {}), ((0, 1, 0.1), {}), ((2.5, -1.0, -0.5), {}), ((1, 2.5), {}),
    ((-3, 3), {}), ((5,), {"dtype": "float32"}), ((0, 10, 3), {"dtype": "float64"}), ((4,), {"dtype": "int32"}),
    ((0.0, 3.0), {"dtype": "int64"}), ((6,), {"dtype": "int16"}), ((4,), {"dtype": "float16"}),
])
def test_arange(args, kwargs):
    rk = {k: rd(v) for k, v in kwargs.items()}
    tk = {k: td(v) for k, v in kwargs.items()}
    r = rill.arange(*args, **rk)
    t = torch.arange(*args, **tk)
    assert r.shape == t.shape and str(r.dtype)[5:] == str(t.dtype)[6:]
    np.testing.assert_allclose(np.asarray(r.tolist(), dtype=np.float64), np.asarray(t.tolist(), dtype=np.float64),
                               rtol=1e-6, atol=1e-6)


def test_arange_keywords():
    assert_same(rill.arange(start=1, end=7, step=2), torch.arange(start=1, end=7, step=2))
    assert_same(rill.arange(4, requires_grad=False), torch.arange(4))
    assert rill.arange(3.0, requires_grad=True).requires_grad


@pytest.mark.parametrize("args", [(0, 5, 0), (5, 0, 1), (0, 5, -1), (0, float("inf")), (float("nan"),)])
def test_arange_errors(args):
    raises_like(lambda: torch.arange(*args), lambda: rill.arange(*args))


def test_rand_randn_values():
    r = rill.rand(2000)
    vals = np.asarray(r.tolist())
    assert vals.min() >= 0.0 and vals.max() < 1.0 and 0.4 < vals.mean() < 0.6
    n = np.asarray(rill.randn(4000).tolist())
    assert abs(n.mean()) < 0.1 and 0.9 < n.std() < 1.1
    assert rill.rand(3, dtype=rill.float64).dtype == rill.float64


@pytest.mark.parametrize("args,kwargs,lo,hi", [
    ((10, (1000,)), {}, 0, 10), ((-5, 5, (1000,)), {}, -5, 5), ((3, (10, 10)), {"dtype": "int32"}, 0, 3),
    ((0, 2, (50,)), {"dtype": "float32"}, 0, 2), ((1, 2, (5,)), {}, 1, 2), ((100, [4, 4]), {}, 0, 100),
])
def test_randint(args, kwargs, lo, hi):
    rk = {k: rd(v) for k, v in kwargs.items()}
    tk = {k: td(v) for k, v in kwargs.items()}
    r = rill.randint(*args, **rk)
    t = torch.randint(*args, **tk)
    assert r.shape == t.shape and str(r.dtype)[5:] == str(t.dtype)[6:]
    vals = np.asarray(r.tolist())
    assert vals.min() >= lo and vals.max() < hi
    if hi - lo >= 10 and vals.size >= 1000:
        assert len(np.unique(vals)) == hi - lo, "randint should cover its whole range"


def test_randint_size_keyword():
    assert rill.randint(0, 10, size=(3, 2)).shape == (3, 2)
    assert rill.randint(10, size=(4,)).shape == (4,)


def test_randint_bad_range():
    raises_like(lambda: torch.randint(5, 5, (3,)), lambda: rill.randint(5, 5, (3,)))
    raises_like(lambda: torch.randint(0, (3,)), lambda: rill.randint(0, (3,)))


@pytest.mark.parametrize("fn,args", [("rand", (3, 4)), ("randn", (5,)), ("randint", (0, 100, (7,)))])
def test_manual_seed_reproducible(fn, args):
    rill.manual_seed(1234)
    a = getattr(rill, fn)(*args).tolist()
    b = getattr(rill, fn)(*args).tolist()
    rill.manual_seed(1234)
    c = getattr(rill, fn)(*args).tolist()
    d = getattr(rill, fn)(*args).tolist()
    assert a == c and b == d
    assert a != b, "consecutive draws must differ"
    rill.manual_seed(4321)
    assert getattr(rill, fn)(*args).tolist() != a
    assert rill.initial_seed() == 4321


# --- *_like --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["float32", "int32", "bool", "float64", "bfloat16"])
def test_like_functions(name):
    base_r = rill.ones(2, 3, dtype=rd(name))
    base_t = torch.ones(2, 3, dtype=td(name))
    assert_same(rill.zeros_like(base_r), torch.zeros_like(base_t))
    assert_same(rill.ones_like(base_r), torch.ones_like(base_t))
    assert_same(rill.full_like(base_r, 1), torch.full_like(base_t, 1))
    assert_same(rill.zeros_like(base_r, dtype=rill.float64), torch.zeros_like(base_t, dtype=torch.float64))
    e = rill.empty_like(base_r)
    assert e.shape == (2, 3) and e.dtype == base_r.dtype
    assert not e._shares_storage(base_r)


def test_like_functions_of_a_view():
    base = rill.zeros(4, 6).T[1:3]
    assert rill.ones_like(base).shape == (2, 4)
    assert rill.ones_like(base).is_contiguous()
    assert rill.rand_like(base).shape == (2, 4)
    assert rill.randn_like(base, dtype=rill.float64).dtype == rill.float64
    assert rill.zeros_like(base, requires_grad=True).requires_grad


def test_full_like_dtype_follows_input():
    # torch: full_like keeps the input's dtype, whatever the fill value's type
    assert_same(rill.full_like(rill.zeros(3, dtype=rill.int32), 2.7),
                torch.full_like(torch.zeros(3, dtype=torch.int32), 2.7))
    assert_same(rill.full_like(rill.zeros(2), 5), torch.full_like(torch.zeros(2), 5))


# --- argument errors -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", ["zeros", "ones", "empty", "rand", "randn"])
def test_factory_negative_size(fn):
    raises_like(lambda: getattr(torch, fn)(2, -1), lambda: getattr(rill, fn)(2, -1))
    raises_like(lambda: getattr(torch, fn)((-3,)), lambda: getattr(rill, fn)((-3,)))


def test_full_and_randint_negative_size():
    raises_like(lambda: torch.full((-1,), 1.0), lambda: rill.full((-1,), 1.0))
    raises_like(lambda: torch.randint(3, (-2,)), lambda: rill.randint(3, (-2,)))


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty", "rand", "randn"])
def test_factory_bad_dtype(fn):
    raises_like(lambda: getattr(torch, fn)(2, dtype="float32"), lambda: getattr(rill, fn)(2, dtype="float32"))
    raises_like(lambda: getattr(torch, fn)(2, dtype=3), lambda: getattr(rill, fn)(2, dtype=3))


def test_bad_dtype_in_tensor_and_full():
    with pytest.raises(TypeError):
        rill.tensor([1, 2], dtype="int32")
    raises_like(lambda: torch.full((2,), 1, dtype="x"), lambda: rill.full((2,), 1, dtype="x"))


@pytest.mark.parametrize("make", [
    lambda m, dev: m.zeros(2, device=dev), lambda m, dev: m.ones((2, 2), device=dev),
    lambda m, dev: m.empty(1, device=dev), lambda m, dev: m.rand(2, device=dev), lambda m, dev: m.randn(2, device=dev),
    lambda m, dev: m.full((2,), 1.0, device=dev), lambda m, dev: m.arange(3, device=dev),
    lambda m, dev: m.randint(3, (2,), device=dev), lambda m, dev: m.tensor([1.0], device=dev),
])
def test_device_arguments(make):
    assert make(rill, "cpu").device == "cpu"
    assert make(rill, rill.device("cpu")).device == rill.device("cpu")
    # torch here is a CPU build: asking for CUDA raises RuntimeError in both (AssertionError in torch for some
    # factories, which is torch's wart; rill promises RuntimeError)
    with pytest.raises(RuntimeError):
        make(rill, "cuda")
    with pytest.raises(RuntimeError):
        make(rill, "cuda:0")
    # torch raises RuntimeError for an unknown device string; rill deliberately raises ValueError (a bad value,
    # not a missing capability like CUDA)
    with pytest.raises(ValueError):
        make(rill, "tpu")
    with pytest.raises(ValueError):
        make(rill, "cpu:1")
    with pytest.raises(ValueError):
        make(rill, "cpu:x")


def test_device_object():
    d = rill.device("cpu")
    assert d.type == "cpu" and d.index is None
    assert d == "cpu" and d == rill.device("cpu")
    assert repr(d) == repr(torch.device("cpu")).replace("torch.", "rill.")
    assert str(d) == "cpu"
    assert hash(d) == hash(rill.device("cpu"))
    assert d != "cuda" and d != 3
    with pytest.raises(ValueError):  # torch: RuntimeError; see test_device_arguments
        rill.device("nonsense")
    with pytest.raises(RuntimeError):
        rill.device("cuda")
