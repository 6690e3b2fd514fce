"""Values rill computed differently from PyTorch (or inputs it refused) in the OpInfo conformance run: integer
powers with negative exponents, uint8 resizing in PyTorch's fixed point, integer addmv/baddbmm/addbmm and
addbmm_'s resize, masked.logsumexp's dtype, gather with an empty index, integer logspace, mode's tie index,
float16 embedding_bag sums and integer local_response_norm. rill against PyTorch on the same inputs, exactly for
integer results."""
import numpy as np
import pytest
import torch

import rill
from conftest import assert_close, to_torch


def rill_of(t):
    """A rill copy of torch tensor t, bfloat16 included."""
    if t.dtype == torch.bfloat16:
        return rill.tensor(t.float().numpy().copy()).to(rill.bfloat16)
    return rill.tensor(t.detach().numpy().copy())


def exactly(actual, expected):
    """rill actual equals torch expected: dtype, shape and every value (NaN equal to NaN)."""
    assert str(actual.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert tuple(actual.shape) == tuple(expected.shape)
    assert torch.equal(to_torch(actual).nan_to_num(-7.0), expected.nan_to_num(-7.0)) if (
        expected.is_floating_point()) else torch.equal(to_torch(actual), expected), (actual, expected)


# --- base ** integer tensor ------------------------------------------------------------------------------------------

EXPONENTS = torch.tensor([-3, -2, -1, 0, 1, 2, 5], dtype=torch.int8)


@pytest.mark.parametrize("base", [0, 1, -1, 2, -2, 3, True, 2.5])
def test_number_to_a_negative_integer_tensor_power(base):
    # 1 / base ** -e truncated: 1 for base 1, +-1 for -1, 0 otherwise (0 ** -1 too)
    exactly(base ** rill_of(EXPONENTS), base ** EXPONENTS)


@pytest.mark.parametrize("base", [
    torch.tensor(0, dtype=torch.int8),
    torch.tensor([[1], [-1], [2], [0]], dtype=torch.int16),
    torch.tensor([[1], [255]], dtype=torch.uint8),  # 255 stays 255 in the int16 result: not a -1 base
    torch.tensor([[True], [False]]),
    torch.tensor([[1], [-1], [7]], dtype=torch.int64),
    torch.tensor([[1.5], [2.0]]),
])
def test_rpow_with_a_tensor_base(base):
    exactly(rill_of(EXPONENTS).__rpow__(rill_of(base)), EXPONENTS.__rpow__(base))


def test_rpow_keeps_gradients_and_refusals():
    x = rill.tensor([1.0, 2.0], requires_grad=True)
    (2 ** x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 * np.log(2), 4 * np.log(2)], rtol=1e-6)
    assert rill.tensor([1, 2]).__rpow__("a") is NotImplemented
    with pytest.raises(RuntimeError, match="negative integer powers"):
        rill.tensor([2]) ** -1  # a negative Python exponent is refused, as in PyTorch


# --- uint8 bilinear / bicubic -------------------------------------------------------------------------------------

RESIZES = [
    dict(size=(3, 3), mode="bilinear", align_corners=False),
    dict(size=(5, 7), mode="bilinear", align_corners=True),
    dict(scale_factor=1.7, mode="bilinear", align_corners=None, recompute_scale_factor=True),
    dict(scale_factor=(0.7, 2.2), mode="bilinear", align_corners=False),
    dict(size=(3, 5), mode="bilinear", antialias=True),
    dict(scale_factor=0.45, mode="bilinear", antialias=True, align_corners=True),
    dict(size=(9, 4), mode="bicubic", align_corners=False),
    dict(scale_factor=1.7, mode="bicubic", align_corners=True, recompute_scale_factor=False),
    dict(size=(4, 6), mode="bicubic", antialias=True),
    dict(scale_factor=0.6, mode="bicubic", antialias=True, align_corners=False),
    dict(size=(8, 13), mode="bicubic", align_corners=True),
]


@pytest.mark.parametrize("kwargs", RESIZES)
@pytest.mark.parametrize("channels", [1, 3])
def test_uint8_resize_in_fixed_point(kwargs, channels):
    g = torch.Generator().manual_seed(channels)
    x = torch.randint(0, 256, (2, channels, 8, 11), dtype=torch.uint8, generator=g)
    exactly(rill.nn.functional.interpolate(rill_of(x), **kwargs), torch.nn.functional.interpolate(x, **kwargs))


def test_uint8_bicubic_downscale_of_a_large_image():
    x = torch.randint(0, 256, (1, 3, 270, 270), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    out = torch.nn.functional.interpolate(x, (130, 130), mode="bicubic", align_corners=False)
    exactly(rill.nn.functional.interpolate(rill_of(x), (130, 130), mode="bicubic", align_corners=False), out)


@pytest.mark.parametrize("kwargs", [
    dict(output_size=(3, 3), align_corners=False, scale_factors=None),
    dict(output_size=(5, 5), align_corners=False, scale_factors=None),
    dict(output_size=None, align_corners=True, scale_factors=[0.8, 1.0]),
    dict(output_size=(3, 3), align_corners=True, scales_h=1.7, scales_w=0.9),
    dict(output_size=(4, 7), align_corners=False, scales_h=0.45, scales_w=0.4),
])
def test_uint8_upsample_bilinear2d_aa(kwargs):
    x = torch.randint(0, 256, (2, 3, 10, 20), dtype=torch.uint8, generator=torch.Generator().manual_seed(1))
    exactly(rill._upsample_bilinear2d_aa(rill_of(x), **kwargs), torch.ops.aten._upsample_bilinear2d_aa(x, **kwargs))


# --- addmv / baddbmm / addbmm -----------------------------------------------------------------------------------------

def _products(dtype):
    g = torch.Generator().manual_seed(3)
    make = lambda *shape: torch.randint(0, 10, shape, generator=g).to(dtype)  # noqa: E731
    return make


@pytest.mark.parametrize("beta, alpha", [(0.2, 0.6), (1.7, 2.6), (2, 3), (-1.5, 1)])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int64])
def test_integer_products_truncate_beta_and_alpha(dtype, beta, alpha):
    make = _products(dtype)
    i, m, v = make(5), make(5, 10), make(10)
    if dtype == torch.uint8 and beta < 0:  # a negative float does not convert to uint8: both refuse it
        with pytest.raises(RuntimeError, match="without overflow"):
            torch.addmv(i, m, v, beta=beta, alpha=alpha)
        with pytest.raises(RuntimeError, match="without overflow"):
            rill.addmv(rill_of(i), rill_of(m), rill_of(v), beta=beta, alpha=alpha)
        return
    exactly(rill.addmv(rill_of(i), rill_of(m), rill_of(v), beta=beta, alpha=alpha),
            torch.addmv(i, m, v, beta=beta, alpha=alpha))
    i3, b1, b2 = make(4, 3, 2), make(4, 3, 5), make(4, 5, 2)
    exactly(rill.baddbmm(rill_of(i3), rill_of(b1), rill_of(b2), beta=beta, alpha=alpha),
            torch.baddbmm(i3, b1, b2, beta=beta, alpha=alpha))
    exactly(rill.addbmm(rill_of(i3[0]), rill_of(b1), rill_of(b2), beta=beta, alpha=alpha),
            torch.addbmm(i3[0], b1, b2, beta=beta, alpha=alpha))


@pytest.mark.parametrize("shape", [(1,), (10,), (5, 10)])
def test_addbmm_in_place_grows_an_input_that_broadcasts(shape):
    g = torch.Generator().manual_seed(4)
    x, b1, b2 = torch.randn(shape, generator=g), torch.randn(5, 5, 5, generator=g), torch.randn(5, 5, 10, generator=g)
    expected = x.clone().addbmm_(b1, b2, beta=0.6, alpha=0.2)
    actual = rill_of(x)
    result = actual.addbmm_(rill_of(b1), rill_of(b2), beta=0.6, alpha=0.2)
    assert result is actual
    assert_close(actual, expected)


def test_addbmm_in_place_refuses_an_input_that_does_not_broadcast():
    with pytest.raises(RuntimeError):
        rill.randn(3, 3).addbmm_(rill.randn(5, 5, 5), rill.randn(5, 5, 10))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_16_bit_addbmm_rounds_after_every_batch(dtype):
    g = torch.Generator().manual_seed(5)
    x = (torch.randn(1, generator=g) * 5).to(dtype)
    b1, b2 = (torch.randn(5, 5, 5, generator=g) * 3).to(dtype), (torch.randn(5, 5, 10, generator=g) * 3).to(dtype)
    exactly(rill.addbmm(rill_of(x), rill_of(b1), rill_of(b2), beta=0.6, alpha=0.2),
            torch.addbmm(x, b1, b2, beta=0.6, alpha=0.2))
    inplace = rill_of(x)
    inplace.addbmm_(rill_of(b1), rill_of(b2))
    exactly(inplace, x.clone().addbmm_(b1, b2))


# --- masked.logsumexp ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int64, torch.float16, torch.float32])
@pytest.mark.parametrize("out_dtype", [None, torch.float32])
def test_masked_logsumexp_keeps_the_input_dtype(dtype, out_dtype):
    x = torch.tensor([[4, 100, 3], [1, 2, 120]]).to(dtype)
    mask = torch.tensor([[True, False, True], [False, False, False]])
    for m in (None, mask):
        expected = torch.masked.logsumexp(x, 1, mask=m, dtype=out_dtype)
        actual = rill.masked.logsumexp(rill_of(x), 1, mask=None if m is None else rill_of(m),
                                       dtype=None if out_dtype is None else rill.float32)
        exactly(actual, expected) if not expected.is_floating_point() else assert_close(actual, expected)
    exactly(rill.masked.logsumexp(rill_of(x[0, 0]), 0), torch.masked.logsumexp(x[0, 0], 0))


# --- gather -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.float32, torch.bool, torch.int64])
@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 4)])
def test_gather_with_an_empty_index(dtype, shape):
    x = torch.randn(3, 4)
    index = torch.empty(shape, dtype=dtype)
    rx = rill_of(x).requires_grad_()
    out = rill.gather(rx, 0, rill_of(index))
    exactly(out.detach(), torch.gather(x, 0, index))
    exactly(rx.gather(1, rill_of(index)).detach(), x.gather(1, index))
    out.sum().backward()
    assert rx.grad is not None and float(rx.grad.abs().sum()) == 0.0


def test_gather_still_checks_dim_and_a_nonempty_index():
    x = rill.randn(2, 3)
    with pytest.raises(IndexError):
        rill.gather(x, 3, rill.empty(0, dtype=rill.uint8))
    with pytest.raises(RuntimeError, match="index"):
        rill.gather(x, 1, rill.zeros(2, 1, dtype=rill.uint8))
    assert_close(rill.gather(x, 1, rill.tensor([[2], [0]])), torch.gather(to_torch(x), 1, torch.tensor([[2], [0]])))


# --- logspace -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    (0, 1.2, 2), (0, 1.2, 2, 5.0), (0, 1.2, 4), (0, 3.7, 5, 2.0), (-2, 3, 6), (0.5, 2.5, 5), (0, 40, 3),
    (0, -3, 4, -2.0), (0, 3, 4, -2.5), (-300, 5, 3), (-3, 3, 7, 2), (12.7, -12.3, 20), (-7, 1, 3), (2.5, 5, 1),
])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_integer_logspace(args, dtype):
    try:
        expected = torch.logspace(*args, dtype=getattr(torch, dtype))
    except RuntimeError:
        with pytest.raises(RuntimeError):
            rill.logspace(*args, dtype=getattr(rill, dtype))
        return
    exactly(rill.logspace(*args, dtype=getattr(rill, dtype)), expected)


@pytest.mark.parametrize("args", [(-1.0, 1, 3), (-256, 1, 3), (127.5, 1, 3)])
def test_integer_logspace_refuses_what_the_dtype_cannot_hold(args):
    dtype = "int8" if args[0] == 127.5 else "uint8"
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.logspace(*args, dtype=getattr(torch, dtype))
    with pytest.raises(RuntimeError, match="without overflow"):
        rill.logspace(*args, dtype=getattr(rill, dtype))


# --- mode ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n, distinct", [(5, 2), (16, 3), (17, 3), (100, 7), (3000, 700), (257, 257)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.int64, torch.bfloat16])
def test_mode_tie_index_follows_std_sort(n, distinct, dtype):
    g = torch.Generator().manual_seed(n)
    x = torch.randint(0, distinct, (3, n), generator=g).to(dtype)
    x[2] = x[2].sort()[0]  # sorted rows take other partitions (and heapsort at depth)
    values, indices = torch.mode(x, 1)
    rvalues, rindices = rill.mode(rill_of(x), 1)
    exactly(rindices, indices)
    exactly(rvalues, values)


def test_mode_rows_with_nans_and_other_dims():
    x = torch.tensor([[1.0, float("nan"), 1.0, 2.0, float("nan")], [3.0, float("nan"), 1.0, 2.0, 4.0]])
    for t, dim in ((x, 1), (x.T.contiguous(), 0), (torch.randint(0, 4, (20, 3)).float(), 0)):
        values, indices = torch.mode(t, dim, keepdim=True)
        rvalues, rindices = rill.mode(rill_of(t), dim, keepdim=True)
        exactly(rindices, indices)
        exactly(rvalues, values)
    exactly(rill.mode(rill.tensor(3.0))[1], torch.mode(torch.tensor(3.0))[1])


def test_mode_value_keeps_its_gradient():
    x = torch.randint(0, 5, (40,)).double().requires_grad_()
    rx = rill_of(x.detach()).requires_grad_()
    torch.mode(x)[0].backward()
    rill.mode(rx)[0].backward()
    exactly(rx.grad, x.grad)


# --- embedding_bag ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float16])
@pytest.mark.parametrize("weighted", [False, True])
def test_float16_embedding_bag_sums_in_float32(dtype, weighted):
    g = torch.Generator().manual_seed(6)
    w = (torch.randn(10, 5, generator=g) * 5).to(dtype)
    idx = torch.randint(0, 10, (5, 5), generator=g)
    psw = (torch.randn(5, 5, generator=g) * 3).to(dtype) if weighted else None
    expected = torch.nn.functional.embedding_bag(idx, w, mode="sum", per_sample_weights=psw)
    actual = rill.nn.functional.embedding_bag(rill_of(idx), rill_of(w), mode="sum",
                                              per_sample_weights=None if psw is None else rill_of(psw))
    exactly(actual, expected)


# --- local_response_norm ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(1, 6, 3), (2, 5, 3, 4), (1, 7, 2, 2, 2)])
@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_integer_local_response_norm_truncates_the_mean(shape, size):
    x = torch.randint(-20, 20, shape, generator=torch.Generator().manual_seed(size))
    expected = torch.nn.functional.local_response_norm(x, size, alpha=0.1, beta=0.7, k=1.5)
    assert_close(rill.nn.functional.local_response_norm(rill_of(x), size, alpha=0.1, beta=0.7, k=1.5), expected)
