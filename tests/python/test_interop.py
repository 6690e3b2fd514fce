"""numpy and DLPack interop: zero copy both ways, strides, lifetimes, and dtype limits."""
import gc

import numpy as np
import pytest
import torch

import rill

NUMPY_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
ALL_DTYPES = NUMPY_DTYPES + ["bfloat16"]


def values(name, shape=(2, 3)):
    n = int(np.prod(shape))
    return (np.arange(n) % 2 == 1).reshape(shape) if name == "bool" else np.arange(n).reshape(shape).astype(name)


def one(name):
    return True if name == "bool" else 1


# --- Tensor.numpy() ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NUMPY_DTYPES)
def test_numpy_shares_memory(name):
    t = rill.tensor(values(name))
    a = t.numpy()
    assert isinstance(a, np.ndarray)
    assert a.dtype == np.dtype(name) and a.shape == (2, 3)
    np.testing.assert_array_equal(a, values(name))
    # tensor -> array
    t[0, 1] = 0
    assert a[0, 1] == 0
    # array -> tensor
    a[1, 2] = one(name)
    assert t[1, 2].item() == one(name)
    assert t.tolist() == a.tolist()


def test_numpy_bfloat16_raises_type_error():
    t = rill.ones(3, dtype=rill.bfloat16)
    with pytest.raises(TypeError):
        t.numpy()
    # torch raises TypeError too
    with pytest.raises(TypeError):
        torch.ones(3, dtype=torch.bfloat16).numpy()


def test_numpy_requires_grad():
    t = rill.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError):
        t.numpy()
    with pytest.raises(RuntimeError):
        torch.ones(2, requires_grad=True).numpy()
    np.testing.assert_array_equal(t.detach().numpy(), [1.0, 1.0])
    forced = t.numpy(force=True)
    np.testing.assert_array_equal(forced, torch.ones(2, requires_grad=True).numpy(force=True))


@pytest.mark.parametrize("fn", [
    lambda x: x.transpose(0, 2), lambda x: x[:, 1::2], lambda x: x[::2, ::3], lambda x: x.permute(2, 0, 1)[1],
    lambda x: x[1], lambda x: x[0, 1, 2], lambda x: x[:, :1].expand(4, 3, 6), lambda x: x[:, :0],
    lambda x: x.unsqueeze(1), lambda x: x[1:, 1:, 3:], lambda x: x.mT[2:3],
])
def test_numpy_of_views_has_torch_strides(fn):
    base = np.arange(48, dtype=np.float32).reshape(4, 2, 6)
    r, t = rill.from_numpy(base.copy()), torch.from_numpy(base.copy())
    ra, ta = fn(r).numpy(), fn(t).numpy()
    assert ra.shape == ta.shape and ra.strides == ta.strides and ra.dtype == ta.dtype
    np.testing.assert_array_equal(ra, ta)
    if ra.size:
        assert np.shares_memory(ra, r.numpy())


def test_numpy_of_view_writes_base():
    r = rill.zeros(3, 4)
    v = r.t()[1:3].numpy()
    v[:] = 5
    assert r.tolist() == [[0, 5, 5, 0]] * 3


def test_numpy_stays_valid_after_tensor_is_deleted():
    t = rill.arange(1000, dtype=rill.float64)
    a = t.numpy()
    del t
    gc.collect()
    for _ in range(10):  # churn the allocator so a freed block would be reused
        rill.full((1000,), -1.0, dtype=rill.float64).sum().item()
    np.testing.assert_array_equal(a, np.arange(1000, dtype=np.float64))


def test_numpy_of_0dim_and_empty():
    a = rill.tensor(3.5).numpy()
    assert a.shape == () and a == 3.5
    e = rill.zeros(0, 4, dtype=rill.int32).numpy()
    assert e.shape == (0, 4) and e.dtype == np.int32


def test_numpy_waits_for_pending_ops():
    t = rill.ones(100000)
    for _ in range(20):
        t += 1
    assert (t.numpy() == 21).all()


# --- np.asarray / __array__ ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NUMPY_DTYPES)
def test_asarray(name):
    t = rill.tensor(values(name))
    a = np.asarray(t)
    np.testing.assert_array_equal(a, values(name))
    assert a.dtype == np.dtype(name)
    assert np.shares_memory(a, t.numpy())  # no copy unless asked


def test_asarray_dtype_and_copy():
    t = rill.arange(4, dtype=rill.int32)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    c = np.array(t, copy=True)
    c[0] = 100
    assert t[0].item() == 0
    np.testing.assert_array_equal(np.asarray(t.t()), [0, 1, 2, 3])
    b = np.asarray(rill.tensor([1.5, 2.5], dtype=rill.bfloat16))
    assert b.dtype == np.float32 and b.tolist() == [1.5, 2.5]


def test_numpy_ufuncs_on_tensors():
    t = rill.tensor([1.0, 4.0, 9.0])
    np.testing.assert_allclose(np.sqrt(np.asarray(t)), [1, 2, 3])
    assert np.array([rill.tensor(1), rill.tensor(2)]).tolist() == [1, 2]


# --- rill.from_numpy -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NUMPY_DTYPES)
def test_from_numpy_zero_copy(name):
    a = values(name)
    t = rill.from_numpy(a)
    assert t.dtype == getattr(rill, name) and t.shape == (2, 3)
    assert t.tolist() == torch.from_numpy(a).tolist()
    a[0, 0] = one(name)
    assert t[0, 0].item() == one(name)
    t[1, 1] = 0
    assert a[1, 1] == 0


@pytest.mark.parametrize("make", [
    lambda: np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2],
    lambda: np.arange(24, dtype=np.int64).reshape(4, 6).T,
    lambda: np.arange(24, dtype=np.float64).reshape(2, 3, 4)[1:, :, 1:3],
    lambda: np.broadcast_to(np.arange(3, dtype=np.int32), (4, 3)),
    lambda: np.zeros((3, 0, 2), dtype=np.float32),
    lambda: np.array(7, dtype=np.int16),
    lambda: np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
])
@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")  # torch, for broadcast_to
def test_from_numpy_non_contiguous(make):
    a = make()
    r, t = rill.from_numpy(a), torch.from_numpy(a)
    assert tuple(r.shape) == tuple(t.shape) and r.stride() == t.stride()
    assert r.is_contiguous() == t.is_contiguous()
    assert r.tolist() == t.tolist()
    assert (r + 0).tolist() == (t + 0).tolist()  # kernels read the strided data


def test_from_numpy_writes_through_non_contiguous():
    a = np.zeros((3, 4), dtype=np.float32)
    t = rill.from_numpy(a[:, 1::2])
    t.fill_(2)
    assert a.tolist() == [[0, 2, 0, 2]] * 3


def test_from_numpy_negative_strides_raise_value_error():
    a = np.arange(6, dtype=np.float32)
    with pytest.raises(ValueError):
        rill.from_numpy(a[::-1])
    with pytest.raises(ValueError):
        rill.from_numpy(np.arange(6).reshape(2, 3)[:, ::-1])
    with pytest.raises(ValueError):
        torch.from_numpy(a[::-1])


@pytest.mark.parametrize("arr", [np.zeros(2, dtype=np.complex64), np.zeros(2, dtype=np.complex128),
                                 np.array([1, "a"], dtype=object), np.array(["ab"]), np.zeros(2, dtype=np.uint16),
                                 np.zeros(2, dtype=np.uint64)])
def test_from_numpy_unsupported_dtype_raises_type_error(arr):
    with pytest.raises(TypeError):
        rill.from_numpy(arr)


@pytest.mark.parametrize("obj", [[1, 2], 3.0, None, torch.zeros(2), "x"])
def test_from_numpy_rejects_non_arrays(obj):
    raises = pytest.raises(TypeError)
    with raises:
        rill.from_numpy(obj)
    with pytest.raises(TypeError):
        torch.from_numpy(obj)


def test_from_numpy_read_only_array():
    a = np.arange(3, dtype=np.float32)
    a.flags.writeable = False
    t = rill.from_numpy(a)
    assert t.tolist() == [0, 1, 2]


def test_from_numpy_stays_valid_after_array_is_deleted():
    a = np.arange(1000, dtype=np.float32)
    t = rill.from_numpy(a)
    view = rill.from_numpy(np.arange(20, dtype=np.int64).reshape(4, 5)[1:, ::2])
    del a
    gc.collect()
    for _ in range(10):
        np.full(1000, -1.0, dtype=np.float32).sum()
    assert t.tolist() == list(range(1000))
    assert view.tolist() == [[5, 7, 9], [10, 12, 14], [15, 17, 19]]


def test_numpy_round_trip_keeps_identity_of_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = rill.from_numpy(a).numpy()
    assert np.shares_memory(a, b)
    b[0, 0] = 42
    assert a[0, 0] == 42


# --- DLPack --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ALL_DTYPES)
def test_dlpack_torch_to_rill(name):
    t = torch.arange(6).reshape(2, 3).to(getattr(torch, name))
    r = rill.from_dlpack(t)
    assert str(r.dtype)[5:] == str(t.dtype)[6:] and tuple(r.shape) == (2, 3)
    assert r.tolist() == t.tolist()
    t[0, 1] = 0
    assert r[0, 1].item() == 0
    r[1, 0] = 1
    assert t[1, 0].item() == 1


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_dlpack_rill_to_torch(name):
    r = rill.arange(6).reshape(2, 3).to(getattr(rill, name))
    t = torch.from_dlpack(r)
    assert str(r.dtype)[5:] == str(t.dtype)[6:] and tuple(t.shape) == (2, 3)
    assert r.tolist() == t.tolist()
    r[0, 1] = 0
    assert t[0, 1].item() == 0
    t[1, 0] = 1
    assert r[1, 0].item() == 1


@pytest.mark.parametrize("fn", [lambda x: x.t(), lambda x: x[:, ::2], lambda x: x[1], lambda x: x[1, 2],
                                lambda x: x.expand(2, 3, 4), lambda x: x[:0]])
def test_dlpack_non_contiguous_and_0dim(fn):
    rb = rill.arange(12, dtype=rill.float32).reshape(3, 4)
    tb = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    rv, tv = fn(rb), fn(tb)
    to_torch = torch.from_dlpack(rv)
    assert to_torch.shape == tv.shape and to_torch.stride() == tv.stride() and to_torch.tolist() == tv.tolist()
    to_rill = rill.from_dlpack(tv)
    assert tuple(to_rill.shape) == tuple(tv.shape) and to_rill.stride() == tv.stride()
    assert to_rill.tolist() == tv.tolist()
    if tv.numel() and tv.stride() and 0 not in tv.stride():
        rv.fill_(-1)
        assert (to_torch == -1).all()
        tv.fill_(-2)
        assert all(v == -2 for v in to_rill.reshape(-1).tolist())


def test_dlpack_round_trip_is_zero_copy():
    r = rill.arange(5, dtype=rill.float64)
    back = rill.from_dlpack(torch.from_dlpack(r))
    assert back.tolist() == [0, 1, 2, 3, 4]
    back[0] = 10
    assert r[0].item() == 10
    t = torch.arange(5, dtype=torch.float32)
    tback = torch.from_dlpack(rill.from_dlpack(t))
    tback[4] = -1
    assert t[4].item() == -1


def test_from_dlpack_legacy_capsule():
    t = torch.arange(4, dtype=torch.float32)
    r = rill.from_dlpack(torch.utils.dlpack.to_dlpack(t))
    t[0] = 7
    assert r.tolist() == [7, 1, 2, 3]
    back = torch.utils.dlpack.from_dlpack(rill.zeros(2).__dlpack__())
    assert back.tolist() == [0, 0]


def test_dlpack_device():
    assert rill.zeros(2).__dlpack_device__() == (1, 0)
    assert rill.zeros(2).__dlpack_device__() == tuple(torch.zeros(2).__dlpack_device__())


def test_dlpack_lifetimes():
    t = torch.arange(100, dtype=torch.float32)
    r = rill.from_dlpack(t)
    del t
    gc.collect()
    assert r.tolist() == list(range(100))
    r2 = rill.arange(100, dtype=rill.int64)
    t2 = torch.from_dlpack(r2)
    del r2
    gc.collect()
    for _ in range(5):
        rill.full((100,), -1, dtype=rill.int64).sum().item()
    assert t2.tolist() == list(range(100))


def test_from_dlpack_of_numpy_and_rill():
    a = np.arange(4, dtype=np.int32)
    r = rill.from_dlpack(a)
    a[0] = 9
    assert r[0].item() == 9
    x = rill.ones(2)
    assert rill.from_dlpack(x)._shares_storage(x)
    with pytest.raises(TypeError):
        rill.from_dlpack([1, 2])


def test_dlpack_waits_for_pending_ops():
    r = rill.zeros(100000)
    for _ in range(10):
        r += 1
    assert torch.from_dlpack(r).eq(10).all()
